package codec

import (
	"encoding/binary"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/zeebo/xxh3"
	"math/bits"
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
		if len(v) >= 16 && len(v) <= 30 {
			dst[r] = hashEncoded16to30(tag, v)
		} else if len(v) < len(buf)-2 { // a uvarint below 128 is one byte
			buf[1] = byte(len(v))
			n := copy(buf[2:], v)
			dst[r] = xxh3.Hash(buf[:2+n])
		} else {
			dst[r] = xxh3.Hash(appendBytes(nil, tag, v))
		}
	}
}

// XXH3-64 constants (seed 0): PRIME64_1 and the first 32 bytes of the default secret, as
// little-endian words (xxhash.h, XXH3_len_17to128_64b).
const (
	xxhPrime1 = 0x9E3779B185EBCA87
	xxhKey0   = 0xbe4ba423396cfeb8
	xxhKey8   = 0x1cad21f72c81017c
	xxhKey16  = 0xdb979083e96dd4de
	xxhKey24  = 0x1f67b3b7a4a44072
)

// hashEncoded16to30 is xxh3.Hash(appendBytes(nil, tag, v)) for 16 ≤ len(v) ≤ 30 — an encoded
// key of 18 to 32 bytes (tag, one-byte length, v), XXH3's 17-to-128-byte case with one round —
// computed from v's words in place, without the call and the copy (the routing hot path for
// 16-byte ids; TestHashEncoded16to30 checks it against xxh3).
func hashEncoded16to30(tag byte, v []byte) uint64 {
	m := len(v)
	le := binary.LittleEndian
	w0 := uint64(tag) | uint64(m)<<8 | le.Uint64(v)<<16 // encoded bytes 0..7
	w1 := le.Uint64(v[6:])                              // 8..15
	w2 := le.Uint64(v[m-16:])                           // len-16 .. len-9
	w3 := le.Uint64(v[m-8:])                            // len-8 .. len-1
	acc := uint64(m+2) * xxhPrime1
	hi, lo := bits.Mul64(w0^xxhKey0, w1^xxhKey8)
	acc += hi ^ lo
	hi, lo = bits.Mul64(w2^xxhKey16, w3^xxhKey24)
	acc += hi ^ lo
	acc ^= acc >> 37
	acc *= 0x165667919e3779f9
	return acc ^ acc>>32
}
