package codec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/zeebo/xxh3"
)

// HashRows sets dst[r] = Hash64 of the encoded key of row r (AppendRow) for the n rows of
// the batch whose key columns are cols, and returns dst resized to n. It is AppendRow and
// Hash64 per row, without the per-row type dispatch for a single top-level column of a
// common type (integers, strings, binary).
func HashRows(dst []uint64, cols []KeyColumn, n int) []uint64 {
	if cap(dst) < n {
		dst = make([]uint64, n)
	}
	dst = dst[:n]
	if len(cols) == 1 && len(cols[0].Path.Indexes) == 1 && hashColumn(dst, cols[0].Arr) {
		return dst
	}
	var buf []byte
	for r := range dst {
		buf = AppendRow(buf[:0], cols, r)
		dst[r] = xxh3.Hash(buf)
	}
	return dst
}

// hashColumn is HashRows for one top-level column of a type it knows; false otherwise.
func hashColumn(dst []uint64, a arrow.Array) bool {
	null := xxh3.Hash([]byte{tagNull})
	var buf [64]byte
	hashInt := func(tag byte, v uint64) uint64 {
		return xxh3.Hash(appendU64(buf[:0], tag, v))
	}
	nulls := a.NullN() > 0
	switch a := a.(type) {
	case *array.Binary:
		hashVarBinary(dst, tagBinary, a, a.ValueOffsets(), a.ValueBytes(), nulls, null)
	case *array.String:
		hashVarBinary(dst, tagString, a, a.ValueOffsets(), a.ValueBytes(), nulls, null)
	case *array.LargeString:
		hashVarBinary(dst, tagString, a, a.ValueOffsets(), a.ValueBytes(), nulls, null)
	case *array.Int64:
		for r := range dst {
			if nulls && a.IsNull(r) {
				dst[r] = null
			} else {
				dst[r] = hashInt(tagInt, uint64(a.Value(r)))
			}
		}
	case *array.Int32:
		for r := range dst {
			if nulls && a.IsNull(r) {
				dst[r] = null
			} else {
				dst[r] = hashInt(tagInt, uint64(int64(a.Value(r))))
			}
		}
	default:
		return false
	}
	return true
}

// hashVarBinary is hashColumn for (large) binary and string arrays: offs and data are the
// array's ValueOffsets and ValueBytes. A value shorter than 63 bytes is encoded (tag, one-byte
// length, bytes) in a stack buffer; longer ones as appendBytes does.
func hashVarBinary[O int32 | int64](dst []uint64, tag byte, a arrow.Array, offs []O, data []byte, nulls bool, null uint64) {
	var buf [64]byte
	buf[0] = tag
	base := offs[0]
	for r := range dst {
		if nulls && a.IsNull(r) {
			dst[r] = null
			continue
		}
		v := data[offs[r]-base : offs[r+1]-base]
		if len(v) < len(buf)-2 { // a uvarint below 128 is one byte
			buf[1] = byte(len(v))
			n := copy(buf[2:], v)
			dst[r] = xxh3.Hash(buf[:2+n])
		} else {
			dst[r] = xxh3.Hash(appendBytes(nil, tag, v))
		}
	}
}
