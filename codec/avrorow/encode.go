package avrorow

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
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
// timestamp with a zone → long timestamp-millis (s, ms) or timestamp-micros (µs, ns truncated
// to µs), without a zone → local-timestamp-millis/-micros, time32(ms) → time-millis,
// time64(µs) → time-micros, dictionary → its value type. A nullable field becomes
// ["null", T] with default null. Other types (uint64, unions, intervals…) are an error
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
		if t.Unit == arrow.Second || t.Unit == arrow.Millisecond {
			lt += "millis"
		} else {
			lt += "micros"
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
		for _, f := range t.Fields() {
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
	e.header = binary.BigEndian.AppendUint32([]byte{Magic}, id)
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
			t := x.Value(i).ToTime(x.DataType().(*arrow.TimestampType).Unit)
			switch n.Logical {
			case "timestamp-millis", "timestamp-micros":
				return t, nil
			case "local-timestamp-millis":
				return t.UnixMilli(), nil
			case "local-timestamp-micros", "":
				return t.UnixMicro(), nil
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

func pow10(s int32) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil) }
