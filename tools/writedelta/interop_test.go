package writedelta

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/peertest"
)

// TestInterop writes tables with the streamkit binary through pipes and has them read by
// delta-rs, DuckDB (delta_scan) and — in one Spark + delta-spark session for the whole run —
// Spark, which also runs DESCRIBE HISTORY on each. Every reader must return exactly the rows
// written. Subtests build the tables (the type/partition matrix, tables created by delta-rs
// and Spark and appended to by write-delta, 4 concurrent flows × 200 epochs, ≥ 100 kill -9
// runs); the last two subtests read them all.
func TestInterop(t *testing.T) {
	peertest.Python(t)
	peertest.Binary(t)
	mem := memory.NewGoAllocator()
	dir := t.TempDir()
	var spark *sparkServer
	if os.Getenv("STREAMKIT_SPARK") == "0" {
		t.Log("STREAMKIT_SPARK=0: Spark checks skipped")
	} else if sparkInstalled(t) {
		spark = startSpark(t) // starts now, so the JVM warms up while tables are written
	} else {
		requireSpark(t) // fails under STREAMKIT_REQUIRE_PEERS=1
	}
	var entries []manifestEntry
	add := func(e ...manifestEntry) { entries = append(entries, e...) }

	t.Run("matrix", func(t *testing.T) { add(matrixTables(t, mem, dir)...) })
	t.Run("delta-rs table appended", func(t *testing.T) { add(deltarsAppend(t, mem, dir)) })
	if spark != nil {
		t.Run("spark tables", func(t *testing.T) { add(sparkTables(t, mem, dir, spark)...) })
	}
	t.Run("concurrent flows", func(t *testing.T) { add(concurrentFlows(t, mem, dir)) })
	t.Run("kill -9", func(t *testing.T) { add(killRuns(t, mem, dir)) })

	manifest := writeManifest(t, filepath.Join(dir, "manifest.json"), entries)
	t.Run("delta-rs and DuckDB", func(t *testing.T) {
		out, err := runPy(t, "check", manifest)
		t.Log(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("delta_interop.py check: %v", err)
		}
	})
	if spark == nil {
		return
	}
	t.Run("spark", func(t *testing.T) {
		res, err := spark.call(map[string]any{"cmd": "check", "manifest": manifest})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res["results"].([]any) {
			t.Log(r)
		}
		if n := res["failed"].(float64); n > 0 {
			t.Fatalf("%v tables failed in Spark", n)
		}
	})
}

func sparkInstalled(t testing.TB) bool {
	dir := os.Getenv("STREAMKIT_SPARK_JARS")
	if dir == "" {
		dir = filepath.Join(peertest.Root(t), ".it", "spark-jars")
	}
	jars, _ := filepath.Glob(filepath.Join(dir, "delta-spark_*.jar"))
	return len(jars) > 0
}

var specialParts = []string{"A/A", "B B", "R&D", "50%", "a?", "é", "", "x=y:z", `#{[]}^'*"\`, "tab\tnl"}

var typesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "part", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "dec38", Type: &arrow.Decimal128Type{Precision: 38, Scale: 6}, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
	{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "dict", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
}, nil)

// typesRows: special partition values (with null and empty), NaN/±Inf/-0.0, decimals, every
// primitive type, a dictionary column.
func typesRows(t testing.TB, mem memory.Allocator, id0, n int) arrow.RecordBatch {
	noDict := arrow.NewSchema(typesSchema.Fields()[:len(typesSchema.Fields())-1], nil)
	floats := []string{"1.5", `"NaN"`, `"Inf"`, `"-Inf"`, "-0.0", "null", "1e300", "-2.5e-300"}
	var rows []string
	for k := 0; k < n; k++ {
		id := id0 + k
		part := fmt.Sprintf("%q", specialParts[id%len(specialParts)])
		if id%13 == 7 {
			part = "null"
		}
		f := floats[id%len(floats)]
		f32 := f
		if strings.Contains(f, "e") {
			f32 = "3.25"
		}
		row := fmt.Sprintf(`{"id":%d,"part":%s,"f64":%s,"f32":%s,"dec":"%d.%02d","dec38":"-%d12345678901234567890.123456",`+
			`"b":%t,"s":%q,"ls":"ls-%d","bin":"AAEC","d":%d,"ts":%d,"i8":%d,"u16":%d,"u32":%d}`,
			id, part, f, f32, id-50, id%100, id%10, id%2 == 0, strings.Repeat("é", 30+id%5)+fmt.Sprint(id), id,
			19000+id*37, 1706702400000+int64(id)*86_400_123, id%200-100, 60000+id, 4000000000+id)
		if id%11 == 5 {
			row = fmt.Sprintf(`{"id":%d,"part":%s}`, id, part)
		}
		rows = append(rows, row)
	}
	base := fromJSON(t, mem, noDict, rows)
	defer base.Release()
	db := array.NewDictionaryBuilder(mem, typesSchema.Field(len(typesSchema.Fields())-1).Type.(*arrow.DictionaryType)).(*array.BinaryDictionaryBuilder)
	defer db.Release()
	for k := 0; k < n; k++ {
		if (id0+k)%9 == 4 {
			db.AppendNull()
		} else {
			db.AppendString([]string{"red", "green", "blue"}[(id0+k)%3])
		}
	}
	dict := db.NewArray()
	defer dict.Release()
	return array.NewRecordBatch(typesSchema, append(base.Columns(), dict), int64(n))
}

var partsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func partsRows(t testing.TB, mem memory.Allocator, id0, n int) arrow.RecordBatch {
	var rows []string
	for k := 0; k < n; k++ {
		id := id0 + k
		d := fmt.Sprint(19700 + id%4)
		if id%7 == 0 {
			d = "null"
		}
		ts := fmt.Sprint(1706702400_000000 + int64(id%5)*3_600_123_456)
		if id%9 == 0 {
			ts = "null"
		}
		rows = append(rows, fmt.Sprintf(`{"id":%d,"d":%s,"ts":%s,"v":"v%d"}`, id, d, ts, id))
	}
	return fromJSON(t, mem, partsSchema, rows)
}

var nestedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
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
	{Name: "ml", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.ListOf(arrow.FixedWidthTypes.Date32)), Nullable: true},
}, nil)

func nestedRows(t testing.TB, mem memory.Allocator, id0, n int) arrow.RecordBatch {
	var rows []string
	for k := 0; k < n; k++ {
		id := id0 + k
		row := fmt.Sprintf(`{"id":%d,"st":{"a":%d,"b":"sb%d","inner":{"x":%d.25,"t":%d}},"l":[%d,%d,null],"ll":["x%d",null],`+
			`"m":[{"key":"k%d","value":%d},{"key":"z","value":null}],"lst":[{"k":"a","v":%d.5},null],"ml":[{"key":"d","value":[19000,null]}]}`,
			id, id, id, id, 1706702400_000000+int64(id)*7, id, -id, id, id, id, id)
		switch id % 6 {
		case 1:
			row = fmt.Sprintf(`{"id":%d}`, id)
		case 3:
			row = fmt.Sprintf(`{"id":%d,"st":{"a":null,"b":null,"inner":null},"l":[],"ll":[],"m":[],"lst":[],"ml":[]}`, id)
		}
		rows = append(rows, row)
	}
	return fromJSON(t, mem, nestedSchema, rows)
}

var ntzSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "tz", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "ny", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "America/New_York"}, Nullable: true},
	{Name: "pntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
}, nil)

func ntzRows(t testing.TB, mem memory.Allocator, id0, n int) arrow.RecordBatch {
	var rows []string
	for k := 0; k < n; k++ {
		id := id0 + k
		us := 1710054000_000000 + int64(id)*1_800_000_001 // crosses the 2024-03-10 DST change in New York
		p := fmt.Sprint(1706702400_000000 + int64(id%3)*86_400_000_000)
		if id%5 == 0 {
			p = "null"
		}
		rows = append(rows, fmt.Sprintf(`{"id":%d,"tz":%d,"ntz":%d,"ny":%d,"pntz":%s}`, id, us, us+17, us/1_000_000, p))
	}
	return fromJSON(t, mem, ntzSchema, rows)
}

// epochsOf cuts rows [0, n·size) of gen into n epochs of size rows (empty epochs where
// empty(i) says so) and returns the epochs and all records for the expected file.
func epochsOf(t testing.TB, n, size int, empty func(int) bool, gen func(id0, n int) arrow.RecordBatch) ([][]arrow.RecordBatch, []arrow.RecordBatch) {
	var epochs [][]arrow.RecordBatch
	var all []arrow.RecordBatch
	id := 0
	for i := 0; i < n; i++ {
		if empty != nil && empty(i) {
			epochs = append(epochs, nil)
			continue
		}
		r := gen(id, size)
		id += size
		epochs = append(epochs, []arrow.RecordBatch{r})
		all = append(all, r)
	}
	return epochs, all
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

func matrixTables(t *testing.T, mem memory.Allocator, dir string) []manifestEntry {
	var out []manifestEntry
	table := func(name string) string { return filepath.Join(dir, "tables", name) }
	expect := func(name string, sc *arrow.Schema, recs ...arrow.RecordBatch) string {
		// The IPC file format allows one dictionary per field: decode dictionaries first.
		var plain []arrow.RecordBatch
		for _, r := range recs {
			d := decodeDictionaries(t, mem, r)
			defer d.Release()
			plain = append(plain, d)
		}
		if len(plain) > 0 {
			sc = plain[0].Schema()
		}
		return writeArrowFile(t, filepath.Join(dir, name+".arrow"), sc, plain...)
	}

	// Special-character string partitions (with empty and null), NaN/±Inf, decimals, all
	// primitive types, a dictionary column; an empty epoch in the middle, which makes no Delta
	// commit (so 3 versions for 4 epochs).
	{
		gen := func(id0, n int) arrow.RecordBatch { return typesRows(t, mem, id0, n) }
		epochs, all := epochsOf(t, 4, 45, func(i int) bool { return i == 2 }, gen)
		defer release(all)
		root := table("special parts") // a space in the table path too
		writeDelta(t, mem, typesSchema, epochs, root, "--partition-by", "part", "--flow", "types")
		out = append(out, manifestEntry{Name: "special-partitions+types", Table: root, Expected: []string{expect("types", typesSchema, all...)},
			Key: "id", EmptyAsNull: []string{"part"}, Readers: allReaders, Probe: []string{"id", "dec", "ts", "d", "s"}, MinVersions: 3})
	}
	// Date and timestamp partitions (with nulls), zstd.
	{
		gen := func(id0, n int) arrow.RecordBatch { return partsRows(t, mem, id0, n) }
		epochs, all := epochsOf(t, 2, 40, nil, gen)
		defer release(all)
		root := table("date_ts_parts")
		writeDelta(t, mem, partsSchema, epochs, root, "--partition-by", "d,ts", "--compression", "zstd")
		out = append(out, manifestEntry{Name: "date+timestamp-partitions", Table: root, Expected: []string{expect("parts", partsSchema, all...)},
			Key: "id", Readers: allReaders})
	}
	// Nested structs, lists, maps.
	{
		gen := func(id0, n int) arrow.RecordBatch { return nestedRows(t, mem, id0, n) }
		epochs, all := epochsOf(t, 2, 30, nil, gen)
		defer release(all)
		root := table("nested")
		writeDelta(t, mem, nestedSchema, epochs, root)
		out = append(out, manifestEntry{Name: "nested", Table: root, Expected: []string{expect("nested", nestedSchema, all...)},
			Key: "id", Readers: allReaders})
	}
	// Timestamps with and without zone (timestamp_ntz), partitioned by a timestamp_ntz.
	{
		gen := func(id0, n int) arrow.RecordBatch { return ntzRows(t, mem, id0, n) }
		epochs, all := epochsOf(t, 2, 25, nil, gen)
		defer release(all)
		root := table("ntz")
		writeDelta(t, mem, ntzSchema, epochs, root, "--partition-by", "pntz")
		s := snapshot(t, root)
		if p := s.Protocol(); p.MinReaderVersion != 3 || p.MinWriterVersion != 7 {
			t.Errorf("ntz table protocol %+v", p)
		}
		out = append(out, manifestEntry{Name: "timestamp-ntz", Table: root, Expected: []string{expect("ntz", ntzSchema, all...)},
			Key: "id", Readers: allReaders})
	}
	// --truncate-timestamps floors nanoseconds: before 1970 an instant stays in its
	// microsecond, second, day and year (-1 ns is 1969-12-31 23:59:59.999999), also inside a
	// struct and a list; every reader must read the floored values back.
	{
		ns := &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
		us := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		schemaOf := func(t arrow.DataType) *arrow.Schema {
			return arrow.NewSchema([]arrow.Field{
				{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				{Name: "ts", Type: t, Nullable: true},
				{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "t", Type: t, Nullable: true}), Nullable: true},
				{Name: "l", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: t, Nullable: true}), Nullable: true},
			}, nil)
		}
		in := []int64{-1, -1001, -86_400_000_000_001, -9_000_000_000_000_000_001, 1, 999_999_999}
		var rowsNs, rowsUs []string
		for i, v := range in {
			f := v / 1000
			if v%1000 < 0 {
				f--
			}
			row := `{"id":%d,"ts":%d,"st":{"t":%d},"l":[%d,null]}`
			rowsNs = append(rowsNs, fmt.Sprintf(row, i, v, v-1, v))
			fm := (v - 1) / 1000
			if (v-1)%1000 < 0 {
				fm--
			}
			rowsUs = append(rowsUs, fmt.Sprintf(row, i, f, fm, f))
		}
		rowsNs = append(rowsNs, `{"id":6,"ts":null,"st":null,"l":null}`)
		rowsUs = append(rowsUs, `{"id":6,"ts":null,"st":null,"l":null}`)
		r := fromJSON(t, mem, schemaOf(ns), rowsNs)
		defer r.Release()
		want := fromJSON(t, mem, schemaOf(us), rowsUs)
		defer want.Release()
		root := table("truncated_timestamps")
		writeDelta(t, mem, schemaOf(ns), [][]arrow.RecordBatch{{r}}, root, "--truncate-timestamps")
		out = append(out, manifestEntry{Name: "truncate-timestamps-before-1970", Table: root, Expected: []string{expect("truncated", schemaOf(us), want)},
			Key: "id", Readers: allReaders})
	}
	// Past 10 and past 100 commits: classic checkpoints at 10, 20, … 100. Every 7th epoch is
	// empty and makes no commit, so n commits take more than n epochs.
	for _, n := range []int{12, 105} {
		gen := func(id0, n int) arrow.RecordBatch { return idBatch(mem, id0, id0+n) }
		empty := func(i int) bool { return i%7 == 6 }
		nEpochs := 0
		for commits := 0; commits < n; nEpochs++ {
			if !empty(nEpochs) {
				commits++
			}
		}
		epochs, all := epochsOf(t, nEpochs, 3, empty, gen)
		defer release(all)
		root := table(fmt.Sprintf("commits_%d", n))
		writeDelta(t, mem, idSchema, epochs, root)
		for v := 10; v <= n-1; v += 10 {
			if !exists(filepath.Join(root, delta.LogDir, fmt.Sprintf("%020d.checkpoint.parquet", v))) {
				t.Errorf("%s: no checkpoint at version %d", root, v)
			}
		}
		out = append(out, manifestEntry{Name: fmt.Sprintf("%d-commits", n), Table: root,
			Expected: []string{expect(fmt.Sprintf("commits_%d", n), idSchema, all...)}, Key: "id", Readers: allReaders, MinVersions: n})
	}
	// --merge-schema: a second run adds a top-level column and a nested field.
	{
		v1 := arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
		}, nil)
		v2 := arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
				arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
			{Name: "extra", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		}, nil)
		root := table("merged")
		r1 := fromJSON(t, mem, v1, []string{`{"id":1,"st":{"x":1}}`, `{"id":2,"st":null}`})
		defer r1.Release()
		writeDelta(t, mem, v1, [][]arrow.RecordBatch{{r1}}, root)
		r2 := fromJSON(t, mem, v2, []string{`{"id":3,"st":{"x":3,"y":"y3"},"extra":19000}`, `{"id":4,"st":{"x":null,"y":"y4"},"extra":null}`})
		defer r2.Release()
		p := startWD(t, mem, v2, root)
		p.rec(r2).barrier(1)
		if err := p.finish(codec.Final); err == nil || !strings.Contains(err.Error(), "--merge-schema") {
			t.Errorf("without --merge-schema: %v", err)
		}
		writeDelta(t, mem, v2, [][]arrow.RecordBatch{{r2}}, root, "--merge-schema")
		old := fromJSON(t, mem, v2, []string{`{"id":1,"st":{"x":1,"y":null},"extra":null}`, `{"id":2,"st":null,"extra":null}`})
		defer old.Release()
		out = append(out, manifestEntry{Name: "merge-schema", Table: root, Expected: []string{expect("merged", v2, old, r2)},
			Key: "id", Readers: allReaders})
	}
	// Optimize and vacuum: many small files in a few partitions, compacted, old files deleted.
	{
		gen := func(id0, n int) arrow.RecordBatch { return typesRows(t, mem, id0, n) }
		epochs, all := epochsOf(t, 30, 7, nil, gen)
		defer release(all)
		root := table("optimized")
		writeDelta(t, mem, typesSchema, epochs, root, "--partition-by", "b")
		before := snapshot(t, root).NumFiles()
		runBin(t, "delta", "optimize", root, "--where", "b = true OR b IS NULL")
		runBin(t, "delta", "optimize", root)
		after := snapshot(t, root).NumFiles()
		if after != 3 {
			t.Errorf("optimize: %d files before, %d after; want one per partition (3)", before, after)
		}
		runBin(t, "delta", "vacuum", root, "--retain", "0h", "--force")
		if n := len(parquetFiles(t, root)); n != after {
			t.Errorf("vacuum left %d data files, want %d", n, after)
		}
		hist := runBin(t, "delta", "history", root, "--limit", "4")
		for _, op := range []string{"VACUUM END", "VACUUM START", "OPTIMIZE"} {
			if !strings.Contains(hist, op) {
				t.Errorf("history lacks %s:\n%s", op, hist)
			}
		}
		out = append(out, manifestEntry{Name: "optimize+vacuum", Table: root, Expected: []string{expect("optimized", typesSchema, all...)},
			Key: "id", Readers: allReaders, Probe: []string{"id"}})
	}
	// --mode overwrite replaces the contents (remove actions).
	{
		root := table("overwritten")
		r1, r2 := idBatch(mem, 0, 50), idBatch(mem, 1000, 1010)
		defer r1.Release()
		defer r2.Release()
		writeDelta(t, mem, idSchema, [][]arrow.RecordBatch{{r1}}, root)
		writeDelta(t, mem, idSchema, [][]arrow.RecordBatch{{r2}}, root, "--mode", "overwrite")
		out = append(out, manifestEntry{Name: "overwrite", Table: root, Expected: []string{expect("overwritten", idSchema, r2)},
			Key: "id", Readers: allReaders})
	}
	return out
}

// decodeDictionaries returns rec with dictionary columns cast to their value type.
func decodeDictionaries(t testing.TB, mem memory.Allocator, rec arrow.RecordBatch) arrow.RecordBatch {
	fields := slices.Clone(rec.Schema().Fields())
	cols := slices.Clone(rec.Columns())
	var made []arrow.Array
	defer func() {
		for _, a := range made {
			a.Release()
		}
	}()
	for i, f := range fields {
		if dt, ok := f.Type.(*arrow.DictionaryType); ok {
			a, err := compute.CastArray(context.Background(), cols[i], compute.SafeCastOptions(dt.ValueType))
			if err != nil {
				t.Fatal(err)
			}
			made = append(made, a)
			cols[i], fields[i].Type = a, dt.ValueType
		}
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// runBin runs the streamkit binary and returns its stdout; a failure fails the test.
func runBin(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command(peertest.Binary(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("streamkit %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

var appendSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
}, nil)

func appendRows(t testing.TB, mem memory.Allocator, id0, n int) arrow.RecordBatch {
	var rows []string
	for k := 0; k < n; k++ {
		id := id0 + k
		rows = append(rows, fmt.Sprintf(`{"id":%d,"s":%q,"ts":%d,"d":%d,"dec":"%d.%02d"}`,
			id, []string{"a b", "R&D", "x/y", "é"}[id%4], 1706702400_000000+int64(id)*1_000_001, 19000+id%3, id, id%100))
	}
	return fromJSON(t, mem, appendSchema, rows)
}

// deltarsAppend: delta-rs creates a partitioned table, write-delta appends two epochs.
func deltarsAppend(t *testing.T, mem memory.Allocator, dir string) manifestEntry {
	root := filepath.Join(dir, "tables", "deltars")
	first := appendRows(t, mem, 0, 20)
	defer first.Release()
	f1 := writeArrowFile(t, filepath.Join(dir, "deltars1.arrow"), appendSchema, first)
	if out, err := runPy(t, "deltars-create", root, f1, "--partition-by", "s"); err != nil {
		t.Fatalf("delta-rs create: %v\n%s", err, out)
	}
	r2, r3 := appendRows(t, mem, 20, 15), appendRows(t, mem, 35, 15)
	defer r2.Release()
	defer r3.Release()
	writeDelta(t, mem, appendSchema, [][]arrow.RecordBatch{{r2}, {r3}}, root, "--flow", "after-delta-rs")
	f2 := writeArrowFile(t, filepath.Join(dir, "deltars2.arrow"), appendSchema, r2, r3)
	return manifestEntry{Name: "delta-rs-created+write-delta", Table: root, Expected: []string{f1, f2}, Key: "id", Readers: allReaders}
}

// sparkTables: Spark creates a partitioned table and a table with column mapping (mode name)
// that write-delta appends to.
func sparkTables(t *testing.T, mem memory.Allocator, dir string, spark *sparkServer) []manifestEntry {
	root := filepath.Join(dir, "tables", "spark")
	first := appendRows(t, mem, 0, 20)
	defer first.Release()
	f1 := writeArrowFile(t, filepath.Join(dir, "spark1.arrow"), appendSchema, first)
	if _, err := spark.call(map[string]any{"cmd": "create", "path": root, "rows": f1,
		"schema": "id long, s string, ts timestamp, d date, dec decimal(10,2)", "partition_by": []string{"s"}}); err != nil {
		t.Fatal(err)
	}
	r2 := appendRows(t, mem, 20, 30)
	defer r2.Release()
	writeDelta(t, mem, appendSchema, [][]arrow.RecordBatch{{r2}}, root, "--flow", "after-spark")
	f2 := writeArrowFile(t, filepath.Join(dir, "spark2.arrow"), appendSchema, r2)

	colmap := filepath.Join(dir, "tables", "spark_colmap")
	if _, err := spark.call(map[string]any{"cmd": "create", "path": colmap, "rows": f1,
		"schema":     "id long, s string, ts timestamp, d date, dec decimal(10,2)",
		"properties": map[string]string{"delta.columnMapping.mode": "name", "delta.minReaderVersion": "2", "delta.minWriterVersion": "5"}}); err != nil {
		t.Fatal(err)
	}
	// Column mapping mode name: write-delta writes physical names and field ids, and the
	// readers must find the appended rows. Not delta-rs: deltalake 1.6.6 reads every column
	// of Spark's own column-mapped files as null.
	writeDelta(t, mem, appendSchema, [][]arrow.RecordBatch{{r2}}, colmap, "--flow", "after-spark-colmap")
	return []manifestEntry{{Name: "spark-created+write-delta", Table: root, Expected: []string{f1, f2}, Key: "id", Readers: allReaders},
		{Name: "spark-colmap+write-delta", Table: colmap, Expected: []string{f1, f2}, Key: "id", Readers: []string{"duckdb", "spark"}}}
}
