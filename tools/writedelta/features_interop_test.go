package writedelta

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/peertest"
)

// TestSparkFeatureTables appends with write-delta to tables Spark made with table features,
// in one Spark session (scripts/py/delta_features.py):
//   - a type-widened table (ALTER TABLE … CHANGE COLUMN … TYPE after rows were written):
//     write-delta appends under the current types, also from narrower input types, refuses
//     input that only a wider column would hold (it never widens a column), and Spark reads
//     every row with the widened types;
//   - a liquid-clustered table (CLUSTER BY, clustered once by Spark's OPTIMIZE): write-delta's
//     files have min/max statistics for the clustering columns, delta describe names them,
//     delta optimize compacts only the unclustered files and keeps the clustered ones, and
//     Spark then reads every row, still reports the clustering columns in DESCRIBE DETAIL and
//     clusters the table again with OPTIMIZE; an ALTER TABLE … CLUSTER BY between two
//     epochs of one write-delta changes the clustering columns without stopping it;
//   - an IcebergCompatV2 table (column mapping name, arrays and a map): write-delta appends,
//     its data file carries the nested ids as the Parquet field ids of list elements and map
//     keys and values, Spark appends after it (checking the feature's requirements) and reads
//     every row.
func TestSparkFeatureTables(t *testing.T) {
	peertest.Python(t)
	peertest.Binary(t)
	requireSpark(t)
	mem := memory.NewGoAllocator()
	dir := t.TempDir()
	spark := startSparkScript(t, filepath.Join(peertest.Root(t), "scripts", "py", "delta_features.py"))
	sql := func(stmts ...string) {
		t.Helper()
		if _, err := spark.call(map[string]any{"cmd": "sql", "sql": stmts}); err != nil {
			t.Fatal(err)
		}
	}
	sparkRows := func(query string) ([]string, map[string]any) {
		t.Helper()
		res, err := spark.call(map[string]any{"cmd": "rows", "query": query})
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, r := range res["rows"].([]any) {
			rows = append(rows, r.(string))
		}
		return rows, res["types"].(map[string]any)
	}
	clusteringColumns := func(path string) []any {
		t.Helper()
		res, err := spark.call(map[string]any{"cmd": "detail", "path": path})
		if err != nil {
			t.Fatal(err)
		}
		cc, _ := res["detail"].(map[string]any)["clusteringColumns"].([]any)
		return cc
	}

	// Type widening.
	wide := filepath.Join(dir, "widened")
	wt := "delta.`" + wide + "`"
	sql("CREATE TABLE "+wt+" (id INT, v SHORT, f FLOAT, d DATE) USING DELTA TBLPROPERTIES ('delta.enableTypeWidening' = 'true', 'delta.feature.timestampNtz' = 'supported')",
		"INSERT INTO "+wt+" VALUES (0, 1, 0.5, DATE'2024-01-01'), (1, -2, 1.25, DATE'2024-01-02')",
		"ALTER TABLE "+wt+" CHANGE COLUMN id TYPE BIGINT",
		"ALTER TABLE "+wt+" CHANGE COLUMN v TYPE INT",
		"ALTER TABLE "+wt+" CHANGE COLUMN f TYPE DOUBLE",
		"ALTER TABLE "+wt+" CHANGE COLUMN d TYPE TIMESTAMP_NTZ")
	want := []string{
		`{"d":"2024-01-01T00:00:00","f":0.5,"id":0,"v":1}`,
		`{"d":"2024-01-02T00:00:00","f":1.25,"id":1,"v":-2}`,
	}
	current := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "d", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	}, nil)
	narrow := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "d", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	}, nil)
	var cur, nar []string
	for k := 2; k < 12; k++ {
		cur = append(cur, fmt.Sprintf(`{"id":%d,"v":%d,"f":%d.5,"d":"2024-01-03T%02d:30:00"}`, int64(k)<<33, 100000+k, k, k))
		want = append(want, fmt.Sprintf(`{"d":"2024-01-03T%02d:30:00","f":%d.5,"id":%d,"v":%d}`, k, k, int64(k)<<33, 100000+k))
	}
	for k := 12; k < 15; k++ {
		nar = append(nar, fmt.Sprintf(`{"id":%d,"v":%d,"f":%d.25,"d":"2024-01-04T00:00:%02d"}`, k, -k, k, k))
		want = append(want, fmt.Sprintf(`{"d":"2024-01-04T00:00:%02d","f":%d.25,"id":%d,"v":%d}`, k, k, k, -k))
	}
	r1, r2 := fromJSON(t, mem, current, cur), fromJSON(t, mem, narrow, nar)
	defer r1.Release()
	defer r2.Release()
	writeDelta(t, mem, current, [][]arrow.RecordBatch{{r1}}, wide, "--flow", "wide")
	writeDelta(t, mem, narrow, [][]arrow.RecordBatch{{r2}}, wide, "--flow", "narrow")
	// A long that only a widened v would hold: write-delta does not widen, it refuses.
	tooWide := arrow.NewSchema(slices.Concat(current.Fields()[:1], []arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}), nil)
	r3 := fromJSON(t, mem, tooWide, []string{`{"id":99,"v":1099511627776}`})
	defer r3.Release()
	for _, extra := range [][]string{nil, {"--merge-schema"}} {
		p := startWD(t, mem, tooWide, append([]string{wide, "--flow", "too-wide"}, extra...)...)
		p.rec(r3).barrier(1)
		if err := p.finish(codec.Final); err == nil || !strings.Contains(err.Error(), "column v: ") || !strings.Contains(err.Error(), "1099511627776") {
			t.Errorf("write-delta %v of a long beyond the int column v: %v", extra, err)
		}
	}
	var detail struct {
		Columns []struct {
			Name     string                     `json:"name"`
			Metadata map[string]json.RawMessage `json:"metadata"`
		} `json:"columns"`
		ClusteringColumns []string `json:"clusteringColumns"`
	}
	if err := json.Unmarshal([]byte(runBin(t, "delta", "describe", "--format", "json", wide)), &detail); err != nil {
		t.Fatal(err)
	}
	for _, c := range detail.Columns {
		if _, ok := c.Metadata[delta.TypeChangesKey]; !ok {
			t.Errorf("after write-delta, column %s lost its %s: %s", c.Name, delta.TypeChangesKey, c.Metadata)
		}
	}
	got, types := sparkRows("SELECT * FROM " + wt)
	if strings.Join(got, "\n") != strings.Join(sorted(want), "\n") {
		t.Errorf("Spark reads the widened table:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(sorted(want), "\n"))
	}
	if fmt.Sprint(types) != "map[d:timestamp_ntz f:double id:bigint v:int]" {
		t.Errorf("Spark's types %v", types)
	}

	// Clustering.
	clu := filepath.Join(dir, "clustered")
	ct := "delta.`" + clu + "`"
	var stmts []string
	stmts = append(stmts, "CREATE TABLE "+ct+" (id BIGINT, s STRING, n INT) USING DELTA CLUSTER BY (s, id)")
	want = nil
	for b := 0; b < 2; b++ {
		var vals []string
		for k := b * 10; k < b*10+10; k++ {
			vals = append(vals, fmt.Sprintf("(%d, 'k%d', %d)", k, k%4, k*10))
			want = append(want, fmt.Sprintf(`{"id":%d,"n":%d,"s":"k%d"}`, k, k*10, k%4))
		}
		stmts = append(stmts, "INSERT INTO "+ct+" VALUES "+strings.Join(vals, ", "))
	}
	sql(append(stmts, "OPTIMIZE "+ct)...)
	clusteredBefore := paths(liveFiles(t, clu, true))
	if len(clusteredBefore) == 0 {
		t.Fatalf("Spark's OPTIMIZE left no clustered file")
	}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	var epochs [][]arrow.RecordBatch
	for e := 0; e < 2; e++ {
		var rows []string
		for k := 20 + e*10; k < 30+e*10; k++ {
			rows = append(rows, fmt.Sprintf(`{"id":%d,"s":"z%d","n":%d}`, k, k%3, k*10))
			want = append(want, fmt.Sprintf(`{"id":%d,"n":%d,"s":"z%d"}`, k, k*10, k%3))
		}
		rec := fromJSON(t, mem, sc, rows)
		defer rec.Release()
		epochs = append(epochs, []arrow.RecordBatch{rec})
	}
	writeDelta(t, mem, sc, epochs, clu, "--flow", "into-clustered")
	ours := liveFiles(t, clu, false)
	if len(ours) != 2 {
		t.Fatalf("write-delta's files in the clustered table: %d, want 2", len(ours))
	}
	for _, a := range ours {
		var st struct{ MinValues, MaxValues map[string]any }
		if err := json.Unmarshal([]byte(a.Stats), &st); err != nil || st.MinValues["s"] == nil || st.MaxValues["s"] == nil || st.MinValues["id"] == nil || st.MaxValues["id"] == nil {
			t.Errorf("file %s: statistics %s lack min/max of the clustering columns s, id (%v)", a.Path, a.Stats, err)
		}
	}
	if err := json.Unmarshal([]byte(runBin(t, "delta", "describe", "--format", "json", clu)), &detail); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(detail.ClusteringColumns, []string{"s", "id"}) {
		t.Errorf("delta describe: clusteringColumns %q, want [s id]", detail.ClusteringColumns)
	}
	if out := runBin(t, "delta", "describe", clu); !strings.Contains(out, "clustered by") || !strings.Contains(out, "s, id") {
		t.Errorf("delta describe names no clustering columns:\n%s", out)
	}
	runBin(t, "--progress", "off", "delta", "optimize", clu)
	if after := paths(liveFiles(t, clu, true)); !slices.Equal(after, clusteredBefore) {
		t.Errorf("delta optimize changed the clustered files: %v, before %v", after, clusteredBefore)
	}
	if compacted := liveFiles(t, clu, false); len(compacted) != 1 {
		t.Errorf("delta optimize left %d unclustered files, want the 2 of write-delta compacted into 1", len(compacted))
	}
	check := func(when string) {
		t.Helper()
		got, _ := sparkRows("SELECT * FROM " + ct)
		if strings.Join(got, "\n") != strings.Join(sorted(want), "\n") {
			t.Errorf("Spark reads the clustered table %s:\n%s\nwant\n%s", when, strings.Join(got, "\n"), strings.Join(sorted(want), "\n"))
		}
		if cc := clusteringColumns(clu); fmt.Sprint(cc) != "[s id]" {
			t.Errorf("DESCRIBE DETAIL %s: clusteringColumns %v, want [s id]", when, cc)
		}
	}
	check("after streamkit's optimize")
	sql("OPTIMIZE " + ct)
	check("after Spark's OPTIMIZE")
	if left := liveFiles(t, clu, false); len(left) != 0 {
		t.Errorf("Spark's OPTIMIZE left %d files unclustered", len(left))
	}
	// Spark's ALTER TABLE … CLUSTER BY commits between write-delta's epochs: the second epoch's
	// commit, from the snapshot before it, checks the new clustering columns and lands.
	snapOf := func() *delta.Snapshot {
		t.Helper()
		s, err := delta.NewTable(clu, nil).Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var late [][]arrow.RecordBatch
	for e := 0; e < 2; e++ {
		k := 40 + e
		rec := fromJSON(t, mem, sc, []string{fmt.Sprintf(`{"id":%d,"s":"late","n":%d}`, k, k*10)})
		defer rec.Release()
		late = append(late, []arrow.RecordBatch{rec})
		want = append(want, fmt.Sprintf(`{"id":%d,"n":%d,"s":"late"}`, k, k*10))
	}
	p := startWD(t, mem, sc, clu, "--flow", "around-alter")
	p.rec(late[0][0]).barrier(1)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if v, ok := snapOf().TxnVersion("around-alter"); ok && v == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("write-delta did not commit epoch 1\n%s", p.stderr.String())
		}
	}
	sql("ALTER TABLE " + ct + " CLUSTER BY (n)")
	alter := snapOf().Version()
	p.rec(late[1][0]).barrier(2)
	if err := p.finish(codec.Final); err != nil {
		t.Fatal(err)
	}
	after := snapOf()
	if v, _ := after.TxnVersion("around-alter"); v != 2 || after.Version() != alter+1 {
		t.Errorf("after the concurrent CLUSTER BY: txn %d at version %d, want epoch 2 committed at %d", v, after.Version(), alter+1)
	}
	if cols, err := after.ClusteringColumns(); err != nil || !slices.Equal(cols, []string{"n"}) {
		t.Errorf("clustering columns after write-delta's commit: %q, %v; want [n]", cols, err)
	}
	// The commit was made from the snapshot before the ALTER (a lost race, checked).
	raw, err := os.ReadFile(filepath.Join(clu, "_delta_log", fmt.Sprintf("%020d.json", after.Version())))
	if err != nil {
		t.Fatal(err)
	}
	var first struct{ CommitInfo *delta.CommitInfo }
	if err := json.Unmarshal([]byte(strings.SplitN(string(raw), "\n", 2)[0]), &first); err != nil || first.CommitInfo == nil || first.CommitInfo.ReadVersion == nil || *first.CommitInfo.ReadVersion >= alter {
		t.Errorf("epoch 2's commit %s: want a commitInfo whose readVersion precedes the ALTER's version %d (%v)", raw, alter, err)
	}
	rows, _ := sparkRows("SELECT * FROM " + ct)
	if strings.Join(rows, "\n") != strings.Join(sorted(want), "\n") {
		t.Errorf("Spark reads the clustered table after CLUSTER BY (n):\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(sorted(want), "\n"))
	}
	if cc := clusteringColumns(clu); fmt.Sprint(cc) != "[n]" {
		t.Errorf("DESCRIBE DETAIL after CLUSTER BY (n): clusteringColumns %v, want [n]", cc)
	}

	// IcebergCompatV2: column mapping name, nested ids of list elements and map keys/values.
	ice := filepath.Join(dir, "iceberg")
	it := "delta.`" + ice + "`"
	sql("CREATE TABLE "+it+" (id BIGINT, tags ARRAY<STRING>, m MAP<STRING, ARRAY<INT>>, s STRUCT<a: INT, l: ARRAY<BIGINT>>) USING DELTA "+
		"TBLPROPERTIES ('delta.enableIcebergCompatV2' = 'true', 'delta.columnMapping.mode' = 'name')",
		"INSERT INTO "+it+" VALUES (1, array('a', 'b'), map('k', array(1, 2)), named_struct('a', 5, 'l', array(7L)))")
	isc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.ListOf(arrow.PrimitiveTypes.Int32)), Nullable: true},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true}), Nullable: true},
	}, nil)
	irec := fromJSON(t, mem, isc, []string{
		`{"id": 2, "tags": ["x"], "m": [{"key": "q", "value": [3]}], "s": {"a": 6, "l": [8, 9]}}`,
		`{"id": 3, "tags": null, "m": null, "s": null}`,
	})
	defer irec.Release()
	writeDelta(t, mem, isc, [][]arrow.RecordBatch{{irec}}, ice, "--flow", "into-iceberg")
	// write-delta's data file carries the nested ids as Parquet field ids, as Spark's do.
	snap, err := delta.NewTable(ice, nil).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range snap.Files() {
		if !strings.HasPrefix(a.Path, "part-") || strings.Contains(a.Path, "/") {
			continue // Spark's files live in random prefix directories under column mapping
		}
		pf, err := file.OpenParquetFile(filepath.Join(ice, a.Path), false)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"element", "key", "value"} {
			for i := 0; i < pf.MetaData().Schema.Root().NumFields(); i++ {
				collectIDs(pf.MetaData().Schema.Root().Field(i), name, &ids)
			}
		}
		pf.Close()
	}
	if got := strings.Join(sorted(ids), " "); got == "" || strings.Contains(got, "=-1") {
		t.Errorf("write-delta's files in the IcebergCompatV2 table: list element / map key / value field ids %q, want all set", got)
	}
	sql("INSERT INTO " + it + " VALUES (4, array('z'), map('w', array(4)), named_struct('a', 7, 'l', array(10L)))")
	iceRows, _ := sparkRows("SELECT * FROM " + it)
	wantIce := []string{
		`{"id":1,"m":{"k":[1,2]},"s":{"a":5,"l":[7]},"tags":["a","b"]}`,
		`{"id":2,"m":{"q":[3]},"s":{"a":6,"l":[8,9]},"tags":["x"]}`,
		`{"id":3,"m":null,"s":null,"tags":null}`,
		`{"id":4,"m":{"w":[4]},"s":{"a":7,"l":[10]},"tags":["z"]}`,
	}
	if strings.Join(iceRows, "\n") != strings.Join(wantIce, "\n") {
		t.Errorf("Spark reads the IcebergCompatV2 table after write-delta's append and its own:\n%s\nwant\n%s", strings.Join(iceRows, "\n"), strings.Join(wantIce, "\n"))
	}
}

// collectIDs appends "name=ID" for every Parquet schema node called name at or below n.
func collectIDs(n schema.Node, name string, out *[]string) {
	if n.Name() == name {
		*out = append(*out, fmt.Sprintf("%s=%d", n.Path(), n.FieldID()))
	}
	if g, ok := n.(*schema.GroupNode); ok {
		for i := 0; i < g.NumFields(); i++ {
			collectIDs(g.Field(i), name, out)
		}
	}
}

// liveFiles returns the live files of the table at root that have (clustered) or lack a
// clusteringProvider, by path; the table must still have its delta.clustering domain.
func liveFiles(t *testing.T, root string, clustered bool) []*delta.Add {
	t.Helper()
	s, err := delta.NewTable(root, nil).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Domain(delta.ClusteringDomain); !ok {
		t.Fatalf("table %s lost its %s domain", root, delta.ClusteringDomain)
	}
	var out []*delta.Add
	for _, a := range s.Files() {
		if (a.ClusteringProvider != nil) == clustered {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *delta.Add) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func paths(adds []*delta.Add) []string {
	var out []string
	for _, a := range adds {
		out = append(out, a.Path)
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
