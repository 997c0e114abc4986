package expr

import (
	"bytes"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
)

// Field access, subscripts, comparison, CASE gathering and CAST AS STRING of array, struct
// and map values.

// listParts returns the offsets (one more than rows, absolute into values) and the values
// of a list or map array.
func listParts(a arrow.Array) ([]int32, arrow.Array) {
	var l *array.List
	switch a := a.(type) {
	case *array.List:
		l = a
	case *array.Map:
		l = a.List
	default:
		panic("expr: not a list: " + a.DataType().String())
	}
	off := a.Data().Offset()
	return l.Offsets()[off : off+a.Len()+1], l.ListValues()
}

// mapParts returns a map array's offsets, keys and values.
func mapParts(a arrow.Array) ([]int32, arrow.Array, arrow.Array) {
	m := a.(*array.Map)
	offs, _ := listParts(a)
	return offs, m.Keys(), m.Items()
}

// nullAt reports whether row i of a is NULL (every row of an Arrow null array is, though it
// has no validity bitmap).
func nullAt(a arrow.Array, i int) bool { return a.DataType().ID() == arrow.NULL || a.IsNull(i) }

// hasMap reports whether t is or holds a map (Spark cannot compare maps).
func hasMap(t Type) bool {
	switch t.Kind {
	case KMap:
		return true
	case KArray:
		return hasMap(t.Elem())
	case KStruct:
		for _, f := range t.Fields() {
			if hasMap(f.Type) {
				return true
			}
		}
	}
	return false
}

// fieldAccess type-checks x.name on a struct-valued expression (Spark resolves the name
// case-insensitively when no field matches exactly).
func (c *checker) fieldAccess(n *FieldAccess) (node, error) {
	x, err := c.check(n.X)
	if err != nil {
		return nil, err
	}
	t := x.Type()
	if t.Kind == KArray && t.Elem().Kind == KStruct {
		if j := fieldIndex(t.Elem(), n.Name); j >= 0 {
			return &arrayFieldNode{x: x, j: j}, nil
		}
		t = t.Elem()
	} else if t.Kind != KStruct {
		return nil, c.errf(n.At, "field access .%s needs a struct, but the value is %s", n.Name, t)
	}
	j := fieldIndex(t, n.Name)
	if j < 0 {
		names := make([]string, len(t.Fields()))
		for k, f := range t.Fields() {
			names[k] = f.Name
		}
		return nil, c.errf(n.At, "%s has no field %s%s", t, quoteName(n.Name), didYouMean(n.Name, names))
	}
	return &getFieldNode{x: x, j: j}, nil
}

// pathThroughValues resolves a dot path whose longest column prefix is not a struct (an array
// of structs, say): the rest becomes field accesses on that value. ok is false when that does
// not type-check either (the caller reports the path's own error).
func (c *checker) pathThroughValues(id *Ident) (node, bool) {
	for k := len(id.Path) - 1; k >= 1; k-- {
		if _, _, err := c.resolve(&Ident{Path: id.Path[:k], At: id.At}); err != nil {
			continue
		}
		var x Node = &Ident{Path: id.Path[:k], At: id.At}
		for _, name := range id.Path[k:] {
			x = &FieldAccess{X: x, Name: name, At: id.At}
		}
		n, err := c.check(x)
		return n, err == nil
	}
	return nil, false
}

func fieldIndex(t Type, name string) int {
	j := -1
	for k, f := range t.Fields() {
		if f.Name == name {
			return k
		}
		if j < 0 && strings.EqualFold(f.Name, name) {
			j = k
		}
	}
	return j
}

// getFieldNode is field j of a struct value (NULL where the struct is NULL).
type getFieldNode struct {
	x node
	j int
}

func (n *getFieldNode) Type() Type       { return n.x.Type().Fields()[n.j].Type }
func (n *getFieldNode) children() []node { return []node{n.x} }
func (n *getFieldNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	x, err := c.arr(n.x, active)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	st := x.(*array.Struct)
	f := st.Field(n.j)
	if st.NullN() > 0 {
		return withParentNulls(st, f), nil
	}
	f.Retain()
	return f, nil
}

// arrayFieldNode is arr.field over an array of structs: the array of that field (Spark's
// GetArrayStructFields; a NULL struct element gives a NULL element). It shares the offsets.
type arrayFieldNode struct {
	x node
	j int
}

func (n *arrayFieldNode) Type() Type       { return ArrayOf(n.x.Type().Elem().Fields()[n.j].Type) }
func (n *arrayFieldNode) children() []node { return []node{n.x} }
func (n *arrayFieldNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	x, err := c.arr(n.x, active)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	_, vals := listParts(x)
	st := vals.(*array.Struct)
	f := st.Field(n.j)
	if st.NullN() > 0 {
		f = withParentNulls(st, f)
	} else {
		f.Retain()
	}
	defer f.Release()
	d := x.Data()
	nd := array.NewData(n.Type().Arrow(), d.Len(), d.Buffers(), []arrow.ArrayData{f.Data()}, d.NullN(), d.Offset())
	defer nd.Release()
	return array.MakeFromData(nd), nil
}

// index type-checks x[i]: an array element by 0-based position, a map value by key.
func (c *checker) index(n *Index) (node, error) {
	x, err := c.check(n.X)
	if err != nil {
		return nil, err
	}
	i, err := c.check(n.I)
	if err != nil {
		return nil, err
	}
	switch x.Type().Kind {
	case KArray:
		at, err := c.indexArg(n.I, i, "[]")
		if err != nil {
			return nil, err
		}
		return &elemNode{x: x, i: at, mode: elemSubscript}, nil
	case KMap:
		k, err := c.mapKeyArg(n.I, i, x.Type(), "[]")
		if err != nil {
			return nil, err
		}
		return &mapGetNode{x: x, k: k}, nil
	}
	return nil, c.errf(n.At, "[] needs an array or a map, but %s", c.describe(n.X, x.Type()))
}

// indexArg checks an array position: an integral value, cast to int.
func (c *checker) indexArg(src Node, i node, what string) (node, error) {
	switch i.Type().Kind {
	case KInt, KNull:
		return coerce(i, TInt), nil
	case KBigInt:
		return coerce(i, TInt), nil
	}
	return nil, c.errf(src.Pos(), "%s: the index must be an int, but %s", what, c.describe(src, i.Type()))
}

// mapKeyArg checks a map key against the map's key type (implicitly cast to it).
func (c *checker) mapKeyArg(src Node, k node, mt Type, what string) (node, error) {
	if w, ok := wider(mt.Key(), k.Type()); !ok || w != mt.Key() {
		return nil, c.errf(src.Pos(), "%s: the key must be %s, but %s", what, mt.Key(), c.describe(src, k.Type()))
	}
	return coerce(k, mt.Key()), nil
}

// The ways an array element is addressed.
const (
	elemSubscript = iota // arr[i]: 0-based; out of range is INVALID_ARRAY_INDEX
	elemAt               // element_at: 1-based, negative from the end; 0 is INVALID_INDEX_OF_ZERO, out of range INVALID_ARRAY_INDEX_IN_ELEMENT_AT
	elemTryAt            // try_element_at: as element_at, NULL when out of range
)

// elemNode picks one element per row: the positions are computed in a loop over the list
// offsets, the values gathered with the take kernel (so any element type works).
type elemNode struct {
	x, i node
	mode int
}

func (n *elemNode) Type() Type       { return n.x.Type().Elem() }
func (n *elemNode) children() []node { return []node{n.x, n.i} }
func (n *elemNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	x, ia, err := c.arr2(n.x, n.i, active)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	defer ia.Release()
	offs, vals := listParts(x)
	is := i32s(ia)
	idx := newOut[int32](c.n)
	for r := 0; r < c.n; r++ {
		if isNull(x, r) || isNull(ia, r) {
			idx.setNull(r)
			continue
		}
		size := int(offs[r+1] - offs[r])
		k := int(is[r])
		pos := k
		switch n.mode {
		case elemAt, elemTryAt:
			if k == 0 {
				if activeAt(active, r) {
					return nil, c.fail("INVALID_INDEX_OF_ZERO", r, "the index 0 is invalid; an index shall be either < 0 or > 0 (the first element has index 1)")
				}
				idx.setNull(r)
				continue
			}
			if k > 0 {
				pos = k - 1
			} else {
				pos = size + k
			}
		}
		if pos < 0 || pos >= size {
			if activeAt(active, r) && (n.mode == elemSubscript || n.mode == elemAt) {
				class := "INVALID_ARRAY_INDEX"
				if n.mode == elemAt {
					class = "INVALID_ARRAY_INDEX_IN_ELEMENT_AT"
				}
				return nil, c.fail(class, r, "the index %d is out of bounds; the array has %d elements", k, size)
			}
			idx.setNull(r)
			continue
		}
		idx.vals[r] = offs[r] + int32(pos)
	}
	return c.take(vals, idx.array(TInt))
}

// take gathers values at indices (a NULL index gives NULL) and releases indices.
func (c *evalCtx) take(values, indices arrow.Array) (arrow.Array, error) {
	defer indices.Release()
	return compute.TakeArray(c.ctx, values, indices)
}

// canFail: every mode raises an error for some index (try_element_at for index 0).
func (n *elemNode) canFail() bool { return true }

// mapGetNode is map[key] and element_at(map, key): the value of the first equal key, NULL
// when there is none.
type mapGetNode struct{ x, k node }

func (n *mapGetNode) Type() Type       { return n.x.Type().Elem() }
func (n *mapGetNode) children() []node { return []node{n.x, n.k} }
func (n *mapGetNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	x, k, err := c.arr2(n.x, n.k, active)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	defer k.Release()
	offs, keys, vals := mapParts(x)
	kt := n.x.Type().Key()
	idx := newOut[int32](c.n)
	for r := 0; r < c.n; r++ {
		found := int32(-1)
		if !isNull(x, r) && !isNull(k, r) {
			for j := offs[r]; j < offs[r+1]; j++ {
				if compareAt(kt, keys, int(j), k, r) == 0 {
					found = j
					break
				}
			}
		}
		if found < 0 {
			idx.setNull(r)
		} else {
			idx.vals[r] = found
		}
	}
	return c.take(vals, idx.array(TInt))
}

// compareAt orders row i of a against row j of b (both of type t) as Spark's interpreted
// ordering does: NULL elements and fields first, arrays element by element then by length,
// structs field by field, doubles with NaN above everything.
func compareAt(t Type, a arrow.Array, i int, b arrow.Array, j int) int {
	an, bn := nullAt(a, i), nullAt(b, j)
	switch {
	case an && bn:
		return 0
	case an:
		return -1
	case bn:
		return 1
	}
	switch t.Kind {
	case KBool:
		x, y := a.(*array.Boolean).Value(i), b.(*array.Boolean).Value(j)
		switch {
		case x == y:
			return 0
		case x:
			return 1
		}
		return -1
	case KInt, KDate, KYearMonth:
		return cmpOrdered(i32s(a)[i], i32s(b)[j])
	case KBinary:
		return bytes.Compare(a.(*array.Binary).Value(i), b.(*array.Binary).Value(j))
	case KBigInt, KTimestamp, KInterval:
		return cmpOrdered(i64s(a)[i], i64s(b)[j])
	case KDouble:
		return CompareDouble(f64s(a)[i], f64s(b)[j])
	case KDecimal:
		return decs(a)[i].Cmp(decs(b)[j])
	case KString:
		return strings.Compare(a.(*array.String).Value(i), b.(*array.String).Value(j))
	case KArray:
		ao, av := listParts(a)
		bo, bv := listParts(b)
		la, lb := int(ao[i+1]-ao[i]), int(bo[j+1]-bo[j])
		for k := 0; k < min(la, lb); k++ {
			if r := compareAt(t.Elem(), av, int(ao[i])+k, bv, int(bo[j])+k); r != 0 {
				return r
			}
		}
		return cmpOrdered(la, lb)
	case KStruct:
		sa, sb := a.(*array.Struct), b.(*array.Struct)
		for k, f := range t.Fields() {
			if r := compareAt(f.Type, sa.Field(k), i, sb.Field(k), j); r != 0 {
				return r
			}
		}
		return 0
	case KMap: // not orderable in Spark; equality of entries, for map keys of map type
		ao, ak, av := mapParts(a)
		bo, bk, bv := mapParts(b)
		if ao[i+1]-ao[i] != bo[j+1]-bo[j] {
			return 1
		}
		for k := int32(0); k < ao[i+1]-ao[i]; k++ {
			if compareAt(t.Key(), ak, int(ao[i]+k), bk, int(bo[j]+k)) != 0 || compareAt(t.Elem(), av, int(ao[i]+k), bv, int(bo[j]+k)) != 0 {
				return 1
			}
		}
		return 0
	}
	return 0
}

func cmpOrdered[T int | int32 | int64](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// evalNested compares array and struct values row by row (compareAt).
func (n *cmpNode) evalNested(c *evalCtx, active []bool) (arrow.Array, error) {
	l, r, err := c.arr2(n.l, n.r, active)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	defer r.Release()
	t := n.l.Type()
	out := newBoolOut(c.n)
	for i := 0; i < c.n; i++ {
		ln, rn := l.IsNull(i), r.IsNull(i)
		if ln || rn {
			if n.op == "<=>" {
				out.set(i, ln && rn)
			} else {
				out.setNull(i)
			}
			continue
		}
		out.set(i, cmpResult(n.op, compareAt(t, l, i, r, i)))
	}
	return out.array(), nil
}

// gatherNested is gather for array, struct and map results: the branches are concatenated
// and row i taken from branch choice[i] with the take kernel.
func gatherNested(c *evalCtx, t Type, choice []int32, arrs []arrow.Array) (arrow.Array, error) {
	parts := make([]arrow.Array, len(arrs))
	for k, a := range arrs {
		if a == nil {
			parts[k] = array.MakeArrayOfNull(c.mem, t.Arrow(), c.n)
		} else {
			a.Retain()
			parts[k] = a
		}
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	all, err := array.Concatenate(parts, c.mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	idx := newOut[int32](c.n)
	for i, k := range choice {
		idx.vals[i] = k*int32(c.n) + int32(i)
	}
	return c.take(all, idx.array(TInt))
}

// nestedFormat is how nested values print; CAST AS STRING and to_json differ only here.
type nestedFormat struct {
	sep, kv    string // between elements; between a map key and its value
	fieldNames bool   // struct fields as "name":value with NULL ones left out (to_json)
	leaf       func(b []byte, t Type, a arrow.Array, i int) []byte
	key        func(b []byte, t Type, a arrow.Array, i int) []byte
}

// castFormat is Spark 4's CAST(… AS STRING): [1, null], {1, a}, {a -> 1}.
// (leaf and key are set in init: appendValue itself prints nested values through castFormat)
var castFormat = &nestedFormat{sep: ", ", kv: " -> "}

func init() { castFormat.leaf, castFormat.key = appendValue, appendValue }

func appendNested(b []byte, t Type, a arrow.Array, i int) []byte {
	return castFormat.append(b, t, a, i)
}

// append prints row i of a (type t); NULL prints as null.
func (f *nestedFormat) append(b []byte, t Type, a arrow.Array, i int) []byte {
	if nullAt(a, i) {
		return append(b, "null"...)
	}
	switch t.Kind {
	case KArray:
		offs, vals := listParts(a)
		b = append(b, '[')
		for j := offs[i]; j < offs[i+1]; j++ {
			if j > offs[i] {
				b = append(b, f.sep...)
			}
			b = f.append(b, t.Elem(), vals, int(j))
		}
		return append(b, ']')
	case KStruct:
		st := a.(*array.Struct)
		b = append(b, '{')
		first := true
		for k, fd := range t.Fields() {
			if f.fieldNames && nullAt(st.Field(k), i) {
				continue
			}
			if !first {
				b = append(b, f.sep...)
			}
			first = false
			if f.fieldNames {
				b = append(appendJSONString(b, []byte(fd.Name)), ':')
			}
			b = f.append(b, fd.Type, st.Field(k), i)
		}
		return append(b, '}')
	case KMap:
		offs, keys, vals := mapParts(a)
		b = append(b, '{')
		for j := offs[i]; j < offs[i+1]; j++ {
			if j > offs[i] {
				b = append(b, f.sep...)
			}
			b = f.key(b, t.Key(), keys, int(j))
			b = append(b, f.kv...)
			b = f.append(b, t.Elem(), vals, int(j))
		}
		return append(b, '}')
	}
	return f.leaf(b, t, a, i)
}
