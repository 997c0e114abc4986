package window

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var tsUTC = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// orderSchema: key, event time, amount.
var orderSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: tsUTC, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// step is one input event of a scenario.
type step struct {
	rows  [][]any       // a data batch
	wm    string        // an upstream watermark
	clock time.Duration // advance the clock, then OnProcessingTime
	final bool
}

type result struct {
	out      []string
	late     [][]int32
	lateRows []string // k of the late rows
}

func runSteps(t *testing.T, mem memory.Allocator, m *Manager, clk *fakeClock, s *arrow.Schema, steps []step, layout string) result {
	t.Helper()
	var res result
	for _, st := range steps {
		switch {
		case st.rows != nil:
			rec := buildBatch(t, mem, s, st.rows)
			rej, err := m.Process(rec)
			if err != nil {
				t.Fatalf("Process: %v", err)
			}
			late := append(slices.Clone(rej.Late), rej.BadTime...)
			res.late = append(res.late, late)
			for _, i := range late {
				res.lateRows = append(res.lateRows, rec.Column(0).ValueStr(int(i)))
			}
			rec.Release()
		case st.wm != "":
			m.OnWatermark(us(t, st.wm))
		case st.clock != 0:
			clk.Advance(st.clock)
			m.OnProcessingTime()
		case st.final:
			m.Final()
		}
		out := m.TakeOutput()
		res.out = append(res.out, rowsOf(out, layout)...)
		release(out)
	}
	return res
}

func newManager(t *testing.T, mem memory.Allocator, clk *fakeClock, cfg Config, s *arrow.Schema) *Manager {
	t.Helper()
	cfg.Mem = mem
	if clk != nil {
		cfg.Now = clk.Now
	}
	m, err := New(s, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(m.Release)
	return m
}

// splits returns the same rows cut into batches in several ways, to check that results do not
// depend on batch boundaries.
func splits(rows [][]any) [][]step {
	one := []step{{rows: rows}}
	var each []step
	for _, r := range rows {
		each = append(each, step{rows: [][]any{r}})
	}
	return [][]step{one, each}
}

func TestWatermarkScenario(t *testing.T) {
	// 1-minute windows, 30 s watermark delay: 10:00:10, 10:02:00 (watermark → 10:01:30, the
	// 10:00 window fires), then 10:00:20 is late.
	rows := [][]any{
		{"a", "2024-05-01T10:00:10Z", 1},
		{"a", "2024-05-01T10:02:00Z", 2},
		{"a", "2024-05-01T10:00:20Z", 3},
	}
	for i, steps := range splits(rows) {
		mem := checkedMem(t)
		asg, _ := NewTumbling(time.Minute, 0, nil)
		aggs, _ := ParseAggs("count, sum(v)")
		m := newManager(t, mem, &fakeClock{}, Config{Assigner: asg, Key: []string{"k"}, Time: "ts", Aggs: aggs,
			Watermark: WatermarkOptions{Generate: true, Delay: 30 * time.Second}}, orderSchema)
		res := runSteps(t, mem, m, &fakeClock{}, orderSchema, append(steps, step{final: true}), "15:04:05")
		diffRows(t, res.out, []string{
			"10:00:00 10:01:00 a 1 1 on_time",
			"10:02:00 10:03:00 a 1 2 on_time",
		})
		if got := strings.Join(res.lateRows, ","); got != "a" {
			t.Errorf("split %d: late rows %q, want the third row", i, got)
		}
		if got, want := fmt.Sprint(res.late), []string{"[[2]]", "[[] [] [0]]"}[i]; got != want {
			t.Errorf("split %d: late row indices %s, want %s", i, got, want)
		}
		if st := m.Stats(); st.Late != 1 || st.OnTime != 2 || st.Records != 3 || st.Windows != 0 || st.Keys != 0 {
			t.Errorf("split %d: stats %+v", i, st)
		}
	}
}

func TestSessionMergeWithLateness(t *testing.T) {
	// gap 10 s, allowed lateness 30 s, no delay. Key A at 0 s and 25 s (watermark 25 s fires
	// [0,10)), then late 8 s (merges into [0,18), already complete → late_update) and 17 s
	// (bridges [0,18) and [25,35) → [0,35) with count 4, fired at the end).
	base := "2024-05-01T00:00:%02dZ"
	at := func(s int) string { return strings.Replace(base, "%02d", twoDigits(s), 1) }
	rows := [][]any{{"A", at(0), 1}, {"A", at(25), 1}, {"A", at(8), 1}, {"A", at(17), 1}}
	for _, steps := range splits(rows) {
		mem := checkedMem(t)
		asg, _ := NewSession(10 * time.Second)
		aggs, _ := ParseAggs("count, first(v) as f")
		m := newManager(t, mem, &fakeClock{}, Config{Assigner: asg, Key: []string{"k"}, Time: "ts", Aggs: aggs,
			AllowedLateness: 30 * time.Second, Watermark: WatermarkOptions{Generate: true}}, orderSchema)
		res := runSteps(t, mem, m, &fakeClock{}, orderSchema, append(steps, step{final: true}), "05")
		diffRows(t, res.out, []string{
			"00 10 A 1 1 on_time",
			"00 18 A 2 1 late_update",
			"00 35 A 4 1 late_update",
		})
		if st := m.Stats(); st.Late != 0 || st.Windows != 0 {
			t.Errorf("stats %+v", st)
		}
	}
}

func twoDigits(n int) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }

func TestSessionLateBeyondLateness(t *testing.T) {
	mem := checkedMem(t)
	asg, _ := NewSession(10 * time.Second)
	m := newManager(t, mem, &fakeClock{}, Config{Assigner: asg, Key: []string{"k"}, Time: "ts",
		AllowedLateness: 5 * time.Second, Watermark: WatermarkOptions{Generate: true}}, orderSchema)
	res := runSteps(t, mem, m, &fakeClock{}, orderSchema, []step{
		{rows: [][]any{{"A", "2024-05-01T00:00:00Z", 1}, {"B", "2024-05-01T00:00:30Z", 1}}},
		// [0,10) was purged at watermark 15; 3 s is late, 12 s bridges nothing alive → late too
		{rows: [][]any{{"A", "2024-05-01T00:00:03Z", 1}, {"A", "2024-05-01T00:00:04Z", 1}}},
		{final: true},
	}, "05")
	diffRows(t, res.out, []string{"00 10 A 1 on_time", "30 40 B 1 on_time"})
	if got := m.Stats().Late; got != 2 {
		t.Errorf("late = %d, want 2", got)
	}
}

func TestTumblingLatenessUpdates(t *testing.T) {
	mem := checkedMem(t)
	asg, _ := NewTumbling(time.Minute, 0, nil)
	aggs, _ := ParseAggs("count, sum(v) as total")
	m := newManager(t, mem, &fakeClock{}, Config{Assigner: asg, Key: []string{"k"}, Time: "ts", Aggs: aggs,
		AllowedLateness: time.Minute, Watermark: WatermarkOptions{Generate: true}}, orderSchema)
	res := runSteps(t, mem, m, &fakeClock{}, orderSchema, []step{
		{rows: [][]any{{"a", "2024-05-01T10:00:10Z", 1}, {"a", "2024-05-01T10:01:30Z", 2}}},
		{rows: [][]any{{"a", "2024-05-01T10:00:50Z", 4}, {"b", "2024-05-01T10:00:50Z", 8}}}, // both late, within lateness
		{wm: "2024-05-01T10:02:00Z"},                       // [10:00,10:01) cleaned up, [10:01,10:02) fires
		{rows: [][]any{{"a", "2024-05-01T10:00:59Z", 16}}}, // beyond lateness
		{rows: [][]any{{"a", "2024-05-01T10:01:59Z", 32}}}, // late update of [10:01, 10:02)
		{final: true},
	}, "15:04")
	diffRows(t, res.out, []string{
		"10:00 10:01 a 1 1 on_time",
		"10:00 10:01 a 2 5 late_update",
		"10:00 10:01 b 1 8 late_update",
		"10:01 10:02 a 1 2 on_time",
		"10:01 10:02 a 2 34 late_update",
	})
	if st := m.Stats(); st.Late != 1 || st.LateUpdate != 3 {
		t.Errorf("stats %+v", st)
	}
}

func TestCalendarWindowsOutput(t *testing.T) {
	la := mustLoc(t, "America/Los_Angeles")
	kol := mustLoc(t, "Asia/Kolkata")
	tests := []struct {
		name string
		loc  *time.Location
		size time.Duration
		rows [][]any
		want []string
	}{
		{"LA days across spring forward", la, 24 * time.Hour, [][]any{
			{"x", "2021-03-13T20:00:00Z", 1}, // 12:00 PST on the 13th
			{"x", "2021-03-14T09:30:00Z", 1}, // 01:30 PST on the 14th
			{"x", "2021-03-14T10:30:00Z", 1}, // 03:30 PDT on the 14th
			{"x", "2021-03-15T06:59:59Z", 1}, // 23:59:59 PDT on the 14th
			{"x", "2021-03-15T07:00:00Z", 1}, // midnight PDT on the 15th
		}, []string{
			"2021-03-13T08:00:00Z 2021-03-14T08:00:00Z x 1 on_time",
			"2021-03-14T08:00:00Z 2021-03-15T07:00:00Z x 3 on_time", // 23 hours
			"2021-03-15T07:00:00Z 2021-03-16T07:00:00Z x 1 on_time",
		}},
		{"Kolkata hours", kol, time.Hour, [][]any{
			{"x", "2024-05-01T10:29:00Z", 1},
			{"x", "2024-05-01T10:30:00Z", 1},
			{"x", "2024-05-01T11:29:59Z", 1},
		}, []string{
			"2024-05-01T09:30:00Z 2024-05-01T10:30:00Z x 1 on_time",
			"2024-05-01T10:30:00Z 2024-05-01T11:30:00Z x 2 on_time",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := checkedMem(t)
			asg, _ := NewTumbling(tt.size, 0, tt.loc)
			m := newManager(t, mem, &fakeClock{}, Config{Assigner: asg, Key: []string{"k"}, Time: "ts",
				Watermark: WatermarkOptions{Generate: true}}, orderSchema)
			res := runSteps(t, mem, m, nil, orderSchema, []step{{rows: tt.rows}, {final: true}}, time.RFC3339)
			diffRows(t, res.out, tt.want)
		})
	}
}

func TestHeartbeat(t *testing.T) {
	// Processing-time sessions with gap 10 s: a sensor silent for 10 s is reported once; one
	// that keeps reporting never is.
	mem := checkedMem(t)
	clk := &fakeClock{}
	clk.Set("2024-05-01T00:00:00Z")
	asg, _ := NewSession(10 * time.Second)
	aggs, _ := ParseAggs("count")
	m := newManager(t, mem, clk, Config{Assigner: asg, Key: []string{"k"}, Aggs: aggs}, orderSchema)
	beat := func(keys ...string) step {
		var rows [][]any
		for _, k := range keys {
			rows = append(rows, []any{k, nil, 1})
		}
		return step{rows: rows}
	}
	steps := []step{beat("active", "silent")}
	for i := 0; i < 12; i++ { // 60 s, a beat of "active" every 5 s, ticks every 2.5 s
		steps = append(steps, step{clock: 2500 * time.Millisecond}, step{clock: 2500 * time.Millisecond}, beat("active"))
	}
	res := runSteps(t, mem, m, clk, orderSchema, steps, "04:05")
	diffRows(t, res.out, []string{"00:00 00:10 silent 1 on_time"})
	if st := m.Stats(); st.Keys != 1 || st.Windows != 1 {
		t.Errorf("stats %+v: want only the active sensor open", st)
	}
}

func TestEarlyFiring(t *testing.T) {
	mem := checkedMem(t)
	clk := &fakeClock{}
	clk.Set("2024-05-01T12:00:00Z")
	asg, _ := NewTumbling(time.Hour, 0, nil)
	m := newManager(t, mem, clk, Config{Assigner: asg, Key: []string{"k"}, Time: "ts",
		Watermark: WatermarkOptions{Generate: true}, Emit: EmitUpdate, Every: 10 * time.Second}, orderSchema)
	res := runSteps(t, mem, m, clk, orderSchema, []step{
		{rows: [][]any{{"a", "2024-05-01T10:00:10Z", 1}, {"b", "2024-05-01T10:00:20Z", 1}}},
		{clock: 10 * time.Second}, // early: a, b
		{rows: [][]any{{"a", "2024-05-01T10:00:30Z", 1}}},
		{clock: 5 * time.Second},  // not yet
		{clock: 5 * time.Second},  // early: a only (b unchanged)
		{clock: 10 * time.Second}, // nothing changed
		{final: true},
	}, "15:04")
	diffRows(t, res.out, []string{
		"10:00 11:00 a 1 early",
		"10:00 11:00 b 1 early",
		"10:00 11:00 a 2 early",
		"10:00 11:00 a 2 on_time",
		"10:00 11:00 b 1 on_time",
	})
}

func TestIdleTimeout(t *testing.T) {
	clk := &fakeClock{}
	clk.Set("2024-05-01T00:00:00Z")
	w := NewWatermarks(WatermarkOptions{Generate: true, Delay: time.Second, IdleTimeout: 30 * time.Second})
	w.Register(0, clk.Now())
	w.Register(1, clk.Now())
	t0 := us(t, "2024-05-01T10:00:00Z")
	steps := []struct {
		name string
		do   func()
		want int64
	}{
		{"p0 data, p1 none: held back", func() { w.Active(0, clk.Now()); w.Observe(0, t0) }, MinTime},
		{"20 s later: not idle yet", func() {
			clk.Advance(20 * time.Second)
			w.Active(0, clk.Now())
			w.Observe(0, t0+10e6)
			w.Tick(clk.Now())
		}, MinTime},
		{"35 s: p1 idle, p0 alone", func() { clk.Advance(15 * time.Second); w.Active(0, clk.Now()); w.Tick(clk.Now()) }, t0 + 9e6},
		{"p0 advances", func() { w.Observe(0, t0+20e6) }, t0 + 19e6},
		{"p1 wakes with old data: no step back", func() { w.Active(1, clk.Now()); w.Observe(1, t0) }, t0 + 19e6},
		{"p1 catches up: min again", func() { w.Observe(1, t0+30e6) }, t0 + 19e6},
		{"p0 moves: min is p1's", func() { w.Observe(0, t0+40e6) }, t0 + 29e6},
		{"upstream later wins", func() { w.Upstream(t0 + 35e6) }, t0 + 35e6},
		{"upstream earlier ignored", func() { w.Upstream(t0) }, t0 + 35e6},
		{"both idle: max of all", func() { clk.Advance(time.Minute); w.Tick(clk.Now()) }, t0 + 39e6},
	}
	for _, st := range steps {
		st.do()
		if got := w.Current(); got != st.want {
			t.Fatalf("%s: watermark %d, want %d", st.name, got, st.want)
		}
	}
}

func TestCountWindows(t *testing.T) {
	rows := [][]any{
		{"a", "2024-05-01T00:00:01Z", 1}, {"a", "2024-05-01T00:00:02Z", 2},
		{"b", "2024-05-01T00:00:03Z", 10}, {"b", "2024-05-01T00:00:04Z", 20},
		{"a", "2024-05-01T00:00:05Z", 3}, {"a", "2024-05-01T00:00:06Z", 4},
		{"a", "2024-05-01T00:00:07Z", 5},
	}
	cases := []struct {
		name        string
		size, slide int64
		want        []string
	}{
		{"tumbling 2", 2, 2, []string{
			"01 02.000001 a 3 on_time", "03 04.000001 b 30 on_time", "05 06.000001 a 7 on_time", "07 07.000001 a 5 on_time"}},
		{"sliding 3/1", 3, 1, []string{
			"01 01.000001 a 1 on_time", "01 02.000001 a 3 on_time", "03 03.000001 b 10 on_time", "03 04.000001 b 30 on_time",
			"01 05.000001 a 6 on_time", "02 06.000001 a 9 on_time", "05 07.000001 a 12 on_time"}},
		{"sliding 6/4: final covers the next window's records", 6, 4, []string{
			"01 06.000001 a 10 on_time", "05 07.000001 a 12 on_time", "03 04.000001 b 30 on_time"}},
		{"sliding 4/2", 4, 2, []string{
			"01 02.000001 a 3 on_time", "03 04.000001 b 30 on_time", "01 06.000001 a 10 on_time", "05 07.000001 a 12 on_time"}},
	}
	for _, c := range cases {
		for si, steps := range splits(rows) {
			mem := checkedMem(t)
			asg, err := NewCount(c.size, c.slide)
			if err != nil {
				t.Fatal(err)
			}
			aggs, _ := ParseAggs("sum(v)")
			m := newManager(t, mem, nil, Config{Assigner: asg, Key: []string{"k"}, Time: "ts", Aggs: aggs}, orderSchema)
			res := runSteps(t, mem, m, nil, orderSchema, append(steps, step{final: true}), "05.999999")
			if strings.Join(res.out, "|") != strings.Join(c.want, "|") {
				t.Errorf("%s split %d:\n got %q\nwant %q", c.name, si, res.out, c.want)
			}
		}
	}
}

func TestGlobalWindow(t *testing.T) {
	mem := checkedMem(t)
	aggs, _ := ParseAggs("count, max(v)")
	m := newManager(t, mem, nil, Config{Assigner: NewGlobal(), Key: []string{"k"}, Time: "ts", Aggs: aggs}, orderSchema)
	res := runSteps(t, mem, m, nil, orderSchema, []step{
		{rows: [][]any{{"a", "2024-05-01T00:00:05Z", 1}, {"b", "2024-05-01T00:00:03Z", 7}, {"a", "2024-05-01T00:00:01Z", 4}}},
		{wm: "2030-01-01T00:00:00Z"},
		{final: true},
	}, "05.999999")
	diffRows(t, res.out, []string{"01 05.000001 a 2 4 on_time", "03 03.000001 b 1 7 on_time"})
}

func TestBadTimeAndNullKeys(t *testing.T) {
	mem := checkedMem(t)
	asg, _ := NewTumbling(time.Minute, 0, nil)
	m := newManager(t, mem, nil, Config{Assigner: asg, Key: []string{"k"}, Time: "ts"}, orderSchema)
	res := runSteps(t, mem, m, nil, orderSchema, []step{
		{rows: [][]any{{nil, "2024-05-01T00:00:05Z", 1}, {"b", nil, 7}, {nil, "2024-05-01T00:00:06Z", 4}}},
		{final: true},
	}, "04:05")
	diffRows(t, res.out, []string{"00:00 01:00 null 2 on_time"})
	if st := m.Stats(); st.BadTime != 1 || len(res.late[0]) != 1 || res.late[0][0] != 1 {
		t.Errorf("stats %+v late %v", st, res.late)
	}
}

func TestConfigErrors(t *testing.T) {
	asg, _ := NewTumbling(time.Minute, 0, nil)
	cnt, _ := NewCount(3, 1)
	agg := func(s string) []AggCall { a, _ := ParseAggs(s); return a }
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no assigner", Config{}, "no window assigner"},
		{"missing key", Config{Assigner: asg, Key: []string{"nope"}}, `no field "nope"`},
		{"missing time", Config{Assigner: asg, Time: "nope"}, `no field "nope"`},
		{"bad agg type", Config{Assigner: asg, Time: "ts", Aggs: agg("sum(k)")}, "sum(k): column type utf8"},
		{"name clash", Config{Assigner: asg, Key: []string{"k"}, Aggs: agg("count as k")}, `"k" appears twice`},
		{"update without every", Config{Assigner: asg, Emit: EmitUpdate}, "--every"},
		{"early count", Config{Assigner: cnt, Emit: EmitUpdate, Every: time.Second}, "count windows"},
		{"lateness in processing time", Config{Assigner: asg, AllowedLateness: time.Second}, "event-time"},
	}
	for _, tt := range tests {
		_, err := New(orderSchema, tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tt.name, err, tt.want)
		}
	}
}

func TestTakeRows(t *testing.T) {
	mem := checkedMem(t)
	rec := buildBatch(t, mem, orderSchema, [][]any{
		{"a", "2024-05-01T00:00:00Z", 1}, {"b", nil, 2}, {"c", "2024-05-01T00:00:02Z", 3},
		{"d", "2024-05-01T00:00:03Z", nil}, {"e", "2024-05-01T00:00:04Z", 5},
	})
	defer rec.Release()
	for _, tt := range []struct {
		rows []int32
		want []string
	}{
		{[]int32{1, 2, 4}, []string{"b null 2", "c 00:00:02 3", "e 00:00:04 5"}},
		{[]int32{3}, []string{"d 00:00:03 null"}},
		{nil, nil},
	} {
		out, err := TakeRows(mem, rec, tt.rows)
		if err != nil {
			t.Fatal(err)
		}
		diffRows(t, rowsOf([]arrow.RecordBatch{out}, "15:04:05"), tt.want)
		out.Release()
	}
}
