package delta

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/peertest"
)

// Interop tests: tables written by this package are read by delta-rs (deltalake) and DuckDB's
// delta extension (delta-kernel-rs) through testdata/check_table.py, which compares them row
// by row with the rows the test wrote (saved as an Arrow IPC file in canonical types).

func runPython(t *testing.T, script string, args ...string) string {
	t.Helper()
	py := peertest.Python(t)
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", script)}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", script, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// expectation collects the canonical form of every row written, for check_table.py.
type expectation struct {
	t    *testing.T
	mem  memory.Allocator
	conf conformer
	recs []arrow.RecordBatch
}

func newExpectation(t *testing.T, mem memory.Allocator, meta *delta.Metadata) *expectation {
	st, err := meta.Schema()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := st.ToArrow()
	if err != nil {
		t.Fatal(err)
	}
	e := &expectation{t: t, mem: mem, conf: conformer{mem: mem, target: sc}}
	t.Cleanup(func() {
		for _, r := range e.recs {
			r.Release()
		}
	})
	return e
}

func (e *expectation) add(rec arrow.RecordBatch) {
	c, err := e.conf.record(rec)
	if err != nil {
		e.t.Fatal(err)
	}
	e.recs = append(e.recs, c)
}

func (e *expectation) file(path string) string {
	writeIPCFile(e.t, path, e.mem, e.recs...)
	return path
}

var specialParts = []string{"A/A", "B B", "R&D", "50%", "a?", "é", "", "x=y:z", `#{[]}^'*"\`, "tab\tnl"}

var richSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "part", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
	{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "dec38", Type: &arrow.Decimal128Type{Precision: 38, Scale: 6}, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "tsny", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "America/New_York"}, Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "inner", Type: arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
			arrow.Field{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		), Nullable: true},
	), Nullable: true},
	{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "ll", Type: arrow.LargeListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
	{Name: "lst", Type: arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	)), Nullable: true},
}, nil)

// richRows builds n rows starting at id0, cycling through special partition values, NaN/±Inf,
// nulls and nested values.
func richRows(t *testing.T, mem memory.Allocator, id0, n int) arrow.RecordBatch {
	var rows []string
	floats := []string{"1.5", `"NaN"`, `"Inf"`, `"-Inf"`, "-0.25", "null"}
	for k := 0; k < n; k++ {
		id := id0 + k
		part := fmt.Sprintf("%q", specialParts[id%len(specialParts)])
		if id%13 == 7 {
			part = "null"
		}
		f := floats[id%len(floats)]
		long := strings.Repeat("é", 30+id%5) + fmt.Sprintf("-%d", id)
		ts := 1706702400000 + int64(id)*86_400_123
		row := fmt.Sprintf(`{"id":%d,"part":%s,"i8":%d,"u8":%d,"u32":%d,"u64":%d,"f32":%s,"f64":%s,`+
			`"dec":"%d.%02d","dec38":"-%d12345678901234567890.123456","b":%t,"s":%q,"ls":"ls-%d","bin":"%s",`+
			`"d":%d,"ts":%d,"tsny":%d,`+
			`"st":{"a":%d,"b":"sb%d","inner":{"x":%s,"t":%d}},"l":[%d,%d],"ll":["x%d",null],`+
			`"m":[{"key":"k%d","value":%d},{"key":"z","value":null}],"lst":[{"k":"a","v":%d.5},null]}`,
			id, part, id%100-50, id%256, 4000000000+id, uint64(18446744073709551615)-uint64(id), f, f,
			id, id%100, id%10, id%2 == 0, long, id, "AAEC",
			19000+id, ts, ts*1000+123,
			id, id, f, ts*1000+7, id, -id, id,
			id, id, id)
		if id%11 == 5 { // a row of nulls, except the key
			row = fmt.Sprintf(`{"id":%d,"part":%s}`, id, part)
		}
		if id%17 == 3 {
			row = fmt.Sprintf(`{"id":%d,"part":%s,"st":{"a":null,"b":null,"inner":null},"l":[],"m":[]}`, id, part)
		}
		rows = append(rows, row)
	}
	return recFromJSON(t, mem, richSchema, "["+strings.Join(rows, ",")+"]")
}

func TestInteropRichPartitioned(t *testing.T) {
	peertest.Python(t)
	mem := newMem(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "rich table")
	tbl := delta.NewTable(root, mem)
	var s *delta.Snapshot
	var exp *expectation
	for c := 0; c < 12; c++ {
		rec := richRows(t, mem, c*20, 20)
		var res *delta.CommitResult
		if s == nil {
			res = appendBatches(t, tbl, nil, &delta.CreateOptions{PartitionColumns: []string{"part"}}, richSchema,
				WriterOptions{Allocator: mem}, &delta.Txn{AppID: "rich", Version: int64(c)}, rec)
			exp = newExpectation(t, mem, res.Snapshot.Metadata())
		} else {
			res = appendBatches(t, tbl, s, nil, richSchema, WriterOptions{Allocator: mem}, &delta.Txn{AppID: "rich", Version: int64(c)}, rec)
		}
		exp.add(rec)
		rec.Release()
		s = res.Snapshot
	}
	if _, err := os.Stat(filepath.Join(root, delta.LogDir, delta.CheckpointFileName(10))); err != nil {
		t.Fatalf("no checkpoint at 10: %v", err)
	}
	out := runPython(t, "check_table.py", root, exp.file(filepath.Join(dir, "expected.arrow")), "--key", "id", "--empty-as-null", "part",
		"--probe", "id", "--probe", "s", "--probe", "ts", "--probe", "d", "--probe", "dec", "--probe", "f64", "--probe", "i8", "--probe", "tsny")
	t.Log(out)
}

var partTypesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 6, Scale: 2}, Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func TestInteropPartitionTypes(t *testing.T) {
	peertest.Python(t)
	mem := newMem(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "t")
	tbl := delta.NewTable(root, mem)
	// No negative decimal partition value: deltalake 1.6.6 mis-parses them ("-1.25" becomes
	// "-1.-25" when it builds the partition expression); DuckDB reads them fine.
	rec := recFromJSON(t, mem, partTypesSchema, `[
		{"id":1,"d":"2024-01-31","ts":1706702400123456,"n":-5,"dec":"12.30","flag":true,"v":"a"},
		{"id":2,"d":"1970-01-01","ts":0,"n":0,"dec":"0.01","flag":false,"v":"b"},
		{"id":3,"d":null,"ts":null,"n":null,"dec":null,"flag":null,"v":"c"},
		{"id":4,"d":"2024-01-31","ts":1706702400123456,"n":-5,"dec":"12.30","flag":true,"v":"d"}]`)
	defer rec.Release()
	res := appendBatches(t, tbl, nil, &delta.CreateOptions{PartitionColumns: []string{"d", "ts", "n", "dec", "flag"}}, partTypesSchema, WriterOptions{Allocator: mem}, nil, rec)
	exp := newExpectation(t, mem, res.Snapshot.Metadata())
	exp.add(rec)
	var pv []string
	for _, a := range res.Snapshot.Files() {
		pv = append(pv, mustJSON(a.PartitionValues))
	}
	got := strings.Join(pv, "\n")
	for _, want := range []string{`"ts":"2024-01-31T12:00:00.123456Z"`, `"d":"2024-01-31"`, `"dec":"12.30"`, `"n":"-5"`, `"flag":"true"`, `"d":null`} {
		if !strings.Contains(got, want) {
			t.Errorf("partition values lack %s:\n%s", want, got)
		}
	}
	t.Log(runPython(t, "check_table.py", root, exp.file(filepath.Join(dir, "expected.arrow")), "--key", "id"))
}

func TestInteropTimestampNTZ(t *testing.T) {
	peertest.Python(t)
	mem := newMem(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "t")
	tbl := delta.NewTable(root, mem)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	rec := recFromJSON(t, mem, sc, `[{"id":1,"ntz":1706702400123456789,"ts":1706702400},{"id":2,"ntz":null,"ts":null},{"id":3,"ntz":-1000,"ts":-1}]`)
	defer rec.Release()
	res := appendBatches(t, tbl, nil, &delta.CreateOptions{}, sc, WriterOptions{Allocator: mem, TruncateTimestamps: true}, nil, rec)
	p := res.Snapshot.Protocol()
	if p.MinReaderVersion != 3 || p.MinWriterVersion != 7 {
		t.Errorf("protocol %+v", p)
	}
	exp := newExpectation(t, mem, res.Snapshot.Metadata())
	exp.conf.truncate = true
	exp.add(rec)
	t.Log(runPython(t, "check_table.py", root, exp.file(filepath.Join(dir, "expected.arrow")), "--key", "id"))
}

func TestInteropManyCommitsCheckpoint(t *testing.T) {
	peertest.Python(t)
	mem := newMem(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "t")
	tbl := delta.NewTable(root, mem)
	var s *delta.Snapshot
	var exp *expectation
	for c := 0; c < 105; c++ {
		rec := simpleRec(t, mem, 2*c, 2*c+1)
		var res *delta.CommitResult
		if s == nil {
			res = appendBatches(t, tbl, nil, &delta.CreateOptions{PartitionColumns: []string{"part"}}, simpleSchema, WriterOptions{Allocator: mem}, &delta.Txn{AppID: "many", Version: int64(c)}, rec)
			exp = newExpectation(t, mem, res.Snapshot.Metadata())
		} else {
			res = appendBatches(t, tbl, s, nil, simpleSchema, WriterOptions{Allocator: mem}, &delta.Txn{AppID: "many", Version: int64(c)}, rec)
		}
		exp.add(rec)
		rec.Release()
		s = res.Snapshot
	}
	lc, err := tbl.ReadLastCheckpoint()
	if err != nil || lc.Version != 100 {
		t.Fatalf("_last_checkpoint %+v %v", lc, err)
	}
	// Metadata cleanup: drop every commit before the checkpoint so readers must use it.
	for v := int64(0); v < 100; v++ {
		if err := os.Remove(filepath.Join(root, delta.LogDir, delta.CommitFileName(v))); err != nil {
			t.Fatal(err)
		}
	}
	s2, err := tbl.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s2.TxnVersion("many"); v != 104 || s2.NumFiles() != s.NumFiles() {
		t.Errorf("after cleanup: txn %d files %d/%d", v, s2.NumFiles(), s.NumFiles())
	}
	t.Log(runPython(t, "check_table.py", root, exp.file(filepath.Join(dir, "expected.arrow")), "--key", "id"))
}

func TestInteropAppendToDeltaRsTable(t *testing.T) {
	peertest.Python(t)
	mem := newMem(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "t")
	theirs := filepath.Join(dir, "theirs.arrow")
	runPython(t, "deltars_create.py", root, theirs)
	tbl := delta.NewTable(root, mem)
	s, err := tbl.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckWrite(); err != nil {
		t.Fatal(err)
	}
	sc, err := s.ArrowSchema()
	if err != nil {
		t.Fatal(err)
	}
	rec := recFromJSON(t, mem, sc, `[{"id":10,"region":"eu","amount":0.5,"ts":1706702400000001},{"id":11,"region":"R&D x","amount":null,"ts":null}]`)
	defer rec.Release()
	for i := 0; i < 10; i++ { // past a checkpoint (delta-rs' table starts at version 1)
		if i > 0 {
			rec2 := recFromJSON(t, mem, sc, fmt.Sprintf(`[{"id":%d,"region":"us","amount":%d,"ts":0}]`, 100+i, i))
			s = appendBatches(t, tbl, s, nil, nil, WriterOptions{Allocator: mem}, nil, rec2).Snapshot
			writeIPCFile(t, filepath.Join(dir, fmt.Sprintf("ours%d.arrow", i)), mem, rec2)
			rec2.Release()
			continue
		}
		s = appendBatches(t, tbl, s, nil, nil, WriterOptions{Allocator: mem}, nil, rec).Snapshot
	}
	writeIPCFile(t, filepath.Join(dir, "ours0.arrow"), mem, rec)
	files := []string{theirs}
	for i := 0; i < 10; i++ {
		files = append(files, filepath.Join(dir, fmt.Sprintf("ours%d.arrow", i)))
	}
	t.Log(runPython(t, "check_table.py", root, strings.Join(files, ","), "--key", "id"))
}

// TestInteropConcurrentWithDeltaRs appends from this package and from delta-rs at the same
// time: every commit of both must land (put-if-absent on both sides, retries here).
func TestInteropConcurrentWithDeltaRs(t *testing.T) {
	py := peertest.Python(t)
	mem := newMem(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "t")
	tbl := delta.NewTable(root, mem)
	r0 := simpleRec(t, mem, 0)
	res := appendBatches(t, tbl, nil, &delta.CreateOptions{PartitionColumns: []string{"part"}}, simpleSchema, WriterOptions{Allocator: mem}, nil, r0)
	exp := newExpectation(t, mem, res.Snapshot.Metadata())
	exp.add(r0)
	r0.Release()
	const n = 30
	cmd := exec.Command(py, filepath.Join("testdata", "deltars_append.py"), root, fmt.Sprint(n), "1000", filepath.Join(dir, "rs.arrow"))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Start appending once delta-rs has committed, so the writers overlap.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ok, _ := fileExists(filepath.Join(root, delta.LogDir, delta.CommitFileName(1))); ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s := res.Snapshot
	retried, ours := 0, 0
	var werr error
	running := true
	for ours < n && (running || ours < 10) {
		select {
		case werr = <-done:
			running = false
		default:
		}
		ours++
		rec := simpleRec(t, mem, ours)
		r := appendBatches(t, tbl, s, nil, nil, WriterOptions{Allocator: mem}, &delta.Txn{AppID: "go", Version: int64(ours)}, rec)
		exp.add(rec)
		rec.Release()
		if r.Attempts > 1 {
			retried++
		}
		s = r.Snapshot
	}
	if running {
		werr = <-done
	}
	if werr != nil {
		t.Fatalf("deltars_append.py: %v\n%s", werr, out.String())
	}
	t.Logf("%d go commits, %d lost a race and were retried", ours, retried)
	final, err := tbl.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if final.Version() != int64(n+ours) || final.NumFiles() != n+ours+1 {
		t.Errorf("version %d with %d files, want %d with %d", final.Version(), final.NumFiles(), n+ours, n+ours+1)
	}
	if v, _ := final.TxnVersion("go"); v != int64(ours) {
		t.Errorf("txn version %d", v)
	}
	t.Log(runPython(t, "check_table.py", root, exp.file(filepath.Join(dir, "go.arrow"))+","+filepath.Join(dir, "rs.arrow"), "--key", "id"))
}

func fileExists(p string) (bool, error) {
	_, err := os.Stat(p)
	if err == nil {
		return true, nil
	}
	if os.IsNotExist(err) {
		return false, nil
	}
	return false, err
}
