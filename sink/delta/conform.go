package delta

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
)

// conformer converts incoming record batches to the table's canonical Arrow schema
// ([StructType.ToArrow]): columns matched by name, dictionaries decoded, unsigned integers
// widened, strings/binaries/lists normalized, timestamps converted to microseconds. Columns
// of the table missing from the input are filled with nulls.
type conformer struct {
	mem      memory.Allocator
	target   *arrow.Schema
	truncate bool // allow dropping sub-microsecond digits of timestamps
}

func (c *conformer) record(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	in := rec.Schema()
	byName := map[string]int{}
	for i, f := range in.Fields() {
		byName[f.Name] = i
	}
	used := make([]bool, in.NumFields())
	n := int(rec.NumRows())
	cols := make([]arrow.Array, 0, c.target.NumFields())
	release := func() {
		for _, a := range cols {
			a.Release()
		}
	}
	for _, tf := range c.target.Fields() {
		idx, ok := byName[tf.Name]
		if !ok {
			for i, f := range in.Fields() {
				if !used[i] && strings.EqualFold(f.Name, tf.Name) {
					idx, ok = i, true
					break
				}
			}
		}
		if !ok {
			if !tf.Nullable {
				release()
				return nil, fmt.Errorf("column %s: missing from the input and not nullable", tf.Name)
			}
			cols = append(cols, array.MakeArrayOfNull(c.mem, tf.Type, n))
			continue
		}
		used[idx] = true
		a, err := c.array(tf.Name, rec.Column(idx), tf.Type)
		if err != nil {
			release()
			return nil, err
		}
		if !tf.Nullable && a.NullN() > 0 {
			a.Release()
			release()
			return nil, fmt.Errorf("column %s: %d null values in a column that is not nullable", tf.Name, a.NullN())
		}
		cols = append(cols, a)
	}
	var extra []string
	for i, f := range in.Fields() {
		if !used[i] {
			extra = append(extra, f.Name)
		}
	}
	if len(extra) > 0 {
		release()
		return nil, fmt.Errorf("columns %s: not in the table schema (evolve the schema first)", strings.Join(extra, ", "))
	}
	out := array.NewRecordBatch(c.target, cols, int64(n))
	release()
	return out, nil
}

// array converts arr to type dst (recursively for nested types). The result is a new
// reference the caller releases.
//
// It is one switch over the pairs of source and target types the table's schema allows
// (delta.CastAllowed), each case short; kept together so the allowed widenings read as one
// table.
func (c *conformer) array(path string, arr arrow.Array, dst arrow.DataType) (arrow.Array, error) {
	src := arr.DataType()
	if arrow.TypeEqual(src, dst) {
		arr.Retain()
		return arr, nil
	}
	if _, ok := src.(*arrow.DictionaryType); ok {
		dec, err := compute.CastArray(context.Background(), arr, compute.SafeCastOptions(src.(*arrow.DictionaryType).ValueType))
		if err != nil {
			return nil, fmt.Errorf("column %s: decode dictionary: %w", path, err)
		}
		defer dec.Release()
		return c.array(path, dec, dst)
	}
	mismatch := func() error {
		return fmt.Errorf("column %s: cannot write %s into a column of Delta type %s", path, src, deltaNameOf(dst))
	}
	switch dt := dst.(type) {
	case *arrow.StructType:
		sa, ok := arr.(*array.Struct)
		if !ok {
			return nil, mismatch()
		}
		st := src.(*arrow.StructType)
		children := make([]arrow.ArrayData, 0, dt.NumFields())
		defer func() {
			for _, ch := range children {
				ch.Release()
			}
		}()
		used := make([]bool, st.NumFields())
		for _, tf := range dt.Fields() {
			j, ok := st.FieldIdx(tf.Name)
			if !ok {
				for k, f := range st.Fields() {
					if !used[k] && strings.EqualFold(f.Name, tf.Name) {
						j, ok = k, true
					}
				}
			}
			if !ok {
				na := array.MakeArrayOfNull(c.mem, tf.Type, arr.Len())
				children = append(children, na.Data())
				na.Data().Retain()
				na.Release()
				continue
			}
			used[j] = true
			ch, err := c.array(path+"."+tf.Name, sa.Field(j), tf.Type)
			if err != nil {
				return nil, err
			}
			children = append(children, ch.Data())
			ch.Data().Retain()
			ch.Release()
		}
		for k, u := range used {
			if !u {
				return nil, fmt.Errorf("column %s.%s: not in the table schema (evolve the schema first)", path, st.Field(k).Name)
			}
		}
		bm, nulls := c.validity(arr)
		data := array.NewData(dst, arr.Len(), []*memory.Buffer{bm}, children, nulls, 0)
		if bm != nil {
			bm.Release()
		}
		defer data.Release()
		return array.MakeFromData(data), nil
	case *arrow.MapType:
		ma, ok := arr.(*array.Map)
		if !ok {
			return nil, mismatch()
		}
		offs, lo, hi := c.offsets(arr.Len(), ma.ValueOffsets)
		defer offs.Release()
		keys := array.NewSlice(ma.Keys(), lo, hi)
		defer keys.Release()
		items := array.NewSlice(ma.Items(), lo, hi)
		defer items.Release()
		k, err := c.array(path+".key", keys, dt.KeyType())
		if err != nil {
			return nil, err
		}
		defer k.Release()
		v, err := c.array(path+".value", items, dt.ItemType())
		if err != nil {
			return nil, err
		}
		defer v.Release()
		entries := array.NewData(dt.Elem(), int(hi-lo), []*memory.Buffer{nil}, []arrow.ArrayData{k.Data(), v.Data()}, 0, 0)
		defer entries.Release()
		bm, nulls := c.validity(arr)
		data := array.NewData(dst, arr.Len(), []*memory.Buffer{bm, offs}, []arrow.ArrayData{entries}, nulls, 0)
		if bm != nil {
			bm.Release()
		}
		defer data.Release()
		return array.MakeFromData(data), nil
	case *arrow.ListType:
		if _, isMap := src.(*arrow.MapType); isMap {
			return nil, mismatch()
		}
		var la *array.List
		switch a := arr.(type) {
		case *array.List:
			la = a
			la.Retain()
		case array.ListLike:
			lt, ok := src.(arrow.ListLikeType)
			if !ok {
				return nil, mismatch()
			}
			cast, err := compute.CastArray(context.Background(), arr, compute.SafeCastOptions(arrow.ListOfField(lt.ElemField())))
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", path, err)
			}
			la = cast.(*array.List)
		default:
			return nil, mismatch()
		}
		defer la.Release()
		offs, lo, hi := c.offsets(arr.Len(), la.ValueOffsets)
		defer offs.Release()
		vals := array.NewSlice(la.ListValues(), lo, hi)
		defer vals.Release()
		v, err := c.array(path+".element", vals, dt.Elem())
		if err != nil {
			return nil, err
		}
		defer v.Release()
		bm, nulls := c.validity(arr)
		data := array.NewData(dst, arr.Len(), []*memory.Buffer{bm, offs}, []arrow.ArrayData{v.Data()}, nulls, 0)
		if bm != nil {
			bm.Release()
		}
		defer data.Release()
		return array.MakeFromData(data), nil
	}
	if !delta.CastAllowed(src, dst) {
		return nil, mismatch()
	}
	if fsb, ok := arr.(*array.FixedSizeBinary); ok && dst.ID() == arrow.BINARY {
		// arrow-go's fixed_size_binary → binary cast dereferences a missing validity
		// bitmap when the column has no nulls (nil-pointer panic): copy the values here.
		b := array.NewBinaryBuilder(c.mem, arrow.BinaryTypes.Binary)
		defer b.Release()
		b.Reserve(fsb.Len())
		for i := 0; i < fsb.Len(); i++ {
			if fsb.IsNull(i) {
				b.AppendNull()
			} else {
				b.Append(fsb.Value(i))
			}
		}
		return b.NewArray(), nil
	}
	if st, ok := src.(*arrow.TimestampType); ok && c.truncate && st.Unit > dst.(*arrow.TimestampType).Unit {
		// Truncation floors (−1 ns is 1969-12-31 23:59:59.999999): the cast kernel's
		// AllowTimeTruncate rounds toward zero, i.e. toward 1970.
		d := codec.FloorTimestamps(c.mem, arr.Data(), dst.(*arrow.TimestampType))
		defer d.Release()
		return array.MakeFromData(d), nil
	}
	if src.ID() == arrow.DATE64 && c.truncate {
		d := codec.FloorDate64(c.mem, arr.Data())
		defer d.Release()
		return array.MakeFromData(d), nil
	}
	out, err := compute.CastArray(context.Background(), arr, compute.SafeCastOptions(dst))
	if err != nil {
		if ts, ok := src.(*arrow.TimestampType); ok && ts.Unit == arrow.Nanosecond && !c.truncate {
			return nil, fmt.Errorf("column %s: Delta stores timestamps in microseconds and the input has nanosecond digits (--truncate-timestamps drops them): %w", path, err)
		}
		return nil, fmt.Errorf("column %s: %w", path, err)
	}
	return out, nil
}

// validity returns arr's validity bitmap realigned to offset 0 (nil when no nulls).
func (c *conformer) validity(arr arrow.Array) (*memory.Buffer, int) {
	nulls := arr.NullN()
	if nulls == 0 {
		return nil, 0
	}
	n := arr.Len()
	buf := memory.NewResizableBuffer(c.mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	b := buf.Bytes()
	for i := range b {
		b[i] = 0
	}
	for i := 0; i < n; i++ {
		if arr.IsValid(i) {
			bitutil.SetBit(b, i)
		}
	}
	return buf, nulls
}

// offsets rebuilds the int32 offsets of a list-like array relative to its first value and
// returns them with the range [lo, hi) of child values covered.
func (c *conformer) offsets(n int, valueOffsets func(int) (int64, int64)) (*memory.Buffer, int64, int64) {
	buf := memory.NewResizableBuffer(c.mem)
	buf.Resize((n + 1) * 4)
	offs := arrow.Int32Traits.CastFromBytes(buf.Bytes())
	var lo, hi int64
	if n > 0 {
		lo, _ = valueOffsets(0)
		_, hi = valueOffsets(n - 1)
	}
	offs[0] = 0
	for i := 0; i < n; i++ {
		_, end := valueOffsets(i)
		if end < lo { // null entries may carry arbitrary offsets; keep monotone
			end = lo
		}
		offs[i+1] = int32(end - lo)
		if offs[i+1] < offs[i] {
			offs[i+1] = offs[i]
		}
	}
	if hi < lo {
		hi = lo
	}
	return buf, lo, hi
}

// deltaNameOf names the Delta type of a canonical Arrow type, for error messages.
func deltaNameOf(dt arrow.DataType) string {
	if t, err := delta.FromArrowSchema(arrow.NewSchema([]arrow.Field{{Name: "x", Type: dt}}, nil)); err == nil {
		return t.Fields[0].Type.String()
	}
	return dt.String()
}
