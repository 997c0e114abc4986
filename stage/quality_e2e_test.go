package stage

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

// duckDelta prints the rows of a Delta table read by DuckDB's delta extension, one JSON
// object per line, ordered by the columns given.
const duckDelta = `
import sys, os, glob, json, duckdb
site = os.path.dirname(os.path.dirname(duckdb.__file__))
ext = glob.glob(os.path.join(site, "duckdb_extension_delta", "extensions", "*", "delta.duckdb_extension"))
con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
con.sql("set enable_progress_bar = false")  # a slow query would print its bar to stdout
con.execute("SET TimeZone='UTC'")
con.execute("LOAD '%s'" % ext[0].replace("'", "''"))
cols = sys.argv[2]
if not os.path.isdir(os.path.join(sys.argv[1], "_delta_log")) or not glob.glob(os.path.join(sys.argv[1], "_delta_log", "*.json")):
    sys.exit(0)  # no commit at all
for r in con.execute(f"SELECT {cols} FROM delta_scan(?) ORDER BY {cols}", [os.path.abspath(sys.argv[1])]).fetchall():
    print(json.dumps([str(v) for v in r]))
`

// TestMaxBadRatio (issue #17 item 3): an epoch most of whose records a stage sets aside —
// read-files' bad records and rescued rows, window's late rows — makes that stage warn once,
// with the counts; with --max-bad-ratio below the epoch's share the stage fails with exit 1
// before the epoch commits: the Delta table (read by DuckDB) holds nothing of that epoch.
func TestMaxBadRatio(t *testing.T) {
	py := peertest.Python(t)
	cases := []struct {
		name       string
		files      []string
		stages     string // between read-files and write-delta
		cols       string
		flagged    string // the stage given --max-bad-ratio 0.5: the placeholder {R}
		warn, fail string
		all, first int // table rows without and with the failure
	}{{
		name: "read-files bad and rescued records",
		files: []string{
			"1.ndjson", `{"id":1,"v":"a"}` + "\n" + `{"id":2,"v":"b"}` + "\n",
			"2.ndjson", `{"id":3,"v":"c"}` + "\n" + `{"id":"x","v":"d"}` + "\n" + "{not json\n" + "{nor this\n",
			"3.ndjson", `{"id":5,"v":"e"}` + "\n",
		},
		stages:  "$SK read-files 'in/*.ndjson' --schema 'id bigint, v string' --max-files-per-epoch 1 {R}",
		cols:    "v",
		warn:    "most records of epoch 2 were set aside: 3 of 4 (bad_records 2, rescued_rows 1)",
		fail:    "read-files: epoch 2: 3 of 4 records set aside (bad_records 2, rescued_rows 1), ratio 0.75 > --max-bad-ratio 0.5",
		all:     5, // the rescued row is a row (id null, _rescued_data set)
		first:   2,
		flagged: "read-files",
	}, {
		name: "window late rows",
		files: []string{
			"1.ndjson", `{"k":"a","ts":"2024-05-01T10:00:10Z"}` + "\n" + `{"k":"a","ts":"2024-05-01T10:05:10Z"}` + "\n",
			"2.ndjson", `{"k":"a","ts":"2024-05-01T10:00:20Z"}` + "\n" + `{"k":"a","ts":"2024-05-01T10:00:30Z"}` + "\n" +
				`{"k":"a","ts":"2024-05-01T10:00:40Z"}` + "\n" + `{"k":"a","ts":"2024-05-01T10:06:00Z"}` + "\n",
		},
		stages: "$SK read-files 'in/*.ndjson' --schema 'k string, ts timestamp' --max-files-per-epoch 1 | " +
			"$SK window tumbling --size 1m --time ts --key k --agg count --late-output late.ndjson {R}",
		cols:    "strftime(window_start, '%H:%M'), count",
		warn:    "most records of epoch 2 were set aside: 3 of 4 (late_rows 3)",
		fail:    "window: epoch 2: 3 of 4 records set aside (late_rows 3), ratio 0.75 > --max-bad-ratio 0.5",
		all:     2, // 10:00 fires in epoch 1, 10:05 in epoch 2 (end=pause keeps 10:06 open)
		first:   1,
		flagged: "window",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, fail := range []bool{false, true} {
				dir := t.TempDir()
				peertest.WriteFiles(t, filepath.Join(dir, "in"), c.files...)
				r := ""
				if fail {
					r = "--max-bad-ratio 0.5"
				}
				script := strings.ReplaceAll(c.stages, "{R}", r) + " | $SK write-delta table"
				_, stderr, code := peertest.Pipeline(t, dir, []string{"STREAMKIT_CHECKPOINT=" + filepath.Join(dir, "ckpt")}, script)
				rows := peertest.RunPython(t, py, duckDelta, filepath.Join(dir, "table"), c.cols)
				n := bytes.Count(rows, []byte("\n"))
				switch {
				case !fail && code != 0:
					t.Fatalf("exit %d: %s", code, stderr)
				case !fail && strings.Count(stderr, "were set aside") != 1 || !fail && !strings.Contains(stderr, c.warn):
					t.Errorf("want one warning %q, stderr:\n%s", c.warn, stderr)
				case !fail && n != c.all:
					t.Errorf("table holds %d rows, want %d:\n%s", n, c.all, rows)
				case fail && code != 1:
					t.Fatalf("--max-bad-ratio 0.5: exit %d, want 1: %s", code, stderr)
				case fail && !strings.Contains(stderr, c.fail):
					t.Errorf("--max-bad-ratio 0.5: want %q, stderr:\n%s", c.fail, stderr)
				case fail && n != c.first && n != 0:
					// Epoch 1 may be committed or not (write-delta's commit in flight when its
					// input is cut), but nothing of epoch 2 or later.
					t.Errorf("--max-bad-ratio 0.5: table holds %d rows, want at most those of epoch 1 (%d):\n%s", n, c.first, rows)
				}
			}
		})
	}
}
