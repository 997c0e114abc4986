package avrorow

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
)

// Node is a compiled Avro schema node (Avro 1.11 specification, JSON form). It converts the
// values goavro decodes ("native" values: map[string]any for records and maps, []any for
// arrays, single-key maps {branch: value} for union branches other than null, time.Time for
// date and timestamp logical types, *big.Rat for decimals) into Arrow builders of the type
// schema.AvroType gives for the same schema, and carries what schema resolution needs
// (names, aliases, symbols, defaults).
type Node struct {
	Type    string // primitive name, record, enum, array, map, fixed, union
	Logical string // logicalType, "" when none
	Scale   int32  // decimal scale
	// Precision is a decimal's precision (digits); 0 when none. Values whose unscaled
	// integer has more digits are refused (they do not fit the decimal(p,s) column).
	Precision int
	Name      string // full name of a record, enum or fixed, "" otherwise
	Aliases   []string
	Fields    []Field // record fields in order
	Items     *Node   // array items, map values
	// Members are a union's branches other than null, in order; Keys are goavro's names for
	// them (the full name of named types, "type.logical" for logical types, else the type).
	Members []*Node
	Keys    []string
	// Null reports that the union has a null branch; NullFirst that it is the first (a field
	// default of such a union is null).
	Null, NullFirst bool
	// Branch maps a union's branch index on the wire to its member index, -1 for null.
	Branch      []int
	Symbols     []string // enum symbols
	EnumDefault string   // enum "default" symbol, "" when none
	Size        int      // fixed size
	names       map[string]int
	limit       *big.Int // 10^Precision for decimals, nil otherwise
}

// Field is a record field.
type Field struct {
	Name       string
	Aliases    []string
	Node       *Node
	Default    any // the JSON "default" (json.Unmarshal form); valid when HasDefault
	HasDefault bool
}

// Compile parses an Avro schema document. Named types may be referenced after their
// definition by name or full name; namespaces follow the specification's inheritance.
func Compile(doc []byte) (*Node, error) {
	var tree any
	if err := json.Unmarshal(doc, &tree); err != nil {
		s := strings.TrimSpace(string(doc))
		if s == "" || strings.ContainsAny(s, "{[\"") {
			return nil, fmt.Errorf("avro schema: %w", err)
		}
		tree = s // a bare primitive name such as `string`
	}
	c := &compiler{named: map[string]*Node{}}
	n, _, err := c.compile(tree, "")
	return n, err
}

type compiler struct {
	named map[string]*Node
}

// branchKey is goavro's key for a union branch.
func branchKey(n *Node) string {
	if n.Name != "" {
		return n.Name
	}
	if goavroLogical[n.Type+"."+n.Logical] {
		return n.Type + "." + n.Logical
	}
	return n.Type
}

// goavroLogical lists the logical types goavro v2 implements (its codec.go); any other
// logicalType (local-timestamp-*, timestamp-nanos, uuid...) is its base type to goavro, so
// union branches of it are keyed by the base type name.
var goavroLogical = map[string]bool{
	"int.date": true, "int.time-millis": true, "long.time-micros": true,
	"long.timestamp-millis": true, "long.timestamp-micros": true, "bytes.decimal": true,
}

func fullName(name, ns string) string {
	if !strings.Contains(name, ".") && ns != "" {
		return ns + "." + name
	}
	return name
}

func strs(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (c *compiler) compile(t any, ns string) (*Node, string, error) {
	switch t := t.(type) {
	case string:
		switch t {
		case "null", "boolean", "int", "long", "float", "double", "bytes", "string":
			return &Node{Type: t}, "", nil
		}
		if n, ok := c.named[fullName(t, ns)]; ok {
			return n, n.Name, nil
		}
		if n, ok := c.named[t]; ok {
			return n, t, nil
		}
		return nil, "", fmt.Errorf("avro schema: unknown type %q", t)
	case []any:
		u := &Node{Type: "union", names: map[string]int{}}
		for i, m := range t {
			if s, ok := m.(string); ok && s == "null" {
				u.Null, u.NullFirst = true, i == 0
				u.Branch = append(u.Branch, -1)
				continue
			}
			mn, _, err := c.compile(m, ns)
			if err != nil {
				return nil, "", err
			}
			key := branchKey(mn)
			for _, k := range []string{key, mn.Type} {
				if _, dup := u.names[k]; !dup {
					u.names[k] = len(u.Members)
				}
			}
			u.Branch = append(u.Branch, len(u.Members))
			u.Members = append(u.Members, mn)
			u.Keys = append(u.Keys, key)
		}
		return u, "", nil
	case map[string]any:
		typ, _ := t["type"].(string)
		if typ == "" {
			return c.compile(t["type"], ns)
		}
		var n *Node
		switch typ {
		case "record", "error", "enum", "fixed", "array", "map":
			n = &Node{Type: typ}
		default:
			// A primitive or a reference with attributes (logicalType): keep the referenced
			// node's shape, adding the logical type to primitives.
			base, full, err := c.compile(typ, ns)
			if err != nil {
				return nil, "", err
			}
			if base.Name != "" {
				return base, full, nil
			}
			n = &Node{Type: base.Type}
		}
		n.Logical, _ = t["logicalType"].(string)
		if s, ok := t["scale"].(float64); ok {
			n.Scale = int32(s)
		}
		if p, ok := t["precision"].(float64); ok && n.Logical == "decimal" && p >= 1 && p <= 1000 {
			n.Precision = int(p)
			n.limit = pow10(int32(p))
		}
		if name, ok := t["name"].(string); ok && (typ == "record" || typ == "error" || typ == "enum" || typ == "fixed") {
			if nsv, ok := t["namespace"].(string); ok && !strings.Contains(name, ".") {
				ns = nsv
			}
			n.Name = fullName(name, ns)
			if i := strings.LastIndexByte(n.Name, '.'); i >= 0 {
				ns = n.Name[:i]
			} else {
				ns = ""
			}
			n.Aliases = strs(t["aliases"])
			c.named[n.Name] = n
		}
		switch typ {
		case "record", "error":
			n.Type = "record"
			fs, _ := t["fields"].([]any)
			for _, f := range fs {
				fm, _ := f.(map[string]any)
				name, _ := fm["name"].(string)
				fn, _, err := c.compile(fm["type"], ns)
				if err != nil {
					return nil, "", err
				}
				def, has := fm["default"]
				n.Fields = append(n.Fields, Field{Name: name, Aliases: strs(fm["aliases"]), Node: fn, Default: def, HasDefault: has})
			}
		case "enum":
			n.Symbols = strs(t["symbols"])
			n.EnumDefault, _ = t["default"].(string)
		case "fixed":
			if s, ok := t["size"].(float64); ok {
				n.Size = int(s)
			}
		case "array":
			it, _, err := c.compile(t["items"], ns)
			if err != nil {
				return nil, "", err
			}
			n.Items = it
		case "map":
			it, _, err := c.compile(t["values"], ns)
			if err != nil {
				return nil, "", err
			}
			n.Items = it
		}
		return n, n.Name, nil
	}
	return nil, "", fmt.Errorf("avro schema: bad schema node %v", t)
}

// AppendTo appends the goavro native value v (nil: null) to b, a builder of the Arrow type
// schema.AvroType maps this node to. Errors name the field path.
func (n *Node) AppendTo(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch n.Type {
	case "union":
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return fmt.Errorf("union value %T", v)
		}
		for k, val := range m {
			if len(n.Members) == 1 {
				return n.Members[0].AppendTo(b, val)
			}
			idx, ok := n.names[k]
			if !ok {
				return fmt.Errorf("union branch %q not in schema", k)
			}
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			for j, mem := range n.Members {
				if j == idx {
					if err := mem.AppendTo(sb.FieldBuilder(j), val); err != nil {
						return err
					}
				} else {
					sb.FieldBuilder(j).AppendNull()
				}
			}
		}
		return nil
	case "record":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("record value %T", v)
		}
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		for i, f := range n.Fields {
			if err := f.Node.AppendTo(sb.FieldBuilder(i), m[f.Name]); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
		return nil
	case "array":
		items, ok := v.([]any)
		if !ok {
			return fmt.Errorf("array value %T", v)
		}
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		for _, it := range items {
			if err := n.Items.AppendTo(lb.ValueBuilder(), it); err != nil {
				return err
			}
		}
		return nil
	case "map":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("map value %T", v)
		}
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys) // Go maps have no order; sorted keys keep output deterministic
		for _, k := range keys {
			mb.KeyBuilder().(*array.StringBuilder).Append(k)
			if err := n.Items.AppendTo(mb.ItemBuilder(), m[k]); err != nil {
				return err
			}
		}
		return nil
	}
	if x, ok := v.(int64); ok && n.Logical == "local-timestamp-millis" {
		v = x * 1000 // the column is µs
	}
	return appendScalar(b, v, n.Scale)
}

// validate checks a goavro native value of this node (after resolution) for what the column
// cannot hold, the checks of the direct path's check: strings and map keys that are not
// UTF-8, decimals beyond their precision, timestamps whose microseconds overflow int64. It
// runs before AppendTo so that a refused value leaves no half-appended row.
func (n *Node) validate(v any) error {
	if v == nil {
		return nil
	}
	switch n.Type {
	case "union":
		m, _ := v.(map[string]any)
		for k, val := range m {
			if len(n.Members) == 1 {
				return n.Members[0].validate(val)
			}
			if idx, ok := n.names[k]; ok {
				return n.Members[idx].validate(val)
			}
		}
		return nil
	case "record":
		m, _ := v.(map[string]any)
		for _, f := range n.Fields {
			if err := f.Node.validate(m[f.Name]); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
		return nil
	case "array":
		l, _ := v.([]any)
		for _, it := range l {
			if err := n.Items.validate(it); err != nil {
				return err
			}
		}
		return nil
	case "map":
		m, _ := v.(map[string]any)
		for k, it := range m {
			if !utf8.ValidString(k) {
				return fmt.Errorf("map key: %w", errUTF8)
			}
			if err := n.Items.validate(it); err != nil {
				return err
			}
		}
		return nil
	}
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			return errUTF8
		}
	case *big.Rat:
		if n.limit != nil {
			u, err := ratToInt(x, n.Scale)
			if err != nil {
				return err
			}
			return n.checkDecimal(u)
		}
	case int64:
		return n.checkLong(x)
	case time.Time:
		if s := x.Unix(); n.Logical != "date" && (s >= math.MaxInt64/1000000 || s <= math.MinInt64/1000000) {
			return fmt.Errorf("%s %s overflows int64 microseconds", n.Logical, x.Format(time.RFC3339))
		}
	}
	return nil
}

// appendScalar appends a goavro primitive or logical value to the matching builder.
func appendScalar(b array.Builder, v any, scale int32) error {
	switch b := b.(type) {
	case *array.BooleanBuilder:
		if x, ok := v.(bool); ok {
			b.Append(x)
			return nil
		}
	case *array.Int32Builder:
		if x, ok := v.(int32); ok {
			b.Append(x)
			return nil
		}
	case *array.Int64Builder:
		if x, ok := v.(int64); ok {
			b.Append(x)
			return nil
		}
	case *array.Float32Builder:
		if x, ok := v.(float32); ok {
			b.Append(x)
			return nil
		}
	case *array.Float64Builder:
		if x, ok := v.(float64); ok {
			b.Append(x)
			return nil
		}
	case *array.StringBuilder:
		switch x := v.(type) {
		case string:
			b.Append(x)
			return nil
		case []byte: // uuid on fixed(16)
			if len(x) == 16 {
				b.Append(fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16]))
				return nil
			}
		}
	case *array.BinaryBuilder:
		if x, ok := v.([]byte); ok {
			b.Append(x)
			return nil
		}
	case *array.FixedSizeBinaryBuilder:
		if x, ok := v.([]byte); ok {
			b.Append(x)
			return nil
		}
	case *array.Date32Builder:
		switch x := v.(type) {
		case time.Time:
			b.Append(arrow.Date32FromTime(x))
			return nil
		case int32:
			b.Append(arrow.Date32(x))
			return nil
		}
	case *array.Time32Builder:
		if x, ok := v.(time.Duration); ok {
			b.Append(arrow.Time32(x.Milliseconds()))
			return nil
		}
	case *array.Time64Builder:
		if x, ok := v.(time.Duration); ok {
			b.Append(arrow.Time64(x.Microseconds()))
			return nil
		}
	case *array.TimestampBuilder:
		unit := b.Type().(*arrow.TimestampType).Unit
		switch x := v.(type) {
		case time.Time:
			if unit == arrow.Nanosecond {
				b.Append(arrow.Timestamp(x.UnixNano()))
			} else {
				b.Append(arrow.Timestamp(x.UnixMicro()))
			}
			return nil
		case int64: // local-timestamp-* is not a goavro logical type: raw millis or micros
			b.Append(arrow.Timestamp(x))
			return nil
		}
	case *array.Decimal128Builder:
		if x, ok := v.(*big.Rat); ok {
			n, err := ratToInt(x, scale)
			if err != nil {
				return err
			}
			b.Append(decimal128.FromBigInt(n))
			return nil
		}
	case *array.Decimal256Builder:
		if x, ok := v.(*big.Rat); ok {
			n, err := ratToInt(x, scale)
			if err != nil {
				return err
			}
			b.Append(decimal256.FromBigInt(n))
			return nil
		}
	}
	return fmt.Errorf("cannot store Avro value %T in %s", v, b.Type())
}

func ratToInt(r *big.Rat, scale int32) (*big.Int, error) {
	m := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	if !m.IsInt() {
		return nil, fmt.Errorf("decimal %s has more than %d fraction digits", r.FloatString(int(scale)+2), scale)
	}
	return m.Num(), nil
}
