package window

import (
	"testing"
	"time"

	"github.com/streamkit/streamkit/codec"
)

// TestDeclaredPartitionsHoldWatermark (issue #17): a batch that names its source partition
// (codec.KeyPartition) belongs to it whatever columns it has, and a partition the source
// declared (Config.Partitions) holds the watermark back before its first row, also after a
// restore, so a partition read after another is not late; --partition-col none
// (OnePartition) ignores both.
func TestDeclaredPartitionsHoldWatermark(t *testing.T) {
	first := [][]any{{"a", "2024-05-01T10:00:10Z", 1}, {"a", "2024-05-01T10:05:00Z", 2}}
	second := [][]any{{"b", "2024-05-01T10:00:20Z", 3}}
	for _, c := range []struct {
		name     string
		declared []string
		one      bool
		restore  bool
		late     int64
	}{
		{"declared", []string{"t/0", "t/1"}, false, false, 0},
		{"declared, restored in between", []string{"t/0", "t/1"}, false, true, 0},
		{"undeclared: counts from its first row", nil, false, false, 1},
		{"one partition", []string{"t/0", "t/1"}, true, false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := checkedMem(t)
			clk := &fakeClock{}
			asg, _ := NewTumbling(time.Minute, 0, nil)
			cfg := Config{Assigner: asg, Key: []string{"k"}, Time: "ts", Partitions: c.declared, OnePartition: c.one,
				Watermark: WatermarkOptions{Generate: true}}
			m := newManager(t, mem, clk, cfg, orderSchema)
			process := func(m *Manager, rows [][]any, part string) {
				rec := codec.WithPartition(buildBatch(t, mem, orderSchema, rows), part)
				defer rec.Release()
				if _, err := m.Process(rec); err != nil {
					t.Fatal(err)
				}
				release(m.TakeOutput())
			}
			process(m, first, "t/0")
			if c.restore {
				x := m.Extra()
				m = newManager(t, mem, clk, cfg, orderSchema)
				if err := m.RestoreExtra(x); err != nil {
					t.Fatal(err)
				}
			}
			process(m, [][]any{{"a", "2024-05-01T10:10:00Z", 4}}, "t/0")
			process(m, second, "t/1")
			if got := m.Stats().Late; got != c.late {
				t.Errorf("late rows %d, want %d (watermark %d)", got, c.late, m.Watermark())
			}
		})
	}
}
