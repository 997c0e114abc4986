package delta

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	dl "github.com/streamkit/streamkit/delta"
)

var richSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "user", Type: arrow.StructOf(
		arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	), Nullable: true},
	{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
}, nil)

func TestReaderPartitionsProjectionWhere(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	appendRows(t, mem, dir, richSchema, &dl.CreateOptions{PartitionColumns: []string{"region", "day"}},
		`[{"id":1,"region":"eu","day":"2024-01-01","ts":"2024-01-01T10:00:00.123456Z","user":{"name":"a","tags":["x","y"]},"attrs":[{"key":"k","value":1}]},
		  {"id":2,"region":"us","day":"2024-01-02","ts":null,"user":null,"attrs":null},
		  {"id":3,"region":null,"day":"2024-01-03","ts":"1969-12-31T23:59:59Z","user":{"name":null,"tags":[]},"attrs":[]},
		  {"id":4,"region":"a:b c","day":"2024-01-01","ts":null,"user":{"name":"d","tags":null},"attrs":null}]`)
	appendRows(t, mem, dir, richSchema, nil, `[{"id":5,"region":"eu","day":"2024-01-02","ts":null,"user":null,"attrs":null}]`)
	snap, err := dl.NewTable(dir, mem).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(dl.NewTable(dir, nil).Store(), snap.Metadata(), ReadOptions{Allocator: mem, BatchRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if !rd.Schema().Equal(mustArrow(t, snap)) {
		t.Fatalf("schema %s", rd.Schema())
	}
	got := scanAll(t, rd, snap.Files())
	want := []string{
		`{"attrs":[],"day":"2024-01-03","id":3,"region":null,"ts":"1969-12-31T23:59:59Z","user":{"name":null,"tags":[]}}`,
		`{"attrs":[{"key":"k","value":1}],"day":"2024-01-01","id":1,"region":"eu","ts":"2024-01-01T10:00:00.123456Z","user":{"name":"a","tags":["x","y"]}}`,
		`{"attrs":null,"day":"2024-01-01","id":4,"region":"a:b c","ts":null,"user":{"name":"d","tags":null}}`,
		`{"attrs":null,"day":"2024-01-02","id":2,"region":"us","ts":null,"user":null}`,
		`{"attrs":null,"day":"2024-01-02","id":5,"region":"eu","ts":null,"user":null}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Projection (reordered, partition column included) and a partition filter.
	rd2, err := NewReader(dl.NewTable(dir, nil).Store(), snap.Metadata(), ReadOptions{Allocator: mem, Columns: []string{"region", "ID"},
		WhereText: "day >= 2024-01-02 and (region = 'eu' or region is null)"})
	if err != nil {
		t.Fatal(err)
	}
	defer rd2.Close()
	files, err := Files(rd2, snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("where kept %d files, want 2", len(files))
	}
	got = scanAll(t, rd2, files)
	want = []string{`{"id":3,"region":null}`, `{"id":5,"region":"eu"}`}
	if n := rd2.Schema().Field(0).Name + "," + rd2.Schema().Field(1).Name; n != "region,id" {
		t.Fatalf("projected schema order %s", n)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("projected rows %q, want %q", got, want)
	}
	// Only partition columns: rows come from the file metadata.
	rd3, err := NewReader(dl.NewTable(dir, nil).Store(), snap.Metadata(), ReadOptions{Allocator: mem, Columns: []string{"day"}, WhereText: "region in ('us', 'eu')"})
	if err != nil {
		t.Fatal(err)
	}
	defer rd3.Close()
	files, _ = Files(rd3, snap)
	got = scanAll(t, rd3, files)
	want = []string{`{"day":"2024-01-01"}`, `{"day":"2024-01-02"}`, `{"day":"2024-01-02"}`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("partition-only rows %q, want %q", got, want)
	}
	for _, c := range []struct {
		opts ReadOptions
		want string
	}{
		{ReadOptions{Columns: []string{"nope"}}, `column "nope" is not in the table`},
		{ReadOptions{WhereText: "id = 1"}, `column "id" is not a partition column (partition columns: region, day)`},
		{ReadOptions{WhereText: "day >= 'soon'"}, `"soon" is not a valid date`},
		{ReadOptions{WhereText: "day >="}, `expected a value for day`},
		{ReadOptions{WhereText: "region = 'eu' region"}, `unexpected "region"`},
	} {
		_, err := NewReader(dl.NewTable(dir, nil).Store(), snap.Metadata(), c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewReader(%+v) = %v, want %q", c.opts, err, c.want)
		}
	}
}

func mustArrow(t testing.TB, snap *dl.Snapshot) *arrow.Schema {
	sc, err := snap.ArrowSchema()
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestFilterLogic(t *testing.T) {
	types := map[string]arrow.DataType{"d": arrow.FixedWidthTypes.Date32, "n": arrow.PrimitiveTypes.Int32, "s": arrow.BinaryTypes.String,
		"ts": &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, "x": arrow.PrimitiveTypes.Float64,
		"dec": &arrow.Decimal128Type{Precision: 10, Scale: 2}}
	cols := []string{"d", "n", "s", "ts", "x", "dec"}
	pv := func(kv ...string) map[string]value {
		m := map[string]value{}
		for _, c := range cols {
			m[c] = value{null: true}
		}
		for i := 0; i < len(kv); i += 2 {
			s := kv[i+1]
			v, err := parseValue(types[kv[i]], &s)
			if err != nil {
				t.Fatal(err)
			}
			m[kv[i]] = v
		}
		return m
	}
	row := pv("d", "2024-03-01", "n", "7", "s", "it's", "ts", "2024-03-01 12:00:00", "x", "NaN", "dec", "1.50")
	for _, c := range []struct {
		expr string
		want bool
	}{
		{"d = 2024-03-01", true},
		{"d > '2024-02-28' AND n <= 7", true},
		{"d < 2024-03-01 OR n != 7", false},
		{"NOT (n IN (1, 2, 3))", true},
		{"n NOT IN (7)", false},
		{"s = 'it''s'", true},
		{`s = "it's"`, true},
		{"ts >= 2024-03-01T12:00:00Z and ts < '2024-03-01 12:00:01'", true},
		{"x > 1e300", true}, // NaN sorts last
		{"dec = 1.5", true},
		{"dec > 1.49", true},
		{"missing_is_null = 1", false},
	} {
		f, err := ParseFilter(c.expr, cols, types)
		if c.expr == "missing_is_null = 1" {
			if err == nil {
				t.Errorf("%s: no error", c.expr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		if got := f.Match(row); got != c.want {
			t.Errorf("%s = %v, want %v", c.expr, got, c.want)
		}
	}
	nulls := pv()
	for _, c := range []struct {
		expr string
		want bool
	}{
		{"n = 1", false},
		{"NOT n = 1", false}, // unknown stays unknown
		{"n IS NULL", true},
		{"n IS NOT NULL", false},
		{"n = 1 OR s IS NULL", true},
		{"n NOT IN (1)", false},
	} {
		f, err := ParseFilter(c.expr, cols, types)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		if got := f.Match(nulls); got != c.want {
			t.Errorf("null row: %s = %v, want %v", c.expr, got, c.want)
		}
	}
}

// TestTableFilterOnLog checks the entry points delta optimize uses: a filter parsed against a
// table's metadata, evaluated on partition values as serialized in the log.
func TestTableFilterOnLog(t *testing.T) {
	_, meta, err := dl.NewTableMetadata(richSchema, dl.CreateOptions{PartitionColumns: []string{"region", "day"}})
	if err != nil {
		t.Fatal(err)
	}
	if f, err := ParseTableFilter("  ", meta); f != nil || err != nil {
		t.Fatalf("blank filter: %v %v", f, err)
	}
	var none *Filter
	if ok, err := none.MatchPartitionValues(nil); !ok || err != nil {
		t.Fatalf("nil filter: %v %v", ok, err)
	}
	f, err := ParseTableFilter("day >= 2024-01-02 AND NOT region = 'eu'", meta)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Columns(); !reflect.DeepEqual(got, []string{"region", "day"}) {
		t.Fatalf("columns %v", got)
	}
	sv := func(s string) *string { return &s }
	for _, c := range []struct {
		pv   map[string]*string
		want bool
	}{
		{map[string]*string{"region": sv("us"), "day": sv("2024-01-02")}, true},
		{map[string]*string{"region": sv("eu"), "day": sv("2024-01-02")}, false},
		{map[string]*string{"region": sv("us"), "day": sv("2024-01-01")}, false},
		{map[string]*string{"region": nil, "day": sv("2024-01-03")}, false}, // NOT unknown
		{map[string]*string{"region": sv(""), "day": sv("2024-01-03")}, false},
		{map[string]*string{"REGION": sv("us"), "Day": sv("2024-01-03")}, true},
	} {
		got, err := f.MatchPartitionValues(c.pv)
		if err != nil || got != c.want {
			t.Errorf("%v: got %v, %v; want %v", c.pv, got, err, c.want)
		}
	}
	if _, err := f.MatchPartitionValues(map[string]*string{"region": sv("us"), "day": sv("soon")}); err == nil ||
		!strings.Contains(err.Error(), `partition column day: "soon" is not a valid date`) {
		t.Errorf("bad value: %v", err)
	}
	// Only the columns the filter reads are parsed.
	g, err := ParseTableFilter("region = 'us'", meta)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := g.MatchPartitionValues(map[string]*string{"region": sv("us"), "day": sv("soon")}); !ok || err != nil {
		t.Errorf("unread bad value: %v %v", ok, err)
	}
	if _, err := ParseTableFilter("id = 1", meta); err == nil || !strings.Contains(err.Error(), "is not a partition column") {
		t.Errorf("non-partition column: %v", err)
	}
}

// writeParquet writes rec as a Parquet file with the given Arrow writer properties.
func writeParquet(t testing.TB, path string, rec arrow.RecordBatch, aprops ...pqarrow.WriterOption) int64 {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(aprops...))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	return fi.Size()
}

const protoV1 = `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`

func metaLine(schema string, parts string) string {
	return `{"metaData":{"id":"00000000-0000-0000-0000-000000000001","format":{"provider":"parquet","options":{}},"schemaString":` +
		quoteJSON(schema) + `,"partitionColumns":` + parts + `,"configuration":{},"createdTime":1}}`
}

func quoteJSON(s string) string {
	b := strings.Builder{}
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

func addLine(path string, size int64, pv string) string {
	return `{"add":{"path":` + quoteJSON(path) + `,"partitionValues":` + pv + `,"size":` + itoa(size) + `,"modificationTime":1,"dataChange":true}}`
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestForeignTimestampsAndTypes reads files as other writers produce them: INT96 (Spark's
// default), ms and ns timestamps, zone-less INT64 timestamps in a timestamp column, large
// strings, unsigned and narrower integers, a list with another element name, struct fields
// in another order, a missing column.
func TestForeignTimestampsAndTypes(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	ts := time.Date(2024, 2, 29, 23, 59, 58, 123456789, time.UTC)
	fileSchema := arrow.NewSchema([]arrow.Field{
		{Name: "t96", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
		{Name: "tms", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "tns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "tnaive", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		{Name: "l", Type: arrow.ListOfField(arrow.Field{Name: "item", Type: arrow.PrimitiveTypes.Int32, Nullable: false}), Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, arrow.Field{Name: "a", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true}), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, fileSchema)
	b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixNano()))
	b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMilli()))
	b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixNano()))
	b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro()))
	b.Field(4).(*array.LargeStringBuilder).Append("hé")
	b.Field(5).(*array.Uint16Builder).Append(65535)
	lb := b.Field(6).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{1, 2}, nil)
	sb := b.Field(7).(*array.StructBuilder)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.Int64Builder).Append(9)
	sb.FieldBuilder(1).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixNano()))
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	size := writeParquet(t, filepath.Join(dir, "part-0.parquet"), rec, pqarrow.WithDeprecatedInt96Timestamps(true), pqarrow.WithAllocator(mem))
	schema := `{"type":"struct","fields":[
		{"name":"t96","type":"timestamp","nullable":true,"metadata":{}},
		{"name":"tms","type":"timestamp","nullable":true,"metadata":{}},
		{"name":"tns","type":"timestamp","nullable":true,"metadata":{}},
		{"name":"tnaive","type":"timestamp","nullable":true,"metadata":{}},
		{"name":"s","type":"string","nullable":true,"metadata":{}},
		{"name":"u","type":"integer","nullable":true,"metadata":{}},
		{"name":"l","type":{"type":"array","elementType":"long","containsNull":true},"nullable":true,"metadata":{}},
		{"name":"st","type":{"type":"struct","fields":[{"name":"a","type":"timestamp","nullable":false,"metadata":{}},{"name":"c","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
		{"name":"missing","type":"double","nullable":true,"metadata":{}}]}`
	writeCommit(t, dir, 0, protoV1, metaLine(strings.Join(strings.Fields(schema), ""), "[]"), addLine("part-0.parquet", size, "{}"))
	snap, err := dl.NewTable(dir, mem).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(dl.NewTable(dir, nil).Store(), snap.Metadata(), ReadOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := scanAll(t, rd, snap.Files())
	want := `{"l":[1,2],"missing":null,"s":"hé","st":{"a":"2024-02-29T23:59:58.123456Z","c":null},"t96":"2024-02-29T23:59:58.123456Z","tms":"2024-02-29T23:59:58.123Z","tnaive":"2024-02-29T23:59:58.123456Z","tns":"2024-02-29T23:59:58.123456Z","u":65535}`
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestUnsafePathsRefused(t *testing.T) {
	mem := newMem(t)
	base := t.TempDir()
	dir := filepath.Join(base, "table")
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	rec := recJSON(t, mem, sc, `[{"id":1}]`)
	defer rec.Release()
	size := writeParquet(t, filepath.Join(base, "outside.parquet"), rec)
	writeParquet(t, filepath.Join(dir, "inside.parquet"), rec)
	if err := os.Symlink(filepath.Join(base, "outside.parquet"), filepath.Join(dir, "link.parquet")); err != nil {
		t.Fatal(err)
	}
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`
	for _, c := range []struct {
		path string
		want string // "" = accepted
	}{
		{"../outside.parquet", "unsafe path"},
		{"%2E%2E/outside.parquet", "unsafe path"},
		{"a/../../outside.parquet", "unsafe path"},
		{filepath.Join(base, "outside.parquet"), "outside the table root"},
		{"file://" + filepath.Join(base, "outside.parquet"), "outside the table root"},
		{"file://" + dir + "/../outside.parquet", "unsafe path"},
		{"s3://bucket/x.parquet", "only local paths"},
		{"_delta_log/00000000000000000000.json", "unsafe path"},
		{`a\..\outside.parquet`, "unsafe path"},
		{"link.parquet", "path escapes from parent"}, // the symlink points outside: os.Root refuses
		{"file://" + dir + "/inside.parquet", ""},
		{dir + "/inside.parquet", ""},
		{"inside.parquet", ""},
	} {
		os.RemoveAll(filepath.Join(dir, "_delta_log"))
		writeCommit(t, dir, 0, protoV1, metaLine(schema, "[]"), addLine(c.path, size, "{}"))
		src, err := NewSource(Config{Table: dir, Version: -1, StartingVersion: -1})
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		_, err = src.Open(context.Background(), testEnv(mem), nil)
		if err == nil {
			func() {
				defer func() {
					if r := recover(); r != nil {
						err = errors.New("panic")
					}
				}()
				for {
					rec, rerr := src.Read(context.Background(), nil)
					if rerr != nil {
						if rerr.Error() != "EOF" {
							err = rerr
						}
						break
					}
					if rec != nil {
						rows = append(rows, recRows(t, rec)...)
						rec.Release()
					}
				}
			}()
		}
		src.Close()
		switch {
		case c.want == "" && (err != nil || len(rows) != 1):
			t.Errorf("%s: err %v, rows %q; want one row", c.path, err, rows)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err %v, want %q", c.path, err, c.want)
		}
	}
}

func TestUnsupportedReaderFeaturesRefused(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`
	for _, c := range []struct {
		proto, conf, add string
		want             string
	}{
		{`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["someFutureFeature"],"writerFeatures":["someFutureFeature"]}}`, `{}`, "", `reader feature "someFutureFeature"`},
		{`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["variantType"],"writerFeatures":["variantType"]}}`, `{}`, "", `reader feature "variantType"`},
		// Column mapping is read (colmap_test.go); refused: an unknown mode, a mode the protocol
		// does not support, id mode without column ids.
		{`{"protocol":{"minReaderVersion":2,"minWriterVersion":5}}`, `{"delta.columnMapping.mode":"names"}`, "", `column mapping mode "names"`},
		{`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`, `{"delta.columnMapping.mode":"name"}`, "", `without the columnMapping feature`},
		{`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["columnMapping"],"writerFeatures":["columnMapping"]}}`, `{"delta.columnMapping.mode":"id"}`, "", `column id has no delta.columnMapping.id`},
		{`{"protocol":{"minReaderVersion":4,"minWriterVersion":7}}`, `{}`, "", `reader version 4`},
	} {
		os.RemoveAll(filepath.Join(dir, "_delta_log"))
		meta := strings.Replace(metaLine(schema, "[]"), `"configuration":{}`, `"configuration":`+c.conf, 1)
		lines := []string{c.proto, meta}
		if c.add != "" {
			lines = append(lines, c.add)
		}
		writeCommit(t, dir, 0, lines...)
		for _, follow := range []bool{false, true} {
			src, _ := NewSource(Config{Table: dir, Version: -1, StartingVersion: -1, Follow: follow})
			_, err := src.Open(context.Background(), testEnv(mem), nil)
			src.Close()
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, dl.ErrUnsupportedProtocol) {
				t.Errorf("%s %s (follow %v): %v; want %q", c.proto, c.conf, follow, err, c.want)
			}
		}
	}
}
