package window

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestDedupEventTime(t *testing.T) {
	rows := [][]any{
		{"o1", "2024-05-01T10:00:00Z", 1},
		{"o2", "2024-05-01T10:00:05Z", 2},
		{"o1", "2024-05-01T10:00:30Z", 3}, // duplicate within TTL
		{"o1", "2024-05-01T10:01:00Z", 4}, // watermark 10:00:30 < 10:01:00 = expiry: still a duplicate
		{"o3", "2024-05-01T10:01:10Z", 5}, // watermark → 10:01:10: o1 forgotten
		{"o1", "2024-05-01T10:01:20Z", 6}, // first occurrence again
		{"o2", "2024-05-01T09:59:00Z", 7}, // 09:59 + 1m ≤ 10:01:20: late
		{"o4", nil, 8},
	}
	for si, steps := range splits(rows) {
		mem := checkedMem(t)
		d, err := NewDedup(orderSchema, DedupConfig{Key: []string{"k"}, Time: "ts", TTL: time.Minute,
			Watermark: WatermarkOptions{Generate: true}, Mem: mem, Now: (&fakeClock{}).Now})
		if err != nil {
			t.Fatal(err)
		}
		var kept, late, bad []string
		for _, st := range steps {
			rec := buildBatch(t, mem, orderSchema, st.rows)
			keep, rej, err := d.Process(rec)
			if err != nil {
				t.Fatal(err)
			}
			for _, sets := range []struct {
				rows []int32
				dst  *[]string
			}{{keep, &kept}, {rej.Late, &late}, {rej.BadTime, &bad}} {
				for _, i := range sets.rows {
					*sets.dst = append(*sets.dst, rec.Column(2).ValueStr(int(i)))
				}
			}
			rec.Release()
		}
		if got := fmt.Sprint(kept, late, bad); got != "[1 2 5 6] [7] [8]" {
			t.Errorf("split %d: kept, late, bad = %s", si, got)
		}
		if st := d.Stats(); st.Duplicates != 2 || st.Keys != 2 {
			t.Errorf("split %d: stats %+v", si, st)
		}
	}
}

func TestDedupProcessingTimeAndRestore(t *testing.T) {
	mem := checkedMem(t)
	clk := &fakeClock{}
	clk.Set("2024-05-01T00:00:00Z")
	cfg := DedupConfig{Key: []string{"k"}, TTL: 10 * time.Second, Mem: mem, Now: clk.Now, Changelog: true}
	d, _ := NewDedup(orderSchema, cfg)
	feed := func(d *Dedup, keys ...string) string {
		var rows [][]any
		for _, k := range keys {
			rows = append(rows, []any{k, nil, 0})
		}
		rec := buildBatch(t, mem, orderSchema, rows)
		defer rec.Release()
		keep, _, _ := d.Process(rec)
		var out []string
		for _, i := range keep {
			out = append(out, keys[i])
		}
		return fmt.Sprint(out)
	}
	if got := feed(d, "a", "b", "a"); got != "[a b]" {
		t.Errorf("first batch kept %s", got)
	}
	clk.Advance(6 * time.Second)
	if got := feed(d, "a", "c"); got != "[c]" {
		t.Errorf("second batch kept %s", got)
	}
	cl1, _ := d.Changelog()
	clk.Advance(5 * time.Second) // a, b expire at 10 s
	d.OnProcessingTime()
	cl2, _ := d.Changelog()
	defer cl1.Release()
	defer cl2.Release()
	if cl1.NumRows() != 3 || cl2.NumRows() != 2 {
		t.Errorf("changelog rows %d, %d; want 3 upserts then 2 deletes", cl1.NumRows(), cl2.NumRows())
	}
	// a fresh instance restored from both changelogs remembers only c
	d2, _ := NewDedup(orderSchema, cfg)
	for _, r := range []arrow.RecordBatch{viaIPC(t, mem, cl1), viaIPC(t, mem, cl2)} {
		if err := d2.Restore(r); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	if got := feed(d2, "a", "b", "c"); got != "[a b]" {
		t.Errorf("after restore kept %s", got)
	}
}
