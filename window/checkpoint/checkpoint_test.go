package checkpoint

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/window"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
}, nil)

var base = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

// batch builds rows (key, seconds after base, value).
func batch(mem memory.Allocator, rows ...[3]any) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r[0].(string))
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(window.Micros(base.Add(time.Duration(r[1].(int)) * time.Second))))
		b.Field(2).(*array.Int64Builder).Append(int64(r[2].(int)))
	}
	return b.NewRecordBatch()
}

func newManager(t *testing.T, mem memory.Allocator, asg *window.Assigner) *window.Manager {
	t.Helper()
	aggs, _ := window.ParseAggs("count, sum(v), count_distinct(v) as d")
	m, err := window.New(schema, window.Config{Assigner: asg, Key: []string{"k"}, Time: "ts", Aggs: aggs, Mem: mem,
		AllowedLateness: 10 * time.Second, Changelog: true, Watermark: window.WatermarkOptions{Generate: true, Delay: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Release)
	return m
}

func outRows(m *window.Manager) []string {
	var out []string
	for _, r := range m.TakeOutput() {
		for i := 0; i < int(r.NumRows()); i++ {
			var parts []string
			for _, c := range r.Columns() {
				parts = append(parts, c.ValueStr(i))
			}
			out = append(out, strings.Join(parts, " "))
		}
		r.Release()
	}
	return out
}

func TestCheckpointRestore(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sess, _ := window.NewSession(5 * time.Second)
	batches := [][][3]any{
		{{"a", 0, 1}, {"b", 1, 2}, {"a", 3, 3}},
		{{"a", 9, 4}, {"c", 10, 5}},
		{{"a", 20, 6}, {"b", 2, 7}, {"a", 6, 8}}, // b late within lateness; a 6 bridges [0,8) and [9,14)
		{{"c", 30, 9}, {"a", 31, 1}},
		{{"b", 45, 2}, {"a", 50, 3}},
	}
	dirPath := t.TempDir()
	d, err := state.Open(dirPath, "window", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ref := newManager(t, mem, sess)
	st := &Store{M: ref, SnapshotEvery: 3}
	var outs [][]string
	for i, b := range batches {
		rec := batch(mem, b...)
		if _, err := ref.Process(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		outs = append(outs, outRows(ref))
		if err := st.Checkpoint(mem, d, uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	ref.Final()
	final := outRows(ref)

	for n := 1; n < len(batches); n++ {
		m := newManager(t, mem, sess)
		if err := (&Store{M: m}).Restore(mem, dirPath, uint64(n)); err != nil {
			t.Fatalf("restore epoch %d: %v", n, err)
		}
		var got, want []string
		for i := n; i < len(batches); i++ {
			rec := batch(mem, batches[i]...)
			if _, err := m.Process(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			got = append(got, outRows(m)...)
			want = append(want, outs[i]...)
		}
		m.Final()
		got, want = append(got, outRows(m)...), append(want, final...)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("restored at epoch %d:\n got %q\nwant %q", n, got, want)
		}
	}

	// state-dump's reader sees one live row per open session, keyed by (k, start, end).
	tbl, err := state.Reconstruct(mem, dirPath, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	var keys []string
	kc := tbl.Rec.Column(1).(*array.Binary)
	for i := 0; i < kc.Len(); i++ {
		parts, err := codec.DecodeKey(kc.Value(i))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, fmt.Sprint(parts))
	}
	if got, want := strings.Join(keys, "; "), "[a 2024-05-01T00:00:06Z 2024-05-01T00:00:14Z]; [a 2024-05-01T00:00:20Z 2024-05-01T00:00:25Z]; [c 2024-05-01T00:00:10Z 2024-05-01T00:00:15Z]"; got != want {
		t.Errorf("reconstructed keys:\n got %s\nwant %s", got, want)
	}
}

func TestRestoreOtherOptions(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dirPath := t.TempDir()
	d, err := state.Open(dirPath, "window", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a, _ := window.NewTumbling(time.Minute, 0, nil)
	b, _ := window.NewTumbling(time.Hour, 0, nil)
	if err := (&Store{M: newManager(t, mem, a)}).Checkpoint(mem, d, 1); err != nil {
		t.Fatal(err)
	}
	err = (&Store{M: newManager(t, mem, b)}).Restore(mem, dirPath, 1)
	if !errors.Is(err, window.ErrSpec) {
		t.Errorf("restore with another size: %v", err)
	}
	if err := (&Store{M: newManager(t, mem, a)}).Restore(mem, dirPath, 2); !errors.Is(err, state.ErrNoState) {
		t.Errorf("restore of a missing epoch: %v", err)
	}
}
