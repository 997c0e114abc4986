package delta

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

// conformData converts the data of one column read from a Parquet data file to the table's
// canonical Arrow type dst ([dl.StructType.ToArrow]), as readers must accept what other
// writers produce (DELTA.md "Types"): ms/ns timestamps become µs (sub-µs digits floored, as
// Spark reads them: −1 ns is −1 µs), a zone-less Parquet timestamp in a timestamp column (and
// the reverse) keeps its instant, Date64 becomes days (floored), large/view strings and
// binaries, dictionaries, narrower integers, float32 and other decimal widths are cast; list elements, map entries and struct fields are matched
// to the table schema whatever their Parquet names and nullability (struct fields by name,
// missing ones null, extra ones dropped). Nulls in non-nullable columns are passed through.
// Columns written before a type widening are cast to the current type ([widenData]).
// Nested data is retyped without copying whenever the values themselves already match. The
// result is a new reference.
func conformData(ctx context.Context, mem memory.Allocator, d arrow.ArrayData, dst arrow.DataType, path string) (arrow.ArrayData, error) {
	src := d.DataType()
	if arrow.TypeEqual(src, dst) {
		d.Retain()
		return d, nil
	}
	if dt, ok := src.(*arrow.DictionaryType); ok {
		arr := array.MakeFromData(d)
		defer arr.Release()
		dec, err := compute.CastArray(ctx, arr, compute.SafeCastOptions(dt.ValueType))
		if err != nil {
			return nil, fmt.Errorf("column %s: decode dictionary: %w", path, err)
		}
		defer dec.Release()
		return conformData(ctx, mem, dec.Data(), dst, path)
	}
	if w, ok, err := widenData(ctx, d, dst, path); ok { // columns written before a type widening
		return w, err
	}
	mismatch := func() error {
		return fmt.Errorf("column %s: the data file has type %s where the table schema says %s", path, src, typeName(dst))
	}
	switch dt := dst.(type) {
	case *arrow.StructType:
		st, ok := src.(*arrow.StructType)
		if !ok {
			return nil, mismatch()
		}
		children := make([]arrow.ArrayData, 0, dt.NumFields())
		defer func() {
			for _, c := range children {
				c.Release()
			}
		}()
		for _, tf := range dt.Fields() {
			j, ok := st.FieldIdx(tf.Name)
			if !ok {
				for k, f := range st.Fields() {
					if strings.EqualFold(f.Name, tf.Name) {
						j, ok = k, true
						break
					}
				}
			}
			if !ok {
				na := array.MakeArrayOfNull(mem, tf.Type, d.Offset()+d.Len())
				children = append(children, na.Data())
				na.Data().Retain()
				na.Release()
				continue
			}
			c, err := conformData(ctx, mem, d.Children()[j], tf.Type, path+"."+tf.Name)
			if err != nil {
				return nil, err
			}
			children = append(children, c)
		}
		return array.NewData(dst, d.Len(), d.Buffers()[:1], children, d.NullN(), d.Offset()), nil
	case *arrow.MapType:
		if _, ok := src.(*arrow.MapType); !ok {
			return nil, mismatch()
		}
		entries := d.Children()[0]
		et := dt.Elem().(*arrow.StructType)
		if len(entries.Children()) != 2 {
			return nil, mismatch()
		}
		k, err := conformData(ctx, mem, entries.Children()[0], et.Field(0).Type, path+".key")
		if err != nil {
			return nil, err
		}
		defer k.Release()
		v, err := conformData(ctx, mem, entries.Children()[1], et.Field(1).Type, path+".value")
		if err != nil {
			return nil, err
		}
		defer v.Release()
		ed := array.NewData(et, entries.Len(), entries.Buffers()[:1], []arrow.ArrayData{k, v}, entries.NullN(), entries.Offset())
		defer ed.Release()
		return array.NewData(dst, d.Len(), d.Buffers()[:2], []arrow.ArrayData{ed}, d.NullN(), d.Offset()), nil
	case *arrow.ListType:
		switch src.ID() {
		case arrow.LIST:
			c, err := conformData(ctx, mem, d.Children()[0], dt.Elem(), path+".element")
			if err != nil {
				return nil, err
			}
			defer c.Release()
			return array.NewData(dst, d.Len(), d.Buffers()[:2], []arrow.ArrayData{c}, d.NullN(), d.Offset()), nil
		case arrow.LARGE_LIST, arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW, arrow.FIXED_SIZE_LIST:
			lt := src.(arrow.ListLikeType)
			arr := array.MakeFromData(d)
			defer arr.Release()
			cast, err := compute.CastArray(ctx, arr, compute.SafeCastOptions(arrow.ListOfField(lt.ElemField())))
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", path, err)
			}
			defer cast.Release()
			return conformData(ctx, mem, cast.Data(), dst, path)
		}
		return nil, mismatch()
	case *arrow.TimestampType:
		st, ok := src.(*arrow.TimestampType)
		if !ok {
			return nil, mismatch()
		}
		if st.Unit >= dt.Unit {
			// An instant's µs is floor(ns/1000), as Spark reads it (the cast kernel would
			// round one before 1970 toward it).
			return codec.FloorTimestamps(mem, d, dt), nil
		}
		arr := array.MakeFromData(d)
		defer arr.Release()
		out, err := compute.CastArray(ctx, arr, compute.SafeCastOptions(&arrow.TimestampType{Unit: dt.Unit, TimeZone: st.TimeZone}))
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", path, err)
		}
		defer out.Release()
		od := out.Data()
		return array.NewData(dst, od.Len(), od.Buffers(), nil, od.NullN(), od.Offset()), nil
	}
	if !leafCastable(src, dst) {
		return nil, mismatch()
	}
	if src.ID() == arrow.DATE64 {
		return codec.FloorDate64(mem, d), nil // a time of day left in a Date64 cannot fail the read
	}
	arr := array.MakeFromData(d)
	defer arr.Release()
	out, err := compute.CastArray(ctx, arr, compute.SafeCastOptions(dst))
	if err != nil {
		return nil, fmt.Errorf("column %s: %w", path, err)
	}
	out.Data().Retain()
	defer out.Release()
	return out.Data(), nil
}

// leafCastable lists the primitive conversions applied when a data file's type differs from
// the table's: integer widths and signedness, float32 to double, decimal widths, string and
// binary variants, Date64 to date.
func leafCastable(src, dst arrow.DataType) bool {
	switch dst.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return arrow.IsInteger(src.ID())
	case arrow.FLOAT64:
		return src.ID() == arrow.FLOAT32 || src.ID() == arrow.FLOAT16
	case arrow.FLOAT32:
		return src.ID() == arrow.FLOAT16
	case arrow.DECIMAL128:
		return arrow.IsDecimal(src.ID()) || arrow.IsInteger(src.ID())
	case arrow.STRING:
		return src.ID() == arrow.LARGE_STRING || src.ID() == arrow.STRING_VIEW
	case arrow.BINARY:
		return src.ID() == arrow.LARGE_BINARY || src.ID() == arrow.BINARY_VIEW || src.ID() == arrow.FIXED_SIZE_BINARY ||
			src.ID() == arrow.STRING || src.ID() == arrow.LARGE_STRING
	case arrow.DATE32:
		return src.ID() == arrow.DATE64
	}
	return false
}

// ConformArray converts arr to the canonical Arrow type dst of a Delta column with the
// conversions a reader applies to data files (see the package's conformance rules: timestamp
// units and zones, string/binary variants, dictionaries, integer and decimal widths, nested
// field names and order); errors name the column as name. The result is a new reference.
func ConformArray(ctx context.Context, mem memory.Allocator, name string, arr arrow.Array, dst arrow.DataType) (arrow.Array, error) {
	d, err := conformData(ctx, mem, arr.Data(), dst, name)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	return array.MakeFromData(d), nil
}
