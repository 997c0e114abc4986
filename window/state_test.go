package window

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// randomRows returns n rows over keys a..e with event times advancing ~1 s per row and up to
// disorder of lateness, values 0..99 and some nulls.
func randomRows(seed uint64, n int, disorder time.Duration) [][]any {
	r := rand.New(rand.NewPCG(seed, 99))
	base := Micros(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC))
	var rows [][]any
	for i := 0; i < n; i++ {
		ts := base + int64(i)*usPerSecond - r.Int64N(int64(disorder/time.Microsecond)+1)
		var v any = r.IntN(100)
		if r.IntN(10) == 0 {
			v = nil
		}
		rows = append(rows, []any{string(rune('a' + r.IntN(5))), ts, v})
	}
	return rows
}

type stateCase struct {
	name string
	cfg  func() Config
}

func stateCases() []stateCase {
	return stateCasesOf("count, sum(v), avg(v), min(v), max(k), first(v), last(v), count_distinct(v)")
}

// stateCasesOf is stateCases with the aggregates of spec.
func stateCasesOf(spec string) []stateCase {
	aggs, err := ParseAggs(spec)
	if err != nil {
		panic(err)
	}
	wm := WatermarkOptions{Generate: true, Delay: 3 * time.Second}
	return []stateCase{
		{"tumbling+lateness", func() Config {
			a, _ := NewTumbling(10*time.Second, 0, nil)
			return Config{Assigner: a, Key: []string{"k"}, Time: "ts", Aggs: aggs, AllowedLateness: 5 * time.Second, Watermark: wm}
		}},
		{"sliding", func() Config {
			a, _ := NewSliding(20*time.Second, 5*time.Second, 0, nil)
			return Config{Assigner: a, Key: []string{"k"}, Time: "ts", Aggs: aggs, AllowedLateness: 2 * time.Second, Watermark: wm}
		}},
		{"session+lateness", func() Config {
			a, _ := NewSession(3 * time.Second)
			return Config{Assigner: a, Key: []string{"k"}, Time: "ts", Aggs: aggs, AllowedLateness: 4 * time.Second, Watermark: wm}
		}},
		{"count 5/2", func() Config {
			a, _ := NewCount(5, 2)
			return Config{Assigner: a, Key: []string{"k"}, Time: "ts", Aggs: aggs}
		}},
		{"global", func() Config {
			return Config{Assigner: NewGlobal(), Key: []string{"k"}, Time: "ts", Aggs: aggs}
		}},
	}
}

// viaIPC round-trips a state batch through the Arrow IPC stream format, as checkpoints do.
func viaIPC(t *testing.T, mem memory.Allocator, rec arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(&buf, ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatalf("no batch: %v", r.Err())
	}
	out := r.RecordBatch()
	out.Retain()
	return out
}

// TestRestoreEquivalence checks that stopping after batch k and restoring from a snapshot, from
// the full changelog chain, or from a snapshot plus later changelogs gives the same output as
// an uninterrupted run.
func TestRestoreEquivalence(t *testing.T) { restoreEquivalence(t, stateCases()) }

// restoreEquivalence is TestRestoreEquivalence over the given cases.
func restoreEquivalence(t *testing.T, cases []stateCase) {
	rows := randomRows(1, 400, 6*time.Second)
	var batches [][][]any
	for i, n := 0, 1; i < len(rows); i, n = i+n, n%13+1 { // uneven batches of 1…13 rows
		batches = append(batches, rows[i:min(i+n, len(rows))])
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := checkedMem(t)
			cfg := c.cfg()
			cfg.Changelog = true
			ref := newManager(t, mem, &fakeClock{}, cfg, orderSchema)
			var refOut [][]string // output per batch index (after it), then final
			var changelogs []arrow.RecordBatch
			var extras []Extra
			snapshots := map[int][]arrow.RecordBatch{}
			defer func() {
				release(changelogs)
				for _, s := range snapshots {
					release(s)
				}
			}()
			for bi, b := range batches {
				res := runSteps(t, mem, ref, nil, orderSchema, []step{{rows: b}}, time.RFC3339)
				refOut = append(refOut, res.out)
				var cl []arrow.RecordBatch
				if err := ref.Changelog(func(r arrow.RecordBatch) error {
					cl = append(cl, viaIPC(t, mem, r))
					r.Release()
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if len(cl) != 1 {
					t.Fatalf("changelog of %d batches", len(cl))
				}
				changelogs = append(changelogs, cl[0])
				extras = append(extras, ref.Extra())
				if bi%3 == 1 {
					if err := ref.Snapshot(func(r arrow.RecordBatch) error {
						snapshots[bi] = append(snapshots[bi], viaIPC(t, mem, r))
						r.Release()
						return nil
					}); err != nil {
						t.Fatal(err)
					}
				}
			}
			refFinal := runSteps(t, mem, ref, nil, orderSchema, []step{{final: true}}, time.RFC3339).out
			refStats := ref.Stats()

			for k := 0; k < len(batches)-1; k++ {
				type source struct {
					name string
					recs []arrow.RecordBatch
				}
				srcs := []source{{"changelogs", changelogs[:k+1]}}
				if snap, ok := snapshots[k]; ok {
					srcs = append(srcs, source{"snapshot", snap})
				}
				for j := k - 1; j >= 0; j-- {
					if snap, ok := snapshots[j]; ok {
						srcs = append(srcs, source{fmt.Sprintf("snapshot %d + changelogs", j), append(slices.Clone(snap), changelogs[j+1:k+1]...)})
						break
					}
				}
				for _, src := range srcs {
					m := newManager(t, mem, &fakeClock{}, cfg, orderSchema)
					for _, r := range src.recs {
						if err := m.Restore(r); err != nil {
							t.Fatalf("after batch %d from %s: %v", k, src.name, err)
						}
					}
					if err := m.RestoreExtra(extras[k]); err != nil {
						t.Fatal(err)
					}
					var got, want []string
					for bi := k + 1; bi < len(batches); bi++ {
						got = append(got, runSteps(t, mem, m, nil, orderSchema, []step{{rows: batches[bi]}}, time.RFC3339).out...)
						want = append(want, refOut[bi]...)
					}
					got = append(got, runSteps(t, mem, m, nil, orderSchema, []step{{final: true}}, time.RFC3339).out...)
					want = append(want, refFinal...)
					for i := 0; i < max(len(got), len(want)); i++ {
						var g, w string
						if i < len(got) {
							g = got[i]
						}
						if i < len(want) {
							w = want[i]
						}
						if g != w {
							t.Fatalf("restored after batch %d from %s: row %d of %d/%d:\n got %q\nwant %q", k, src.name, i, len(got), len(want), g, w)
						}
					}
					if st := m.Stats(); st.Late != refStats.Late || st.OnTime != refStats.OnTime || st.Records != refStats.Records {
						t.Fatalf("restored after batch %d from %s: stats %+v, want %+v", k, src.name, st, refStats)
					}
				}
			}
		})
	}
}

func TestRestoreRefusesOtherSpec(t *testing.T) {
	mem := checkedMem(t)
	a, _ := NewTumbling(time.Minute, 0, nil)
	b, _ := NewTumbling(time.Hour, 0, nil)
	m1 := newManager(t, mem, nil, Config{Assigner: a, Key: []string{"k"}, Time: "ts"}, orderSchema)
	m2 := newManager(t, mem, nil, Config{Assigner: b, Key: []string{"k"}, Time: "ts"}, orderSchema)
	if err := m2.RestoreExtra(m1.Extra()); !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), "size=1h0m0s") {
		t.Errorf("err = %v", err)
	}
	if err := m1.Changelog(func(r arrow.RecordBatch) error { r.Release(); return nil }); err != ErrNoChangelog {
		t.Errorf("Changelog without tracking: %v", err)
	}
}

// TestAgainstModel compares tumbling and sliding windows with lateness against a direct model
// of the rules: a record joins window W iff W.end + lateness > watermark before the record
// (max earlier event time − delay); a record that joins no window is late. The last emitted
// row of each window must equal the aggregate of the records that joined it.
func TestAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		rows := randomRows(seed, 300, 20*time.Second)
		for _, c := range []struct {
			name       string
			asg        func() *Assigner
			delay, lat time.Duration
		}{
			{"tumbling", func() *Assigner { a, _ := NewTumbling(10*time.Second, 0, nil); return a }, 2 * time.Second, 0},
			{"tumbling late", func() *Assigner { a, _ := NewTumbling(10*time.Second, 3*time.Second, nil); return a }, 2 * time.Second, 7 * time.Second},
			{"sliding late", func() *Assigner { a, _ := NewSliding(12*time.Second, 4*time.Second, 0, nil); return a }, 4 * time.Second, 5 * time.Second},
			{"sliding uneven", func() *Assigner { a, _ := NewSliding(10*time.Second, 3*time.Second, 0, nil); return a }, 0, 9 * time.Second},
		} {
			name := fmt.Sprintf("%s seed %d", c.name, seed)
			mem := checkedMem(t)
			aggs, _ := ParseAggs("count, sum(v)")
			m := newManager(t, mem, nil, Config{Assigner: c.asg(), Key: []string{"k"}, Time: "ts", Aggs: aggs,
				AllowedLateness: c.lat, Watermark: WatermarkOptions{Generate: true, Delay: c.delay}}, orderSchema)
			var steps []step
			for i := 0; i < len(rows); i += 17 {
				steps = append(steps, step{rows: rows[i:min(i+17, len(rows))]})
			}
			res := runSteps(t, mem, m, nil, orderSchema, append(steps, step{final: true}), time.RFC3339)
			got := map[string]string{}
			for _, r := range res.out {
				f := strings.Fields(r)
				got[strings.Join(f[:3], " ")] = strings.Join(f[3:5], " ")
			}
			// model
			type agg struct {
				n   int
				sum int64
				has bool
			}
			want := map[string]*agg{}
			asg := c.asg()
			maxTs, lateN := MinTime, 0
			for _, r := range rows {
				ts := r[1].(int64)
				wm := sub(maxTs, durUS(c.delay))
				joined := false
				for _, w := range asg.Assign(ts, nil) {
					if addSat(w.End, durUS(c.lat)) <= wm {
						continue
					}
					joined = true
					k := fmt.Sprintf("%s %s %s", TimeOf(w.Start).Format(time.RFC3339), TimeOf(w.End).Format(time.RFC3339), r[0])
					a := want[k]
					if a == nil {
						a = &agg{}
						want[k] = a
					}
					a.n++
					if r[2] != nil {
						a.sum += int64(r[2].(int))
						a.has = true
					}
				}
				if !joined {
					lateN++
				}
				maxTs = max(maxTs, ts)
			}
			if len(got) != len(want) {
				t.Errorf("%s: %d windows emitted, model has %d", name, len(got), len(want))
			}
			for k, a := range want {
				w := fmt.Sprintf("%d %d", a.n, a.sum)
				if !a.has {
					w = fmt.Sprintf("%d null", a.n)
				}
				if got[k] != w {
					t.Errorf("%s: window %s = %q, model %q", name, k, got[k], w)
				}
			}
			if st := m.Stats(); st.Late != int64(lateN) {
				t.Errorf("%s: late %d, model %d", name, st.Late, lateN)
			}
		}
	}
}

// TestSessionsAgainstModel: without late data, sessions equal a direct grouping of each key's
// sorted times (a record within gap of the session's last record, inclusive, joins it).
func TestSessionsAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		rows := randomRows(seed, 300, 8*time.Second)
		gap := 4 * time.Second
		mem := checkedMem(t)
		asg, _ := NewSession(gap)
		aggs, _ := ParseAggs("count, sum(v)")
		m := newManager(t, mem, nil, Config{Assigner: asg, Key: []string{"k"}, Time: "ts", Aggs: aggs,
			Watermark: WatermarkOptions{Generate: true, Delay: 8 * time.Second}}, orderSchema)
		var steps []step
		for i := 0; i < len(rows); i += 23 {
			steps = append(steps, step{rows: rows[i:min(i+23, len(rows))]})
		}
		res := runSteps(t, mem, m, nil, orderSchema, append(steps, step{final: true}), time.RFC3339)
		slices.Sort(res.out)
		byKey := map[string][][]any{}
		for _, r := range rows {
			byKey[r[0].(string)] = append(byKey[r[0].(string)], r)
		}
		var want []string
		for k, rs := range byKey {
			slices.SortStableFunc(rs, func(a, b []any) int { return int(a[1].(int64) - b[1].(int64)) })
			has := false
			flush := func(start, end int64, n int, sum int64) {
				s := fmt.Sprint(sum)
				if !has {
					s = "null"
				}
				want = append(want, fmt.Sprintf("%s %s %s %d %s on_time", TimeOf(start).Format(time.RFC3339), TimeOf(end).Format(time.RFC3339), k, n, s))
			}
			start, end, n, sum := MinTime, MinTime, 0, int64(0)
			for _, r := range rs {
				ts := r[1].(int64)
				if n > 0 && ts > end {
					flush(start, end, n, sum)
					n, sum, has = 0, 0, false
				}
				if n == 0 {
					start = ts
				}
				end = max(end, ts+durUS(gap))
				n++
				if r[2] != nil {
					sum += int64(r[2].(int))
					has = true
				}
			}
			flush(start, end, n, sum)
		}
		slices.Sort(want)
		diffRows(t, res.out, want)
	}
}

// TestBatchIndependence: for every window kind, with disorder, lateness and late data, the
// output and the side output do not depend on how the input is cut into batches.
func TestBatchIndependence(t *testing.T) {
	rows := randomRows(5, 400, 12*time.Second)
	cuts := map[string]func(i int) int{
		"one batch": func(int) int { return len(rows) },
		"rows":      func(int) int { return 1 },
		"uneven":    func(i int) int { return i%7 + 1 },
		"primes":    func(i int) int { return []int{2, 3, 5, 7, 11, 13}[i%6] },
	}
	for _, c := range stateCases() {
		t.Run(c.name, func(t *testing.T) {
			var first, firstName string
			for name, cut := range cuts {
				mem := checkedMem(t)
				cfg := c.cfg()
				cfg.Watermark.Delay = 2 * time.Second // late data
				m := newManager(t, mem, nil, cfg, orderSchema)
				var steps []step
				for i, j := 0, 0; i < len(rows); j++ {
					n := cut(j)
					steps = append(steps, step{rows: rows[i:min(i+n, len(rows))]})
					i += n
				}
				res := runSteps(t, mem, m, nil, orderSchema, append(steps, step{final: true}), time.RFC3339)
				got := strings.Join(res.out, "\n") + "\nlate: " + strings.Join(res.lateRows, ",") + fmt.Sprint(" ", m.Stats().Late)
				if first == "" {
					first, firstName = got, name
					continue
				}
				if got != first {
					t.Errorf("%s differs from %s:\n%s\n----\n%s", name, firstName, got, first)
				}
			}
		})
	}
}
