package expr

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// StructField is one field of a struct type.
type StructField struct {
	Name string
	Type Type
}

// nestedType holds the parts of an array, map or struct type. Nested types are interned (one
// *nestedType per distinct type), so that Type stays comparable with == as the checker needs.
type nestedType struct {
	elem   Type          // array element; map value
	key    Type          // map key
	fields []StructField // struct fields
	str    string        // Spark's name, e.g. struct<a:int,b:array<string>>
	id     string        // the interning key (struct field names quoted)
	arrow  arrow.DataType
}

var (
	internMu sync.Mutex
	interned = map[string]*nestedType{}
)

// intern returns the one nestedType of kind k with these parts.
func intern(k Kind, nt nestedType) Type {
	var key, str strings.Builder
	switch k {
	case KArray:
		fmt.Fprintf(&key, "A(%s)", typeKey(nt.elem))
		fmt.Fprintf(&str, "array<%s>", nt.elem)
	case KMap:
		fmt.Fprintf(&key, "M(%s,%s)", typeKey(nt.key), typeKey(nt.elem))
		fmt.Fprintf(&str, "map<%s,%s>", nt.key, nt.elem)
	case KStruct:
		key.WriteString("S(")
		str.WriteString("struct<")
		for i, f := range nt.fields {
			if i > 0 {
				key.WriteByte(',')
				str.WriteByte(',')
			}
			fmt.Fprintf(&key, "%s:%s", strconv.Quote(f.Name), typeKey(f.Type))
			fmt.Fprintf(&str, "%s:%s", f.Name, f.Type)
		}
		key.WriteByte(')')
		str.WriteByte('>')
	}
	internMu.Lock()
	defer internMu.Unlock()
	if p, ok := interned[key.String()]; ok {
		return Type{Kind: k, nt: p}
	}
	p := &nt
	p.str, p.id = str.String(), key.String()
	switch k {
	case KArray:
		p.arrow = arrow.ListOfField(arrow.Field{Name: "element", Type: nt.elem.Arrow(), Nullable: true})
	case KMap:
		p.arrow = arrow.MapOf(nt.key.Arrow(), nt.elem.Arrow())
	case KStruct:
		fs := make([]arrow.Field, len(nt.fields))
		for i, f := range nt.fields {
			fs[i] = arrow.Field{Name: f.Name, Type: f.Type.Arrow(), Nullable: true}
		}
		p.arrow = arrow.StructOf(fs...)
	}
	interned[key.String()] = p
	return Type{Kind: k, nt: p}
}

// typeKey is a type's unambiguous interning key (struct field names quoted).
func typeKey(t Type) string {
	if t.nt != nil {
		return t.nt.id
	}
	return t.String()
}

// ArrayOf returns array<elem> (Arrow list<element: elem>, elements nullable).
func ArrayOf(elem Type) Type { return intern(KArray, nestedType{elem: elem}) }

// MapOf returns map<key,value> (Arrow map<key, value>, keys not null, values nullable).
func MapOf(key, value Type) Type { return intern(KMap, nestedType{key: key, elem: value}) }

// StructOf returns struct<name:type,…> (Arrow struct, every field nullable).
func StructOf(fields ...StructField) Type {
	return intern(KStruct, nestedType{fields: append([]StructField(nil), fields...)})
}

// Elem is the element type of an array or the value type of a map.
func (t Type) Elem() Type { return t.nt.elem }

// Key is the key type of a map.
func (t Type) Key() Type { return t.nt.key }

// Fields are the fields of a struct.
func (t Type) Fields() []StructField { return t.nt.fields }

func (t Type) nested() bool { return t.Kind == KArray || t.Kind == KStruct || t.Kind == KMap }

// nestedFromArrow maps Arrow list, large_list, struct and map types whose parts the language
// can use.
func nestedFromArrow(dt arrow.DataType) (Type, bool) {
	switch d := dt.(type) {
	case *arrow.ListType:
		e, ok := FromArrow(d.Elem())
		return arrayIf(e, ok)
	case *arrow.LargeListType:
		e, ok := FromArrow(d.Elem())
		return arrayIf(e, ok)
	case *arrow.ListViewType:
		e, ok := FromArrow(d.Elem())
		return arrayIf(e, ok)
	case *arrow.MapType:
		k, ok1 := FromArrow(d.KeyType())
		v, ok2 := FromArrow(d.ItemType())
		if !ok1 || !ok2 || k.Kind == KNull {
			return Type{}, false
		}
		return MapOf(k, v), true
	case *arrow.StructType:
		fs := make([]StructField, d.NumFields())
		for i, f := range d.Fields() {
			t, ok := FromArrow(f.Type)
			if !ok {
				return Type{}, false
			}
			fs[i] = StructField{Name: f.Name, Type: t}
		}
		return StructOf(fs...), true
	}
	return Type{}, false
}

func arrayIf(e Type, ok bool) (Type, bool) {
	if !ok {
		return Type{}, false
	}
	return ArrayOf(e), true
}

// conform converts a column of a type FromArrow accepted into the representation of t:
// narrower leaves are cast, list/struct/map layers are re-labelled without copying (field
// names and nullability flags differ between writers), large_list offsets are narrowed.
func conform(ctx context.Context, mem memory.Allocator, a arrow.Array, t Type) (arrow.Array, error) {
	return mapLeaves(ctx, mem, a, t, func(d arrow.ArrayData, t Type) (arrow.ArrayData, error) {
		arr := array.MakeFromData(d)
		defer arr.Release()
		return dataOf(compute.CastArray(compute.WithAllocator(ctx, mem), arr, compute.SafeCastOptions(t.Arrow())))
	})
}

// leafFunc converts the data of a leaf (not nested) array to the representation of t.
type leafFunc func(d arrow.ArrayData, t Type) (arrow.ArrayData, error)

// mapLeaves rebuilds a nested array as one of type t, converting its leaves with leaf where
// their type differs and re-labelling the list, struct and map layers around them.
func mapLeaves(ctx context.Context, mem memory.Allocator, a arrow.Array, t Type, leaf leafFunc) (arrow.Array, error) {
	d, err := conformData(ctx, mem, a.Data(), t, leaf)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	return array.MakeFromData(d), nil
}

func conformData(ctx context.Context, mem memory.Allocator, d arrow.ArrayData, t Type, leaf leafFunc) (arrow.ArrayData, error) {
	want := t.Arrow()
	if arrow.TypeEqual(d.DataType(), want) {
		d.Retain()
		return d, nil
	}
	switch t.Kind {
	case KArray:
		var child arrow.ArrayData
		var err error
		bufs := d.Buffers()
		offset := d.Offset()
		if _, ok := d.DataType().(*arrow.LargeListType); ok {
			bufs, offset, err = narrowOffsets(d)
			if err != nil {
				return nil, err
			}
			defer releaseBuffers(bufs)
		}
		src := d.Children()[0]
		if _, ok := d.DataType().(*arrow.ListViewType); ok {
			if bufs, src, err = listViewToList(ctx, mem, d); err != nil {
				return nil, err
			}
			offset = 0
			defer src.Release()
			defer releaseBuffers(bufs)
		}
		if child, err = conformData(ctx, mem, src, t.Elem(), leaf); err != nil {
			return nil, err
		}
		defer child.Release()
		return array.NewData(want, d.Len(), bufs, []arrow.ArrayData{child}, d.NullN(), offset), nil
	case KStruct:
		kids := make([]arrow.ArrayData, len(t.Fields()))
		defer releaseData(kids)
		for i, f := range t.Fields() {
			k, err := conformData(ctx, mem, d.Children()[i], f.Type, leaf)
			if err != nil {
				return nil, err
			}
			kids[i] = k
		}
		return array.NewData(want, d.Len(), d.Buffers(), kids, d.NullN(), d.Offset()), nil
	case KMap:
		entries := d.Children()[0]
		kids := make([]arrow.ArrayData, 2)
		defer releaseData(kids)
		for i, kt := range []Type{t.Key(), t.Elem()} {
			k, err := conformData(ctx, mem, entries.Children()[i], kt, leaf)
			if err != nil {
				return nil, err
			}
			kids[i] = k
		}
		et := want.(*arrow.MapType).Elem()
		e := array.NewData(et, entries.Len(), entries.Buffers(), kids, entries.NullN(), entries.Offset())
		defer e.Release()
		return array.NewData(want, d.Len(), d.Buffers(), []arrow.ArrayData{e}, d.NullN(), d.Offset()), nil
	}
	return leaf(d, t)
}

// widerNested is wider for two arrays, two maps or two structs with the same field names:
// the type of their widened parts (Spark's findWiderTypeForTwo over complex types).
func widerNested(a, b Type) (Type, bool) {
	if a.Kind != b.Kind {
		return Type{}, false
	}
	switch a.Kind {
	case KArray:
		e, ok := wider(a.Elem(), b.Elem())
		return arrayIf(e, ok)
	case KMap:
		k, ok1 := wider(a.Key(), b.Key())
		v, ok2 := wider(a.Elem(), b.Elem())
		if !ok1 || !ok2 {
			return Type{}, false
		}
		return MapOf(k, v), true
	case KStruct:
		af, bf := a.Fields(), b.Fields()
		if len(af) != len(bf) {
			return Type{}, false
		}
		fs := make([]StructField, len(af))
		for i := range af {
			t, ok := wider(af[i].Type, bf[i].Type)
			if !ok || !strings.EqualFold(af[i].Name, bf[i].Name) {
				return Type{}, false
			}
			fs[i] = StructField{Name: af[i].Name, Type: t}
		}
		return StructOf(fs...), true
	}
	return Type{}, false
}

// castNested is the implicit cast of a nested value to a wider nested type: each leaf goes
// through the ordinary (widening, so never failing) cast.
func castNested(c *evalCtx, x arrow.Array, to Type) (arrow.Array, error) {
	return mapLeaves(c.ctx, c.mem, x, to, func(d arrow.ArrayData, t Type) (arrow.ArrayData, error) {
		from, _ := FromArrow(d.DataType())
		arr := array.MakeFromData(d)
		defer arr.Release()
		sub := &evalCtx{ctx: c.ctx, mem: c.mem, rec: c.rec, n: arr.Len(), src: c.src, now: c.now}
		return dataOf((&castNode{x: &arrayNode{a: arr, t: from}, to: t, implicit: true}).eval(sub, nil))
	})
}

// dataOf returns an array's data (retained) and releases the array.
func dataOf(a arrow.Array, err error) (arrow.ArrayData, error) {
	if err != nil {
		return nil, err
	}
	defer a.Release()
	d := a.Data()
	d.Retain()
	return d, nil
}

func releaseBuffers(bs []*memory.Buffer) {
	for _, b := range bs {
		if b != nil {
			b.Release()
		}
	}
}

func releaseData(ds []arrow.ArrayData) {
	for _, d := range ds {
		if d != nil {
			d.Release()
		}
	}
}

// listViewToList gathers a list_view's values in row order (the take kernel) and returns
// list buffers (validity, offsets; offset 0) and the gathered child.
func listViewToList(ctx context.Context, mem memory.Allocator, d arrow.ArrayData) ([]*memory.Buffer, arrow.ArrayData, error) {
	n, off := d.Len(), d.Offset()
	starts := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[off : off+n]
	sizes := arrow.Int32Traits.CastFromBytes(d.Buffers()[2].Bytes())[off : off+n]
	vb := d.Buffers()[0]
	valid := func(i int) bool { return vb == nil || d.NullN() == 0 || bitutil.BitIsSet(vb.Bytes(), off+i) }
	offs := make([]int32, n+1)
	var idx []int32
	var bits []byte
	if d.NullN() > 0 {
		bits = make([]byte, bitutil.BytesForBits(int64(n)))
	}
	for i := 0; i < n; i++ {
		if valid(i) {
			for j := starts[i]; j < starts[i]+sizes[i]; j++ {
				idx = append(idx, j)
			}
			if bits != nil {
				bitutil.SetBit(bits, i)
			}
		}
		offs[i+1] = int32(len(idx))
	}
	id := array.NewData(arrow.PrimitiveTypes.Int32, len(idx), []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(idx))}, nil, 0, 0)
	defer id.Release()
	ia := array.MakeFromData(id)
	defer ia.Release()
	values := array.MakeFromData(d.Children()[0])
	defer values.Release()
	child, err := compute.TakeArray(compute.WithAllocator(ctx, mem), values, ia)
	if err != nil {
		return nil, nil, err
	}
	defer child.Release()
	cd := child.Data()
	cd.Retain()
	var validBuf *memory.Buffer
	if bits != nil {
		validBuf = memory.NewBufferBytes(bits)
	}
	return []*memory.Buffer{validBuf, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs))}, cd, nil
}

// narrowOffsets copies a large_list's validity and int64 offsets into list buffers (offset 0).
func narrowOffsets(d arrow.ArrayData) ([]*memory.Buffer, int, error) {
	n, off := d.Len(), d.Offset()
	src := arrow.Int64Traits.CastFromBytes(d.Buffers()[1].Bytes())[off : off+n+1]
	offs := make([]int32, n+1)
	for i, v := range src {
		if v > 1<<31-1 {
			return nil, 0, fmt.Errorf("expr: a large_list column holds more than 2^31 values in one batch")
		}
		offs[i] = int32(v)
	}
	var valid *memory.Buffer
	if vb := d.Buffers()[0]; vb != nil && d.NullN() > 0 {
		bits := make([]byte, bitutil.BytesForBits(int64(n)))
		for i := 0; i < n; i++ {
			if bitutil.BitIsSet(vb.Bytes(), off+i) {
				bitutil.SetBit(bits, i)
			}
		}
		valid = memory.NewBufferBytes(bits)
	}
	return []*memory.Buffer{valid, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs))}, 0, nil
}
