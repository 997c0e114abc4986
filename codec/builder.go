package codec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// DefaultBatchBytes (64 MiB) is the size at which stages that build record batches row by row
// (window output and state files, keyed state snapshots and changelogs) cut a batch, in
// addition to their row limit. A string, binary or list array addresses its values with
// 32-bit offsets, so one array holds at most 2 GiB (Arrow columnar format, "Variable-size
// Binary Layout"); cutting by size keeps any amount of data writable, and keeps the builders'
// doubling growth and the IPC reader's per-batch buffer small next to the data.
const DefaultBatchBytes = 64 << 20

// BuilderBytes estimates the bytes of data b holds: the value bytes and offsets of string,
// binary and list builders (recursively into list, struct and map children) and the values of
// fixed-width builders; validity bitmaps are not counted. Cheap (no allocation; a walk of the
// nested builders), so it can be called after every appended row.
func BuilderBytes(b array.Builder) int {
	switch b := b.(type) {
	case *array.BinaryBuilder:
		return b.DataLen() + 4*b.Len()
	case *array.StringBuilder:
		return b.DataLen() + 4*b.Len()
	case *array.LargeStringBuilder:
		return b.DataLen() + 8*b.Len()
	case *array.ListBuilder:
		return BuilderBytes(b.ValueBuilder()) + 4*b.Len()
	case *array.LargeListBuilder:
		return BuilderBytes(b.ValueBuilder()) + 8*b.Len()
	case *array.MapBuilder:
		return BuilderBytes(b.KeyBuilder()) + BuilderBytes(b.ItemBuilder()) + 4*b.Len()
	case *array.StructBuilder:
		n := 0
		for i := 0; i < b.NumField(); i++ {
			n += BuilderBytes(b.FieldBuilder(i))
		}
		return n
	}
	if fw, ok := b.Type().(arrow.FixedWidthDataType); ok {
		return (b.Len()*fw.BitWidth() + 7) / 8
	}
	return 16 * b.Len() // views and other layouts: their fixed part
}

// Sizer estimates the bytes held by the builders of one batch after every row at the cost of
// the variable-length builders only: fixed-width builders count their width per row.
type Sizer struct {
	varLen      []array.Builder
	fixedPerRow int
}

// NewSizer returns a Sizer over bs (builders of a batch that each get one value per row).
func NewSizer(bs []array.Builder) Sizer {
	var s Sizer
	for _, b := range bs {
		if fw, ok := b.Type().(arrow.FixedWidthDataType); ok {
			s.fixedPerRow += (fw.BitWidth() + 7) / 8
		} else {
			s.varLen = append(s.varLen, b)
		}
	}
	return s
}

// Bytes estimates the bytes of the builders holding rows rows (see BuilderBytes).
func (s Sizer) Bytes(rows int) int {
	n := rows * s.fixedPerRow
	for _, b := range s.varLen {
		n += BuilderBytes(b)
	}
	return n
}
