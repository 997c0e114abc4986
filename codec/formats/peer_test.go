package formats

// Tests against the real peers: fastavro writes Avro files, DuckDB computes the statistics our
// readers must reproduce on real data (vega-datasets 3.2.1, BSD-3-Clause, see
// testdata/vega/README.md). They skip without the Python venv (internal/peertest) unless
// STREAMKIT_REQUIRE_PEERS=1.

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/csvrow"
	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/internal/peertest"
)

func TestAvroFastavro(t *testing.T) {
	py := peertest.Python(t)
	p := filepath.Join(t.TempDir(), "f.avro")
	peertest.RunPython(t, py, `
import sys, datetime, decimal, uuid, fastavro
schema = {"type": "record", "name": "Event", "namespace": "t", "fields": [
  {"name": "id", "type": "long"},
  {"name": "n", "type": ["null", "int"]},
  {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
  {"name": "day", "type": {"type": "int", "logicalType": "date"}},
  {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 3}},
  {"name": "fprice", "type": {"type": "fixed", "name": "F", "size": 8, "logicalType": "decimal", "precision": 12, "scale": 2}},
  {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
  {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
  {"name": "hash", "type": {"type": "fixed", "name": "H", "size": 2}},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "m", "type": {"type": "map", "values": ["null", "double"]}},
  {"name": "u", "type": ["null", "long", "string", {"type": "record", "name": "P", "fields": [{"name": "x", "type": "float"}]}]},
  {"name": "b", "type": "boolean"},
  {"name": "raw", "type": "bytes"}
]}
utc = datetime.timezone.utc
recs = [
  {"id": 1, "n": 5, "ts_ms": datetime.datetime(2024, 3, 1, 12, 0, 0, 123000, tzinfo=utc),
   "ts_us": datetime.datetime(2024, 3, 1, 12, 0, 0, 123456, tzinfo=utc), "day": datetime.date(2024, 2, 29),
   "price": decimal.Decimal("1234.567"), "fprice": decimal.Decimal("-0.05"), "uid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
   "kind": "B", "hash": b"\x01\x02", "tags": ["x", "y"], "m": {"k": 1.5, "n": None}, "u": ("t.P", {"x": 0.5}), "b": True, "raw": b"hi"},
  {"id": 2, "n": None, "ts_ms": datetime.datetime(1969, 12, 31, 23, 59, 59, tzinfo=utc),
   "ts_us": datetime.datetime(1970, 1, 1, tzinfo=utc), "day": datetime.date(1970, 1, 1),
   "price": decimal.Decimal("0"), "fprice": decimal.Decimal("1"), "uid": uuid.UUID("00000000-0000-0000-0000-000000000000"),
   "kind": "A", "hash": b"\xff\xff", "tags": [], "m": {}, "u": ("string", "s"), "b": False, "raw": b""},
  {"id": 3, "n": 7, "ts_ms": datetime.datetime(2000, 1, 1, tzinfo=utc), "ts_us": datetime.datetime(2000, 1, 1, tzinfo=utc),
   "day": datetime.date(2000, 1, 1), "price": decimal.Decimal("-9.5"), "fprice": decimal.Decimal("0"),
   "uid": uuid.UUID("ffffffff-ffff-ffff-ffff-ffffffffffff"), "kind": "A", "hash": b"ab", "tags": ["z"], "m": {"a": None},
   "u": None, "b": True, "raw": b"\x00"},
]
with open(sys.argv[1], "wb") as f:
    fastavro.writer(f, fastavro.parse_schema(schema), recs, codec="deflate")
`, p)
	got := readFile(t, p, Options{BatchRows: 2})
	wantSchema := "id bigint NOT NULL, n int, ts_ms timestamp NOT NULL, ts_us timestamp NOT NULL, day date NOT NULL, price decimal(10,3) NOT NULL, fprice decimal(12,2) NOT NULL, uid string NOT NULL, kind string NOT NULL, hash binary NOT NULL, tags array<string> NOT NULL, m map<string,double> NOT NULL, u struct<member0:bigint,member1:string,member2:struct<x:float NOT NULL>>, b boolean NOT NULL, raw binary NOT NULL"
	if got.schema != wantSchema {
		t.Errorf("schema\n%s\nwant\n%s", got.schema, wantSchema)
	}
	want := `{"b":true,"day":"2024-02-29","fprice":"-0.05","hash":"AQI=","id":1,"kind":"B","m":[{"key":"k","value":1.5},{"key":"n","value":null}],"n":5,"price":"1234.567","raw":"aGk=","tags":["x","y"],"ts_ms":"2024-03-01T12:00:00.123Z","ts_us":"2024-03-01T12:00:00.123456Z","u":{"member0":null,"member1":null,"member2":{"x":0.5}},"uid":"12345678-1234-5678-1234-567812345678"}
{"b":false,"day":"1970-01-01","fprice":"1","hash":"//8=","id":2,"kind":"A","m":[],"n":null,"price":"0","raw":"","tags":[],"ts_ms":"1969-12-31T23:59:59Z","ts_us":"1970-01-01T00:00:00Z","u":{"member0":null,"member1":"s","member2":null},"uid":"00000000-0000-0000-0000-000000000000"}
{"b":true,"day":"2000-01-01","fprice":"0","hash":"YWI=","id":3,"kind":"A","m":[{"key":"a","value":null}],"n":7,"price":"-9.5","raw":"AA==","tags":["z"],"ts_ms":"2000-01-01T00:00:00Z","ts_us":"2000-01-01T00:00:00Z","u":null,"uid":"ffffffff-ffff-ffff-ffff-ffffffffffff"}`
	if got.rows != want {
		t.Errorf("rows\n%s\nwant\n%s", got.rows, want)
	}
	if !equalInts(got.sizes, []int64{2, 1}) {
		t.Errorf("sizes %v", got.sizes)
	}
}

// stats reads the whole file through Open and computes colStats for cols.
func stats(t *testing.T, path string, opts Options, cols []string) (int64, map[string]peertest.ColStats, int) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts.Allocator = mem
	bad := 0
	opts.OnBadRecord = func(b rescue.BadRecord) error {
		bad++
		if bad < 5 {
			t.Logf("bad record: %s line %d: %s", b.Source, b.Line, b.Reason)
		}
		return nil
	}
	r, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string]peertest.ColStats{}
	distinct := map[string]map[string]bool{}
	sums := map[string]float64{}
	rescued := 0
	var rows int64
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rec := b.Record
		rows += rec.NumRows()
		if idx := rec.Schema().FieldIndices(rescue.Column); len(idx) > 0 {
			rescued += rec.Column(idx[0]).Len() - rec.Column(idx[0]).NullN()
		}
		for _, c := range cols {
			idx := rec.Schema().FieldIndices(c)
			if len(idx) == 0 {
				t.Fatalf("no column %q in %s", c, rec.Schema())
			}
			arr := rec.Column(idx[0])
			s := out[c]
			s.Count += int64(arr.Len() - arr.NullN())
			if distinct[c] == nil {
				distinct[c] = map[string]bool{}
			}
			for i := 0; i < arr.Len(); i++ {
				if arr.IsNull(i) {
					continue
				}
				distinct[c][arr.ValueStr(i)] = true
				if v, ok := numeric(arr, i); ok {
					sums[c] += v
					s.Sum = new(float64)
				}
			}
			out[c] = s
		}
		rec.Release()
	}
	for c, s := range out {
		s.Distinct = int64(len(distinct[c]))
		if s.Sum != nil {
			v := sums[c]
			s.Sum = &v
		}
		out[c] = s
	}
	if rescued > 0 {
		t.Logf("%s: %d rows with rescued data", path, rescued)
	}
	return rows, out, bad + rescued
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

func TestVegaDatasetsMatchDuckDB(t *testing.T) {
	py := peertest.Python(t)
	if testing.Short() {
		t.Skip("reads ~30 MB of real data")
	}
	tests := []struct {
		file string
		from string // DuckDB table expression; %s is the path
		opts Options
		cols []string
	}{
		{"seattle-weather.csv", "read_csv('%s', header=true)", Options{CSV: csvrow.Options{Header: true}}, []string{"date", "precipitation", "temp_max", "temp_min", "wind", "weather"}},
		{"birdstrikes.csv", "read_csv('%s', header=true)", Options{CSV: csvrow.Options{Header: true}}, []string{"Airport Name", "Flight Date", "Cost Total $", "Speed IAS in knots", "Wildlife Species"}},
		{"flights-200k.json", "read_json('%s', format='array')", Options{}, []string{"delay", "distance", "time"}},
		{"flights-200k.arrow", "arrow", Options{}, []string{"delay", "distance", "time"}},
		{"flights-3m.parquet", "read_parquet('%s')", Options{Columns: []string{"date", "delay", "distance", "origin", "destination"}}, []string{"date", "delay", "distance", "origin", "destination"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := peertest.VegaFile(t, tt.file)
			from := tt.from
			if strings.Contains(from, "%s") {
				from = fmt.Sprintf(from, strings.ReplaceAll(path, "'", "''"))
			}
			wantRows, want := peertest.DuckStats(t, py, path, from, tt.cols)
			if wantRows == 0 {
				t.Fatal("DuckDB read no rows")
			}
			gotRows, got, problems := stats(t, path, tt.opts, tt.cols)
			if gotRows != wantRows {
				t.Errorf("rows: got %d, DuckDB %d", gotRows, wantRows)
			}
			if problems != 0 {
				t.Errorf("%d bad or rescued records in a clean file", problems)
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
