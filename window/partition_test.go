package window

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

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

// TestKafkaColumnsNameTheirPartition: rows with read-kafka's topic,partition columns and
// read-kafka's tagged batches are the same partitions, and a checkpoint that keyed its
// partitions by the encoded columns (before partitions had names) restores onto them, so its
// restored partitions do not hold the watermark back for ever.
func TestKafkaColumnsNameTheirPartition(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: tsUTC, Nullable: true},
		{Name: "topic", Type: arrow.BinaryTypes.String},
		{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	mem := checkedMem(t)
	clk := &fakeClock{}
	asg, _ := NewTumbling(time.Minute, 0, nil)
	cfg := Config{Assigner: asg, Key: []string{"k"}, Time: "ts", Partition: []string{"topic", "partition"},
		Watermark: WatermarkOptions{Generate: true}}

	// The old checkpoint: t/0 at 10:05, t/1 at 10:04, keyed by the encoded columns.
	old := buildBatch(t, mem, s, [][]any{{"a", "2024-05-01T10:05:00Z", "t", 0}, {"a", "2024-05-01T10:04:00Z", "t", 1}})
	enc, err := codec.NewKeyEncoder(s, cfg.Partition)
	if err != nil {
		t.Fatal(err)
	}
	cols := enc.Columns(old)
	x := Extra{Watermark: WatermarkState{Current: us(t, "2024-05-01T10:04:00Z"), Upstream: MinTime,
		Max: []int64{us(t, "2024-05-01T10:05:00Z"), us(t, "2024-05-01T10:04:00Z")}},
		Partitions: [][]byte{codec.AppendRow(nil, cols, 0), codec.AppendRow(nil, cols, 1)}}
	old.Release()
	m := newManager(t, mem, clk, cfg, s)
	x.Spec = m.Spec()
	if err := m.RestoreExtra(x); err != nil {
		t.Fatal(err)
	}
	// t/0 tagged (columns dropped upstream would look the same), t/1 by its columns.
	rec := codec.WithPartition(buildBatch(t, mem, s, [][]any{{"a", "2024-05-01T10:20:00Z", "t", 0}}), "t/0")
	m.Process(rec)
	rec.Release()
	rec = buildBatch(t, mem, s, [][]any{{"a", "2024-05-01T10:21:00Z", "t", 1}})
	m.Process(rec)
	rec.Release()
	release(m.TakeOutput())
	if got, want := m.Watermark(), us(t, "2024-05-01T10:20:00Z"); got != want {
		t.Errorf("watermark %s, want %s (the minimum of both partitions' new rows)", TimeOf(got), TimeOf(want))
	}
	if n := len(m.Extra().Partitions); n != 2 {
		t.Errorf("%d watermark partitions after restore, want 2", n)
	}
}
