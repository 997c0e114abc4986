package rowpos

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/source/files"
	"github.com/streamkit/streamkit/source/kafka"
)

// The column names here are those read-files and read-kafka write.
func TestColumnNamesMatchSources(t *testing.T) {
	if files.MetadataColumn != MetadataColumn {
		t.Errorf("read-files writes %q, rowpos reads %q", files.MetadataColumn, MetadataColumn)
	}
	for _, name := range []string{FilePathField, LineField, RowIndexField} {
		if _, ok := files.MetadataType.FieldIdx(name); !ok {
			t.Errorf("files.MetadataType has no field %q", name)
		}
	}
	for got, want := range map[string]string{TopicColumn: kafka.ColTopic, PartitionCol: kafka.ColPartition, OffsetColumn: kafka.ColOffset} {
		if got != want {
			t.Errorf("rowpos reads %q, read-kafka writes %q", got, want)
		}
	}
}

func metaBatch(t *testing.T, mem memory.Allocator, lines []*int64, rowIdx []int64) arrow.RecordBatch {
	t.Helper()
	s := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: MetadataColumn, Type: files.MetadataType}}, nil)
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	sb := b.Field(1).(*array.StructBuilder)
	for i := range rowIdx {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append("/data/in.csv")
		sb.FieldBuilder(1).(*array.StringBuilder).Append("in.csv")
		sb.FieldBuilder(2).AppendNull()
		sb.FieldBuilder(3).AppendNull()
		sb.FieldBuilder(4).(*array.Int64Builder).Append(rowIdx[i])
		if lines[i] != nil {
			sb.FieldBuilder(5).(*array.Int64Builder).Append(*lines[i])
			sb.FieldBuilder(6).(*array.Int64Builder).Append(100)
		} else {
			sb.FieldBuilder(5).AppendNull()
			sb.FieldBuilder(6).AppendNull()
		}
	}
	return b.NewRecordBatch()
}

func ptr(v int64) *int64 { return &v }

func TestFilePositions(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := metaBatch(t, mem, []*int64{ptr(2), nil}, []int64{0, 41})
	defer rec.Release()
	tr := New(rec.Schema(), 1)
	pos := tr.Batch(rec)
	for i, want := range []string{"/data/in.csv:2", "/data/in.csv row 41"} {
		if got := pos(i); got != want {
			t.Errorf("pos(%d) = %q, want %q", i, got, want)
		}
	}
}

func kafkaBatch(mem memory.Allocator, withTopic bool, offsets []int64) arrow.RecordBatch {
	fields := []arrow.Field{{Name: "value", Type: arrow.BinaryTypes.String}}
	if withTopic {
		fields = append(fields, arrow.Field{Name: TopicColumn, Type: arrow.BinaryTypes.String}, arrow.Field{Name: PartitionCol, Type: arrow.PrimitiveTypes.Int32})
	}
	fields = append(fields, arrow.Field{Name: OffsetColumn, Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	s := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	for _, o := range offsets {
		b.Field(0).(*array.StringBuilder).Append("v")
		c := 1
		if withTopic {
			b.Field(1).(*array.StringBuilder).Append("orders")
			b.Field(2).(*array.Int32Builder).Append(3)
			c = 3
		}
		if o < 0 {
			b.Field(c).AppendNull()
		} else {
			b.Field(c).(*array.Int64Builder).Append(o)
		}
	}
	return b.NewRecordBatch()
}

func TestKafkaPositions(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)

	rec := kafkaBatch(mem, true, []int64{1041, 1042})
	defer rec.Release()
	if got, want := New(rec.Schema(), 4).Batch(rec)(1), "orders/3@1042"; got != want {
		t.Errorf("topic/partition/offset columns: got %q, want %q", got, want)
	}

	// --columns dropped topic and partition: the batch's partition names them.
	rec2 := codec.WithPartition(kafkaBatch(mem, false, []int64{7, -1}), "orders/5")
	defer rec2.Release()
	tr := New(rec2.Schema(), 4)
	pos := tr.Batch(rec2)
	if got, want := pos(0), "orders/5@7"; got != want {
		t.Errorf("offset column + partition: got %q, want %q", got, want)
	}
	if got, want := pos(1), "orders/5, epoch 4, row 1"; got != want {
		t.Errorf("null offset: got %q, want %q", got, want)
	}
}

func plainBatch(mem memory.Allocator, n int) arrow.RecordBatch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := range n {
		b.Append(int64(i))
	}
	a := b.NewArray()
	defer a.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{a}, int64(n))
}

// Rows are counted per epoch and, for tagged batches, per partition.
func TestEpochRowCounting(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	a := plainBatch(mem, 3)
	defer a.Release()
	tr := New(a.Schema(), 7)
	type step struct {
		rec  arrow.RecordBatch
		row  int
		want string
	}
	p3 := codec.WithPartition(plainBatch(mem, 4), "orders/3")
	defer p3.Release()
	p1 := codec.WithPartition(plainBatch(mem, 2), "orders/1")
	defer p1.Release()
	for i, s := range []step{
		{a, 2, "epoch 7, row 2"},
		{a, 0, "epoch 7, row 3"},
		{p3, 1, "orders/3, epoch 7, row 1"},
		{p1, 1, "orders/1, epoch 7, row 1"},
		{p3, 3, "orders/3, epoch 7, row 7"},
	} {
		if got := tr.Batch(s.rec)(s.row); got != s.want {
			t.Errorf("step %d: got %q, want %q", i, got, s.want)
		}
	}
	tr.Barrier(7)
	if got, want := tr.Batch(p3)(0), "orders/3, epoch 8, row 0"; got != want {
		t.Errorf("after the barrier: got %q, want %q", got, want)
	}
	if got, want := tr.Batch(a)(1), "epoch 8, row 1"; got != want {
		t.Errorf("after the barrier: got %q, want %q", got, want)
	}

	unknown := New(a.Schema(), 0)
	if got, want := unknown.Batch(a)(2), "first epoch of this run, row 2"; got != want {
		t.Errorf("unknown epoch: got %q, want %q", got, want)
	}
}

func TestFirstEpoch(t *testing.T) {
	for _, c := range []struct {
		committed                uint64
		checkpointed, replayable bool
		want                     uint64
	}{
		{6, true, true, 7},
		{0, true, false, 1},
		{0, false, false, 1},
		{0, false, true, 0},
	} {
		if got := FirstEpoch(c.committed, c.checkpointed, c.replayable); got != c.want {
			t.Errorf("FirstEpoch(%d, %v, %v) = %d, want %d", c.committed, c.checkpointed, c.replayable, got, c.want)
		}
	}
}

// A _metadata column of another shape (a user's own) is not read.
func TestForeignMetadataColumn(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Append(1)
	a := b.NewArray()
	defer a.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: MetadataColumn, Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{a}, 1)
	defer rec.Release()
	if got, want := New(rec.Schema(), 2).Batch(rec)(0), "epoch 2, row 0"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
