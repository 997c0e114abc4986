package window

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestParseAggs(t *testing.T) {
	tests := []struct {
		spec    string
		want    string // calls rendered with String, joined by "; "
		wantErr string
	}{
		{"count, sum(value.amount) as revenue, avg(x), count_distinct(u) as n",
			"count(*) as count; sum(value.amount) as revenue; avg(x) as avg_x; count_distinct(u) as n", ""},
		{"COUNT(*), Max( ts ) as latest, min(value.amount)",
			"count(*) as count; max(ts) as latest; min(value.amount) as min_amount", ""},
		{"count(x), first(a.b.c), last(c)", "count(x) as count_x; first(a.b.c) as first_c; last(c) as last_c", ""},
		{"count, count", "", `"count" appears twice`},
		{"sum", "", "sum needs a column"},
		{"geomean(x)", "", `unknown function "geomean"`},
		{"count,", "", "empty item"},
		{"sum(x) as 1bad", "", "cannot parse"},
	}
	for _, tt := range tests {
		calls, err := ParseAggs(tt.spec)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseAggs(%q) err = %v, want %q", tt.spec, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseAggs(%q): %v", tt.spec, err)
			continue
		}
		var got []string
		for _, c := range calls {
			got = append(got, c.String())
		}
		if g := strings.Join(got, "; "); g != tt.want {
			t.Errorf("ParseAggs(%q) = %s, want %s", tt.spec, g, tt.want)
		}
	}
}

var aggSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: tsUTC},
	{Name: "value", Type: arrow.StructOf(
		arrow.Field{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		arrow.Field{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	), Nullable: true},
	{Name: "u", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "seen", Type: tsUTC, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

func TestAggregates(t *testing.T) {
	rows := [][]any{
		// k, ts, value{amount, qty}, u, n, seen, ok
		{"a", "2024-05-01T00:00:03Z", []any{1.5, 2}, "x", 7, "2024-01-02T00:00:00Z", true},
		{"a", "2024-05-01T00:00:01Z", []any{2.5, nil}, "y", 3, "2024-01-01T00:00:00Z", false},
		{"a", "2024-05-01T00:00:02Z", nil, "x", nil, nil, nil}, // null struct: amount and qty null
		{"a", "2024-05-01T00:00:04Z", []any{nil, 5}, nil, 9, "2024-01-03T00:00:00Z", true},
		{"b", "2024-05-01T00:00:05Z", []any{nil, nil}, nil, nil, nil, nil},
	}
	tests := []struct {
		spec   string
		fields string // output field types of the aggregates
		want   []string
	}{
		{"count, count(value.amount), count(value.qty), count(u)", "int64 int64 int64 int64",
			[]string{"a 4 2 2 3", "b 1 0 0 0"}},
		{"sum(value.amount), sum(value.qty), sum(n)", "float64 int64 int64",
			[]string{"a 4 7 19", "b null null null"}},
		{"avg(value.amount), avg(value.qty), avg(n)", "float64 float64 float64",
			[]string{"a 2 3.5 6.333333333333333", "b null null null"}},
		{"min(value.amount), max(value.qty), min(u), max(u), min(n), max(seen), min(ok), max(ok)",
			"float64 int32 utf8 utf8 uint32 timestamp[us, tz=UTC] bool bool",
			[]string{"a 1.5 5 x y 3 2024-01-03T00:00:00Z false true", "b null null null null null null null null"}},
		{"first(u), last(u), first(value.qty) as fq, last(seen)", "utf8 utf8 int32 timestamp[us, tz=UTC]",
			[]string{"a y x 2 2024-01-03T00:00:00Z", "b null null null null"}},
		{"count_distinct(u), count_distinct(value.qty), count_distinct(ok)", "int64 int64 int64",
			[]string{"a 2 2 2", "b 0 0 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			for _, steps := range splits(rows) {
				mem := checkedMem(t)
				calls, err := ParseAggs(tt.spec)
				if err != nil {
					t.Fatal(err)
				}
				m := newManager(t, mem, nil, Config{Assigner: NewGlobal(), Key: []string{"k"}, Time: "ts", Aggs: calls}, aggSchema)
				var types []string
				for _, f := range m.Schema().Fields()[3 : m.Schema().NumFields()-1] {
					types = append(types, f.Type.String())
				}
				if got := strings.Join(types, " "); got != tt.fields {
					t.Errorf("output types %s, want %s", got, tt.fields)
				}
				res := runSteps(t, mem, m, nil, aggSchema, append(steps, step{final: true}), time.RFC3339)
				var got []string
				for _, r := range res.out {
					f := strings.Fields(r)
					got = append(got, strings.Join(f[2:len(f)-1], " ")) // drop bounds and emit
				}
				diffRows(t, got, tt.want)
			}
		})
	}
}

func TestAggregateMergeInSessions(t *testing.T) {
	// Two sessions bridged by a late record must merge every accumulator kind.
	rows := [][]any{
		{"a", "2024-05-01T00:00:00Z", []any{1.0, 1}, "x", 1, "2024-01-01T00:00:00Z", true},
		{"a", "2024-05-01T00:00:20Z", []any{4.0, 4}, "z", 4, "2024-01-04T00:00:00Z", false},
		{"a", "2024-05-01T00:00:10Z", []any{2.0, 2}, "y", 2, "2024-01-02T00:00:00Z", true},
	}
	mem := checkedMem(t)
	asg, _ := NewSession(10 * time.Second)
	calls, _ := ParseAggs("count, sum(value.amount) as s, avg(value.qty) as a, min(u) as mn, max(u) as mx, first(u) as f, last(u) as l, count_distinct(ok) as d")
	m := newManager(t, mem, nil, Config{Assigner: asg, Key: []string{"k"}, Time: "ts", Aggs: calls,
		Watermark: WatermarkOptions{Generate: true, Delay: time.Minute}}, aggSchema)
	res := runSteps(t, mem, m, nil, aggSchema, []step{{rows: rows}, {final: true}}, "05")
	diffRows(t, res.out, []string{"00 30 a 3 7 2.3333333333333335 x z x z 2 on_time"})
}
