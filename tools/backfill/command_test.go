package backfill

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"

	"github.com/streamkit/streamkit/internal/deltatest"
	"github.com/streamkit/streamkit/sink/delta/backfill"
	"github.com/streamkit/streamkit/stage"
)

func newMem(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// baseCfg is the configuration of a backfill from src (a Delta table; "" for none) into dst
// as flow, with every output discarded.
func baseCfg(t testing.TB, mem memory.Allocator, src, dst, flow string) backfill.Config {
	return backfill.Config{FromDelta: src, FromVersion: -1, To: dst, Flow: flow, Mem: mem, Progress: "off",
		Stdout: io.Discard, Stderr: io.Discard, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// TestFromFlagsCommandLine runs a backfill from CSV files configured by command-line flags
// (through cli.DecodeFlags.Apply), and checks its usage errors.
func TestFromFlagsCommandLine(t *testing.T) {
	mem := newMem(t)
	base := t.TempDir()
	dst := filepath.Join(base, "dst")
	os.MkdirAll(filepath.Join(base, "in"), 0o755)
	os.WriteFile(filepath.Join(base, "in", "a.csv"), []byte("# a comment\n1;'x;y'\n2;\\N\n"), 0o644)
	parse := func(args ...string) (*filesFlags, error) {
		cmd := &cobra.Command{}
		fl := addFilesFlags(cmd)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		cfg := baseCfg(t, mem, "", dst, "csv")
		return fl, filesSource(&cfg, []string{filepath.Join(base, "in", "*.csv")}, fl)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--infer-rows", "0"}, "backfill: --infer-rows must be ≥ 1"},
		{[]string{"--tz", "Local"}, `backfill: --tz "Local": want an IANA zone name`},
		{[]string{"--delimiter", ";;"}, "backfill: --delimiter: want one ASCII character"},
		{[]string{"--mode", "lenient"}, "backfill: --mode:"},
		{[]string{"--format", "xls"}, "backfill: --format:"},
	} {
		_, err := parse(c.args...)
		var ue *stage.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
	fl, err := parse("--header=false", "--delimiter", ";", "--quote", "'", "--comment", "#", "--null-value", `\N`,
		"--schema", "id long, record_source string", "--tz", "Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	if c := fl.cfg; c.CSV.Header || c.CSV.Delimiter != ';' || c.CSV.Quote != '\'' || c.CSV.Comment != '#' || c.CSV.NullValue != `\N` ||
		c.Location.String() != "Europe/Paris" || c.Schema == nil || c.InferRows != 10000 {
		t.Fatalf("config %+v", c)
	}
	cfg := baseCfg(t, mem, "", dst, "csv")
	if err := filesSource(&cfg, []string{filepath.Join(base, "in", "*.csv")}, fl); err != nil {
		t.Fatal(err)
	}
	if err := backfill.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if rows, _ := deltatest.IDRows(t, mem, dst); !reflect.DeepEqual(rows, []string{"1:x;y", "2:"}) {
		t.Fatalf("rows %v", rows)
	}
}
