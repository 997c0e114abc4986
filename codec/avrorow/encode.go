package avrorow

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/linkedin/goavro/v2"
)

// FromArrow derives an Avro schema (JSON) for values of Arrow type t, the inverse of
// schema.AvroType where one exists: struct → record (named name, nested records name_field),
// list → array, map<string,V> → map, bool → boolean, int8/16/32 and uint8/16 → int, int64 and
// uint32 → long, float32 → float, float64 → double, string → string, binary → bytes,
// fixed_size_binary(n) → fixed, decimal128(p,s) → bytes decimal(p,s), date32 → int date,
// timestamp with a zone → long timestamp-millis (s, ms), timestamp-micros (µs) or
// timestamp-nanos (ns), without a zone → local-timestamp-millis/-micros/-nanos, time32(ms) → time-millis,
// time64(µs) → time-micros, dictionary → its value type. A nullable field becomes
// ["null", T] with default null. Struct field names that are not Avro names become one
// (invalid characters → '_', a leading digit → '_'); two columns that become the same name
// are an error naming both. Other types (uint64, unions, intervals…) are an error
// naming the field.
func FromArrow(t arrow.DataType, name string) (string, error) {
	v, err := avroOf(t, name, name)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func avroName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

func avroOf(t arrow.DataType, name, path string) (any, error) {
	switch t := t.(type) {
	case *arrow.BooleanType:
		return "boolean", nil
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Uint8Type, *arrow.Uint16Type:
		return "int", nil
	case *arrow.Int64Type, *arrow.Uint32Type:
		return "long", nil
	case *arrow.Float32Type:
		return "float", nil
	case *arrow.Float64Type:
		return "double", nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return "string", nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return "bytes", nil
	case *arrow.FixedSizeBinaryType:
		return map[string]any{"type": "fixed", "name": avroName(name), "size": t.ByteWidth}, nil
	case *arrow.Decimal128Type:
		return map[string]any{"type": "bytes", "logicalType": "decimal", "precision": t.Precision, "scale": t.Scale}, nil
	case *arrow.Decimal256Type:
		return map[string]any{"type": "bytes", "logicalType": "decimal", "precision": t.Precision, "scale": t.Scale}, nil
	case *arrow.Date32Type:
		return map[string]any{"type": "int", "logicalType": "date"}, nil
	case *arrow.Time32Type:
		if t.Unit == arrow.Millisecond {
			return map[string]any{"type": "int", "logicalType": "time-millis"}, nil
		}
	case *arrow.Time64Type:
		if t.Unit == arrow.Microsecond {
			return map[string]any{"type": "long", "logicalType": "time-micros"}, nil
		}
	case *arrow.TimestampType:
		lt := "timestamp-"
		if t.TimeZone == "" {
			lt = "local-timestamp-"
		}
		switch t.Unit {
		case arrow.Second, arrow.Millisecond:
			lt += "millis"
		case arrow.Microsecond:
			lt += "micros"
		default:
			lt += "nanos"
		}
		return map[string]any{"type": "long", "logicalType": lt}, nil
	case *arrow.DictionaryType:
		return avroOf(t.ValueType, name, path)
	case *arrow.ListType, *arrow.LargeListType, *arrow.FixedSizeListType, *arrow.ListViewType:
		el := t.(arrow.ListLikeType).ElemField()
		it, err := avroOf(el.Type, name+"_item", path+"[]")
		if err != nil {
			return nil, err
		}
		if el.Nullable {
			it = []any{"null", it}
		}
		return map[string]any{"type": "array", "items": it}, nil
	case *arrow.MapType:
		if k := t.KeyType(); k.ID() != arrow.STRING && k.ID() != arrow.LARGE_STRING {
			return nil, fmt.Errorf("%s: map keys are %s; Avro maps have string keys", path, k)
		}
		it, err := avroOf(t.ItemType(), name+"_value", path+"{}")
		if err != nil {
			return nil, err
		}
		if t.ItemField().Nullable {
			it = []any{"null", it}
		}
		return map[string]any{"type": "map", "values": it}, nil
	case *arrow.StructType:
		var fs []any
		seen := map[string]string{}
		for _, f := range t.Fields() {
			if prev, dup := seen[avroName(f.Name)]; dup {
				return nil, fmt.Errorf("%s: columns %q and %q both become Avro field name %q (Avro names are [A-Za-z_][A-Za-z0-9_]*); rename one", path, prev, f.Name, avroName(f.Name))
			}
			seen[avroName(f.Name)] = f.Name
			ft, err := avroOf(f.Type, name+"_"+avroName(f.Name), path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			fd := map[string]any{"name": avroName(f.Name), "type": ft}
			if f.Nullable {
				fd["type"], fd["default"] = []any{"null", ft}, nil
			}
			fs = append(fs, fd)
		}
		if fs == nil {
			fs = []any{}
		}
		return map[string]any{"type": "record", "name": avroName(name), "fields": fs}, nil
	}
	return nil, fmt.Errorf("%s: Arrow type %s has no Avro equivalent here (cast it first)", path, t)
}

// Encoder writes Arrow values as Avro binary of a schema, plain or in the Confluent wire
// format (WithID).
type Encoder struct {
	s      *Schema
	header []byte
}

// NewEncoder returns an encoder for values of schema s, plain Avro binary.
func NewEncoder(s *Schema) *Encoder { return &Encoder{s: s} }

// WithID makes the encoder write the Confluent wire format with schema id id.
func (e *Encoder) WithID(id uint32) *Encoder {
	e.header, _ = confluent.AppendEncode(nil, int(id), nil) // its error is always nil
	return e
}

// Append appends the encoding of row i of a to dst. Columns of a struct are matched to record
// fields by name (a field the struct lacks is null, or its default); errors name the field.
func (e *Encoder) Append(dst []byte, a arrow.Array, i int) ([]byte, error) {
	v, err := toNative(e.s.Node, a, i, "$")
	if err != nil {
		return dst, err
	}
	dst = append(dst, e.header...)
	return e.s.Codec.BinaryFromNative(dst, v)
}

func toNative(n *Node, a arrow.Array, i int, path string) (any, error) {
	if a == nil || a.IsNull(i) {
		if n.Type == "null" || n.Type == "union" && n.Null {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: null, but the Avro schema has no null branch (%s)", path, describe(n))
	}
	if d, ok := a.(*array.Dictionary); ok {
		return toNative(n, d.Dictionary(), d.GetValueIndex(i), path)
	}
	switch n.Type {
	case "union":
		if st, ok := a.(*array.Struct); ok && len(n.Members) > 1 && st.NumField() == len(n.Members) {
			for j := range n.Members { // the struct-of-branches layout of schema.AvroType
				if st.Field(j).IsValid(i) {
					v, err := toNative(n.Members[j], st.Field(j), i, path)
					return goavro.Union(n.Keys[j], v), err
				}
			}
		}
		var first error
		for j, m := range n.Members {
			v, err := toNative(m, a, i, path)
			if err == nil {
				return goavro.Union(n.Keys[j], v), nil
			}
			if first == nil {
				first = err
			}
		}
		return nil, first
	case "record":
		st, ok := a.(*array.Struct)
		if !ok {
			return nil, fmt.Errorf("%s: %s for an Avro record", path, a.DataType())
		}
		t := st.DataType().(*arrow.StructType)
		m := make(map[string]any, len(n.Fields))
		for _, f := range n.Fields {
			idx, ok := t.FieldIdx(f.Name)
			if !ok {
				for _, al := range f.Aliases {
					if idx, ok = t.FieldIdx(al); ok {
						break
					}
				}
			}
			if !ok {
				idx, ok = sanitizedIdx(t, f.Name)
			}
			if !ok {
				if f.HasDefault {
					v, err := DefaultValue(f.Node, f.Default)
					if err != nil {
						return nil, err
					}
					m[f.Name] = v
					continue
				}
				v, err := toNative(f.Node, nil, 0, path+"."+f.Name)
				if err != nil {
					return nil, fmt.Errorf("%s.%s: no such column and no default", path, f.Name)
				}
				m[f.Name] = v
				continue
			}
			v, err := toNative(f.Node, st.Field(idx), i, path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			m[f.Name] = v
		}
		return m, nil
	case "array":
		l, ok := a.(array.ListLike)
		if !ok {
			return nil, fmt.Errorf("%s: %s for an Avro array", path, a.DataType())
		}
		start, end := l.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			v, err := toNative(n.Items, l.ListValues(), int(j), path+"[]")
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case "map":
		mp, ok := a.(*array.Map)
		if !ok {
			return nil, fmt.Errorf("%s: %s for an Avro map", path, a.DataType())
		}
		start, end := mp.ValueOffsets(i)
		out := make(map[string]any, end-start)
		for j := start; j < end; j++ {
			k := mp.Keys().ValueStr(int(j))
			v, err := toNative(n.Items, mp.Items(), int(j), path+"{"+k+"}")
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	}
	return scalarNative(n, a, i, path)
}

func scalarNative(n *Node, a arrow.Array, i int, path string) (any, error) {
	bad := func() (any, error) {
		return nil, fmt.Errorf("%s: Arrow %s cannot be written as Avro %s", path, a.DataType(), describe(n))
	}
	var iv int64
	isInt := true
	switch a := a.(type) {
	case *array.Int8:
		iv = int64(a.Value(i))
	case *array.Int16:
		iv = int64(a.Value(i))
	case *array.Int32:
		iv = int64(a.Value(i))
	case *array.Int64:
		iv = a.Value(i)
	case *array.Uint8:
		iv = int64(a.Value(i))
	case *array.Uint16:
		iv = int64(a.Value(i))
	case *array.Uint32:
		iv = int64(a.Value(i))
	default:
		isInt = false
	}
	switch n.Type {
	case "boolean":
		if b, ok := a.(*array.Boolean); ok {
			return b.Value(i), nil
		}
	case "int":
		switch x := a.(type) {
		case *array.Date32:
			if n.Logical == "date" {
				return time.Unix(int64(x.Value(i))*86400, 0).UTC(), nil
			}
			return int32(x.Value(i)), nil
		case *array.Time32:
			if n.Logical == "time-millis" {
				return time.Duration(x.Value(i)) * time.Millisecond, nil
			}
		}
		if isInt && iv >= -1<<31 && iv < 1<<31 {
			if n.Logical == "date" {
				return time.Unix(iv*86400, 0).UTC(), nil
			}
			return int32(iv), nil
		}
	case "long":
		switch x := a.(type) {
		case *array.Timestamp:
			to, ok := tsUnits[strings.TrimPrefix(n.Logical, "local-")]
			if n.Logical == "" {
				to, ok = arrow.Microsecond, true
			}
			if ok {
				return convertTS(int64(x.Value(i)), x.DataType().(*arrow.TimestampType).Unit, to, path)
			}
		case *array.Time64:
			if n.Logical == "time-micros" {
				return time.Duration(x.Value(i)) * time.Microsecond, nil
			}
		}
		if isInt {
			switch n.Logical {
			case "timestamp-millis":
				return time.UnixMilli(iv).UTC(), nil
			case "timestamp-micros":
				return time.UnixMicro(iv).UTC(), nil
			}
			return iv, nil
		}
	case "float":
		if f, ok := a.(*array.Float32); ok {
			return f.Value(i), nil
		}
	case "double":
		switch f := a.(type) {
		case *array.Float64:
			return f.Value(i), nil
		case *array.Float32:
			return float64(f.Value(i)), nil
		}
	case "string", "enum":
		var s string
		switch x := a.(type) {
		case *array.String:
			s = x.Value(i)
		case *array.LargeString:
			s = x.Value(i)
		case *array.StringView:
			s = x.Value(i)
		default:
			return bad()
		}
		if n.Type == "enum" {
			for _, sym := range n.Symbols {
				if sym == s {
					return s, nil
				}
			}
			return nil, fmt.Errorf("%s: %q is not a symbol of enum %s", path, s, n.Name)
		}
		return s, nil
	case "bytes", "fixed":
		if n.Logical == "decimal" {
			var r *big.Rat
			switch x := a.(type) {
			case *array.Decimal128:
				r = new(big.Rat).SetFrac(x.Value(i).BigInt(), pow10(x.DataType().(*arrow.Decimal128Type).Scale))
			case *array.Decimal256:
				r = new(big.Rat).SetFrac(x.Value(i).BigInt(), pow10(x.DataType().(*arrow.Decimal256Type).Scale))
			}
			if r != nil {
				return r, nil
			}
		}
		var b []byte
		switch x := a.(type) {
		case *array.Binary:
			b = x.Value(i)
		case *array.LargeBinary:
			b = x.Value(i)
		case *array.BinaryView:
			b = x.Value(i)
		case *array.FixedSizeBinary:
			b = x.Value(i)
		default:
			return bad()
		}
		if n.Type == "fixed" && len(b) != n.Size {
			return nil, fmt.Errorf("%s: %d bytes for fixed %s(%d)", path, len(b), n.Name, n.Size)
		}
		return append([]byte{}, b...), nil
	}
	return bad()
}

// tsUnits maps the Avro timestamp logical types to their units.
var tsUnits = map[string]arrow.TimeUnit{"timestamp-millis": arrow.Millisecond, "timestamp-micros": arrow.Microsecond, "timestamp-nanos": arrow.Nanosecond}

// convertTS converts a timestamp of unit from into unit to (as the int64 goavro encodes for
// any timestamp logical type), refusing a value that would lose digits or overflow.
func convertTS(v int64, from, to arrow.TimeUnit, path string) (int64, error) {
	scale := map[arrow.TimeUnit]int64{arrow.Second: 1, arrow.Millisecond: 1e3, arrow.Microsecond: 1e6, arrow.Nanosecond: 1e9}
	f, t := scale[from], scale[to]
	switch {
	case f > t:
		if v%(f/t) != 0 {
			return 0, fmt.Errorf("%s: timestamp %d %s is not a whole number of %s (the Avro schema's unit); refusing to truncate", path, v, from, to)
		}
		return v / (f / t), nil
	case f < t:
		m := t / f
		if v > math.MaxInt64/m || v < math.MinInt64/m {
			return 0, fmt.Errorf("%s: timestamp %d %s overflows int64 %s", path, v, from, to)
		}
		return v * m, nil
	}
	return v, nil
}

// sanitizedIdx finds the struct field whose Avro name (avroName) is name: FromArrow renames
// columns that are not Avro names.
func sanitizedIdx(t *arrow.StructType, name string) (int, bool) {
	for j, f := range t.Fields() {
		if avroName(f.Name) == name {
			return j, true
		}
	}
	return 0, false
}

func pow10(s int32) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil) }
