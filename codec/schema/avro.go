package schema

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// FromAvro converts an Avro schema (Avro 1.11 specification, JSON form) whose root is a record
// into an Arrow schema, one column per record field in order. AvroType converts any Avro schema.
func FromAvro(doc []byte) (*arrow.Schema, error) {
	t, _, err := AvroType(doc)
	if err != nil {
		return nil, err
	}
	st, ok := t.(*arrow.StructType)
	if !ok {
		return nil, fmt.Errorf("parse avro schema: the root must be a record, got %s", t)
	}
	return arrow.NewSchema(st.Fields(), nil), nil
}

// AvroType converts an Avro schema into an Arrow type and whether it admits null.
//
// Mapping (the same as Spark's spark-avro where one exists):
//
//	null                         -> Utf8, nullable (always null)
//	boolean, int, long           -> Boolean, Int32, Int64
//	float, double                -> Float32, Float64
//	bytes, string                -> Binary, Utf8
//	record                       -> Struct (field "doc" kept as metadata "comment")
//	enum                         -> Utf8 (the symbol)
//	array, map                   -> List, Map(Utf8, V)
//	fixed(n)                     -> FixedSizeBinary(n)
//	["null", T] (either order)   -> T, nullable
//	[T1, T2, ...] (other unions) -> Struct<member0: T1, member1: T2, ...>, members nullable,
//	                                exactly one set per value (spark-avro's layout)
//	logicalType date             -> Date32
//	time-millis / time-micros    -> Time32(ms) / Time64(µs)
//	timestamp-millis / -micros   -> Timestamp(µs, "UTC")
//	timestamp-nanos              -> Timestamp(ns, "UTC")
//	local-timestamp-millis/-micros -> Timestamp(µs, "") (no zone)
//	local-timestamp-nanos        -> Timestamp(ns, "") (no zone)
//	decimal(p,s) on bytes/fixed  -> Decimal128(p,s) for p <= 38, Decimal256 above
//	uuid                         -> Utf8
//
// Named types may be referenced by name (or full name) after their definition; namespaces
// follow the specification's inheritance rules. Unknown logical types fall back to the
// underlying type, as the specification requires.
func AvroType(doc []byte) (arrow.DataType, bool, error) {
	root, err := parseDoc(doc)
	if err != nil {
		// A bare primitive name such as `string` is also a valid Avro schema.
		s := strings.TrimSpace(string(doc))
		if s != "" && !strings.ContainsAny(s, "{[\"") {
			root = &node{kind: 's', str: s}
		} else {
			return nil, false, fmt.Errorf("parse avro schema: %w", err)
		}
	}
	c := &avroConv{named: map[string]arrow.DataType{}}
	return c.typ(root, "", "$")
}

type avroConv struct {
	named map[string]arrow.DataType
}

func (c *avroConv) errf(path, format string, args ...any) error {
	return fmt.Errorf("parse avro schema at %s: %s", path, fmt.Sprintf(format, args...))
}

func fullName(name, ns string) string {
	if strings.Contains(name, ".") || ns == "" {
		return name
	}
	return ns + "." + name
}

// typ maps the Avro schema node n (in namespace ns, at the dot path path) to its Arrow type and
// whether it is nullable. It is one switch with a case per Avro type and logical type (Avro
// specification 1.12, "Schema Declaration" and "Logical Types"); the cases are short and read
// best side by side, so the switch is not split.
func (c *avroConv) typ(n *node, ns, path string) (arrow.DataType, bool, error) {
	switch n.kind {
	case 's':
		switch n.str {
		case "null":
			return arrow.BinaryTypes.String, true, nil
		case "boolean":
			return arrow.FixedWidthTypes.Boolean, false, nil
		case "int":
			return arrow.PrimitiveTypes.Int32, false, nil
		case "long":
			return arrow.PrimitiveTypes.Int64, false, nil
		case "float":
			return arrow.PrimitiveTypes.Float32, false, nil
		case "double":
			return arrow.PrimitiveTypes.Float64, false, nil
		case "bytes":
			return arrow.BinaryTypes.Binary, false, nil
		case "string":
			return arrow.BinaryTypes.String, false, nil
		}
		for _, name := range []string{fullName(n.str, ns), n.str} {
			if t, ok := c.named[name]; ok {
				if t == nil {
					return nil, false, c.errf(path, "recursive type %s cannot map to an Arrow type", n.str)
				}
				return t, false, nil
			}
		}
		return nil, false, c.errf(path, "unknown type %q", n.str)
	case 'a':
		return c.union(n, ns, path)
	case 'o':
	default:
		return nil, false, c.errf(path, "a schema must be a string, object or array")
	}
	tn := n.get("type")
	if tn == nil {
		return nil, false, c.errf(path, "missing \"type\"")
	}
	if tn.kind != 's' {
		// {"type": {...}} or {"type": [...]}: a wrapped schema.
		return c.typ(tn, ns, path)
	}
	logical := n.getStr("logicalType")
	switch tn.str {
	case "record", "error":
		name := n.getStr("name")
		if name == "" {
			return nil, false, c.errf(path, "record without a name")
		}
		if v := n.getStr("namespace"); v != "" && !strings.Contains(name, ".") {
			ns = v
		}
		full := fullName(name, ns)
		if i := strings.LastIndexByte(full, '.'); i >= 0 {
			ns = full[:i]
		}
		fs := n.get("fields")
		if fs == nil || fs.kind != 'a' {
			return nil, false, c.errf(path, "record %s without a \"fields\" array", full)
		}
		// Register a placeholder so a self-reference is detected (Arrow has no recursive types).
		c.named[full] = nil
		fields := make([]arrow.Field, 0, len(fs.vals))
		for i, f := range fs.vals {
			fname := f.getStr("name")
			if fname == "" {
				return nil, false, c.errf(fmt.Sprintf("%s.fields[%d]", path, i), "field without a name")
			}
			ft := f.get("type")
			if ft == nil {
				return nil, false, c.errf(path+"."+fname, "field without a type")
			}
			t, nullable, err := c.typ(ft, ns, path+"."+fname)
			if err != nil {
				return nil, false, err
			}
			af := arrow.Field{Name: fname, Type: t, Nullable: nullable}
			if d := f.getStr("doc"); d != "" {
				af.Metadata = arrow.NewMetadata([]string{"comment"}, []string{d})
			}
			fields = append(fields, af)
		}
		st := arrow.StructOf(fields...)
		c.named[full] = st
		return st, false, nil
	case "enum":
		c.define(n, ns, arrow.BinaryTypes.String)
		return arrow.BinaryTypes.String, false, nil
	case "fixed":
		size, ok := n.getInt("size")
		if !ok || size < 0 {
			return nil, false, c.errf(path, "fixed without a valid size")
		}
		var t arrow.DataType = &arrow.FixedSizeBinaryType{ByteWidth: size}
		switch logical {
		case "decimal":
			dt, err := c.decimal(n, path)
			if err != nil {
				return nil, false, err
			}
			t = dt
		case "uuid":
			t = arrow.BinaryTypes.String
		}
		c.define(n, ns, t)
		return t, false, nil
	case "array":
		items := n.get("items")
		if items == nil {
			return nil, false, c.errf(path, "array without \"items\"")
		}
		et, _, err := c.typ(items, ns, path+"[]")
		if err != nil {
			return nil, false, err
		}
		return arrow.ListOf(et), false, nil
	case "map":
		values := n.get("values")
		if values == nil {
			return nil, false, c.errf(path, "map without \"values\"")
		}
		vt, _, err := c.typ(values, ns, path+"{}")
		if err != nil {
			return nil, false, err
		}
		return arrow.MapOf(arrow.BinaryTypes.String, vt), false, nil
	}
	// A primitive with attributes, possibly a logical type.
	base, nullable, err := c.typ(tn, ns, path)
	if err != nil {
		return nil, false, err
	}
	switch {
	case logical == "date" && tn.str == "int":
		return arrow.FixedWidthTypes.Date32, nullable, nil
	case logical == "time-millis" && tn.str == "int":
		return arrow.FixedWidthTypes.Time32ms, nullable, nil
	case logical == "time-micros" && tn.str == "long":
		return arrow.FixedWidthTypes.Time64us, nullable, nil
	case (logical == "timestamp-millis" || logical == "timestamp-micros") && tn.str == "long":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nullable, nil
	case logical == "timestamp-nanos" && tn.str == "long":
		return &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, nullable, nil
	case logical == "local-timestamp-nanos" && tn.str == "long":
		return &arrow.TimestampType{Unit: arrow.Nanosecond}, nullable, nil
	case (logical == "local-timestamp-millis" || logical == "local-timestamp-micros") && tn.str == "long":
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nullable, nil
	case logical == "decimal" && tn.str == "bytes":
		dt, err := c.decimal(n, path)
		return dt, nullable, err
	case logical == "uuid" && tn.str == "string":
		return arrow.BinaryTypes.String, nullable, nil
	}
	return base, nullable, nil
}

func (c *avroConv) define(n *node, ns string, t arrow.DataType) {
	name := n.getStr("name")
	if name == "" {
		return
	}
	if v := n.getStr("namespace"); v != "" && !strings.Contains(name, ".") {
		ns = v
	}
	c.named[fullName(name, ns)] = t
}

func (c *avroConv) decimal(n *node, path string) (arrow.DataType, error) {
	prec, ok := n.getInt("precision")
	if !ok || prec < 1 {
		return nil, c.errf(path, "decimal without a valid precision")
	}
	scale, _ := n.getInt("scale")
	if scale < 0 || scale > prec {
		return nil, c.errf(path, "decimal scale %d out of range 0..%d", scale, prec)
	}
	if prec <= 38 {
		return &arrow.Decimal128Type{Precision: int32(prec), Scale: int32(scale)}, nil
	}
	if prec <= 76 {
		return &arrow.Decimal256Type{Precision: int32(prec), Scale: int32(scale)}, nil
	}
	return nil, c.errf(path, "decimal precision %d exceeds 76", prec)
}

func (c *avroConv) union(n *node, ns, path string) (arrow.DataType, bool, error) {
	nullable := false
	var members []*node
	for _, m := range n.vals {
		if m.kind == 's' && m.str == "null" {
			nullable = true
			continue
		}
		members = append(members, m)
	}
	switch len(members) {
	case 0:
		return arrow.BinaryTypes.String, true, nil
	case 1:
		t, _, err := c.typ(members[0], ns, path)
		return t, nullable, err
	}
	fields := make([]arrow.Field, len(members))
	for i, m := range members {
		t, _, err := c.typ(m, ns, fmt.Sprintf("%s|%d", path, i))
		if err != nil {
			return nil, false, err
		}
		fields[i] = arrow.Field{Name: fmt.Sprintf("member%d", i), Type: t, Nullable: true}
	}
	return arrow.StructOf(fields...), nullable, nil
}
