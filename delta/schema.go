package delta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec/schema"
)

// DataType is a Delta column type (PROTOCOL.md "Schema Serialization Format"): a
// [PrimitiveType], [DecimalType], [ArrayType], [MapType] or [*StructType].
type DataType interface {
	deltaType()
	// String returns the Spark-style type name, e.g. "long", "decimal(10,2)", "array<string>".
	String() string
}

// PrimitiveType is a Delta primitive type name: "string", "long", "integer", "short", "byte",
// "float", "double", "boolean", "binary", "date", "timestamp", "timestamp_ntz" (and, read
// only, "void" and "variant", which this package refuses to write).
type PrimitiveType string

// Primitive Delta types.
const (
	TypeString       PrimitiveType = "string"
	TypeLong         PrimitiveType = "long"
	TypeInteger      PrimitiveType = "integer"
	TypeShort        PrimitiveType = "short"
	TypeByte         PrimitiveType = "byte"
	TypeFloat        PrimitiveType = "float"
	TypeDouble       PrimitiveType = "double"
	TypeBoolean      PrimitiveType = "boolean"
	TypeBinary       PrimitiveType = "binary"
	TypeDate         PrimitiveType = "date"
	TypeTimestamp    PrimitiveType = "timestamp"
	TypeTimestampNTZ PrimitiveType = "timestamp_ntz"
)

func (PrimitiveType) deltaType() {}

// String returns the type name.
func (p PrimitiveType) String() string { return string(p) }

// DecimalType is decimal(Precision, Scale), Precision ≤ 38.
type DecimalType struct {
	Precision int // 1..38 digits
	Scale     int // digits after the point
}

func (DecimalType) deltaType() {}

// String returns "decimal(p,s)".
func (d DecimalType) String() string { return fmt.Sprintf("decimal(%d,%d)", d.Precision, d.Scale) }

// ArrayType is array<ElementType>.
type ArrayType struct {
	ElementType  DataType // element type
	ContainsNull bool     // elements may be null
}

func (ArrayType) deltaType() {}

// String returns "array<element>".
func (a ArrayType) String() string { return "array<" + a.ElementType.String() + ">" }

// MapType is map<KeyType, ValueType>; keys are never null.
type MapType struct {
	KeyType           DataType // key type (never null)
	ValueType         DataType // value type
	ValueContainsNull bool     // values may be null
}

func (MapType) deltaType() {}

// String returns "map<key,value>".
func (m MapType) String() string {
	return "map<" + m.KeyType.String() + "," + m.ValueType.String() + ">"
}

// StructType is a struct type and also the table schema (its top-level fields are the
// columns).
type StructType struct {
	Fields []StructField // in order
}

func (*StructType) deltaType() {}

// String returns "struct<name:type,...>".
func (s *StructType) String() string {
	parts := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		parts[i] = f.Name + ":" + f.Type.String()
	}
	return "struct<" + strings.Join(parts, ",") + ">"
}

// Field returns the field named name (exact match) or nil.
func (s *StructType) Field(name string) *StructField {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// StructField is one (possibly nested) column. Metadata holds column metadata as raw JSON
// values (delta.invariants, delta.generationExpression, delta.columnMapping.*, comments, …),
// kept byte-for-byte so other writers' metadata round-trips.
type StructField struct {
	Name     string                     // column name (case-insensitively unique)
	Type     DataType                   // column type
	Nullable bool                       // false: writers must reject nulls
	Metadata map[string]json.RawMessage // column metadata, raw JSON values
}

var decimalRE = regexp.MustCompile(`^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$`)

// ParseSchema parses a Delta schemaString (PROTOCOL.md "Schema Serialization Format").
func ParseSchema(s string) (*StructType, error) {
	t, err := parseType(json.RawMessage(s))
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	st, ok := t.(*StructType)
	if !ok {
		return nil, fmt.Errorf("parse schema: top-level type is %s, not struct", t)
	}
	return st, nil
}

func parseType(raw json.RawMessage) (DataType, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, err
		}
		if m := decimalRE.FindStringSubmatch(name); m != nil {
			p, _ := strconv.Atoi(m[1])
			sc, _ := strconv.Atoi(m[2])
			return DecimalType{Precision: p, Scale: sc}, nil
		}
		if name == "decimal" { // Spark's default decimal
			return DecimalType{Precision: 10, Scale: 0}, nil
		}
		return PrimitiveType(name), nil
	}
	var obj struct {
		Type              string            `json:"type"`
		Fields            []json.RawMessage `json:"fields"`
		ElementType       json.RawMessage   `json:"elementType"`
		ContainsNull      *bool             `json:"containsNull"`
		KeyType           json.RawMessage   `json:"keyType"`
		ValueType         json.RawMessage   `json:"valueType"`
		ValueContainsNull *bool             `json:"valueContainsNull"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	switch obj.Type {
	case "struct":
		st := &StructType{Fields: make([]StructField, 0, len(obj.Fields))}
		for _, fr := range obj.Fields {
			var f struct {
				Name     string                     `json:"name"`
				Type     json.RawMessage            `json:"type"`
				Nullable *bool                      `json:"nullable"`
				Metadata map[string]json.RawMessage `json:"metadata"`
			}
			if err := json.Unmarshal(fr, &f); err != nil {
				return nil, err
			}
			ft, err := parseType(f.Type)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			st.Fields = append(st.Fields, StructField{Name: f.Name, Type: ft, Nullable: f.Nullable == nil || *f.Nullable, Metadata: f.Metadata})
		}
		return st, nil
	case "array":
		et, err := parseType(obj.ElementType)
		if err != nil {
			return nil, fmt.Errorf("array element: %w", err)
		}
		return ArrayType{ElementType: et, ContainsNull: obj.ContainsNull == nil || *obj.ContainsNull}, nil
	case "map":
		kt, err := parseType(obj.KeyType)
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		vt, err := parseType(obj.ValueType)
		if err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
		return MapType{KeyType: kt, ValueType: vt, ValueContainsNull: obj.ValueContainsNull == nil || *obj.ValueContainsNull}, nil
	}
	return nil, fmt.Errorf("unknown type %s", raw)
}

// JSON renders the schema as a Delta schemaString (compact, fields in order, "metadata"
// always present).
func (s *StructType) JSON() string {
	var b bytes.Buffer
	writeType(&b, s)
	return b.String()
}

func writeType(b *bytes.Buffer, t DataType) {
	switch t := t.(type) {
	case PrimitiveType, DecimalType:
		WriteJSONString(b, t.String())
	case *StructType:
		b.WriteString(`{"type":"struct","fields":[`)
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"name":`)
			WriteJSONString(b, f.Name)
			b.WriteString(`,"type":`)
			writeType(b, f.Type)
			fmt.Fprintf(b, `,"nullable":%t,"metadata":`, f.Nullable)
			if len(f.Metadata) == 0 {
				b.WriteString("{}")
			} else {
				enc, _ := json.Marshal(f.Metadata) // sorted keys
				b.Write(enc)
			}
			b.WriteByte('}')
		}
		b.WriteString("]}")
	case ArrayType:
		b.WriteString(`{"type":"array","elementType":`)
		writeType(b, t.ElementType)
		fmt.Fprintf(b, `,"containsNull":%t}`, t.ContainsNull)
	case MapType:
		b.WriteString(`{"type":"map","keyType":`)
		writeType(b, t.KeyType)
		b.WriteString(`,"valueType":`)
		writeType(b, t.ValueType)
		fmt.Fprintf(b, `,"valueContainsNull":%t}`, t.ValueContainsNull)
	}
}

func WriteJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode appends '\n'
}

// ErrUnsupportedType is wrapped by errors about column types this package cannot write.
var ErrUnsupportedType = errors.New("unsupported type")

// FromArrowSchema maps an Arrow schema to a Delta table schema (DELTA.md "Types"). Every field
// becomes nullable, as Spark does when creating a table from a DataFrame.
//
//	Bool→boolean; Int8/16/32/64→byte/short/integer/long; Uint8→short, Uint16→integer,
//	Uint32→long, Uint64→decimal(20,0) (widened); Float32/64→float/double;
//	Decimal32/64/128/256 with precision ≤ 38→decimal(p,s); Utf8/LargeUtf8/Utf8View→string;
//	Binary/LargeBinary/BinaryView/FixedSizeBinary→binary; Date32/Date64→date;
//	Timestamp with a time zone→timestamp, without→timestamp_ntz (any unit; data is stored in
//	microseconds); Dictionary→its value type; Struct→struct; List/LargeList/FixedSizeList/
//	ListView→array; Map→map.
//
// Float16, Time, Duration, Interval, Union, Null, run-end-encoded and extension types are
// refused with an error naming the column and wrapping [ErrUnsupportedType]. Column names must
// be unique ignoring case and, as the table has no column mapping, must not contain any of
// ` ,;{}()\n\t=` (see [FromArrowSchemaFor]).
func FromArrowSchema(sc *arrow.Schema) (*StructType, error) {
	return FromArrowSchemaFor(sc, MappingNone)
}

// FromArrowSchemaFor is [FromArrowSchema] for a table in column mapping mode mode: under
// mode name or id column names may contain ` ,;{}()\n\t=` (data files use physical names).
func FromArrowSchemaFor(sc *arrow.Schema, mode ColumnMappingMode) (*StructType, error) {
	st := &StructType{}
	for _, f := range sc.Fields() {
		t, err := fromArrowType(f.Name, f.Type)
		if err != nil {
			return nil, err
		}
		st.Fields = append(st.Fields, StructField{Name: f.Name, Type: t, Nullable: true})
	}
	if err := validateNames(st, "", !mode.Mapped()); err != nil {
		return nil, err
	}
	return st, nil
}

func fromArrowType(path string, dt arrow.DataType) (DataType, error) {
	unsupported := func() (DataType, error) {
		return nil, fmt.Errorf("column %s: %w %s (convert it upstream, e.g. to a string, long or timestamp)", path, ErrUnsupportedType, dt)
	}
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return TypeBoolean, nil
	case *arrow.Int8Type:
		return TypeByte, nil
	case *arrow.Int16Type, *arrow.Uint8Type:
		return TypeShort, nil
	case *arrow.Int32Type, *arrow.Uint16Type:
		return TypeInteger, nil
	case *arrow.Int64Type, *arrow.Uint32Type:
		return TypeLong, nil
	case *arrow.Uint64Type:
		return DecimalType{Precision: 20, Scale: 0}, nil
	case *arrow.Float32Type:
		return TypeFloat, nil
	case *arrow.Float64Type:
		return TypeDouble, nil
	case arrow.DecimalType:
		if t.GetPrecision() > 38 {
			return nil, fmt.Errorf("column %s: %w %s: precision above 38", path, ErrUnsupportedType, dt)
		}
		return DecimalType{Precision: int(t.GetPrecision()), Scale: int(t.GetScale())}, nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return TypeString, nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return TypeBinary, nil
	case *arrow.Date32Type, *arrow.Date64Type:
		return TypeDate, nil
	case *arrow.TimestampType:
		if t.TimeZone == "" {
			return TypeTimestampNTZ, nil
		}
		return TypeTimestamp, nil
	case *arrow.DictionaryType:
		return fromArrowType(path, t.ValueType)
	case *arrow.StructType:
		st := &StructType{}
		for _, f := range t.Fields() {
			ft, err := fromArrowType(path+"."+f.Name, f.Type)
			if err != nil {
				return nil, err
			}
			st.Fields = append(st.Fields, StructField{Name: f.Name, Type: ft, Nullable: true})
		}
		if len(st.Fields) == 0 {
			return nil, fmt.Errorf("column %s: %w: struct without fields", path, ErrUnsupportedType)
		}
		return st, nil
	case *arrow.MapType:
		kt, err := fromArrowType(path+".key", t.KeyType())
		if err != nil {
			return nil, err
		}
		vt, err := fromArrowType(path+".value", t.ItemType())
		if err != nil {
			return nil, err
		}
		return MapType{KeyType: kt, ValueType: vt, ValueContainsNull: true}, nil
	case arrow.ListLikeType:
		et, err := fromArrowType(path+".element", t.Elem())
		if err != nil {
			return nil, err
		}
		return ArrayType{ElementType: et, ContainsNull: true}, nil
	}
	return unsupported()
}

const invalidNameChars = " ,;{}()\n\t="

func validateNames(st *StructType, prefix string, strict bool) error {
	seen := map[string]string{}
	for _, f := range st.Fields {
		full := prefix + f.Name
		if f.Name == "" {
			return fmt.Errorf("column %q: empty column name", full)
		}
		if strict && strings.ContainsAny(f.Name, invalidNameChars) {
			return fmt.Errorf("column %q: name contains one of ' ,;{}()\\n\\t=' (not allowed in Delta tables without column mapping; rename it upstream)", full)
		}
		low := strings.ToLower(f.Name)
		if other, ok := seen[low]; ok {
			return fmt.Errorf("column %q: duplicate of %q ignoring case", full, prefix+other)
		}
		seen[low] = f.Name
		if err := validateNestedNames(f.Type, full+".", strict); err != nil {
			return err
		}
	}
	return nil
}

func validateNestedNames(t DataType, prefix string, strict bool) error {
	switch t := t.(type) {
	case *StructType:
		return validateNames(t, prefix, strict)
	case ArrayType:
		return validateNestedNames(t.ElementType, prefix, strict)
	case MapType:
		if err := validateNestedNames(t.KeyType, prefix, strict); err != nil {
			return err
		}
		return validateNestedNames(t.ValueType, prefix, strict)
	}
	return nil
}

// ToArrow returns the canonical Arrow schema of the table's data: the types this package
// writes into Parquet data files and reads back (timestamps in µs with zone "UTC" or none;
// list elements named "element"; Date32; Decimal128).
func (s *StructType) ToArrow() (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(s.Fields))
	for i, f := range s.Fields {
		af, err := f.toArrow()
		if err != nil {
			return nil, err
		}
		fields[i] = af
	}
	return arrow.NewSchema(fields, nil), nil
}

func (f StructField) toArrow() (arrow.Field, error) {
	t, err := toArrowType(f.Name, f.Type)
	if err != nil {
		return arrow.Field{}, err
	}
	return arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable}, nil
}

func toArrowType(path string, t DataType) (arrow.DataType, error) {
	switch t := t.(type) {
	case PrimitiveType:
		switch t {
		case TypeString:
			return arrow.BinaryTypes.String, nil
		case TypeLong:
			return arrow.PrimitiveTypes.Int64, nil
		case TypeInteger:
			return arrow.PrimitiveTypes.Int32, nil
		case TypeShort:
			return arrow.PrimitiveTypes.Int16, nil
		case TypeByte:
			return arrow.PrimitiveTypes.Int8, nil
		case TypeFloat:
			return arrow.PrimitiveTypes.Float32, nil
		case TypeDouble:
			return arrow.PrimitiveTypes.Float64, nil
		case TypeBoolean:
			return arrow.FixedWidthTypes.Boolean, nil
		case TypeBinary:
			return arrow.BinaryTypes.Binary, nil
		case TypeDate:
			return arrow.FixedWidthTypes.Date32, nil
		case TypeTimestamp:
			return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
		case TypeTimestampNTZ:
			return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
		}
	case DecimalType:
		if t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision {
			return nil, fmt.Errorf("column %s: %w %s", path, ErrUnsupportedType, t)
		}
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}, nil
	case ArrayType:
		et, err := toArrowType(path+".element", t.ElementType)
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(arrow.Field{Name: "element", Type: et, Nullable: t.ContainsNull}), nil
	case MapType:
		kt, err := toArrowType(path+".key", t.KeyType)
		if err != nil {
			return nil, err
		}
		vt, err := toArrowType(path+".value", t.ValueType)
		if err != nil {
			return nil, err
		}
		return arrow.MapOfFields(arrow.Field{Name: "key", Type: kt}, arrow.Field{Name: "value", Type: vt, Nullable: t.ValueContainsNull}), nil
	case *StructType:
		fields := make([]arrow.Field, len(t.Fields))
		for i, f := range t.Fields {
			ft, err := toArrowType(path+"."+f.Name, f.Type)
			if err != nil {
				return nil, err
			}
			fields[i] = arrow.Field{Name: f.Name, Type: ft, Nullable: f.Nullable}
		}
		return arrow.StructOf(fields...), nil
	}
	return nil, fmt.Errorf("column %s: %w %s", path, ErrUnsupportedType, t)
}

// hasType reports whether any (nested) column of t has primitive type p.
func hasType(t DataType, p PrimitiveType) bool {
	switch t := t.(type) {
	case PrimitiveType:
		return t == p
	case *StructType:
		for _, f := range t.Fields {
			if hasType(f.Type, p) {
				return true
			}
		}
	case ArrayType:
		return hasType(t.ElementType, p)
	case MapType:
		return hasType(t.KeyType, p) || hasType(t.ValueType, p)
	}
	return false
}

// anyFieldMetadata reports the path of the first (nested) field whose metadata has a key
// with the given prefix, or "".
func anyFieldMetadata(st *StructType, prefix, path string) string {
	for _, f := range st.Fields {
		for k := range f.Metadata {
			if strings.HasPrefix(k, prefix) {
				return path + f.Name
			}
		}
		var inner *StructType
		switch t := f.Type.(type) {
		case *StructType:
			inner = t
		case ArrayType:
			inner, _ = t.ElementType.(*StructType)
		case MapType:
			inner, _ = t.ValueType.(*StructType)
		}
		if inner != nil {
			if p := anyFieldMetadata(inner, prefix, path+f.Name+"."); p != "" {
				return p
			}
		}
	}
	return ""
}

// SQLType returns the Spark SQL DDL spelling of t, as Spark's DESCRIBE prints a column:
// Delta's long, integer, short and byte become bigint, int, smallint and tinyint, nested types
// spell their elements so (array<bigint>, map<string,int>, struct<a:bigint,b:string>, with
// field names back-quoted when they are not plain identifiers, and NOT NULL on non-nullable
// struct fields); every other type keeps its Delta name (string, decimal(10,2), timestamp_ntz,
// variant …).
func SQLType(t DataType) string {
	switch t := t.(type) {
	case PrimitiveType:
		switch t {
		case TypeLong:
			return "bigint"
		case TypeInteger:
			return "int"
		case TypeShort:
			return "smallint"
		case TypeByte:
			return "tinyint"
		}
		return string(t)
	case ArrayType:
		return "array<" + SQLType(t.ElementType) + ">"
	case MapType:
		return "map<" + SQLType(t.KeyType) + "," + SQLType(t.ValueType) + ">"
	case *StructType:
		var b strings.Builder
		b.WriteString("struct<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(schema.QuoteName(f.Name))
			b.WriteString(":")
			b.WriteString(SQLType(f.Type))
			if !f.Nullable {
				b.WriteString(" NOT NULL")
			}
		}
		b.WriteString(">")
		return b.String()
	}
	return t.String()
}
