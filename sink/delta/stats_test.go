package delta

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/delta"
)

func statsOf(t *testing.T, sc *arrow.Schema, numIdx int, js ...string) map[string]any {
	t.Helper()
	mem := newMem(t)
	conf := conformer{mem: mem, target: canonical(t, sc)}
	c := newStatsCollector(conf.target, numIdx)
	for _, j := range js {
		rec := recFromJSON(t, mem, sc, j)
		cr, err := conf.record(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		c.update(cr)
		cr.Release()
	}
	var out map[string]any
	s := c.json(conf.target)
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("stats %s: %v", s, err)
	}
	return out
}

func canonical(t *testing.T, sc *arrow.Schema) *arrow.Schema {
	st, err := delta.FromArrowSchema(sc)
	if err != nil {
		t.Fatal(err)
	}
	out, err := st.ToArrow()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestStatsNumericAndNulls(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "nan", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "inf", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "allnull", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	}, nil)
	got := statsOf(t, sc, 32,
		`[{"i":5,"f":1.5,"nan":1,"inf":2,"dec":"12.30","allnull":null,"b":true,"d":19753,"u64":18446744073709551615},
		  {"i":-3,"f":null,"nan":"NaN","inf":"-Inf","dec":"-0.05","allnull":null,"b":null,"d":null,"u64":0}]`,
		`[{"i":null,"f":-2.25,"nan":3,"inf":7,"dec":null,"allnull":null,"b":false,"d":0,"u64":null}]`)
	want := `{"maxValues":{"d":"2024-01-31","dec":12.30,"f":1.5,"i":5,"inf":7,"u64":18446744073709551615},` +
		`"minValues":{"d":"1970-01-01","dec":-0.05,"f":-2.25,"i":-3,"u64":0},` +
		`"nullCount":{"allnull":3,"b":1,"d":1,"dec":1,"f":1,"i":1,"inf":0,"nan":0,"u64":1},"numRecords":3}`
	// json.Unmarshal into float64 loses "12.30" formatting; compare via re-marshalled maps.
	var w map[string]any
	_ = json.Unmarshal([]byte(want), &w)
	if mustJSON(got) != mustJSON(w) {
		t.Errorf("stats\n got: %s\nwant: %s", mustJSON(got), mustJSON(w))
	}
}

func TestStatsDecimalText(t *testing.T) {
	mem := newMem(t)
	sc := arrow.NewSchema([]arrow.Field{{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true}}, nil)
	c := newStatsCollector(canonical(t, sc), 32)
	rec := recFromJSON(t, mem, sc, `[{"dec":"12.30"},{"dec":"-0.05"}]`)
	defer rec.Release()
	c.update(rec)
	if got, want := c.json(sc), `{"numRecords":2,"minValues":{"dec":-0.05},"maxValues":{"dec":12.30},"nullCount":{"dec":0}}`; got != want {
		t.Errorf("got %s want %s", got, want)
	}
}

func TestStatsTimestampsAndStrings(t *testing.T) {
	mem := newMem(t)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	long := strings.Repeat("é", 40)
	c := newStatsCollector(sc, 32)
	rec := recFromJSON(t, mem, sc, `[{"ts":1706702400123999,"ntz":-1,"s":"`+long+`"},{"ts":1706702400000001,"ntz":1000,"s":"b"}]`)
	defer rec.Release()
	c.update(rec)
	want := `{"numRecords":2,"minValues":{"ts":"2024-01-31T12:00:00.000Z","ntz":"1969-12-31T23:59:59.999","s":"b"},` +
		`"maxValues":{"ts":"2024-01-31T12:00:00.123Z","ntz":"1970-01-01T00:00:00.001","s":"` + strings.Repeat("é", 32) + "\U0010FFFF" + `"},` +
		`"nullCount":{"ts":0,"ntz":0,"s":0}}`
	if got := c.json(sc); got != want {
		t.Errorf("stats\n got: %s\nwant: %s", got, want)
	}
}

func TestStringTruncation(t *testing.T) {
	a32 := strings.Repeat("a", 32)
	for _, c := range []struct{ in, min, max string }{
		{"short", "short", "short"},
		{a32, a32, a32},
		{a32 + "b", a32, a32 + "\x7f"},
		{a32 + "\x7f", a32, a32 + "\U0010FFFF"},
		{a32 + "é", a32, a32 + "\U0010FFFF"},
		{a32 + "\U0010FFFFz", a32, a32 + "\U0010FFFF\x7f"},
	} {
		if got := truncateMin(c.in); got != c.min {
			t.Errorf("truncateMin(%q) = %q", c.in, got)
		}
		got, ok := truncateMax(c.in)
		if !ok || got != c.max {
			t.Errorf("truncateMax(%q) = %q, %v; want %q", c.in, got, ok, c.max)
		}
		if got < c.in[:min(len(c.in), len(got))] || (ok && got < c.in) {
			t.Errorf("truncateMax(%q) = %q is below the input", c.in, got)
		}
	}
	if _, ok := truncateMax(a32 + strings.Repeat("\U0010FFFF", 40)); ok {
		t.Errorf("truncateMax of max code points should give up")
	}
}

func TestStatsNestedAndIndexedLimit(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "in", Type: arrow.StructOf(arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
		), Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "z", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	js := `[{"a":1,"s":{"x":7,"in":{"y":"q"}},"l":[1],"z":1},{"a":2,"s":null,"l":null,"z":2},{"a":3,"s":{"x":null,"in":null},"l":[],"z":3}]`
	got := mustJSON(statsOf(t, sc, 32, js))
	want := `{"maxValues":{"a":3,"s":{"in":{"y":"q"},"x":7},"z":3},"minValues":{"a":1,"s":{"in":{"y":"q"},"x":7},"z":1},"nullCount":{"a":0,"l":1,"s":{"in":{"y":2},"x":2},"z":0},"numRecords":3}`
	if got != want {
		t.Errorf("nested stats\n got: %s\nwant: %s", got, want)
	}
	// Only the first 3 leaves (a, s.x, s.in.y) are indexed.
	got = mustJSON(statsOf(t, sc, 3, js))
	want = `{"maxValues":{"a":3,"s":{"in":{"y":"q"},"x":7}},"minValues":{"a":1,"s":{"in":{"y":"q"},"x":7}},"nullCount":{"a":0,"s":{"in":{"y":2},"x":2}},"numRecords":3}`
	if got != want {
		t.Errorf("3 indexed leaves\n got: %s\nwant: %s", got, want)
	}
}
