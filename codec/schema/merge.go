package schema

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Hint overrides or adds one column of an inferred schema (Databricks Auto Loader
// cloudFiles.schemaHints). Path is the column's dot path: struct members by name, list
// elements by the segment "element", map keys and values by "key" and "value".
type Hint struct {
	Path     []string
	Type     arrow.DataType
	Nullable bool
	Metadata arrow.Metadata
}

// ParseHints parses a schema-hint string: DDL columns whose names may be dot paths, e.g.
//
//	"amount decimal(10,2), user.id string, tags.element long, attrs.value int, `a.b` int"
//
// (a backquoted name is one segment, dots included). Errors are *SyntaxError.
func ParseHints(s string) ([]Hint, error) {
	p := &ddlParser{s: s, dotted: true}
	fields, err := p.columns(false)
	if err != nil {
		return nil, err
	}
	hints := make([]Hint, len(fields))
	for i, f := range fields {
		hints[i] = Hint{Path: strings.Split(f.Name, "\x00"), Type: f.Type, Nullable: f.Nullable, Metadata: f.Metadata}
	}
	return hints, nil
}

// Merge applies hints to base, usually an inferred schema: a hinted column that exists gets the
// hint's type, nullability and metadata; one that does not is appended to its struct (missing
// parent structs are created). base is not modified. A path that crosses a column that is not
// a struct, list or map (or uses a segment other than element/key/value under a list or map) is
// an error. Matching is exact (case-sensitive), as the decoders' field matching is.
func Merge(base *arrow.Schema, hints []Hint) (*arrow.Schema, error) {
	fields := append([]arrow.Field(nil), base.Fields()...)
	for _, h := range hints {
		if len(h.Path) == 0 {
			continue
		}
		var err error
		fields, err = applyHint(fields, h, h.Path)
		if err != nil {
			return nil, err
		}
	}
	md := base.Metadata()
	return arrow.NewSchema(fields, &md), nil
}

func applyHint(fields []arrow.Field, h Hint, path []string) ([]arrow.Field, error) {
	idx := -1
	for i, f := range fields {
		if f.Name == path[0] {
			idx = i
			break
		}
	}
	if len(path) == 1 {
		f := arrow.Field{Name: path[0], Type: h.Type, Nullable: h.Nullable, Metadata: h.Metadata}
		if idx < 0 {
			return append(fields, f), nil
		}
		out := append([]arrow.Field(nil), fields...)
		out[idx] = f
		return out, nil
	}
	if idx < 0 {
		sub, err := applyHint(nil, h, path[1:])
		if err != nil {
			return nil, err
		}
		return append(fields, arrow.Field{Name: path[0], Type: arrow.StructOf(sub...), Nullable: true}), nil
	}
	out := append([]arrow.Field(nil), fields...)
	t, err := hintType(out[idx].Type, h, path[1:], strings.Join(h.Path[:len(h.Path)-len(path)+1], "."))
	if err != nil {
		return nil, err
	}
	out[idx].Type = t
	return out, nil
}

// hintType applies a hint below a column of type t; path is what remains below it.
func hintType(t arrow.DataType, h Hint, path []string, at string) (arrow.DataType, error) {
	switch t := t.(type) {
	case *arrow.StructType:
		fs, err := applyHint(t.Fields(), h, path)
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fs...), nil
	case *arrow.ListType:
		if path[0] != "element" {
			return nil, fmt.Errorf("schema hint %s: %s is an array; address its elements as %s.element", strings.Join(h.Path, "."), at, at)
		}
		ef := t.ElemField()
		if len(path) == 1 {
			ef.Type, ef.Nullable = h.Type, h.Nullable
		} else {
			et, err := hintType(ef.Type, h, path[1:], at+".element")
			if err != nil {
				return nil, err
			}
			ef.Type = et
		}
		return arrow.ListOfField(ef), nil
	case *arrow.MapType:
		kf, vf := t.KeyField(), t.ItemField()
		var target *arrow.Field
		switch path[0] {
		case "key":
			target = &kf
		case "value":
			target = &vf
		default:
			return nil, fmt.Errorf("schema hint %s: %s is a map; address it as %s.key or %s.value", strings.Join(h.Path, "."), at, at, at)
		}
		if len(path) == 1 {
			target.Type = h.Type
			if path[0] == "value" {
				target.Nullable = h.Nullable
			}
		} else {
			st, err := hintType(target.Type, h, path[1:], at+"."+path[0])
			if err != nil {
				return nil, err
			}
			target.Type = st
		}
		return arrow.MapOfFields(kf, vf), nil
	}
	return nil, fmt.Errorf("schema hint %s: %s is %s, not a struct, array or map", strings.Join(h.Path, "."), at, TypeString(t))
}

// Widen returns the narrowest type that holds values of both a and b; schema inference folds
// it over the values it samples (jsonrow.Infer, csvrow.Infer). The rules, in order:
//
//   - equal types, or one side Null: the other side;
//   - integers widen to the larger integer (int8 < int16 < int32 < int64);
//   - an integer and a floating-point type, or two floating-point types: Float64;
//   - Date32 and Timestamp: Timestamp; two Timestamps with different zones: Timestamp(µs,"UTC");
//   - two structs: a struct with a's fields in order, then b's new fields, each member widened;
//     a member missing on one side is nullable;
//   - two lists: a list of the widened elements; two maps: a map of widened keys and values;
//   - anything else (boolean and number, number and text, struct and list, ...): Utf8, because
//     the decoders can store any value's text in a string column.
func Widen(a, b arrow.DataType) arrow.DataType {
	if arrow.TypeEqual(a, b) {
		return a
	}
	if a.ID() == arrow.NULL {
		return b
	}
	if b.ID() == arrow.NULL {
		return a
	}
	ra, rb := numRank(a), numRank(b)
	switch {
	case ra > 0 && rb > 0 && ra <= 4 && rb <= 4:
		if ra > rb {
			return a
		}
		return b
	case ra > 0 && rb > 0:
		return arrow.PrimitiveTypes.Float64
	}
	switch at := a.(type) {
	case *arrow.Date32Type:
		if bt, ok := b.(*arrow.TimestampType); ok {
			return bt
		}
	case *arrow.TimestampType:
		switch bt := b.(type) {
		case *arrow.Date32Type:
			return at
		case *arrow.TimestampType:
			if at.TimeZone == "" {
				return bt
			}
			return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		}
	case *arrow.StructType:
		if bt, ok := b.(*arrow.StructType); ok {
			return arrow.StructOf(WidenFields(at.Fields(), bt.Fields())...)
		}
	case *arrow.ListType:
		if bt, ok := b.(*arrow.ListType); ok {
			return arrow.ListOf(Widen(at.Elem(), bt.Elem()))
		}
	case *arrow.MapType:
		if bt, ok := b.(*arrow.MapType); ok {
			return arrow.MapOf(Widen(at.KeyType(), bt.KeyType()), Widen(at.ItemType(), bt.ItemType()))
		}
	}
	return arrow.BinaryTypes.String
}

// WidenFields merges two field lists by name as Widen does for structs.
func WidenFields(a, b []arrow.Field) []arrow.Field {
	out := append([]arrow.Field(nil), a...)
	pos := make(map[string]int, len(a))
	for i, f := range a {
		pos[f.Name] = i
	}
	seen := make([]bool, len(a))
	for _, f := range b {
		if i, ok := pos[f.Name]; ok {
			out[i].Type = Widen(out[i].Type, f.Type)
			out[i].Nullable = out[i].Nullable || f.Nullable
			seen[i] = true
			continue
		}
		f.Nullable = true
		out = append(out, f)
	}
	for i := range a {
		if !seen[i] {
			out[i].Nullable = true
		}
	}
	return out
}

// numRank orders numeric types: 1..4 integers by width, 5..6 floating point; 0 otherwise.
func numRank(t arrow.DataType) int {
	switch t.ID() {
	case arrow.INT8:
		return 1
	case arrow.INT16:
		return 2
	case arrow.INT32:
		return 3
	case arrow.INT64:
		return 4
	case arrow.FLOAT32:
		return 5
	case arrow.FLOAT64:
		return 6
	}
	return 0
}
