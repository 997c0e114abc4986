// Package rowpos names the source position of a row of a stream, for the runtime errors of
// the transform tools (select, filter, expect: issue #21): "a runtime error names the row's
// source position". It reads what the rows carry, in this order of preference:
//
//  1. the _metadata struct column of `read-files --with-metadata`: "PATH:LINE" for text
//     formats, "PATH row N" for binary ones (N is _metadata.row_index, 0-based, as Spark's);
//  2. the topic, partition and offset columns of read-kafka: "TOPIC/PARTITION@OFFSET", the
//     form codec/rescue uses for a Kafka record ("_file"); an offset column beside a batch
//     tagged with its source partition (codec.KeyPartition, when --columns dropped topic and
//     partition) gives "PARTITION@OFFSET" alike;
//  3. the batch's source partition (codec.KeyPartition) with the epoch and the row's index
//     among that partition's rows of the epoch: "orders/3, epoch 7, row 12";
//  4. else the epoch and the row's index among the stream's rows of the epoch: "epoch 7, row 12".
//
// Row indexes are 0-based and count the rows this stage received since the epoch began
// (per partition in form 3), so they are the same when the epoch is replayed. Positions are
// only rendered when asked for (an error): naming a batch costs nothing per row.
package rowpos

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/codec"
)

// Column names the positions are read from: read-files' --with-metadata struct column
// (source/files.MetadataColumn, whose type is source/files.MetadataType) and read-kafka's
// columns (source/kafka.ColTopic, ColPartition, ColOffset).
const (
	MetadataColumn = "_metadata"
	FilePathField  = "file_path"
	LineField      = "line"
	RowIndexField  = "row_index"
	TopicColumn    = "topic"
	PartitionCol   = "partition"
	OffsetColumn   = "offset"
)

// Tracker names the rows of the data batches of one input stream. Call Batch for every data
// batch in stream order and Barrier for every barrier; not safe for concurrent use.
type Tracker struct {
	// _metadata: the column and its fields' indexes (-1: absent)
	meta, metaPath, metaLine, metaRow int
	// read-kafka's columns (-1: absent)
	topic, partition, offset int

	epoch   uint64           // the epoch the next rows belong to; 0: not known yet
	rows    int64            // rows of the epoch so far, of batches without a partition
	perPart map[string]int64 // rows of the epoch so far, per source partition

	// the batch being named
	rec   arrow.RecordBatch
	part  string
	base  int64
	posFn func(int) string
}

// FirstEpoch is the number of the epoch an operator's first input rows belong to, for New:
// with a checkpoint directory, the one after the committed epoch it restored (the source
// replays from there, docs/protocol.md §8); without one, 1 when the stream is not replayable
// (its source numbers epochs from 1 on every run), else 0: not known until the first barrier.
func FirstEpoch(committed uint64, checkpointed, replayable bool) uint64 {
	switch {
	case checkpointed:
		return committed + 1
	case !replayable:
		return 1
	}
	return 0
}

// New returns a tracker for batches of schema in, whose first rows belong to epoch
// firstEpoch (FirstEpoch; 0 when not known: positions then say "first epoch of this run"
// until the first barrier).
func New(in *arrow.Schema, firstEpoch uint64) *Tracker {
	t := &Tracker{meta: -1, metaPath: -1, metaLine: -1, metaRow: -1, topic: -1, partition: -1, offset: -1,
		epoch: firstEpoch, perPart: map[string]int64{}}
	if i := fieldIndex(in, MetadataColumn); i >= 0 {
		if st, ok := in.Field(i).Type.(*arrow.StructType); ok {
			if j, ok := st.FieldIdx(FilePathField); ok && st.Field(j).Type.ID() == arrow.STRING {
				t.meta, t.metaPath = i, j
				if k, ok := st.FieldIdx(LineField); ok && st.Field(k).Type.ID() == arrow.INT64 {
					t.metaLine = k
				}
				if k, ok := st.FieldIdx(RowIndexField); ok && st.Field(k).Type.ID() == arrow.INT64 {
					t.metaRow = k
				}
			}
		}
	}
	if i := fieldIndex(in, TopicColumn); i >= 0 && in.Field(i).Type.ID() == arrow.STRING {
		t.topic = i
	}
	if i := fieldIndex(in, PartitionCol); i >= 0 && isInt(in.Field(i).Type) {
		t.partition = i
	}
	if i := fieldIndex(in, OffsetColumn); i >= 0 && isInt(in.Field(i).Type) {
		t.offset = i
	}
	t.posFn = t.pos
	return t
}

// fieldIndex is the index of the one top-level field named name, -1 when there is none (or
// several).
func fieldIndex(s *arrow.Schema, name string) int {
	ix := s.FieldIndices(name)
	if len(ix) != 1 {
		return -1
	}
	return ix[0]
}

func isInt(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// Batch starts naming the rows of rec, the next data batch of the stream, and returns the
// function that names its row i (an expr.RowPos). The function reads rec and is valid until
// the next call of Batch; rec is borrowed, not retained. Batch counts rec's rows as received,
// so call it exactly once per batch, rows kept or not.
func (t *Tracker) Batch(rec arrow.RecordBatch) func(i int) string {
	t.rec = rec
	n := rec.NumRows()
	if p, ok := codec.BatchPartition(rec); ok && p != "" {
		t.part = p
		t.base = t.perPart[p]
		t.perPart[p] = t.base + n
	} else {
		t.part = ""
		t.base = t.rows
		t.rows += n
	}
	return t.posFn
}

// Barrier ends epoch n: the rows that follow belong to epoch n+1, counted from 0.
func (t *Tracker) Barrier(n uint64) {
	t.epoch = n + 1
	t.rows = 0
	clear(t.perPart)
}

// pos names row i of the current batch.
func (t *Tracker) pos(i int) string {
	if s, ok := t.file(i); ok {
		return s
	}
	if s, ok := t.kafka(i); ok {
		return s
	}
	var b []byte
	if t.part != "" {
		b = append(b, t.part...)
		b = append(b, ", "...)
	}
	if t.epoch == 0 {
		b = append(b, "first epoch of this run"...)
	} else {
		b = append(b, "epoch "...)
		b = strconv.AppendUint(b, t.epoch, 10)
	}
	b = append(b, ", row "...)
	b = strconv.AppendInt(b, t.base+int64(i), 10)
	return string(b)
}

// file names row i by its _metadata: PATH:LINE or PATH row N.
func (t *Tracker) file(i int) (string, bool) {
	if t.meta < 0 {
		return "", false
	}
	st, ok := t.rec.Column(t.meta).(*array.Struct)
	if !ok || st.IsNull(i) {
		return "", false
	}
	path, ok := st.Field(t.metaPath).(*array.String)
	if !ok || path.IsNull(i) {
		return "", false
	}
	b := []byte(path.Value(i))
	if v, ok := int64At(st, t.metaLine, i); ok {
		b = append(b, ':')
		return string(strconv.AppendInt(b, v, 10)), true
	}
	if v, ok := int64At(st, t.metaRow, i); ok {
		b = append(b, " row "...)
		return string(strconv.AppendInt(b, v, 10)), true
	}
	return string(b), true
}

func int64At(st *array.Struct, j, i int) (int64, bool) {
	if j < 0 {
		return 0, false
	}
	a, ok := st.Field(j).(*array.Int64)
	if !ok || a.IsNull(i) {
		return 0, false
	}
	return a.Value(i), true
}

// kafka names row i by read-kafka's columns: TOPIC/PARTITION@OFFSET, or PARTITION@OFFSET
// with the batch's source partition.
func (t *Tracker) kafka(i int) (string, bool) {
	if t.offset < 0 {
		return "", false
	}
	off, ok := intAt(t.rec.Column(t.offset), i)
	if !ok {
		return "", false
	}
	var b []byte
	switch {
	case t.topic >= 0 && t.partition >= 0 && t.rec.Column(t.topic).IsValid(i) && t.rec.Column(t.partition).IsValid(i):
		p, _ := intAt(t.rec.Column(t.partition), i)
		b = append(b, t.rec.Column(t.topic).(*array.String).Value(i)...)
		b = append(b, '/')
		b = strconv.AppendInt(b, p, 10)
	case t.part != "":
		b = append(b, t.part...)
	default:
		return "", false
	}
	b = append(b, '@')
	return string(strconv.AppendInt(b, off, 10)), true
}

// intAt reads an integer array's value i as int64; false when it is null.
func intAt(a arrow.Array, i int) (int64, bool) {
	if a.IsNull(i) {
		return 0, false
	}
	switch a := a.(type) {
	case *array.Int8:
		return int64(a.Value(i)), true
	case *array.Int16:
		return int64(a.Value(i)), true
	case *array.Int32:
		return int64(a.Value(i)), true
	case *array.Int64:
		return a.Value(i), true
	case *array.Uint8:
		return int64(a.Value(i)), true
	case *array.Uint16:
		return int64(a.Value(i)), true
	case *array.Uint32:
		return int64(a.Value(i)), true
	case *array.Uint64:
		return int64(a.Value(i)), true
	}
	return 0, false
}
