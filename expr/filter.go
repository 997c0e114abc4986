package expr

import (
	"context"
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FilterBatch's column loop: the selection (the runs of kept rows) is computed once from the
// mask and applied to every column, instead of each column's compute.FilterArray deriving it
// from the mask again. Fixed-width, boolean and (large) string/binary columns are copied run
// by run over their Arrow buffers, all into one output allocation; every other type (structs,
// lists, maps, dictionaries, views, extensions) goes through compute.FilterArray.

// selection is the kept rows of a batch as runs [start, end) of consecutive rows, ascending.
type selection struct {
	runs []int32 // start0, end0, start1, end1, …
	kept int
}

// selectMask returns the selection of a boolean mask: the rows that are true and not null.
func selectMask(mask *array.Boolean) selection {
	n := mask.Len()
	d := mask.Data()
	vals := d.Buffers()[1].Bytes()
	var bm []byte
	switch {
	case mask.NullN() > 0:
		bm = make([]byte, bitutil.BytesForBits(int64(n)))
		bitutil.BitmapAnd(vals, d.Buffers()[0].Bytes(), int64(d.Offset()), int64(d.Offset()), bm, 0, int64(n))
	case d.Offset() != 0:
		bm = make([]byte, bitutil.BytesForBits(int64(n)))
		bitutil.CopyBitmap(vals, d.Offset(), n, bm, 0)
	default:
		bm = vals
	}
	var s selection
	for base := 0; base < n; base += 64 {
		var w uint64
		if len(bm) >= base/8+8 {
			w = binary.LittleEndian.Uint64(bm[base/8:])
		} else {
			for i, b := range bm[base/8:] {
				w |= uint64(b) << (8 * i)
			}
		}
		if n-base < 64 {
			w &= 1<<(n-base) - 1
		}
		for w != 0 {
			t := bits.TrailingZeros64(w)
			ones := bits.TrailingZeros64(^(w >> t))
			start, end := int32(base+t), int32(base+t+ones)
			if k := len(s.runs); k > 0 && s.runs[k-1] == start {
				s.runs[k-1] = end
			} else {
				s.runs = append(s.runs, start, end)
			}
			s.kept += ones
			if t+ones >= 64 {
				break
			}
			w &^= (1<<ones - 1) << t
		}
	}
	return s
}

// colPlan is how one column is filtered and which bytes of the shared output it takes.
type colPlan struct {
	kind   int // planFixed, planBool, planBinary32, planBinary64 or planKernel
	width  int // bytes per value (planFixed)
	valid  int // offset of the validity bitmap in the output, -1 without nulls
	offs   int // offset of the offsets buffer (binary)
	data   int // offset of the value buffer
	dataN  int // bytes of the value buffer
	offsN  int // bytes of the offsets buffer
	validN int
}

const (
	planKernel = iota
	planFixed
	planBool
	planBinary32
	planBinary64
)

// align64 rounds n up to a multiple of 64 bytes (Arrow's recommended buffer alignment).
func align64(n int) int { return (n + 63) &^ 63 }

// planColumn decides how a is filtered by s and reserves its buffers from *size on.
func planColumn(a arrow.Array, s *selection, size *int) colPlan {
	p := colPlan{valid: -1}
	dt := a.DataType()
	switch dt.ID() {
	case arrow.BOOL:
		p.kind = planBool
		p.dataN = int(bitutil.BytesForBits(int64(s.kept)))
	case arrow.STRING, arrow.BINARY:
		p.kind = planBinary32
		p.offsN = 4 * (s.kept + 1)
		p.dataN = binaryBytes(a.Data().Buffers()[1].Bytes(), 4, a.Data().Offset(), s)
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		p.kind = planBinary64
		p.offsN = 8 * (s.kept + 1)
		p.dataN = binaryBytes(a.Data().Buffers()[1].Bytes(), 8, a.Data().Offset(), s)
	case arrow.DICTIONARY, arrow.EXTENSION, arrow.NULL:
		return p
	default:
		fw, ok := dt.(arrow.FixedWidthDataType)
		if !ok || fw.BitWidth()%8 != 0 || fw.BitWidth() == 0 || len(a.Data().Children()) > 0 {
			return p
		}
		p.kind = planFixed
		p.width = fw.BitWidth() / 8
		p.dataN = p.width * s.kept
	}
	if a.NullN() > 0 {
		p.valid = *size
		p.validN = int(bitutil.BytesForBits(int64(s.kept)))
		*size += align64(p.validN)
	}
	if p.offsN > 0 {
		p.offs = *size
		*size += align64(p.offsN)
	}
	p.data = *size
	*size += align64(p.dataN)
	return p
}

// binaryBytes is the number of value bytes of the kept rows of a binary column whose offsets
// (of width 4 or 8 bytes) are offs, starting at row off.
func binaryBytes(offs []byte, width, off int, s *selection) int {
	total := 0
	for i := 0; i < len(s.runs); i += 2 {
		lo, hi := off+int(s.runs[i]), off+int(s.runs[i+1])
		if width == 4 {
			o := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(offs))), len(offs)/4)
			total += int(o[hi] - o[lo])
		} else {
			o := unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(offs))), len(offs)/8)
			total += int(o[hi] - o[lo])
		}
	}
	return total
}

// filterColumns applies s to every column of rec, returning the new columns (the caller
// releases them). mask is the boolean mask s came from (for compute.FilterArray).
func filterColumns(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, mask arrow.Array, s *selection) ([]arrow.Array, error) {
	plans := make([]colPlan, rec.NumCols())
	size := 0
	for i := range plans {
		plans[i] = planColumn(rec.Column(i), s, &size)
	}
	out := memory.NewResizableBuffer(mem)
	defer out.Release()
	// 1/16 of slack, so that a recycled buffer also fits the next batches, which keep a few
	// more or longer rows.
	out.Reserve(size + size/16)
	out.Resize(size)
	buf := out.Bytes()
	cols := make([]arrow.Array, len(plans))
	for i, p := range plans {
		a := rec.Column(i)
		if p.kind == planKernel {
			f, err := kernelFilter(ctx, a, mask)
			if err != nil {
				for _, c := range cols[:i] {
					c.Release()
				}
				return nil, err
			}
			cols[i] = f
			continue
		}
		cols[i] = filterColumn(a, p, s, out, buf)
	}
	return cols, nil
}

// filterColumn copies the kept rows of a into its reserved part of buf (out's bytes).
func filterColumn(a arrow.Array, p colPlan, s *selection, out *memory.Buffer, buf []byte) arrow.Array {
	d := a.Data()
	off := d.Offset()
	bufs := make([]*memory.Buffer, 2, 3)
	nulls := 0
	if p.valid >= 0 {
		dst := buf[p.valid : p.valid+p.validN]
		clear(dst) // orBits sets bits into a cleared bitmap
		src := d.Buffers()[0].Bytes()
		o := 0
		for i := 0; i < len(s.runs); i += 2 {
			lo, hi := int(s.runs[i]), int(s.runs[i+1])
			orBits(dst, o, src, off+lo, hi-lo)
			o += hi - lo
		}
		nulls = s.kept - bitutil.CountSetBits(dst, 0, s.kept)
		bufs[0] = memory.SliceBuffer(out, p.valid, p.validN)
	}
	data := buf[p.data : p.data+p.dataN]
	switch p.kind {
	case planFixed:
		src, w, o := d.Buffers()[1].Bytes(), p.width, 0
		for i := 0; i < len(s.runs); i += 2 {
			lo, hi := off+int(s.runs[i]), off+int(s.runs[i+1])
			o += copy(data[o:], src[lo*w:hi*w])
		}
		bufs[1] = memory.SliceBuffer(out, p.data, p.dataN)
	case planBool:
		clear(data)
		src, o := d.Buffers()[1].Bytes(), 0
		for i := 0; i < len(s.runs); i += 2 {
			lo, hi := int(s.runs[i]), int(s.runs[i+1])
			orBits(data, o, src, off+lo, hi-lo)
			o += hi - lo
		}
		bufs[1] = memory.SliceBuffer(out, p.data, p.dataN)
	case planBinary32:
		copyBinary[int32](d, off, s, buf[p.offs:p.offs+p.offsN], data)
		bufs[1] = memory.SliceBuffer(out, p.offs, p.offsN)
		bufs = append(bufs, memory.SliceBuffer(out, p.data, p.dataN))
	case planBinary64:
		copyBinary[int64](d, off, s, buf[p.offs:p.offs+p.offsN], data)
		bufs[1] = memory.SliceBuffer(out, p.offs, p.offsN)
		bufs = append(bufs, memory.SliceBuffer(out, p.data, p.dataN))
	}
	nd := array.NewData(a.DataType(), s.kept, bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	defer nd.Release()
	return array.MakeFromData(nd)
}

// copyBinary copies the offsets (rebased) and value bytes of the kept rows of a binary column.
func copyBinary[T int32 | int64](d arrow.ArrayData, off int, s *selection, dstOffs, data []byte) {
	src := d.Buffers()[1].Bytes()
	offs := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(src))), len(src)/int(unsafe.Sizeof(T(0))))
	vals := d.Buffers()[2].Bytes()
	dst := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(dstOffs))), s.kept+1)
	dst[0] = 0
	o, at := 1, T(0)
	for i := 0; i < len(s.runs); i += 2 {
		lo, hi := off+int(s.runs[i]), off+int(s.runs[i+1])
		base := offs[lo]
		for _, v := range offs[lo+1 : hi+1] {
			dst[o] = at + v - base
			o++
		}
		at += T(copy(data[at:], vals[base:offs[hi]]))
	}
}

// kernelFilter is compute.FilterArray, which has no kernel for maps: a map is filtered as the
// list of key/value structs it is stored as.
func kernelFilter(ctx context.Context, a arrow.Array, mask arrow.Array) (arrow.Array, error) {
	opts := *compute.DefaultFilterOptions()
	mt, ok := a.DataType().(*arrow.MapType)
	if !ok {
		return compute.FilterArray(ctx, a, mask, opts)
	}
	d := a.Data()
	ld := array.NewData(arrow.ListOfField(mt.ElemField()), d.Len(), d.Buffers(), d.Children(), d.NullN(), d.Offset())
	defer ld.Release()
	l := array.MakeFromData(ld)
	defer l.Release()
	f, err := compute.FilterArray(ctx, l, mask, opts)
	if err != nil {
		return nil, err
	}
	defer f.Release()
	fd := f.Data()
	md := array.NewData(mt, fd.Len(), fd.Buffers(), fd.Children(), fd.NullN(), fd.Offset())
	defer md.Release()
	return array.MakeFromData(md), nil
}

// orBits ORs the n bits of src from bit so on into dst (whose bits there are clear) from bit
// do on, up to 56 bits per step with 64-bit loads: for the short runs of a selective filter
// a fraction of what bitutil.CopyBitmap costs per call.
func orBits(dst []byte, do int, src []byte, so, n int) {
	for n > 0 {
		k := min(n, 56)
		w := load64(src, so/8) >> (so % 8) & (1<<k - 1)
		b, sh := do/8, do%8
		v := w << sh // k + sh ≤ 63 bits
		if b+8 <= len(dst) {
			binary.LittleEndian.PutUint64(dst[b:], binary.LittleEndian.Uint64(dst[b:])|v)
		} else {
			for i := 0; i < (sh+k+7)/8; i++ {
				dst[b+i] |= byte(v >> (8 * i))
			}
		}
		so, do, n = so+k, do+k, n-k
	}
}

// load64 reads 8 bytes of b from byte i on, little-endian, zero past the end.
func load64(b []byte, i int) uint64 {
	if i+8 <= len(b) {
		return binary.LittleEndian.Uint64(b[i:])
	}
	var w uint64
	for j, c := range b[i:] {
		w |= uint64(c) << (8 * j)
	}
	return w
}
