package delta

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Dictionary pre-encoding of a row group's columns.
//
// Parquet files written here dictionary-encode every column (arrow-go's default, and what
// delta-rs/arrow-rs and Spark do) until a column chunk's dictionary outgrows the dictionary
// page size limit (1 MiB). arrow-go builds that dictionary value by value through a generic
// memo table: strings are boxed into an interface (one allocation each) and every value
// costs a hash-table probe behind two indirect calls, which made up about two thirds of the
// CPU time of writing the flights columns. pqarrow also writes Arrow dictionary arrays
// directly (PutDictionary once, then the indices; parquet/pqarrow/encode_dict_compute.go),
// so the writer builds the dictionary of each eligible column of a row group itself with a
// specialised open-addressing table and hands pqarrow one dictionary array per column chunk.
// The file holds the same Parquet as before: a PLAIN dictionary page and RLE_DICTIONARY data
// pages, Parquet statistics computed by pqarrow from the dictionary (every value of which
// occurs in the chunk, so they are exact).
//
// Eligible: flat int64 and timestamp columns (INT64 physical type; conformed timestamps are
// already microseconds) and string and binary columns. A column whose dictionary would pass
// the limit is left dense (pqarrow then falls back to PLAIN itself, as before).

var dictSeed = maphash.MakeSeed()

// dictEligible reports whether columns of type dt are dictionary pre-encoded.
func dictEligible(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT64, arrow.TIMESTAMP, arrow.STRING, arrow.BINARY:
		return true
	}
	return false
}

// dictEncode returns one dictionary array (int32 indices) holding the rows of chunks (all of
// one eligible type, rows in total) in order, or nil when the dictionary's PLAIN encoding
// would exceed limit bytes. Its dictionary holds each distinct non-null value once, in order
// of first occurrence; nulls stay null (index slots of null rows are 0). The indices live in
// *scratch (grown as needed): they are valid until the next call with the same scratch, which
// is enough for arrow-go's column writers (they copy indices as they encode them).
func dictEncode(chunks []arrow.Array, rows int, limit int64, scratch *[]int32) arrow.Array {
	dt := chunks[0].DataType()
	if cap(*scratch) < rows {
		*scratch = make([]int32, rows)
	}
	idx := (*scratch)[:rows]
	var dict arrow.ArrayData
	switch dt.ID() {
	case arrow.INT64, arrow.TIMESTAMP:
		var d int64Dict
		d.init(chunks)
		pos := 0
		for _, c := range chunks {
			n := c.Len()
			vals := int64Values(c)
			out := idx[pos : pos+n]
			switch {
			case c.NullN() > 0:
				for i, v := range vals {
					if c.IsValid(i) {
						out[i] = d.index(v)
					}
				}
			case d.direct != nil:
				d.indexDirect(vals, out)
			default:
				for i, v := range vals {
					out[i] = d.index(v)
				}
			}
			pos += n
			if int64(len(d.vals))*8 > limit {
				return nil
			}
		}
		// Timestamps keep their INT64 values (conformed to microseconds): the dictionary is
		// Int64, the Parquet column's physical type.
		dt = arrow.PrimitiveTypes.Int64
		dict = array.NewData(dt, len(d.vals), []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(d.vals))}, nil, 0, 0)
	case arrow.STRING, arrow.BINARY:
		var d bytesDict
		d.init()
		pos := 0
		for _, c := range chunks {
			n := c.Len()
			offs := c.(interface{ ValueOffsets() []int32 }).ValueOffsets()
			var data []byte
			if b := c.Data().Buffers()[2]; b != nil {
				data = b.Bytes()
			}
			out := idx[pos : pos+n]
			hasNulls := c.NullN() > 0
			for i := range out {
				if !hasNulls || c.IsValid(i) {
					s, e := int(offs[i]), int(offs[i+1])
					if e-s <= 7 && s+8 <= len(data) {
						// Short value with 8 readable bytes: one load, masked to its length.
						key := binary.LittleEndian.Uint64(data[s:]) & (1<<(8*uint(e-s)) - 1)
						out[i] = d.indexShort(key|uint64(e-s)<<56, data[s:e])
					} else {
						out[i] = d.index(data[s:e])
					}
					if d.size > limit { // checked per value: keeps the int32 offsets in range
						return nil
					}
				}
			}
			pos += n
			if d.size > limit {
				return nil
			}
		}
		dict = array.NewData(dt, len(d.offs)-1, []*memory.Buffer{nil,
			memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(d.offs)), memory.NewBufferBytes(d.data)}, nil, 0, 0)
	default:
		return nil
	}
	defer dict.Release()
	var valid *memory.Buffer
	nulls := 0
	for _, c := range chunks {
		nulls += c.NullN()
	}
	if nulls > 0 {
		bits := make([]byte, bitutil.BytesForBits(int64(rows)))
		pos := 0
		for _, c := range chunks {
			if c.NullN() == 0 {
				bitutil.SetBitsTo(bits, int64(pos), int64(c.Len()), true)
			} else {
				bitutil.CopyBitmap(c.NullBitmapBytes(), c.Data().Offset(), c.Len(), bits, pos)
			}
			pos += c.Len()
		}
		valid = memory.NewBufferBytes(bits)
	}
	indices := array.NewData(arrow.PrimitiveTypes.Int32, rows,
		[]*memory.Buffer{valid, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(idx))}, nil, nulls, 0)
	defer indices.Release()
	ia := array.MakeFromData(indices)
	defer ia.Release()
	da := array.MakeFromData(dict)
	defer da.Release()
	return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: dt}, ia, da)
}

// int64Values returns the int64 values of c (an INT64 or TIMESTAMP array), null slots
// included.
func int64Values(c arrow.Array) []int64 {
	return arrow.Int64Traits.CastFromBytes(c.Data().Buffers()[1].Bytes())[c.Data().Offset():][:c.Len()]
}

// maxDirectRange is the widest value range (max − min + 1) an int64Dict maps with a direct
// table instead of a hash table: 64 Ki slots (256 KiB, within L2), as small-range integers
// (delays, distances, counts, codes) usually are.
const maxDirectRange = 1 << 16

// int64Dict maps distinct int64 values to dense indices (order of first occurrence) with
// open addressing (linear probing, Fibonacci hashing); slots hold index+1, 0 = empty. When
// the chunks' non-null values span at most maxDirectRange values, direct (indexed by
// value − lo) replaces the hash table for the chunks without nulls.
type int64Dict struct {
	slots   []int32
	vals    []int64
	shift   uint
	last    int64 // the previous value and its index: runs skip the probe
	lastIdx int32
	direct  []int32 // index+1 of value lo+i, 0 = not seen
	lo      int64
}

func (d *int64Dict) init(chunks []arrow.Array) {
	d.slots = make([]int32, 1<<10)
	d.shift = 64 - 10
	d.lastIdx = -1
	lo, hi, any := int64(math.MaxInt64), int64(math.MinInt64), false
	for _, c := range chunks {
		if c.NullN() > 0 {
			// nulls' slots hold arbitrary values: such chunks take the hash table, but
			// their values must be in direct too, so the range would have to count them.
			return
		}
		vals := int64Values(c)
		for len(vals) > 0 {
			// In blocks, so that a wide range (timestamps) stops the scan early.
			blk := vals[:min(len(vals), 1024)]
			vals = vals[len(blk):]
			for _, v := range blk {
				lo, hi = min(lo, v), max(hi, v)
			}
			if uint64(hi-lo) >= maxDirectRange {
				return
			}
		}
		any = any || c.Len() > 0
	}
	if any && uint64(hi-lo) < maxDirectRange {
		d.direct = make([]int32, hi-lo+1)
		d.lo = lo
	}
}

// indexDirect sets out[i] to the index of vals[i] through the direct table.
func (d *int64Dict) indexDirect(vals []int64, out []int32) {
	direct, lo := d.direct, d.lo
	for i, v := range vals {
		k := direct[v-lo] - 1
		if k < 0 {
			d.vals = append(d.vals, v)
			k = int32(len(d.vals) - 1)
			direct[v-lo] = k + 1
		}
		out[i] = k
	}
}

func (d *int64Dict) index(v int64) int32 {
	if v == d.last && d.lastIdx >= 0 {
		return d.lastIdx
	}
	mask := uint64(len(d.slots) - 1)
	i := (uint64(v) * 0x9E3779B97F4A7C15) >> d.shift
	for {
		s := d.slots[i]
		if s == 0 {
			d.vals = append(d.vals, v)
			k := int32(len(d.vals) - 1)
			d.slots[i] = k + 1
			if 2*len(d.vals) > len(d.slots) {
				d.grow()
			}
			d.last, d.lastIdx = v, k
			return k
		}
		if d.vals[s-1] == v {
			d.last, d.lastIdx = v, s-1
			return s - 1
		}
		i = (i + 1) & mask
	}
}

func (d *int64Dict) grow() {
	d.slots = make([]int32, 2*len(d.slots))
	d.shift--
	mask := uint64(len(d.slots) - 1)
	for k, v := range d.vals {
		i := (uint64(v) * 0x9E3779B97F4A7C15) >> d.shift
		for d.slots[i] != 0 {
			i = (i + 1) & mask
		}
		d.slots[i] = int32(k + 1)
	}
}

// bytesDict maps distinct byte strings to dense indices (order of first occurrence); the
// values are kept as an Arrow string/binary layout (offs, data). size is their PLAIN
// encoded size (4-byte length prefix + bytes each). Strings of up to 7 bytes (codes, flags,
// short names: the common case for low-cardinality columns) are keyed by their bytes and
// length packed into a uint64, so probing compares integers; longer ones by maphash. A slot
// holds the key next to the entry, so a probe touches one cache line.
type bytesDict struct {
	slots []bytesSlot
	offs  []int32
	data  []byte
	shift uint
	size  int64
	// The previous short value's key and index (lastIdx -1: none yet).
	lastKey uint64
	lastIdx int32
}

// bytesSlot is one slot of a bytesDict: ref = index+1 of a short string, −(index+1) of a long
// one (whose hash may equal a short string's packed key), 0 = empty.
type bytesSlot struct {
	key uint64
	ref int32
}

func (d *bytesDict) init() {
	d.slots = make([]bytesSlot, 1<<10)
	d.shift = 64 - 10
	d.offs = []int32{0}
	d.lastIdx = -1
}

func (d *bytesDict) index(b []byte) int32 {
	if len(b) <= 7 {
		var key uint64
		for i, c := range b {
			key |= uint64(c) << (8 * i)
		}
		return d.indexShort(key|uint64(len(b))<<56, b)
	}
	key := maphash.Bytes(dictSeed, b)
	mask := uint64(len(d.slots) - 1)
	i := (key * 0x9E3779B97F4A7C15) >> d.shift
	for {
		s := d.slots[i]
		if s.ref == 0 {
			return d.insert(key, b, i, true)
		}
		if s.key == key && s.ref < 0 {
			if k := -s.ref - 1; bytes.Equal(d.data[d.offs[k]:d.offs[k+1]], b) {
				return k
			}
		}
		i = (i + 1) & mask
	}
}

// indexShort is index for a value b of at most 7 bytes whose packed key (its bytes, little
// endian, and its length in the top byte) is key. The previous short value's index is
// remembered: runs of one value skip the probe.
func (d *bytesDict) indexShort(key uint64, b []byte) int32 {
	if key == d.lastKey && d.lastIdx >= 0 {
		return d.lastIdx
	}
	mask := uint64(len(d.slots) - 1)
	i := (key * 0x9E3779B97F4A7C15) >> d.shift
	for {
		s := d.slots[i]
		if s.key == key && s.ref > 0 {
			d.lastKey, d.lastIdx = key, s.ref-1
			return s.ref - 1
		}
		if s.ref == 0 {
			k := d.insert(key, b, i, false)
			d.lastKey, d.lastIdx = key, k
			return k
		}
		i = (i + 1) & mask
	}
}

// insert adds b (key: its packed or hashed key) as a new entry in empty slot i.
func (d *bytesDict) insert(key uint64, b []byte, i uint64, long bool) int32 {
	k := int32(len(d.offs) - 1) // offs has one more element than there are entries
	d.data = append(d.data, b...)
	d.offs = append(d.offs, int32(len(d.data)))
	d.size += int64(len(b)) + 4
	ref := k + 1
	if long {
		ref = -ref
	}
	d.slots[i] = bytesSlot{key, ref}
	if 2*(len(d.offs)-1) > len(d.slots) {
		d.grow()
	}
	return k
}

func (d *bytesDict) grow() {
	old := d.slots
	d.slots = make([]bytesSlot, 2*len(old))
	d.shift--
	mask := uint64(len(d.slots) - 1)
	for _, s := range old {
		if s.ref == 0 {
			continue
		}
		i := (s.key * 0x9E3779B97F4A7C15) >> d.shift
		for d.slots[i].ref != 0 {
			i = (i + 1) & mask
		}
		d.slots[i] = s
	}
}
