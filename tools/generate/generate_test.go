package generate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

// run executes `streamkit generate ARGS` in-process and returns its stdout.
func run(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	cmd := Command()
	var out bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetIn(bytes.NewReader(nil))
	err := cmd.ExecuteContext(context.Background())
	return out.Bytes(), err
}

// batches decodes an IPC stream: the reader (for the schema) and each row's values as text.
func batches(t *testing.T, b []byte) (*codec.Reader, [][]string) {
	t.Helper()
	rd, err := codec.NewReader(bytes.NewReader(b), memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rd.Release)
	var cols [][]string
	for {
		m, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Batch == nil {
			continue
		}
		for i := 0; i < int(m.Batch.NumRows()); i++ {
			var row []string
			for c := 0; c < int(m.Batch.NumCols()); c++ {
				row = append(row, m.Batch.Column(c).ValueStr(i))
			}
			cols = append(cols, row)
		}
		m.Batch.Release()
	}
	return rd, cols
}

func TestPresetWithOverride(t *testing.T) {
	out, err := run(t, "--preset", "nexmark-bids", "--gen", "channel=constant(x)", "--gen", "price=nulls=0.5", "--rows", "200")
	if err != nil {
		t.Fatal(err)
	}
	rd, rows := batches(t, out)
	if got := codec.Info(rd.Schema()).EventTime; got != "date_time" {
		t.Fatalf("event time %q, want date_time", got)
	}
	nulls := 0
	for _, r := range rows {
		if r[3] != "x" {
			t.Fatalf("channel %q, want the override x", r[3])
		}
		if r[2] == array.NullValueStr {
			nulls++
		}
	}
	if len(rows) != 200 || nulls < 70 || nulls > 130 {
		t.Fatalf("%d rows, %d null prices", len(rows), nulls)
	}
}

// Without --schema: Spark's rate source (timestamp, value).
func TestRateSourceDefault(t *testing.T) {
	out, err := run(t, "--rows", "3")
	if err != nil {
		t.Fatal(err)
	}
	rd, rows := batches(t, out)
	if got := rd.Schema().Field(0).Name + "," + rd.Schema().Field(1).Name; got != "timestamp,value" {
		t.Fatalf("columns %s", got)
	}
	if fmt.Sprint(rows) != "[[2024-01-01T00:00:00Z 0] [2024-01-01T00:00:00.001Z 1] [2024-01-01T00:00:00.002Z 2]]" {
		t.Fatalf("rows %v", rows)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--schema", "x int", "--gen", "x=normal(1)"}, "--gen 'x=normal(1)': normal takes (mean, stddev)"},
		{[]string{"--schema", "x int", "--gen", "price=uniform(1, 2)"}, "--gen 'price=uniform(1, 2)': no column price"},
		{[]string{"--preset", "nexmark-asks"}, `--preset "nexmark-asks": want one of nexmark-bids`},
		{[]string{"--preset", "nexmark-bids", "--schema", "x int"}, "not both"},
		{[]string{"--schema", "x int,,"}, "--schema"},
		{[]string{"--rate", "fast"}, "--rate"},
		{[]string{"--duplicates", "1.5"}, "--duplicates must be a fraction"},
		{[]string{"--event-time", "value"}, "want a timestamp column"},
		{[]string{"--watermark-delay", "1s"}, "needs --event-time"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := run(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if code := stage.ExitCode(err); code != stage.ExitUsage {
				t.Fatalf("exit code %d, want 2", code)
			}
		})
	}
}

// A restart with another seed (or schema, generators, duplicates) would not replay the same
// epochs: refused, naming the difference. --rows may grow.
func TestRestartWithOtherSeedRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gen")
	if _, err := run(t, "--rows", "10", "--seed", "1", "--checkpoint", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "--rows", "20", "--seed", "1", "--checkpoint", dir); err != nil {
		t.Fatalf("more rows, same seed: %v", err)
	}
	_, err := run(t, "--rows", "20", "--seed", "2", "--checkpoint", dir)
	var ie *state.IncompatibleError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "seed") {
		t.Fatalf("got %v, want an incompatible-options error naming seed", err)
	}
}

// The brief's pipeline, end to end through the binary: generate | print --format csv.
func TestEndToEndCSV(t *testing.T) {
	bin := peertest.Binary(t)
	pipe := func(args string) string {
		cmd := exec.Command("sh", "-c", fmt.Sprintf("%s generate %s | %s print --format csv", bin, args, bin))
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v\n%s", err, errb.String())
		}
		return out.String()
	}
	out := pipe("--rows 1000")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 1001 || lines[0] != "timestamp,value" || !strings.HasSuffix(lines[1000], ",999") {
		t.Fatalf("%d lines, header %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	args := "--schema 'id bigint, who string, amount decimal(8,2), tags array<string>' --gen id=sequence --gen who=names " +
		"--gen 'amount=normal(50, 10) nulls=0.1' --duplicates 0.2 --rows 1000 --batch-rows 100 --seed 9"
	a, b := pipe(args), pipe(args)
	if a != b {
		t.Fatal("two runs with the same seed print different CSV")
	}
	if c := pipe(strings.Replace(args, "--seed 9", "--seed 10", 1)); c == a {
		t.Fatal("seeds 9 and 10 print the same CSV")
	}
	if n := strings.Count(a, "\n"); n != 1001 {
		t.Fatalf("%d lines", n)
	}
}

// Exit code 2 from the binary, with the column and spec named on stderr.
func TestBinaryUsageExit(t *testing.T) {
	cmd := exec.Command(peertest.Binary(t), "generate", "--schema", "price double", "--gen", "price=zipf(0.5)")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("got %v, want exit 2", err)
	}
	if !strings.Contains(errb.String(), "--gen 'price=zipf(0.5)'") {
		t.Fatalf("stderr %q does not name the column and spec", errb.String())
	}
}
