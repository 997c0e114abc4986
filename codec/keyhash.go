package codec

import (
	"encoding/binary"
	"unsafe"

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
	hashBytes := func(tag byte, v []byte) uint64 {
		if len(v) > len(buf)-binary.MaxVarintLen64-1 {
			return xxh3.Hash(appendBytes(nil, tag, v))
		}
		b := binary.AppendUvarint(append(buf[:0], tag), uint64(len(v)))
		return xxh3.Hash(append(b, v...))
	}
	hashInt := func(tag byte, v uint64) uint64 {
		return xxh3.Hash(appendU64(buf[:0], tag, v))
	}
	nulls := a.NullN() > 0
	switch a := a.(type) {
	case *array.Binary:
		for r := range dst {
			if nulls && a.IsNull(r) {
				dst[r] = null
			} else {
				dst[r] = hashBytes(tagBinary, a.Value(r))
			}
		}
	case *array.String:
		for r := range dst {
			if nulls && a.IsNull(r) {
				dst[r] = null
			} else {
				dst[r] = hashBytes(tagString, unsafe.Slice(unsafe.StringData(a.Value(r)), len(a.Value(r))))
			}
		}
	case *array.LargeString:
		for r := range dst {
			if nulls && a.IsNull(r) {
				dst[r] = null
			} else {
				dst[r] = hashBytes(tagString, unsafe.Slice(unsafe.StringData(a.Value(r)), len(a.Value(r))))
			}
		}
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
