package s3test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

// Engine names a real Delta Lake implementation that reads or writes tables in a bucket of
// the test server (scripts/py/bucket_delta.py says how each is set up).
type Engine string

// The engines. DuckDB only reads.
const (
	DeltaRS Engine = "deltalake" // delta-rs (Python deltalake), storage_options from Env
	DuckDB  Engine = "duckdb"    // DuckDB delta_scan with httpfs and an S3 secret
	Spark   Engine = "spark"     // Spark + delta-spark over Hadoop S3A (s3a://)
)

// Readers are the engines that read tables, in the order ReadTable reports them.
var Readers = []Engine{DeltaRS, DuckDB, Spark}

// Op is one table operation of RunTables; build it with Read or Write.
type Op struct {
	Op          string   `json:"op"` // "read" or "write"
	Engine      Engine   `json:"engine"`
	URI         string   `json:"uri"`                    // s3://bucket/path (Spark gets s3a://)
	Rows        string   `json:"rows,omitempty"`         // write: Arrow IPC file (arrowtest.WriteFile)
	Mode        string   `json:"mode,omitempty"`         // write: "append" (default) or "overwrite"
	PartitionBy []string `json:"partition_by,omitempty"` // write: partition columns
}

// Read is the Op in which e reads the table at uri.
func Read(e Engine, uri string) Op { return Op{Op: "read", Engine: e, URI: uri} }

// Write is the Op in which e writes the rows of the Arrow IPC file rows to the table at uri
// with mode ("append" or "overwrite"; "" appends), creating it if needed, partitioned by
// partitionBy when it creates it.
func Write(e Engine, uri, rows, mode string, partitionBy ...string) Op {
	return Op{Op: "write", Engine: e, URI: uri, Rows: rows, Mode: mode, PartitionBy: partitionBy}
}

// Result is what an Op gave.
type Result struct {
	// Rows (reads) are the table's rows, each a JSON object with sorted keys and values
	// normalised as sink/delta/testdata/check_table.py's norm does (timestamps to UTC ISO
	// text, decimals to text, NaN/Inf to text, maps to sorted pairs), sorted; equal tables give
	// equal Rows whichever engine read them.
	Rows []string `json:"rows"`
	// Version is the table version the engine read or wrote; -1 when it does not say (DuckDB).
	Version int64 `json:"version"`
}

// RunTables runs ops in order in one Python process (scripts/py/bucket_delta.py, so Spark
// starts at most once, and only when an Op names it) against the test server and returns one
// Result per Op. The server's settings reach the process through its environment (Env),
// never argv. A missing server or Python skips or fails t like Server; a failing operation
// fails t with the process's stderr.
func RunTables(t testing.TB, ops ...Op) []Result {
	t.Helper()
	env := Env(t)
	py := peertest.Python(t)
	spec, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "ops.json")
	if err := os.WriteFile(f, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join(peertest.Root(t), "scripts", "py", "bucket_delta.py"), f)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bucket_delta.py %s: %v\nstderr:\n%s", describe(ops), err, tail(stderr.String(), 60))
	}
	for line := range strings.SplitSeq(stdout.String(), "\n") {
		if js, ok := strings.CutPrefix(line, "RESULT "); ok {
			var res []Result
			if err := json.Unmarshal([]byte(js), &res); err != nil {
				t.Fatalf("bucket_delta.py %s: %v in %q", describe(ops), err, js)
			}
			if len(res) != len(ops) {
				t.Fatalf("bucket_delta.py %s: %d results for %d operations", describe(ops), len(res), len(ops))
			}
			return res
		}
	}
	t.Fatalf("bucket_delta.py %s: no RESULT line\nstdout:\n%s\nstderr:\n%s", describe(ops), tail(stdout.String(), 20), tail(stderr.String(), 60))
	return nil
}

// ReadTable reads the table at uri with each engine (Readers when none is given) in one
// process and returns each engine's Result.
func ReadTable(t testing.TB, uri string, engines ...Engine) map[Engine]Result {
	t.Helper()
	if len(engines) == 0 {
		engines = Readers
	}
	ops := make([]Op, len(engines))
	for i, e := range engines {
		ops[i] = Read(e, uri)
	}
	res := RunTables(t, ops...)
	out := make(map[Engine]Result, len(engines))
	for i, e := range engines {
		out[e] = res[i]
	}
	return out
}

// WriteTable has e write the Arrow IPC file rows to the table at uri (see Write) and returns
// the table's version after the write.
func WriteTable(t testing.TB, e Engine, uri, rows, mode string, partitionBy ...string) int64 {
	t.Helper()
	return RunTables(t, Write(e, uri, rows, mode, partitionBy...))[0].Version
}

func describe(ops []Op) string {
	var b strings.Builder
	for i, o := range ops {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(o.Op + " " + string(o.Engine) + " " + o.URI)
	}
	return b.String()
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
