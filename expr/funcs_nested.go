package expr

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/streamkit/streamkit/codec/schema"
)

// The functions over arrays, structs, maps and JSON text (Spark 4, ANSI mode).

// newList wraps offsets (n+1, into child) and an optional validity bitmap as an array of t.
func newList(t Type, n int, offs []int32, valid []byte, nulls int, child arrow.Array) arrow.Array {
	var vb *memory.Buffer
	if valid != nil {
		vb = memory.NewBufferBytes(valid)
	}
	ob := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs))
	// for a map, child is the entries struct
	d := array.NewData(t.Arrow(), n, []*memory.Buffer{vb, ob}, []arrow.ArrayData{child.Data()}, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// interleave returns, for k arrays of n rows, the n*k values a0[0], a1[0], …, a0[1], a1[1], …
// (concatenate, then take).
func interleave(c *evalCtx, arrs []arrow.Array) (arrow.Array, error) {
	all, err := array.Concatenate(arrs, c.mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	k := len(arrs)
	idx := newOut[int32](c.n * k)
	for i := 0; i < c.n; i++ {
		for j := 0; j < k; j++ {
			idx.vals[i*k+j] = int32(j*c.n + i)
		}
	}
	return c.take(all, idx.array(TInt))
}

func fixedOffsets(n, k int) []int32 {
	offs := make([]int32, n+1)
	for i := range offs {
		offs[i] = int32(i * k)
	}
	return offs
}

// structName is the field name Spark gives struct(x): a column's (or field's) own name, else
// col<i+1>.
func structName(n Node, i int) string {
	switch n := n.(type) {
	case *Ident:
		return n.Path[len(n.Path)-1]
	case *FieldAccess:
		return n.Name
	}
	return fmt.Sprintf("col%d", i+1)
}

// constString returns the value of a constant, non-NULL string argument.
func constString(n node) (string, bool) {
	k, ok := n.(*constNode)
	if !ok || n.Type().Kind != KString || !k.sc.IsValid() {
		return "", false
	}
	return k.sc.(*scalar.String).String(), true
}

func (c *checker) widerArgs(call *Call, args []node, from, step int) (Type, error) {
	t := TNull
	for i := from; i < len(args); i += step {
		nt, ok := wider(t, args[i].Type())
		if !ok {
			return Type{}, c.argErr(call, i, args[i].Type(), "of a type compatible with "+t.String())
		}
		t = nt
	}
	return t, nil
}

func init() {
	register("array", 0, -1, "array(x, …) → array", "an array of the arguments (cast to their common type)", false, func(c *checker, call *Call, args []node) (node, error) {
		et, err := c.widerArgs(call, args, 0, 1)
		if err != nil {
			return nil, err
		}
		ins := make([]node, len(args))
		for i, a := range args {
			ins[i] = coerce(a, et)
		}
		t := ArrayOf(et)
		return &funcNode{fn: registry["array"], t: t, args: ins, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			if len(in) == 0 {
				child := array.MakeArrayOfNull(c.mem, et.Arrow(), 0)
				defer child.Release()
				return newList(t, c.n, fixedOffsets(c.n, 0), nil, 0, child), nil
			}
			child, err := interleave(c, in)
			if err != nil {
				return nil, err
			}
			defer child.Release()
			return newList(t, c.n, fixedOffsets(c.n, len(in)), nil, 0, child), nil
		}}, nil
	})

	structOf := func(name string, names []string, vals []node) node {
		fs := make([]StructField, len(vals))
		for i, v := range vals {
			fs[i] = StructField{Name: names[i], Type: v.Type()}
		}
		t := StructOf(fs...)
		return &funcNode{fn: registry[name], t: t, args: vals, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			kids := make([]arrow.ArrayData, len(in))
			for i, a := range in {
				kids[i] = a.Data()
			}
			d := array.NewData(t.Arrow(), c.n, []*memory.Buffer{nil}, kids, 0, 0)
			defer d.Release()
			return array.MakeFromData(d), nil
		}}
	}
	register("struct", 1, -1, "struct(x, …) → struct", "a struct of the arguments; a column argument names its field, the others are col1, col2, …", false, func(c *checker, call *Call, args []node) (node, error) {
		names := make([]string, len(args))
		for i := range args {
			names[i] = structName(call.Args[i], i)
		}
		return structOf("struct", names, args), nil
	})
	register("named_struct", 2, -1, "named_struct(name, x, …) → struct", "a struct with the given field names (constant strings) and values", false, func(c *checker, call *Call, args []node) (node, error) {
		if len(args)%2 != 0 {
			return nil, c.errf(call.At, "named_struct takes name, value pairs, but got %d argument(s)", len(args))
		}
		var names []string
		var vals []node
		for i := 0; i < len(args); i += 2 {
			s, ok := constString(args[i])
			if !ok {
				return nil, c.argErr(call, i, args[i].Type(), "a constant string field name")
			}
			names, vals = append(names, s), append(vals, args[i+1])
		}
		return structOf("named_struct", names, vals), nil
	})

	register("map", 0, -1, "map(key, value, …) → map", "a map of the key, value pairs; a NULL key is NULL_MAP_KEY, a repeated one DUPLICATED_MAP_KEY", true, func(c *checker, call *Call, args []node) (node, error) {
		if len(args)%2 != 0 {
			return nil, c.errf(call.At, "map takes key, value pairs, but got %d argument(s)", len(args))
		}
		kt, err := c.widerArgs(call, args, 0, 2)
		if err != nil {
			return nil, err
		}
		vt, err := c.widerArgs(call, args, 1, 2)
		if err != nil {
			return nil, err
		}
		if hasMap(kt) {
			return nil, c.argErr(call, 0, kt, "a key type other than a map")
		}
		ins := make([]node, len(args))
		for i, a := range args {
			ins[i] = coerce(a, map[bool]Type{true: kt, false: vt}[i%2 == 0])
		}
		t := MapOf(kt, vt)
		return &funcNode{fn: registry["map"], t: t, args: ins, impl: func(c *evalCtx, active []bool, in []arrow.Array) (arrow.Array, error) {
			k := len(in) / 2
			var keys, vals arrow.Array
			if k == 0 {
				keys, vals = array.MakeArrayOfNull(c.mem, kt.Arrow(), 0), array.MakeArrayOfNull(c.mem, vt.Arrow(), 0)
			} else {
				ks, vs := make([]arrow.Array, k), make([]arrow.Array, k)
				for j := 0; j < k; j++ {
					ks[j], vs[j] = in[2*j], in[2*j+1]
				}
				var err error
				if keys, err = interleave(c, ks); err != nil {
					return nil, err
				}
				if vals, err = interleave(c, vs); err != nil {
					keys.Release()
					return nil, err
				}
			}
			defer keys.Release()
			defer vals.Release()
			for i := 0; i < c.n && k > 0; i++ {
				if !activeAt(active, i) {
					continue
				}
				for a := i * k; a < (i+1)*k; a++ {
					if nullAt(keys, a) {
						return nil, c.fail("NULL_MAP_KEY", i, "a map key is NULL")
					}
					for b := i * k; b < a; b++ {
						if compareAt(kt, keys, a, keys, b) == 0 {
							return nil, c.fail("DUPLICATED_MAP_KEY", i, "duplicate map key %s", formatValue(kt, keys, a))
						}
					}
				}
			}
			et := t.Arrow().(*arrow.MapType).Elem()
			ed := array.NewData(et, keys.Len(), []*memory.Buffer{nil}, []arrow.ArrayData{keys.Data(), vals.Data()}, 0, 0)
			defer ed.Release()
			entries := array.MakeFromData(ed)
			defer entries.Release()
			return newList(t, c.n, fixedOffsets(c.n, k), nil, 0, entries), nil
		}}, nil
	})

	elementAt := func(name string, mode int) {
		doc := "the element at 1-based position i (negative: from the end; 0 is INVALID_INDEX_OF_ZERO; past the end INVALID_ARRAY_INDEX_IN_ELEMENT_AT), or the value of map key k (NULL when absent)"
		if mode == elemTryAt {
			doc = "element_at, but NULL for a position past the end (0 is still INVALID_INDEX_OF_ZERO)"
		}
		register(name, 2, 2, name+"(array, i) or "+name+"(map, k)", doc, true, func(c *checker, call *Call, args []node) (node, error) {
			switch args[0].Type().Kind {
			case KArray:
				i, err := c.indexArg(call.Args[1], args[1], name)
				if err != nil {
					return nil, err
				}
				return &elemNode{x: args[0], i: i, mode: mode}, nil
			case KMap:
				k, err := c.mapKeyArg(call.Args[1], args[1], args[0].Type(), name)
				if err != nil {
					return nil, err
				}
				return &mapGetNode{x: args[0], k: k}, nil
			}
			return nil, c.argErr(call, 0, args[0].Type(), "an array or a map")
		})
	}
	elementAt("element_at", elemAt)
	elementAt("try_element_at", elemTryAt)

	for _, name := range []string{"size", "cardinality"} {
		register(name, 1, 1, name+"(array or map) → int", "the number of elements (ANSI: NULL for NULL)", false, func(c *checker, call *Call, args []node) (node, error) {
			if k := args[0].Type().Kind; k != KArray && k != KMap {
				return nil, c.argErr(call, 0, args[0].Type(), "an array or a map")
			}
			return &funcNode{fn: registry[name], t: TInt, args: args, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
				offs, _ := listParts(in[0])
				out := newOut[int32](c.n)
				for i := range out.vals {
					if isNull(in[0], i) {
						out.setNull(i)
					} else {
						out.vals[i] = offs[i+1] - offs[i]
					}
				}
				return out.array(TInt), nil
			}}, nil
		})
	}

	register("array_contains", 2, 2, "array_contains(array, x) → boolean", "whether the array holds x; NULL when it does not but holds a NULL", false, func(c *checker, call *Call, args []node) (node, error) {
		at := args[0].Type()
		if at.Kind != KArray {
			return nil, c.argErr(call, 0, at, "an array")
		}
		if args[1].Type().Kind == KNull {
			return nil, c.argErr(call, 1, TNull, "a value (not an untyped NULL)")
		}
		if w, ok := wider(at.Elem(), args[1].Type()); !ok || w != at.Elem() || hasMap(w) {
			return nil, c.argErr(call, 1, args[1].Type(), "of the array's element type "+at.Elem().String())
		}
		v := coerce(args[1], at.Elem())
		return &funcNode{fn: registry["array_contains"], t: TBool, args: []node{args[0], v}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			offs, vals := listParts(in[0])
			out := newBoolOut(c.n)
			for i := 0; i < c.n; i++ {
				if isNull(in[0], i) || isNull(in[1], i) {
					out.setNull(i)
					continue
				}
				found, sawNull := false, false
				for j := offs[i]; j < offs[i+1] && !found; j++ {
					if nullAt(vals, int(j)) {
						sawNull = true
					} else {
						found = compareAt(at.Elem(), vals, int(j), in[1], i) == 0
					}
				}
				switch {
				case found:
					out.set(i, true)
				case sawNull:
					out.setNull(i)
				}
			}
			return out.array(), nil
		}}, nil
	})

	for _, p := range []struct {
		name string
		keys bool
	}{{"map_keys", true}, {"map_values", false}} {
		register(p.name, 1, 1, p.name+"(map) → array", "the map's "+strings.TrimPrefix(p.name, "map_")+" as an array, in the map's order", false, func(c *checker, call *Call, args []node) (node, error) {
			mt := args[0].Type()
			if mt.Kind != KMap {
				return nil, c.argErr(call, 0, mt, "a map")
			}
			t := ArrayOf(mt.Elem())
			if p.keys {
				t = ArrayOf(mt.Key())
			}
			return &funcNode{fn: registry[p.name], t: t, args: args, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
				_, keys, vals := mapParts(in[0])
				child := vals
				if p.keys {
					child = keys
				}
				md := in[0].Data()
				d := array.NewData(t.Arrow(), md.Len(), md.Buffers(), []arrow.ArrayData{child.Data()}, md.NullN(), md.Offset())
				defer d.Release()
				return array.MakeFromData(d), nil
			}}, nil
		})
	}

	register("split", 2, 3, "split(str, regex[, limit]) → array<string>", "str split around matches of regex (RE2 syntax); limit > 0 keeps at most limit parts, the last holding the rest", true, func(c *checker, call *Call, args []node) (node, error) {
		ins := make([]node, len(args))
		for i := 0; i < 2; i++ {
			a, err := c.strArg(call, args, i)
			if err != nil {
				return nil, err
			}
			ins[i] = a
		}
		if len(args) == 3 {
			a, err := c.intArg(call, args, 2)
			if err != nil {
				return nil, err
			}
			ins[2] = a
		}
		t := ArrayOf(TString)
		cache := map[string]*regexp.Regexp{}
		return &funcNode{fn: registry["split"], t: t, args: ins, impl: func(c *evalCtx, active []bool, in []arrow.Array) (arrow.Array, error) {
			s, pat := in[0].(*array.String), in[1].(*array.String)
			var limits []int32
			if len(in) == 3 {
				limits = i32s(in[2])
			}
			offs := make([]int32, 1, c.n+1)
			strOffs := []int32{0}
			data := make([]byte, 0, len(s.ValueBytes()))
			valid := newBoolOut(c.n)
			var parts [][2]int
			for i := 0; i < c.n; i++ {
				if s.IsNull(i) || pat.IsNull(i) || limits != nil && in[2].IsNull(i) {
					valid.setNull(i)
					offs = append(offs, int32(len(strOffs)-1))
					continue
				}
				p := pat.Value(i)
				re, ok := cache[p]
				if !ok {
					var err error
					if re, err = regexp.Compile(p); err != nil {
						if activeAt(active, i) {
							return nil, c.fail("INVALID_PARAMETER_VALUE", i, "split: bad regular expression %s: %v", quoteValue(p), err)
						}
						valid.setNull(i)
						offs = append(offs, int32(len(strOffs)-1))
						continue
					}
					if len(cache) < 256 {
						cache[p] = re
					}
				}
				limit := -1
				if limits != nil && limits[i] > 0 {
					limit = int(limits[i])
				}
				v := s.Value(i)
				lit := ""
				if regexp.QuoteMeta(p) == p {
					lit = p
				}
				parts = javaSplit(parts[:0], re, lit, v, limit)
				for _, pt := range parts {
					data = append(data, v[pt[0]:pt[1]]...)
					strOffs = append(strOffs, int32(len(data)))
				}
				offs = append(offs, int32(len(strOffs)-1))
			}
			sd := array.NewData(arrow.BinaryTypes.String, len(strOffs)-1, []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(strOffs)), memory.NewBufferBytes(data)}, nil, 0, 0)
			defer sd.Release()
			child := array.MakeFromData(sd)
			defer child.Release()
			return newList(t, c.n, offs, valid.valid, valid.nulls, child), nil
		}}, nil
	})

	register("from_json", 2, 3, "from_json(str, schema[, options]) → struct", "str parsed as JSON into the constant DDL schema ('a INT, b ARRAY<STRING>' or a STRUCT/ARRAY/MAP type); PERMISSIVE: a value that does not fit is NULL, a malformed record all NULL fields; options map('mode', 'FAILFAST') fails instead (MALFORMED_RECORD_IN_PARSING)", true, checkFromJSON)

	register("get_json_object", 2, 2, "get_json_object(str, path) → string", "the value at a JSON path ($, .name, ['name'], [n], [*]) as text: strings unquoted, other values as compact JSON; NULL when nothing matches or str is not JSON", false, func(c *checker, call *Call, args []node) (node, error) {
		ins := make([]node, 2)
		for i := range ins {
			a, err := c.strArg(call, args, i)
			if err != nil {
				return nil, err
			}
			ins[i] = a
		}
		tape := &jtape{}
		lastPath, steps, pathOK := "", []jstep(nil), false
		g := &jgen{}
		return &funcNode{fn: registry["get_json_object"], t: TString, args: ins, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			s, ps := in[0].(*array.String), in[1].(*array.String)
			out := newStrOut(c.n, len(s.ValueBytes())/2)
			for i := 0; i < c.n; i++ {
				if s.IsNull(i) || ps.IsNull(i) {
					out.appendNull()
					continue
				}
				if p := ps.Value(i); p != lastPath || steps == nil && !pathOK {
					lastPath = p
					steps, pathOK = parseJSONPath(p)
				}
				if !pathOK {
					out.appendNull()
					continue
				}
				if ok, _ := tape.parse(strBytes(s.Value(i))); !ok {
					out.appendNull()
					continue
				}
				g.b, g.count = g.b[:0], g.count[:0]
				if !tape.eval(0, g, rawStyle, steps) {
					out.appendNull()
					continue
				}
				out.appendBytes(g.b)
			}
			return out.array(), nil
		}}, nil
	})
}

// javaSplit splits v as Java's Pattern.split(v, limit) does (Spark's split): a zero-width
// match at the start gives no empty leading part; limit ≤ 0 splits everywhere and keeps
// trailing empty parts. An empty pattern splits into characters, as Spark special-cases it;
// lit, when not empty, is the pattern's text when it has no metacharacters (then searched as
// a plain string).
func javaSplit(parts [][2]int, re *regexp.Regexp, lit string, v string, limit int) [][2]int {
	if lit != "" { // a pattern without metacharacters: plain string search
		start := 0
		for limit <= 0 || len(parts) < limit-1 {
			k := strings.Index(v[start:], lit)
			if k < 0 {
				break
			}
			parts = append(parts, [2]int{start, start + k})
			start += k + len(lit)
		}
		return append(parts, [2]int{start, len(v)})
	}
	if re.String() == "" {
		for i := 0; i < len(v); {
			_, w := utf8.DecodeRuneInString(v[i:])
			if limit > 0 && len(parts) == limit-1 {
				return append(parts, [2]int{i, len(v)})
			}
			parts = append(parts, [2]int{i, i + w})
			i += w
		}
		if len(v) == 0 {
			parts = append(parts, [2]int{0, 0})
		}
		return parts
	}
	index := 0
	matched := false
	for _, m := range re.FindAllStringIndex(v, -1) {
		if limit > 0 && len(parts) >= limit-1 {
			break
		}
		if index == 0 && m[0] == 0 && m[1] == 0 {
			continue
		}
		parts = append(parts, [2]int{index, m[0]})
		index = m[1]
		matched = true
	}
	if !matched {
		return append(parts, [2]int{0, len(v)})
	}
	return append(parts, [2]int{index, len(v)})
}

// checkFromJSON type-checks from_json: the schema is a constant DDL string (codec/schema's
// parser, Spark's StructType.fromDDL), the options a constant map.
func checkFromJSON(c *checker, call *Call, args []node) (node, error) {
	in, err := c.strArg(call, args, 0)
	if err != nil {
		return nil, err
	}
	ddl, ok := constString(args[1])
	if !ok {
		return nil, c.argErr(call, 1, args[1].Type(), "a constant DDL schema string")
	}
	var dt arrow.DataType
	if s, err := schema.ParseDDL(ddl); err == nil {
		dt = arrow.StructOf(s.Fields()...)
	} else if t, err2 := schema.ParseType(ddl); err2 == nil {
		dt = t
	} else {
		return nil, c.errf(call.Args[1].Pos(), "from_json: %v", err)
	}
	t, ok := FromArrow(dt)
	if !ok || t.Kind != KStruct && t.Kind != KArray && t.Kind != KMap {
		return nil, c.errf(call.Args[1].Pos(), "from_json: the schema %s holds a type expressions cannot use yet (or is not a struct, array or map)", ddl)
	}
	if err := checkStringKeys(t); err != nil {
		return nil, c.errf(call.Args[1].Pos(), "from_json: %v", err)
	}
	failFast := false
	if len(args) == 3 {
		k, ok := args[2].(*constNode)
		if !ok || args[2].Type().Kind != KMap || args[2].Type().Key().Kind != KString || args[2].Type().Elem().Kind != KString {
			return nil, c.argErr(call, 2, args[2].Type(), "a constant map<string,string> of options, as map('mode', 'FAILFAST')")
		}
		if k.sc.IsValid() {
			st := k.sc.(*scalar.Map).Value.(*array.Struct)
			ks, vs := st.Field(0).(*array.String), st.Field(1).(*array.String)
			for i := 0; i < ks.Len(); i++ {
				switch key := strings.ToLower(ks.Value(i)); {
				case key == "mode" && strings.EqualFold(vs.Value(i), "FAILFAST"):
					failFast = true
				case key == "mode" && strings.EqualFold(vs.Value(i), "PERMISSIVE"):
				default:
					return nil, c.errf(call.Args[2].Pos(), "from_json: option %s = %s is not supported (only mode PERMISSIVE or FAILFAST)", ks.Value(i), vs.Value(i))
				}
			}
		}
	}
	tape := &jtape{}
	return &funcNode{fn: registry["from_json"], t: t, args: []node{in}, impl: func(c *evalCtx, active []bool, in []arrow.Array) (arrow.Array, error) {
		s := in[0].(*array.String)
		b := array.NewBuilder(c.mem, t.Arrow())
		defer b.Release()
		b.Reserve(c.n)
		for i := 0; i < c.n; i++ {
			if s.IsNull(i) {
				b.AppendNull()
				continue
			}
			ok, empty := tape.parse(strBytes(s.Value(i)))
			if empty {
				b.AppendNull()
				continue
			}
			root := t.Kind == KStruct && ok && tape.toks[0].kind == '{'
			if failFast && activeAt(active, i) && (!root && !(ok && t.Kind != KStruct && tape.fits(t, 0)) || root && tape.mismatch(t, 0)) {
				return nil, c.fail("MALFORMED_RECORD_IN_PARSING", i, "from_json: malformed record %s for the schema %s (mode FAILFAST)", quoteValue(abbrev(s.Value(i))), t)
			}
			switch {
			case root:
				tape.appendStruct(t, b.(*array.StructBuilder), 0)
			case t.Kind == KStruct:
				appendNullFields(b.(*array.StructBuilder), len(t.Fields()))
			case ok && tape.fits(t, 0):
				tape.appendTo(t, b, 0)
			default:
				b.AppendNull()
			}
		}
		return b.NewArray(), nil
	}}, nil
}

// checkStringKeys refuses map types with non-string keys inside a from_json schema (JSON
// object keys are strings; Spark refuses them too).
func checkStringKeys(t Type) error {
	switch t.Kind {
	case KMap:
		if t.Key().Kind != KString {
			return fmt.Errorf("map keys must be strings, not %s", t.Key())
		}
		return checkStringKeys(t.Elem())
	case KArray:
		return checkStringKeys(t.Elem())
	case KStruct:
		for _, f := range t.Fields() {
			if err := checkStringKeys(f.Type); err != nil {
				return err
			}
		}
	}
	return nil
}

func abbrev(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}
