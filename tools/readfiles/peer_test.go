package readfiles_test

// Peer tests through the binary: real vega-datasets files read by `streamkit read-files`
// must give the counts, sums and distinct counts DuckDB computes from the same files, and
// Avro files written by fastavro must decode to the right Arrow types and values.

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/internal/peertest"
)

// streamStats runs `streamkit read-files args...` and computes, from the Arrow stream on its
// stdout, the row count and the ColStats of cols; it also returns the stream schema, the
// number of rows with rescued data, and stderr.
func streamStats(t *testing.T, args []string, cols []string) (int64, map[string]peertest.ColStats, *arrow.Schema, int64, string) {
	t.Helper()
	cmd := exec.Command(peertest.Binary(t), append([]string{"read-files", "--progress", "off", "--stable-after", "0"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rd, err := codec.NewReader(out, mem)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	defer rd.Release()
	sch := rd.Schema()
	stats := map[string]peertest.ColStats{}
	distinct := map[string]map[string]bool{}
	sums := map[string]float64{}
	var rows, rescued int64
	for {
		m, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		if m.Batch == nil {
			continue
		}
		rec := m.Batch
		rows += rec.NumRows()
		if idx := sch.FieldIndices(rescue.Column); len(idx) > 0 {
			c := rec.Column(idx[0])
			rescued += int64(c.Len() - c.NullN())
		}
		for _, name := range cols {
			idx := sch.FieldIndices(name)
			if len(idx) == 0 {
				t.Fatalf("no column %q in %s", name, schema.DDL(sch))
			}
			arr := rec.Column(idx[0])
			s := stats[name]
			s.Count += int64(arr.Len() - arr.NullN())
			if distinct[name] == nil {
				distinct[name] = map[string]bool{}
			}
			for i := 0; i < arr.Len(); i++ {
				if arr.IsNull(i) {
					continue
				}
				distinct[name][arr.ValueStr(i)] = true
				if v, ok := numeric(arr, i); ok {
					sums[name] += v
					s.Sum = new(float64)
				}
			}
			stats[name] = s
		}
		rec.Release()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("read-files: %v\n%s", err, stderr.String())
	}
	for name, s := range stats {
		s.Distinct = int64(len(distinct[name]))
		if s.Sum != nil {
			v := sums[name]
			s.Sum = &v
		}
		stats[name] = s
	}
	return rows, stats, sch, rescued, stderr.String()
}

func numeric(arr arrow.Array, i int) (float64, bool) {
	switch a := arr.(type) {
	case *array.Int16:
		return float64(a.Value(i)), true
	case *array.Int32:
		return float64(a.Value(i)), true
	case *array.Int64:
		return float64(a.Value(i)), true
	case *array.Float32:
		return float64(a.Value(i)), true
	case *array.Float64:
		return a.Value(i), true
	}
	return 0, false
}

var badCount = regexp.MustCompile(`bad_records=(\d+)`)

func TestVegaDatasetsMatchDuckDB(t *testing.T) {
	py := peertest.Python(t)
	if testing.Short() {
		t.Skip("reads ~100 MB of real data")
	}
	tests := []struct {
		file string
		from string   // DuckDB table expression; %s is the path
		args []string // read-files options
		cols []string
	}{
		{"seattle-weather.csv", "read_csv('%s', header=true)", nil, []string{"date", "precipitation", "temp_max", "temp_min", "wind", "weather"}},
		{"birdstrikes.csv", "read_csv('%s', header=true)", nil, []string{"Airport Name", "Flight Date", "Cost Total $", "Speed IAS in knots", "Wildlife Species"}},
		{"flights-200k.json", "read_json('%s', format='array')", nil, []string{"delay", "distance", "time"}},
		{"flights-200k.arrow", "arrow", nil, []string{"delay", "distance", "time"}},
		{"flights-3m.parquet", "read_parquet('%s')", nil, []string{"date", "delay", "distance", "origin", "destination"}},
		// An explicit schema: Parquet reads only these column chunks.
		{"flights-3m.parquet", "read_parquet('%s')", []string{"--schema", "delay int, origin string"}, []string{"delay", "origin"}},
	}
	for _, tt := range tests {
		t.Run(tt.file+strings.Join(tt.args, "_"), func(t *testing.T) {
			path := peertest.VegaFile(t, tt.file)
			from := tt.from
			if strings.Contains(from, "%s") {
				from = fmt.Sprintf(from, strings.ReplaceAll(path, "'", "''"))
			}
			wantRows, want := peertest.DuckStats(t, py, path, from, tt.cols)
			if wantRows == 0 {
				t.Fatal("DuckDB read no rows")
			}
			gotRows, got, sch, rescued, stderr := streamStats(t, append(append([]string(nil), tt.args...), path), tt.cols)
			t.Logf("schema: %s", schema.DDL(sch))
			if gotRows != wantRows {
				t.Errorf("rows: got %d, DuckDB %d", gotRows, wantRows)
			}
			if m := badCount.FindStringSubmatch(stderr); rescued != 0 || m == nil || m[1] != "0" {
				t.Errorf("%d rescued rows, bad records %v in a clean file:\n%s", rescued, m, stderr)
			}
			names := append([]string(nil), tt.cols...)
			sort.Strings(names)
			for _, c := range names {
				g, w := got[c], want[c]
				if g.Count != w.Count || g.Distinct != w.Distinct || (g.Sum == nil) != (w.Sum == nil) || g.Sum != nil && !closeTo(*g.Sum, *w.Sum) {
					t.Errorf("column %q: got count %d distinct %d sum %v; DuckDB count %d distinct %d sum %v", c, g.Count, g.Distinct, deref(g.Sum), w.Count, w.Distinct, deref(w.Sum))
				}
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func closeTo(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// jsonRows decodes the Arrow stream raw (read-files' stdout) into its schema and its data
// rows as JSON objects (array.RecordToJSON), in stream order.
func jsonRows(t *testing.T, raw []byte, mem memory.Allocator) (*arrow.Schema, []string) {
	t.Helper()
	rd, err := codec.NewReader(bytes.NewReader(raw), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	var rows []string
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
		var b bytes.Buffer
		if err := array.RecordToJSON(m.Batch, &b); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, strings.Split(strings.TrimSpace(b.String()), "\n")...)
		m.Batch.Release()
	}
	return rd.Schema(), rows
}

// TestAvroFastavro: Avro object container files written by fastavro (logical types, unions
// with null, decimals) decode through read-files to the right Arrow types and exact values,
// and two files with different writer schemas conform to the stream schema by name.
func TestAvroFastavro(t *testing.T) {
	py := peertest.Python(t)
	dir := t.TempDir()
	peertest.RunPython(t, py, `
import sys, os, datetime, decimal, uuid, fastavro
schema = {"type": "record", "name": "Order", "namespace": "t", "fields": [
  {"name": "id", "type": "long"},
  {"name": "qty", "type": ["null", "int"]},
  {"name": "at_ms", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
  {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
  {"name": "day", "type": {"type": "int", "logicalType": "date"}},
  {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 18, "scale": 4}},
  {"name": "fee", "type": ["null", {"type": "fixed", "name": "F", "size": 9, "logicalType": "decimal", "precision": 20, "scale": 2}]},
  {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "note", "type": ["null", "string"], "default": None}
]}
utc = datetime.timezone.utc
recs = [
  {"id": 1, "qty": 3, "at_ms": datetime.datetime(2024, 2, 29, 23, 59, 59, 999000, tzinfo=utc),
   "at_us": datetime.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=utc), "day": datetime.date(2024, 2, 29),
   "price": decimal.Decimal("12345678901234.5678"), "fee": decimal.Decimal("-0.01"),
   "uid": uuid.UUID("12345678-1234-5678-1234-567812345678"), "tags": ["a", "b"], "note": "x"},
  {"id": 2, "qty": None, "at_ms": None, "at_us": datetime.datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=utc),
   "day": datetime.date(1900, 1, 1), "price": decimal.Decimal("-0.0001"), "fee": None,
   "uid": uuid.UUID("00000000-0000-0000-0000-000000000001"), "tags": [], "note": None},
]
with open(os.path.join(sys.argv[1], "a.avro"), "wb") as f:
    fastavro.writer(f, fastavro.parse_schema(schema), recs, codec="deflate")
# A later file: an extra field, no "note", qty as long (widened writer type).
schema2 = dict(schema)
schema2["fields"] = [f for f in schema["fields"] if f["name"] not in ("note", "qty")] + [
  {"name": "qty", "type": ["null", "long"]}, {"name": "extra", "type": "string"}]
recs2 = [dict({k: v for k, v in recs[0].items() if k not in ("note",)}, id=3, qty=7, extra="kept")]
with open(os.path.join(sys.argv[1], "b.avro"), "wb") as f:
    fastavro.writer(f, fastavro.parse_schema(schema2), recs2, codec="null")
os.utime(os.path.join(sys.argv[1], "a.avro"), (1000, 1000))
os.utime(os.path.join(sys.argv[1], "b.avro"), (2000, 2000))
`, dir)
	cmd := exec.Command(peertest.Binary(t), "read-files", "--progress", "off", filepath.Join(dir, "*.avro"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	sch, rows := jsonRows(t, raw, memory.DefaultAllocator)
	wantSchema := "id bigint, qty int, at_ms timestamp, at_us timestamp, day date, price decimal(18,4), fee decimal(20,2), uid string, tags array<string>, note string, _rescued_data string"
	if got := schema.DDL(sch); got != wantSchema {
		t.Errorf("schema\n%s\nwant\n%s", got, wantSchema)
	}
	bpath := filepath.Join(dir, "b.avro")
	want := []string{
		`{"_rescued_data":null,"at_ms":"2024-02-29T23:59:59.999Z","at_us":"2024-02-29T23:59:59.999999Z","day":"2024-02-29","fee":"-0.01","id":1,"note":"x","price":"12345678901234.5678","qty":3,"tags":["a","b"],"uid":"12345678-1234-5678-1234-567812345678"}`,
		`{"_rescued_data":null,"at_ms":null,"at_us":"1969-12-31T23:59:59.000001Z","day":"1900-01-01","fee":null,"id":2,"note":null,"price":"-0.0001","qty":null,"tags":[],"uid":"00000000-0000-0000-0000-000000000001"}`,
		`{"_rescued_data":"{\"extra\":\"kept\",\"_file\":\"` + bpath + `\"}","at_ms":"2024-02-29T23:59:59.999Z","at_us":"2024-02-29T23:59:59.999999Z","day":"2024-02-29","fee":"-0.01","id":3,"note":null,"price":"12345678901234.5678","qty":7,"tags":["a","b"],"uid":"12345678-1234-5678-1234-567812345678"}`,
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

// TestSchemaNotations: --schema as DDL, @file with DDL, a JSON Schema document or an Avro
// schema, and inference with --schema-hints, give the expected stream schemas and values.
func TestSchemaNotations(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	write(t, filepath.Join(dir, "e.ndjson"), `{"id":1,"amount":"12.50","ts":"2024-05-01T10:00:00Z","tags":["a"],"user":{"id":7,"name":"n"}}`+"\n", old)
	write(t, filepath.Join(dir, "s.ddl"), "id long, amount decimal(10,2), ts timestamp, tags array<string>, user struct<id:long,name:string>", old)
	write(t, filepath.Join(dir, "s.json"), `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{
		"id":{"type":"integer"},"amount":{"type":"number"},"ts":{"type":"string","format":"date-time"},
		"tags":{"type":"array","items":{"type":"string"}},"user":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}}}}}`, old)
	write(t, filepath.Join(dir, "s.avsc"), `{"type":"record","name":"E","fields":[{"name":"id","type":"long"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},{"name":"tags","type":{"type":"array","items":"string"}}]}`, old)
	ddlSchema := "id bigint, amount decimal(10,2), ts timestamp, tags array<string>, user struct<id:bigint,name:string>, _rescued_data string"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--schema", "id long, amount decimal(10,2), ts timestamp, tags array<string>, user struct<id:long,name:string>"}, ddlSchema},
		{[]string{"--schema", "@s.ddl"}, ddlSchema},
		{[]string{"--schema", "@s.json"}, "id bigint, amount double, ts timestamp, tags array<string>, user struct<id:bigint,name:string>, _rescued_data string"},
		{[]string{"--schema", "@s.avsc"}, "id bigint NOT NULL, ts timestamp NOT NULL, tags array<string> NOT NULL, _rescued_data string"},
		{[]string{"--schema-hints", "amount decimal(10,2), user.id int"}, "id bigint, amount decimal(10,2), ts timestamp, tags array<string>, user struct<id:int,name:string>, _rescued_data string"},
	} {
		args := append(append([]string(nil), tt.args...), filepath.Join(dir, "e.ndjson"))
		if strings.HasPrefix(args[1], "@") {
			args[1] = "@" + filepath.Join(dir, args[1][1:])
		}
		_, _, sch, rescued, stderr := streamStats(t, args, nil)
		if got := schema.DDL(sch); got != tt.want {
			t.Errorf("%v: schema\n%s\nwant\n%s", tt.args, got, tt.want)
		}
		wantRescued := int64(0)
		switch {
		case strings.Contains(tt.args[1], "avsc"):
			wantRescued = 1 // amount and user are not in the Avro schema
		case strings.Contains(tt.args[1], "s.json"):
			wantRescued = 1 // amount is a JSON string, the JSON Schema says number
		}
		if rescued != wantRescued {
			t.Errorf("%v: %d rescued rows, want %d\n%s", tt.args, rescued, wantRescued, stderr)
		}
	}
}
