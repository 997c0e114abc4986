package expect

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

// The expectations of the pipeline tests: every kind of predicate, nulls on both sides of
// AND/OR, and both actions that keep the run going. Their semantics are the same in Spark and
// DuckDB, so DuckDB's COUNT(*) FILTER (WHERE NOT p) is the reference.
var testExpectations = []struct {
	action Action
	name   string
	pred   string
}{
	{Warn, "has_id", "id IS NOT NULL"},
	{Drop, "amount_ok", "amount >= 0"},
	{Warn, "in_range", "amount BETWEEN 0 AND 500 AND id > 0"},
	{Warn, "name_ok", "name LIKE 'a%' OR length(name) > 3"},
	{Drop, "score_ok", "score < 0.9 OR score IS NULL"},
	{Warn, "by_parity", "CASE WHEN id % 2 = 0 THEN amount > 10 ELSE name IS NOT NULL END"},
	{Warn, "known", "name IN ('ann', 'bob', 'cy') OR id IN (1, 2, 3)"},
}

const testSchema = "id bigint, amount bigint, score double, name string"

// expectArgs is the expect command line of testExpectations.
func expectArgs() string {
	var b strings.Builder
	for _, e := range testExpectations {
		fmt.Fprintf(&b, " %s '%s: %s'", e.action.Flag(), e.name, strings.ReplaceAll(e.pred, "'", `'\''`))
	}
	return b.String()
}

// writeInput writes files CSV files of rows rows each into dir/in (read in name order), with
// bad rows: null and negative ids, null, negative and large amounts, null and short names,
// high scores. ids are unique where present.
func writeInput(t *testing.T, dir string, files, rows int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 1))
	names := []string{"ann", "bob", "cy", "alexandra", "zed", "", "quentin"}
	var args, paths []string
	id := 0
	for f := range files {
		var b strings.Builder
		b.WriteString("id,amount,score,name\n")
		for range rows {
			id++
			cell := func(p float64, v string) string {
				if r.Float64() < p {
					return ""
				}
				return v
			}
			idv := id
			if r.Float64() < 0.05 {
				idv = -id
			}
			fmt.Fprintf(&b, "%s,%s,%s,%s\n", cell(0.05, strconv.Itoa(idv)), cell(0.05, strconv.Itoa(r.IntN(700)-100)),
				cell(0.1, strconv.FormatFloat(r.Float64(), 'f', 3, 64)), cell(0.05, names[r.IntN(len(names))]))
		}
		name := fmt.Sprintf("f%03d.csv", f)
		args = append(args, name, b.String())
		paths = append(paths, filepath.Join(dir, "in", name))
	}
	peertest.WriteFiles(t, filepath.Join(dir, "in"), args...)
	return paths
}

// duckCounts are DuckDB's counts of one file: per expectation the rows where it is false,
// then the rows, then the rows at least one drop expectation drops.
type duckCounts struct {
	Failed  []int64 `json:"failed"`
	Rows    int64   `json:"rows"`
	Dropped int64   `json:"dropped"`
}

// duckDB counts the violations of testExpectations per file with DuckDB.
func duckDB(t *testing.T, files []string) []duckCounts {
	py := peertest.Python(t)
	var preds, drops []string
	for _, e := range testExpectations {
		preds = append(preds, e.pred)
		if e.action == Drop {
			drops = append(drops, e.pred)
		}
	}
	arg, _ := json.Marshal(map[string]any{"files": files, "preds": preds, "drops": drops, "schema": testSchema})
	out := peertest.RunPython(t, py, `
import sys, json, duckdb
a = json.loads(sys.argv[1])
con = duckdb.connect()
con.sql("set enable_progress_bar = false")
cols = {"id": "BIGINT", "amount": "BIGINT", "score": "DOUBLE", "name": "VARCHAR"}
res = []
for f in a["files"]:
    src = "read_csv(%s, header=true, columns=%s)" % ("'" + f + "'", "{" + ", ".join("'%s': '%s'" % kv for kv in cols.items()) + "}")
    sel = ", ".join("count(*) FILTER (WHERE NOT (%s))" % p for p in a["preds"])
    drop = " OR ".join("coalesce(NOT (%s), false)" % p for p in a["drops"])
    row = con.sql("SELECT %s, count(*), count(*) FILTER (WHERE %s) FROM %s" % (sel, drop, src)).fetchone()
    n = len(a["preds"])
    res.append({"failed": list(row[:n]), "rows": row[n], "dropped": row[n + 1]})
print(json.dumps(res))
`, string(arg))
	var res []duckCounts
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("duckdb: %v: %s", err, out)
	}
	return res
}

// summary is the part of `state-dump DIR/expect --format json` the tests read.
type summary struct {
	Committed uint64 `json:"committed_epoch"`
	Epochs    []struct {
		Epoch       uint64      `json:"epoch"`
		Committed   bool        `json:"committed"`
		DataQuality DataQuality `json:"data_quality"`
	} `json:"data_quality_epochs"`
	Total *struct {
		Epoch       uint64      `json:"epoch"`
		DataQuality DataQuality `json:"data_quality"`
	} `json:"data_quality_total"`
}

func stateDump(t *testing.T, dir string) summary {
	out, stderr, code := peertest.Pipeline(t, dir, nil, `"$SK" state-dump ck/expect --format json`)
	if code != 0 {
		t.Fatalf("state-dump: exit %d: %s", code, stderr)
	}
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("state-dump: %v: %s", err, out)
	}
	return s
}

// byName returns the counts of q by expectation name.
func byName(q DataQuality) map[string]Metrics {
	m := map[string]Metrics{}
	for _, e := range q.Expectations {
		m[e.Name] = e
	}
	return m
}

// checkCounts compares q with DuckDB's counts c (of one epoch or summed).
func checkCounts(t *testing.T, what string, q DataQuality, c duckCounts) {
	t.Helper()
	got := byName(q)
	if len(got) != len(testExpectations) {
		t.Errorf("%s: %d expectations counted, want %d: %+v", what, len(got), len(testExpectations), q)
	}
	for i, e := range testExpectations {
		g := got[e.name]
		if g.FailedRecords != c.Failed[i] || g.PassedRecords != c.Rows-c.Failed[i] || g.Action != string(e.action) {
			t.Errorf("%s: %s (%s): passed %d failed %d, DuckDB: passed %d failed %d (of %d rows)", what, e.name, e.action,
				g.PassedRecords, g.FailedRecords, c.Rows-c.Failed[i], c.Failed[i], c.Rows)
		}
	}
	if q.DroppedRecords != c.Dropped {
		t.Errorf("%s: dropped_records %d, DuckDB %d", what, q.DroppedRecords, c.Dropped)
	}
}

func sum(cs []duckCounts) duckCounts {
	s := duckCounts{Failed: make([]int64, len(testExpectations))}
	for _, c := range cs {
		for i, f := range c.Failed {
			s.Failed[i] += f
		}
		s.Rows += c.Rows
		s.Dropped += c.Dropped
	}
	return s
}

// TestCountsEqualDuckDBPerEpoch: read-files cuts one epoch per file (--max-files-per-epoch 1);
// every epoch's passed and failed rows of each expectation, and the dropped rows, equal
// DuckDB's COUNT(*) FILTER (WHERE NOT predicate) over that file, and so do the totals; the
// rows that reach the sink are the rows read minus the dropped ones.
func TestCountsEqualDuckDBPerEpoch(t *testing.T) {
	dir := t.TempDir()
	files := writeInput(t, dir, 8, 500, 7)
	want := duckDB(t, files)
	script := `export STREAMKIT_CHECKPOINT=ck; "$SK" read-files --stable-after 0 --max-files-per-epoch 1 --schema '` + testSchema + `' 'in/*.csv' |
		"$SK" expect --progress json` + expectArgs() + ` 2> progress.jsonl | "$SK" print --format csv > out.csv`
	if _, stderr, code := peertest.Pipeline(t, dir, nil, script); code != 0 {
		t.Fatalf("pipeline: exit %d: %s", code, stderr)
	}
	s := stateDump(t, dir)
	if s.Committed != uint64(len(files)) || len(s.Epochs) != len(files) {
		t.Fatalf("committed epoch %d with %d epochs of counts, want %d", s.Committed, len(s.Epochs), len(files))
	}
	for i, e := range s.Epochs {
		if e.Epoch != uint64(i+1) {
			t.Fatalf("epochs %+v", s.Epochs)
		}
		checkCounts(t, fmt.Sprintf("epoch %d (%s)", e.Epoch, filepath.Base(files[i])), e.DataQuality, want[i])
	}
	total := sum(want)
	if s.Total == nil {
		t.Fatal("no totals")
	}
	checkCounts(t, "total", s.Total.DataQuality, total)
	// The last --progress=json line (final) carries the totals as data_quality.
	prog, err := os.ReadFile(filepath.Join(dir, "progress.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var last struct {
		Final       bool        `json:"final"`
		DataQuality DataQuality `json:"data_quality"`
	}
	for _, l := range strings.Split(strings.TrimSpace(string(prog)), "\n") {
		if strings.HasPrefix(l, "{") {
			if err := json.Unmarshal([]byte(l), &last); err != nil {
				t.Fatalf("progress line %s: %v", l, err)
			}
		}
	}
	if !last.Final {
		t.Fatalf("no final progress line in\n%s", prog)
	}
	checkCounts(t, "final progress line", last.DataQuality, total)
	out, err := os.ReadFile(filepath.Join(dir, "out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if rows := int64(strings.Count(string(out), "\n") - 1); rows != total.Rows-total.Dropped {
		t.Errorf("%d rows reached print, want %d read - %d dropped", rows, total.Rows, total.Dropped)
	}
	if total.Dropped == 0 || total.Failed[0] == 0 {
		t.Fatalf("the input has no bad rows: %+v", total)
	}
}

// tableRows returns the rows of the Delta table at path, sorted, as JSON texts, read by
// delta-rs (deltalake), and the table's version.
func tableRows(t *testing.T, path string) ([]string, int64) {
	py := peertest.Python(t)
	out := peertest.RunPython(t, py, `
import sys, json
from deltalake import DeltaTable
dt = DeltaTable(sys.argv[1])
rows = dt.to_pyarrow_table().to_pylist()
print(json.dumps({"version": dt.version(), "rows": sorted(json.dumps({k: r[k] for k in ("id", "amount", "score", "name")}, sort_keys=True) for r in rows)}))
`, path)
	var res struct {
		Version int64    `json:"version"`
		Rows    []string `json:"rows"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("deltalake: %v: %s", err, out)
	}
	return res.Rows, res.Version
}

// TestFailStopsBeforeTheEpochCommits: in read-files | expect --expect-or-fail | write-delta,
// the run fails (exit 1) at the first violating row of the fourth file, naming the
// expectation, the row's file:line and the offending values; the table holds exactly the rows
// of whole epochs before it (delta-rs reads them), nothing of the failing epoch, and no stage's
// checkpoint is committed at the failing epoch or later.
func TestFailStopsBeforeTheEpochCommits(t *testing.T) {
	dir := t.TempDir()
	good := "id,amount,score,name\n1,10,0.5,ann\n2,20,0.1,bob\n"
	peertest.WriteFiles(t, filepath.Join(dir, "in"),
		"f1.csv", good, "f2.csv", strings.ReplaceAll(good, "\n1,", "\n3,"),
		"f3.csv", "id,amount,score,name\n5,1,0.2,cy\n",
		"f4.csv", "id,amount,score,name\n6,5,0.3,dee\n7,-4,0.2,eve\n8,9,0.1,fay\n",
		"f5.csv", good)
	script := `export STREAMKIT_CHECKPOINT=ck; "$SK" read-files --stable-after 0 --max-files-per-epoch 1 --with-metadata --schema '` + testSchema + `' 'in/*.csv' 2>/dev/null |
		"$SK" expect --expect 'has_id: id IS NOT NULL' --expect-or-fail 'amount_ok: amount >= 0 AND name IS NOT NULL' | "$SK" write-delta lake 2>/dev/null`
	_, stderr, code := peertest.Pipeline(t, dir, nil, script)
	if code != 1 {
		t.Fatalf("pipeline: exit %d, want 1: %s", code, stderr)
	}
	for _, want := range []string{"expectation amount_ok (--expect-or-fail) violated at ", "in/f4.csv:3: ",
		"amount=-4, name=\"eve\"", "failing before epoch 4 commits"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// write-delta commits in the background: the commit of the epoch before the failing one
	// may still be in flight when the input breaks off, and is then left to the next run
	// (which replays it). The table holds the rows of whole epochs 1…k, k = version+1 ≤ 3.
	rows, version := tableRows(t, filepath.Join(dir, "lake"))
	byEpoch := [][]string{
		{`{"amount": 10, "id": 1, "name": "ann", "score": 0.5}`, `{"amount": 20, "id": 2, "name": "bob", "score": 0.1}`},
		{`{"amount": 10, "id": 3, "name": "ann", "score": 0.5}`, `{"amount": 20, "id": 2, "name": "bob", "score": 0.1}`},
		{`{"amount": 1, "id": 5, "name": "cy", "score": 0.2}`},
	}
	if version < 0 || version > 2 {
		t.Fatalf("table version %d: want the commits of at most epochs 1-3 (one each)", version)
	}
	var want []string
	for _, e := range byEpoch[:version+1] {
		want = append(want, e...)
	}
	slices.Sort(want)
	if !slices.Equal(rows, want) {
		t.Fatalf("table (version %d) holds\n%s\nwant the rows of epochs 1-%d only:\n%s", version, strings.Join(rows, "\n"), version+1, strings.Join(want, "\n"))
	}
	t.Logf("the table holds epochs 1-%d; nothing of epoch 4", version+1)
	for _, stage := range []string{"read-files", "expect", "write-delta"} {
		b, err := os.ReadDir(filepath.Join(dir, "ck", stage, "commits"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range b {
			if n, _ := strconv.ParseUint(strings.TrimSuffix(e.Name(), ".json"), 10, 64); n >= 4 {
				t.Errorf("%s: epoch %d committed", stage, n)
			}
		}
	}
}
