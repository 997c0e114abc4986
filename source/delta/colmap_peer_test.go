package delta

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/internal/peertest"
)

// TestPeerSparkColumnMapping: Spark with delta-spark makes tables in column mapping modes
// name and id (testdata/colmap_peers.py: appends, RENAME COLUMN, DROP COLUMN, ADD COLUMN with
// the dropped name, nested field renames, a partition column rename). Every version read by
// read-delta (batch, --version N, --where, --follow from the snapshot and from version 0) and
// copied by backfill --from-delta must equal Spark's read. Then streamkit appends to each table
// (write-delta --merge-schema with a new column, backfill --dedup-cols into it, delta optimize)
// and Spark's read of the whole table must equal the rows before plus the appended ones. One
// Spark session serves the whole test.
func TestPeerSparkColumnMapping(t *testing.T) {
	py := peertest.Python(t)
	if err := exec.Command(py, "-c", "import pyspark, delta").Run(); err != nil {
		if os.Getenv("STREAMKIT_REQUIRE_PEERS") == "1" {
			t.Fatalf("pyspark/delta-spark missing: run scripts/peers.sh spark")
		}
		t.Skip("pyspark/delta-spark missing: run scripts/peers.sh spark")
	}
	bin := peertest.Binary(t)
	dir := t.TempDir()
	cmd := exec.Command(py, filepath.Join("testdata", "colmap_peers.py"), dir)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, stdout := peertest.StartPiped(t, cmd)
	defer cmd.Process.Kill()
	lines := bufio.NewReader(stdout)
	var manifest struct {
		Tables map[string]string
		Cases  []struct {
			Name, Table, Where, Expected string
			Version                      int64
		}
	}
	for {
		l, err := lines.ReadString('\n')
		if err != nil {
			cmd.Wait()
			t.Fatalf("colmap_peers.py phase 1: %v\n%s", err, tail(stderr.String()))
		}
		if strings.HasPrefix(l, "{") {
			if err := json.Unmarshal([]byte(l), &manifest); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	var compare [][2]string
	out := func(name string) string {
		return filepath.Join(dir, "out-"+strings.NewReplacer("@", "-at-", "?", "-where-").Replace(name)+".arrows")
	}
	for _, c := range manifest.Cases {
		args := []string{manifest.Tables[c.Table]}
		if c.Version >= 0 {
			args = append(args, "--version", fmt.Sprint(c.Version))
		}
		if c.Where != "" {
			args = append(args, "--where", c.Where)
		}
		o := out(c.Name)
		readDeltaTo(t, o, args...)
		compare = append(compare, [2]string{c.Expected, o})
	}
	type appended struct {
		Table  string   `json:"table"`
		Before string   `json:"before"`
		Rows   []string `json:"rows"`
		Got    string   `json:"got"`
	}
	var apps []appended
	for name, p := range manifest.Tables {
		latest := filepath.Join(dir, "expected", name+".latest.json")
		for i, args := range [][]string{{p}, {p, "--starting-version", "0"}} {
			o := out(fmt.Sprintf("%s-follow%d", name, i))
			readFollow(t, bin, o, args...)
			compare = append(compare, [2]string{latest, o})
		}
		for _, v := range []string{"6", "-1"} {
			to := filepath.Join(dir, "backfill-"+name+"-"+v)
			run(t, bin, nil, "backfill", "--progress", "off", "--from-delta", p, "--from-version", v, "--to", to, "--flow", "copy")
			o := out("backfill-" + name + "-" + v)
			readDeltaTo(t, o, to)
			want := latest
			if v != "-1" {
				want = filepath.Join(dir, "expected", name+"@"+v+".json")
			}
			compare = append(compare, [2]string{want, o})
		}

		// streamkit appends: a new column (schema evolution), then a backfill whose keys are
		// all in the table already (dedup reads the target's keys by physical names), then a
		// compaction.
		rows := filepath.Join(dir, name+"-append.arrows")
		writeColmapRows(t, rows, 1000, 20)
		in, err := os.ReadFile(rows)
		if err != nil {
			t.Fatal(err)
		}
		run(t, bin, in, "write-delta", "--progress", "off", "--merge-schema", p)
		run(t, bin, nil, "backfill", "--progress", "off", "--from-delta", filepath.Join(dir, "backfill-"+name+"--1"), "--to", p, "--flow", "dedup", "--dedup-cols", "id", "--merge-schema")
		run(t, bin, nil, "delta", "optimize", p)
		got := out(name + "-after")
		readDeltaTo(t, got, p)
		apps = append(apps, appended{Table: p, Before: latest, Rows: []string{rows}, Got: got})
	}
	req, _ := json.Marshal(map[string]any{"compare": compare, "appended": apps})
	if _, err := stdin.Write(append(req, '\n')); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	res, _ := io.ReadAll(lines)
	err := cmd.Wait()
	t.Logf("%s", res)
	if err != nil || strings.Count(string(res), "ok ") != len(compare)+2*len(apps) {
		t.Fatalf("colmap_peers.py phase 2: %v\n%s\n%s", err, res, tail(stderr.String()))
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

// run runs the streamkit binary with args and stdin; a failure fails t.
func run(t *testing.T, bin string, stdin []byte, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("streamkit %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
}

// readFollow runs read-delta --follow ARGS into out until its output has not grown for a
// second (one epoch per hour: no barrier batches while idle), at most a minute, then stops it
// with SIGINT (which ends the stream cleanly).
func readFollow(t *testing.T, bin, out string, args ...string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bin, append([]string{"read-delta", "--progress", "off", "--follow", "--poll-interval", "50ms", "--epoch-interval", "1h"}, args...)...)
	cmd.Stdout = f
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var last int64 = -1
	for stable, waited := 0, 0; stable < 10 && waited < 600; waited++ {
		time.Sleep(100 * time.Millisecond)
		fi, _ := f.Stat()
		if fi.Size() > 0 && fi.Size() == last {
			stable++
		} else {
			stable = 0
		}
		last = fi.Size()
		if cmd.ProcessState != nil {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil && cmd.ProcessState.ExitCode() != 130 { // 130: interrupted
		t.Fatalf("read-delta --follow %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
}

// writeColmapRows writes n rows (ids from start) of the tables' latest schema plus a new
// column extra as an Arrow IPC stream.
func writeColmapRows(t *testing.T, path string, start, n int) {
	t.Helper()
	mem := memory.NewGoAllocator()
	info := arrow.StructOf(arrow.Field{Name: "town", Type: arrow.BinaryTypes.String, Nullable: true}, arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	tag := arrow.StructOf(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String, Nullable: true}, arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "full_name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "info", Type: info, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(tag), Nullable: true},
		{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "amount", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "extra", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for k := start; k < start+n; k++ {
		b.Field(0).(*array.Int64Builder).Append(int64(k))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("w%d", k))
		if k%3 == 2 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append([]string{"a", "b"}[k%3])
		}
		ib := b.Field(3).(*array.StructBuilder)
		ib.Append(true)
		ib.FieldBuilder(0).(*array.StringBuilder).Append(fmt.Sprintf("c%d", k%4))
		ib.FieldBuilder(1).(*array.Int32Builder).Append(int32(k))
		lb := b.Field(4).(*array.ListBuilder)
		lb.Append(true)
		tb := lb.ValueBuilder().(*array.StructBuilder)
		tb.Append(true)
		tb.FieldBuilder(0).(*array.StringBuilder).Append(fmt.Sprintf("t%d", k))
		tb.FieldBuilder(1).(*array.Int32Builder).Append(int32(k))
		mb := b.Field(5).(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append("m")
		mb.ItemBuilder().(*array.Int32Builder).Append(int32(k))
		b.Field(6).(*array.StringBuilder).Append(fmt.Sprintf("s%d", k))
		b.Field(7).(*array.Int64Builder).Append(int64(k * 10))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := ipc.NewWriter(f, ipc.WithSchema(sc))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
