package expr

import (
	"encoding/base64"
	"errors"
	"math"
	"math/big"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// The JSON functions (from_json, get_json_object) parse each row's first JSON value onto a
// flat token tape (reused from row to row, so a batch allocates nothing per row once the tape
// has grown) and walk it: from_json into Arrow builders, get_json_object along its path.

// jtok is one token of a parsed JSON value. Containers are followed by their contents (an
// object's as key, value, key, value …); next is the index just past the token's subtree.
type jtok struct {
	kind       byte // '{', '[', '"', '0' (number), 't', 'f', 'n'
	esc        bool // a string with escapes
	frac       bool // a number with a fraction or an exponent
	start, end int32
	next       int32
}

type jtape struct {
	data  []byte
	toks  []jtok
	buf   []byte  // unescaped string scratch
	cbuf  []byte  // compact JSON text of a value read as a string
	slots []int32 // appendStruct's field slots
}

var errJSON = errors.New("malformed JSON")

// parse reads the first JSON value of data (what follows it is ignored, as Jackson does).
// ok is false for a syntax error; empty is true when data holds only white space.
func (t *jtape) parse(data []byte) (ok, empty bool) {
	t.data, t.toks = data, t.toks[:0]
	i := skipWS(data, 0)
	if i == len(data) {
		return false, true
	}
	_, err := t.value(i, 0)
	return err == nil, false
}

func skipWS(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// value parses the value at d[i] and returns the index after it.
func (t *jtape) value(i, depth int) (int, error) {
	d := t.data
	if i >= len(d) || depth > 1000 {
		return 0, errJSON
	}
	k := len(t.toks)
	t.toks = append(t.toks, jtok{start: int32(i)})
	switch c := d[i]; {
	case c == '{' || c == '[':
		t.toks[k].kind = c
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipWS(d, i+1)
		if i < len(d) && d[i] == closer {
			i++
			break
		}
		for {
			var err error
			if c == '{' {
				if i >= len(d) || d[i] != '"' {
					return 0, errJSON
				}
				if i, err = t.value(i, depth+1); err != nil {
					return 0, err
				}
				i = skipWS(d, i)
				if i >= len(d) || d[i] != ':' {
					return 0, errJSON
				}
				i = skipWS(d, i+1)
			}
			if i, err = t.value(i, depth+1); err != nil {
				return 0, err
			}
			i = skipWS(d, i)
			if i < len(d) && d[i] == ',' {
				i = skipWS(d, i+1)
				continue
			}
			if i < len(d) && d[i] == closer {
				i++
				break
			}
			return 0, errJSON
		}
	case c == '"':
		t.toks[k].kind = '"'
		j := i + 1
		for {
			if j >= len(d) || d[j] < 0x20 {
				return 0, errJSON
			}
			if d[j] == '"' {
				break
			}
			if d[j] == '\\' {
				t.toks[k].esc = true
				if j+1 >= len(d) {
					return 0, errJSON
				}
				switch d[j+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					j += 2
				case 'u':
					if j+6 > len(d) {
						return 0, errJSON
					}
					if _, err := strconv.ParseUint(string(d[j+2:j+6]), 16, 16); err != nil {
						return 0, errJSON
					}
					j += 6
				default:
					return 0, errJSON
				}
				continue
			}
			j++
		}
		i = j + 1
	case c == '-' || c >= '0' && c <= '9':
		t.toks[k].kind = '0'
		j := i
		if d[j] == '-' {
			j++
		}
		digits := func() int {
			s := j
			for j < len(d) && d[j] >= '0' && d[j] <= '9' {
				j++
			}
			return j - s
		}
		if j < len(d) && d[j] == '0' {
			j++
		} else if digits() == 0 {
			return 0, errJSON
		}
		if j < len(d) && d[j] == '.' {
			j++
			t.toks[k].frac = true
			if digits() == 0 {
				return 0, errJSON
			}
		}
		if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
			j++
			t.toks[k].frac = true
			if j < len(d) && (d[j] == '+' || d[j] == '-') {
				j++
			}
			if digits() == 0 {
				return 0, errJSON
			}
		}
		i = j
	default:
		for _, w := range []string{"true", "false", "null"} {
			if len(d)-i >= len(w) && string(d[i:i+len(w)]) == w {
				t.toks[k].kind = w[0]
				i += len(w)
				break
			}
		}
		if t.toks[k].kind == 0 {
			return 0, errJSON
		}
	}
	t.toks[k].end = int32(i)
	t.toks[k].next = int32(len(t.toks))
	return i, nil
}

// str returns the decoded text of string token k (a view of the input when it has no escapes,
// valid until the next call).
func (t *jtape) str(k int32) []byte {
	tk := &t.toks[k]
	raw := t.data[tk.start+1 : tk.end-1]
	if !tk.esc {
		return raw
	}
	b := t.buf[:0]
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			b = append(b, raw[i])
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, _ := strconv.ParseUint(string(raw[i+1:i+5]), 16, 16)
			i += 4
			if r >= 0xd800 && r < 0xdc00 && i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if lo, err := strconv.ParseUint(string(raw[i+3:i+7]), 16, 16); err == nil && lo >= 0xdc00 && lo < 0xe000 {
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
					i += 6
				}
			}
			b = utf8.AppendRune(b, rune(r))
		default:
			b = append(b, raw[i])
		}
	}
	t.buf = b
	return b
}

// appendCompact writes token k's subtree as Jackson's generator copies it: no white space,
// strings re-escaped, integers as written, other numbers as Java doubles.
func (t *jtape) appendCompact(b []byte, k int32) []byte {
	tk := t.toks[k]
	switch tk.kind {
	case '{', '[':
		b = append(b, tk.kind)
		first := true
		for j := k + 1; j < tk.next; j = t.toks[j].next {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = t.appendCompact(b, j)
			if tk.kind == '{' {
				j = t.toks[j].next
				b = append(b, ':')
				b = t.appendCompact(b, j)
			}
		}
		if tk.kind == '{' {
			return append(b, '}')
		}
		return append(b, ']')
	case '"':
		return appendJSONString(b, t.str(k))
	case '0':
		raw := t.data[tk.start:tk.end]
		if !tk.frac {
			if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
				return strconv.AppendInt(b, v, 10)
			}
			return append(b, raw...)
		}
		f, _ := strconv.ParseFloat(string(raw), 64)
		return appendJavaDouble(b, f)
	}
	return append(b, t.data[tk.start:tk.end]...)
}

// appendJSONString quotes s with JSON's short escapes and \u00XX for other control bytes.
func appendJSONString(b []byte, s []byte) []byte {
	b = append(b, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// ---- from_json ----

// jsonFits reports whether the value at token k converts to t without failing. A struct
// converts from any object (its fields fail one by one: Spark's partial results); an array or
// map fails as a whole when one of its values does.
func (t *jtape) fits(ty Type, k int32) bool {
	tk := &t.toks[k]
	if tk.kind == 'n' {
		return true
	}
	switch ty.Kind {
	case KStruct:
		return tk.kind == '{'
	case KArray:
		if tk.kind != '[' {
			return false
		}
		for j := k + 1; j < tk.next; j = t.toks[j].next {
			if !t.fits(ty.Elem(), j) {
				return false
			}
		}
		return true
	case KMap:
		if tk.kind != '{' {
			return false
		}
		for j := k + 1; j < tk.next; j = t.toks[j].next {
			j = t.toks[j].next
			if !t.fits(ty.Elem(), j) {
				return false
			}
		}
		return true
	}
	_, ok := t.leaf(ty, k)
	return ok
}

// leafVal is a converted scalar value.
type leafVal struct {
	b   bool
	i   int64
	f   float64
	d   decimal128.Num
	s   []byte
	nul bool
}

// leaf converts a scalar token as Spark's JacksonParser does for type ty.
func (t *jtape) leaf(ty Type, k int32) (leafVal, bool) {
	tk := &t.toks[k]
	raw := t.data[tk.start:tk.end]
	if tk.kind == 'n' {
		return leafVal{nul: true}, true
	}
	switch ty.Kind {
	case KBool:
		return leafVal{b: tk.kind == 't'}, tk.kind == 't' || tk.kind == 'f'
	case KInt, KBigInt:
		if tk.kind != '0' || tk.frac {
			return leafVal{}, false
		}
		bits := 64
		if ty.Kind == KInt {
			bits = 32
		}
		v, err := strconv.ParseInt(string(raw), 10, bits)
		return leafVal{i: v}, err == nil
	case KDouble:
		switch tk.kind {
		case '0':
			f, err := strconv.ParseFloat(string(raw), 64)
			return leafVal{f: f}, err == nil || math.IsInf(f, 0)
		case '"':
			switch string(t.str(k)) {
			case "NaN":
				return leafVal{f: math.NaN()}, true
			case "Infinity", "+Infinity", "+INF", "INF":
				return leafVal{f: math.Inf(1)}, true
			case "-Infinity", "-INF":
				return leafVal{f: math.Inf(-1)}, true
			}
		}
		return leafVal{}, false
	case KDecimal:
		var text string
		switch tk.kind {
		case '0':
			text = string(raw)
		case '"':
			text = string(t.str(k))
		default:
			return leafVal{}, false
		}
		r, ok := new(big.Rat).SetString(text)
		if !ok {
			return leafVal{}, false
		}
		v := ratToScaled(r, ty.S)
		if !fitsPrecision(v, ty.P) {
			return leafVal{}, false
		}
		return leafVal{d: decimal128.FromBigInt(v)}, true
	case KString:
		if tk.kind == '"' {
			return leafVal{s: t.str(k)}, true
		}
		t.cbuf = t.appendCompact(t.cbuf[:0], k) // not into buf: appendCompact unescapes there
		return leafVal{s: t.cbuf}, true
	case KDate:
		if tk.kind == '"' {
			d, ok := parseDate(string(t.str(k)))
			return leafVal{i: int64(d)}, ok
		}
	case KTimestamp:
		switch {
		case tk.kind == '"':
			us, ok := parseTimestamp(string(t.str(k)))
			return leafVal{i: us}, ok
		case tk.kind == '0' && !tk.frac: // seconds since the epoch
			v, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil || v > math.MaxInt64/1000000 || v < math.MinInt64/1000000 {
				return leafVal{}, false
			}
			return leafVal{i: v * 1e6}, true
		}
	}
	return leafVal{}, false
}

// appendTo appends the value at token k (which fits ty) to b.
func (t *jtape) appendTo(ty Type, b array.Builder, k int32) {
	tk := t.toks[k]
	if tk.kind == 'n' {
		b.AppendNull()
		return
	}
	switch ty.Kind {
	case KStruct:
		t.appendStruct(ty, b.(*array.StructBuilder), k)
	case KArray:
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		vb := lb.ValueBuilder()
		for j := k + 1; j < tk.next; j = t.toks[j].next {
			t.appendTo(ty.Elem(), vb, j)
		}
	case KMap:
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		kb, ib := mb.KeyBuilder().(*array.StringBuilder), mb.ItemBuilder()
		// a repeated key keeps its first place and takes its last value (Spark's LAST_WIN)
		for j := k + 1; j < tk.next; j = t.toks[t.toks[j].next].next {
			key := string(t.str(j))
			v, dup := t.toks[j].next, false
			for p := k + 1; p < j && !dup; p = t.toks[t.toks[p].next].next {
				dup = string(t.str(p)) == key
			}
			if dup {
				continue
			}
			for q := t.toks[v].next; q < tk.next; q = t.toks[t.toks[q].next].next {
				if string(t.str(q)) == key {
					v = t.toks[q].next
				}
			}
			kb.BinaryBuilder.Append(t.str(j))
			t.appendTo(ty.Elem(), ib, v)
		}
	default:
		v, _ := t.leaf(ty, k)
		appendLeaf(ty, b, v)
	}
}

func appendLeaf(ty Type, b array.Builder, v leafVal) {
	if v.nul {
		b.AppendNull()
		return
	}
	switch ty.Kind {
	case KBool:
		b.(*array.BooleanBuilder).Append(v.b)
	case KInt:
		b.(*array.Int32Builder).Append(int32(v.i))
	case KBigInt:
		b.(*array.Int64Builder).Append(v.i)
	case KDouble:
		b.(*array.Float64Builder).Append(v.f)
	case KDecimal:
		b.(*array.Decimal128Builder).Append(v.d)
	case KString:
		b.(*array.StringBuilder).BinaryBuilder.Append(v.s)
	case KDate:
		b.(*array.Date32Builder).Append(arrow.Date32(v.i))
	case KTimestamp:
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(v.i))
	}
}

// appendStruct appends an object as a struct: fields by exact name (the last of duplicate
// keys wins), missing ones and those whose value does not convert NULL.
func (t *jtape) appendStruct(ty Type, sb *array.StructBuilder, k int32) {
	fields := ty.Fields()
	// the value token of each field, on a stack shared by the nested structs of the row
	base := len(t.slots)
	for range fields {
		t.slots = append(t.slots, -1)
	}
	tk := t.toks[k]
	for j := k + 1; j < tk.next; j = t.toks[j].next {
		key := t.str(j)
		v := t.toks[j].next
		for fi, f := range fields {
			if f.Name == string(key) {
				t.slots[base+fi] = v
			}
		}
		j = v
	}
	sb.Append(true)
	for fi, f := range fields {
		fb := sb.FieldBuilder(fi)
		s := t.slots[base+fi]
		switch {
		case s >= 0 && !f.Type.nested(): // a scalar converts once, not once to check and once to append
			if v, ok := t.leaf(f.Type, s); ok {
				appendLeaf(f.Type, fb, v)
			} else {
				fb.AppendNull()
			}
		case s >= 0 && t.fits(f.Type, s):
			t.appendTo(f.Type, fb, s)
		default:
			fb.AppendNull()
		}
	}
	t.slots = t.slots[:base]
}

// mismatch reports whether some value of the object at k does not convert (FAILFAST).
func (t *jtape) mismatch(ty Type, k int32) bool {
	tk := t.toks[k]
	for j := k + 1; j < tk.next; j = t.toks[j].next {
		key := t.str(j)
		v := t.toks[j].next
		if fi := fieldIndexExact(ty, string(key)); fi >= 0 {
			ft := ty.Fields()[fi].Type
			if !t.fits(ft, v) || ft.Kind == KStruct && t.toks[v].kind == '{' && t.mismatch(ft, v) {
				return true
			}
		}
		j = v
	}
	return false
}

func fieldIndexExact(t Type, name string) int {
	for k, f := range t.Fields() {
		if f.Name == name {
			return k
		}
	}
	return -1
}

// appendNullFields appends a struct whose fields are all NULL (a malformed record, PERMISSIVE).
func appendNullFields(sb *array.StructBuilder, n int) {
	sb.Append(true)
	for i := 0; i < n; i++ {
		sb.FieldBuilder(i).AppendNull()
	}
}

// ---- get_json_object ----

// jpath is a parsed JSON path: Spark's JsonPathParser steps.
type jstep struct {
	kind byte // 'k' named key, 'w' key wildcard (unused by the grammar), 'i' index, '*' index wildcard
	name string
	idx  int
}

// parseJSONPath parses Spark's subset: $ followed by .name, ['name'], [n] and [*]; ok is false
// for anything else (get_json_object then returns NULL).
func parseJSONPath(p string) ([]jstep, bool) {
	if len(p) == 0 || p[0] != '$' {
		return nil, false
	}
	var out []jstep
	i := 1
	for i < len(p) {
		switch p[i] {
		case '.':
			j := i + 1
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			name := p[i+1 : j]
			if name == "" || name == "*" {
				return nil, false
			}
			out = append(out, jstep{kind: 'k', name: name})
			i = j
		case '[':
			switch {
			case len(p) > i+2 && p[i+1] == '*' && p[i+2] == ']':
				out = append(out, jstep{kind: '*'})
				i += 3
			case len(p) > i+1 && p[i+1] == '\'':
				j := i + 2
				for j < len(p) && p[j] != '\'' {
					j++
				}
				if j+1 >= len(p) || p[j+1] != ']' {
					return nil, false
				}
				out = append(out, jstep{kind: 'k', name: p[i+2 : j]})
				i = j + 2
			default:
				j := i + 1
				for j < len(p) && p[j] >= '0' && p[j] <= '9' {
					j++
				}
				if j == i+1 || j >= len(p) || p[j] != ']' {
					return nil, false
				}
				n, err := strconv.Atoi(p[i+1 : j])
				if err != nil {
					return nil, false
				}
				out = append(out, jstep{kind: 'i', idx: n})
				i = j + 1
			}
		default:
			return nil, false
		}
	}
	return out, true
}

// jgen is a minimal JSON generator: it puts the commas between array elements.
type jgen struct {
	b     []byte
	count []int // elements written per open array
}

func (g *jgen) sep() {
	if n := len(g.count); n > 0 {
		if g.count[n-1] > 0 {
			g.b = append(g.b, ',')
		}
		g.count[n-1]++
	}
}
func (g *jgen) startArray() { g.sep(); g.b = append(g.b, '['); g.count = append(g.count, 0) }
func (g *jgen) endArray()   { g.b = append(g.b, ']'); g.count = g.count[:len(g.count)-1] }

// The write styles of Spark's GetJsonObject.evaluatePath.
const (
	rawStyle = iota
	quotedStyle
	flattenStyle
)

// eval follows Spark's GetJsonObject.evaluatePath (Hive's get_json_object): it writes the
// matches of path under token k to g and reports whether anything was written.
func (t *jtape) eval(k int32, g *jgen, style int, path []jstep) bool {
	tk := t.toks[k]
	switch {
	case len(path) == 0 && tk.kind == '"' && style == rawStyle:
		g.sep()
		g.b = append(g.b, t.str(k)...)
		return true
	case len(path) == 0 && tk.kind == '[' && style == flattenStyle:
		dirty := false
		for j := k + 1; j < tk.next; j = t.toks[j].next {
			dirty = t.eval(j, g, style, nil) || dirty
		}
		return dirty
	case len(path) == 0:
		g.sep()
		g.b = t.appendCompact(g.b, k)
		return true
	case tk.kind == '{' && path[0].kind == 'k':
		for j := k + 1; j < tk.next; j = t.toks[j].next {
			v := t.toks[j].next
			// the first field of that name with a match decides; a null value is none
			if string(t.str(j)) == path[0].name && t.toks[v].kind != 'n' && t.eval(v, g, style, path[1:]) {
				return true
			}
			j = v
		}
		return false
	case tk.kind == '[' && path[0].kind == '*' && len(path) > 1 && path[1].kind == '*':
		// Hive's non-structure-preserving double wildcard
		dirty := false
		g.startArray()
		for j := k + 1; j < tk.next; j = t.toks[j].next {
			dirty = t.eval(j, g, flattenStyle, path[2:]) || dirty
		}
		g.endArray()
		return dirty
	case tk.kind == '[' && path[0].kind == '*' && style != quotedStyle:
		next := quotedStyle
		if style == flattenStyle {
			next = flattenStyle
		}
		sub := &jgen{}
		sub.startArray()
		dirty := 0
		for j := k + 1; j < tk.next; j = t.toks[j].next {
			if t.eval(j, sub, next, path[1:]) {
				dirty++
			}
		}
		sub.endArray()
		switch {
		case dirty > 1:
			g.sep()
			g.b = append(g.b, sub.b...)
		case dirty == 1:
			g.sep()
			g.b = append(g.b, sub.b[1:len(sub.b)-1]...)
		}
		return dirty > 0
	case tk.kind == '[' && path[0].kind == '*':
		dirty := false
		g.startArray()
		for j := k + 1; j < tk.next; j = t.toks[j].next {
			dirty = t.eval(j, g, quotedStyle, path[1:]) || dirty
		}
		g.endArray()
		return dirty
	case tk.kind == '[' && path[0].kind == 'i':
		st := style
		if len(path) > 1 && path[1].kind == '*' {
			st = quotedStyle
		}
		n := 0
		for j := k + 1; j < tk.next; j = t.toks[j].next {
			if n == path[0].idx {
				return t.eval(j, g, st, path[1:])
			}
			n++
		}
		return false
	}
	return false
}

// ---- to_json ----

// jsonFormat is Spark's to_json with its default options: NULL struct fields left out, dates
// yyyy-MM-dd, timestamps yyyy-MM-dd'T'HH:mm:ss.SSSXXX (UTC: Z), binary as base64, doubles as Java prints them
// (NaN and the infinities as strings), decimals with their scale, map keys as strings.
var jsonFormat = &nestedFormat{sep: ",", kv: ":", fieldNames: true, leaf: appendJSONLeaf,
	key: func(b []byte, t Type, a arrow.Array, i int) []byte {
		return appendJSONString(b, appendValue(nil, t, a, i))
	}}

func appendJSONLeaf(b []byte, t Type, a arrow.Array, i int) []byte {
	switch t.Kind {
	case KString:
		return appendJSONString(b, []byte(a.(*array.String).Value(i)))
	case KBinary: // Jackson writes a byte[] as a base64 string
		v := a.(*array.Binary).Value(i)
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v)
		return append(b, '"')
	case KDate, KInterval:
		return appendJSONString(b, appendValue(nil, t, a, i))
	case KTimestamp:
		return appendJSONString(b, time.UnixMicro(i64s(a)[i]).UTC().AppendFormat(nil, "2006-01-02T15:04:05.000Z07:00"))
	case KDouble:
		if f := f64s(a)[i]; math.IsNaN(f) || math.IsInf(f, 0) {
			return appendJSONString(b, appendJavaDouble(nil, f))
		}
	}
	return appendValue(b, t, a, i)
}

func init() {
	register("to_json", 1, 1, "to_json(struct, array or map) → string", "the value as JSON text (NULL struct fields left out, timestamps as yyyy-MM-dd'T'HH:mm:ss.SSSZ)", false, func(c *checker, call *Call, args []node) (node, error) {
		if !args[0].Type().nested() {
			return nil, c.argErr(call, 0, args[0].Type(), "a struct, an array or a map")
		}
		t := args[0].Type()
		return &funcNode{fn: registry["to_json"], t: TString, args: args, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			out := newStrOut(c.n, c.n*16)
			var buf []byte
			for i := 0; i < c.n; i++ {
				if in[0].IsNull(i) {
					out.appendNull()
					continue
				}
				buf = jsonFormat.append(buf[:0], t, in[0], i)
				out.appendBytes(buf)
			}
			return out.array(), nil
		}}, nil
	})
}
