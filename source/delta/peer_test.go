package delta

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

// Peer tests: tables written in the test run by delta-rs (deltalake) and by Apache Spark with
// delta-spark (testdata/peers.py) are read by the streamkit binary's read-delta, and every
// value must equal delta-rs's own read of the same table (and version / partition filter).

func peerPython(t *testing.T, args ...string) string {
	t.Helper()
	return peerScript(t, "peers.py", args...)
}

// peerScript runs testdata/SCRIPT ARGS with the peers' Python and returns its stdout.
func peerScript(t *testing.T, script string, args ...string) string {
	t.Helper()
	py := peertest.Python(t)
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", script)}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", script, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// readDeltaTo runs `streamkit read-delta ARGS` and writes its stdout to out.
func readDeltaTo(t *testing.T, out string, args ...string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(peertest.Binary(t), append([]string{"read-delta", "--progress", "off"}, args...)...)
	cmd.Stdout = f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("read-delta %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
}

// compareWithDeltaRs reads each case with read-delta and compares it with delta-rs in one
// Python process. A case is {table spec for peers.py compare, read-delta arguments}.
func compareWithDeltaRs(t *testing.T, dir string, cases [][2]string) {
	t.Helper()
	var args []string
	for i, c := range cases {
		out := filepath.Join(dir, "out"+string(rune('a'+i))+".arrows")
		readDeltaTo(t, out, strings.Split(c[1], "\x00")...)
		args = append(args, c[0], out)
	}
	res := peerPython(t, append([]string{"compare"}, args...)...)
	t.Logf("%s", res)
	if strings.Count(res, "ok ") != len(cases) {
		t.Fatalf("compare: %s", res)
	}
}

func TestPeerDeltaRsTables(t *testing.T) {
	peertest.Python(t)
	dir := t.TempDir()
	names := strings.Fields(peerPython(t, "deltars", dir))
	var cases [][2]string
	for _, n := range names {
		p := filepath.Join(dir, n)
		cases = append(cases, [2]string{p, p})
	}
	p := filepath.Join(dir, "rs_partitioned")
	cases = append(cases,
		[2]string{p + "@0", p + "\x00--version\x000"},
		[2]string{p + "?part=B B", p + "\x00--where\x00part = 'B B'"},
		[2]string{p + "?part=é", p + "\x00--where\x00part in ('é') and day is not null"},
	)
	compareWithDeltaRs(t, dir, cases)
}

func TestPeerSparkTables(t *testing.T) {
	py := peertest.Python(t)
	if err := exec.Command(py, "-c", "import pyspark, delta").Run(); err != nil {
		if os.Getenv("STREAMKIT_REQUIRE_PEERS") == "1" {
			t.Fatalf("pyspark/delta-spark missing: run scripts/peers.sh spark")
		}
		t.Skip("pyspark/delta-spark missing: run scripts/peers.sh spark")
	}
	dir := t.TempDir()
	names := strings.Fields(peerPython(t, "spark", dir))
	if len(names) != 3 {
		t.Fatalf("spark fixtures: %q", names)
	}
	var cases [][2]string
	for _, n := range names {
		p := filepath.Join(dir, n)
		cases = append(cases, [2]string{p, p})
	}
	p := filepath.Join(dir, "spark_checkpointed")
	if _, err := os.Stat(filepath.Join(p, "_delta_log", "00000000000000000010.checkpoint.parquet")); err != nil {
		t.Fatalf("Spark wrote no checkpoint at version 10: %v", err)
	}
	cases = append(cases, [2]string{p + "@4", p + "\x00--version\x004"})
	compareWithDeltaRs(t, dir, cases)

	// INT96 over years 1 to 9999 (0001-01-01, 1969-12-31 23:59:59.999999, 9999-12-31 …, a
	// null), top-level and inside a struct and an array: read-delta and backfill --from-delta
	// (read back from its target) equal Spark's own read of the table.
	p = filepath.Join(dir, "spark_int96_range")
	direct := filepath.Join(dir, "int96.arrows")
	readDeltaTo(t, direct, p)
	target := filepath.Join(dir, "int96_backfilled")
	bf := exec.Command(peertest.Binary(t), "backfill", "--from-delta", p, "--to", target, "--flow", "int96")
	if out, err := bf.CombinedOutput(); err != nil {
		t.Fatalf("backfill --from-delta: %v\n%s", err, out)
	}
	backfilled := filepath.Join(dir, "int96_backfilled.arrows")
	readDeltaTo(t, backfilled, target)
	res := peerPython(t, "compare-spark", p+".json", direct, backfilled)
	t.Logf("%s", res)
	if strings.Count(res, "ok ") != 2 {
		t.Fatalf("compare-spark: %s", res)
	}
	int96Readers(t, p)
	legacyPeerReads(t, dir)
}

// int96Readers compares DuckDB's and delta-rs's reads of spark_int96_range (table p) with
// Spark's, as the issue asks of all three readers, and pins what each gives today. DuckDB
// (delta extension) reads every row as Spark does. delta-rs reads INT96 through Arrow
// nanoseconds in int64: its engine (QueryBuilder) reads the rows within 1677–2262 (ids 1, 2,
// 4: 1969-12-31 23:59:59.999999, the epoch, null) as Spark does, and wraps 0001-01-01 (id 0)
// and 9999-12-31 23:59:59.999999 (id 3) around 2⁶⁴ ns, to 1754-08-30 22:43:41.128655 and
// 1816-03-30 05:56:08.066277; its to_pyarrow_table fails on the table. These are known
// differences of delta-rs that streamkit does not share (it equals Spark, above).
func int96Readers(t *testing.T, p string) {
	t.Helper()
	res := peerPython(t, "int96-readers", p+".json", p)
	t.Logf("int96-readers:\n%s", res)
	lines := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(res), "\n") {
		f := strings.SplitN(l, " ", 2)
		if len(f) == 2 {
			lines[f[0]] = append(lines[f[0]], f[1])
		}
	}
	for _, c := range []struct {
		reader string
		want   []string
	}{
		{"duckdb", []string{"equal 0 1 2 3 4"}},
		{"deltars", []string{
			"differs 0 [0, -6795364578871345, -6795364578871345, [-6795364578871345, null]]",
			"differs 3 [3, -4852116231933723, -4852116231933723, [-4852116231933723, null]]",
			"equal 1 2 4"}},
		{"deltars-pyarrow", []string{"fails Casting from timestamp[ns] to timestamp[us, tz=UTC] would lose data: -6795364578871345152"}},
	} {
		if got := lines[c.reader]; strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: got\n%s\nwant\n%s", c.reader, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}

// legacyPeerReads reads the LEGACY-rebase and column-mapping tables of peers.py
// legacy_fixtures with read-delta and compares them with Spark's reads: every DATE and
// TIMESTAMP (INT96 or INT64, top-level, in a struct, in an array of structs) before, in and
// after the 1582 switch, and --where predicates near pre-1582 bounds, which must also prune
// files by the Delta log's statistics (Spark writes them from the values, in the proleptic
// Gregorian calendar, whatever the rebase mode of the Parquet file).
func legacyPeerReads(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "spark_legacy")
	var want struct {
		Where map[string][]int64 `json:"where"`
	}
	b, err := os.ReadFile(p + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	all := filepath.Join(dir, "legacy.arrows")
	readDeltaTo(t, all, p)
	args := []string{p + ".json", all}
	var preds []string
	for pred := range want.Where {
		preds = append(preds, pred)
	}
	sort.Strings(preds)
	for i, pred := range preds {
		out := filepath.Join(dir, fmt.Sprintf("legacy-%d.arrows", i))
		if pruned := readDeltaPruned(t, out, p, pred); pruned == 0 {
			t.Errorf("spark_legacy --where %q: no file pruned", pred)
		}
		args = append(args, pred, out)
	}
	res := peerPython(t, append([]string{"compare-rows"}, args...)...)
	t.Logf("%s", res)
	if strings.Count(res, "ok ") != 1+len(preds) {
		t.Fatalf("compare-rows spark_legacy: %s", res)
	}
	p = filepath.Join(dir, "spark_colmap_int96")
	out := filepath.Join(dir, "colmap_int96.arrows")
	readDeltaTo(t, out, p)
	res = peerPython(t, "compare-rows", p+".json", out)
	t.Logf("%s", res)
	if strings.Count(res, "ok ") != 1 {
		t.Fatalf("compare-rows spark_colmap_int96: %s", res)
	}
}

// TestPeerWhere reads tables written by delta-rs and by Spark (their own statistics: strings
// cut at 32 code points, ms timestamps, NaN in a double column) with read-delta --where, and
// compares the rows with DuckDB's delta_scan … WHERE and, for the Spark table, with Spark's own
// filter of the same predicate; predicates that statistics decide must also skip files.
func TestPeerWhere(t *testing.T) {
	py := peertest.Python(t)
	dir := t.TempDir()
	tables := strings.Fields(whereRun(t, py, "deltars", dir))
	if err := exec.Command(py, "-c", "import pyspark, delta").Run(); err == nil {
		tables = append(tables, strings.Fields(whereRun(t, py, "spark", dir))...)
	} else if os.Getenv("STREAMKIT_REQUIRE_PEERS") == "1" {
		t.Fatalf("pyspark/delta-spark missing: run scripts/peers.sh spark")
	}
	long := strings.Repeat("x", 31)
	preds := []struct {
		where  string
		pruned bool // the statistics or partition values rule files out
	}{
		{"id > 45", true},
		{"id BETWEEN 12 AND 17 OR id = 55", true},
		{"NOT (id >= 5 AND id <= 50)", true},
		{"s = '" + long + "b12'", false},
		{"s >= '" + long + "z'", false},
		{"s < '" + long + "a'", true},
		{"s IS NULL AND part = 'A'", true},
		{"f > 100", false},
		{"f < 0.5", true},
		{"f = 3.5 OR f <> f", false},
		{"d >= 0.55", true},
		{"day < DATE '2024-01-03' AND id % 2 = 0", true},
		{"ts > TIMESTAMP '2024-03-10 12:00:05.012339'", true},
		{"ts >= TIMESTAMP '2024-03-10 12:00:02.029615' AND ts <= TIMESTAMP '2024-03-10 12:00:02.029617'", true},
		{"part IN ('A', 'B') AND s LIKE '%y%'", true},
		{"part IS NULL OR upper(s) LIKE '%Z%'", false},
	}
	var args []string
	for _, tb := range tables {
		p := filepath.Join(dir, tb)
		for i, c := range preds {
			out := filepath.Join(dir, fmt.Sprintf("%s-%d.arrows", tb, i))
			pruned := readDeltaPruned(t, out, p, c.where)
			if c.pruned && pruned == 0 {
				t.Errorf("%s --where %q: no file pruned", tb, c.where)
			}
			args = append(args, p, c.where, out)
		}
	}
	res := whereRun(t, py, append([]string{"compare"}, args...)...)
	t.Logf("%s", res)
	if strings.Count(res, "ok ") != len(tables)*len(preds) {
		t.Fatalf("compare: %s", res)
	}
}

func whereRun(t *testing.T, py string, args ...string) string {
	t.Helper()
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", "where_peers.py")}, args...)...)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("where_peers.py %s: %v\n%s%s", args[0], err, out, stderr.String())
	}
	return string(out)
}

// readDeltaPruned runs read-delta TABLE --where WHERE into out and returns files_pruned from
// its last --progress=json line.
func readDeltaPruned(t *testing.T, out, table, where string) int64 {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(peertest.Binary(t), "read-delta", "--progress", "json", table, "--where", where)
	cmd.Stdout = f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("read-delta --where %q: %v\n%s", where, err, stderr.String())
	}
	var last struct {
		FilesPruned int64 `json:"files_pruned"`
	}
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(l, "{") {
			json.Unmarshal([]byte(l), &last)
		}
	}
	return last.FilesPruned
}
