package delta

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Type widening (PROTOCOL.md "Type Widening"): a column's type may change to a wider one after
// data files were written; those files keep the old type and readers convert their values to
// the current type. The history of a field's changes is the delta.typeChanges entry of the
// metadata of its nearest ancestor struct field.

// Type widening feature names: the stable feature and the preview name Delta 3.x wrote.
const (
	FeatureTypeWidening        = "typeWidening"
	FeatureTypeWideningPreview = "typeWidening-preview"
)

// TypeChangesKey is the field metadata key holding a field's type change history.
const TypeChangesKey = "delta.typeChanges"

// TypeChange is one entry of a field's delta.typeChanges history: the field (or, when
// FieldPath is set, its map "key"/"value" or array "element", dot-separated for nested maps
// and arrays) changed from FromType to ToType.
type TypeChange struct {
	FromType  DataType
	ToType    DataType
	FieldPath string
}

// TypeChanges parses f's delta.typeChanges metadata; nil when it has none. An entry whose
// types do not parse is an error naming the field.
func (f StructField) TypeChanges() ([]TypeChange, error) {
	raw, ok := f.Metadata[TypeChangesKey]
	if !ok {
		return nil, nil
	}
	var entries []struct {
		FromType  json.RawMessage `json:"fromType"`
		ToType    json.RawMessage `json:"toType"`
		FieldPath string          `json:"fieldPath"`
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("column %s: %s: %w", f.Name, TypeChangesKey, err)
	}
	out := make([]TypeChange, 0, len(entries))
	for _, e := range entries {
		from, err := parseType(e.FromType)
		if err != nil {
			return nil, fmt.Errorf("column %s: %s fromType: %w", f.Name, TypeChangesKey, err)
		}
		to, err := parseType(e.ToType)
		if err != nil {
			return nil, fmt.Errorf("column %s: %s toType: %w", f.Name, TypeChangesKey, err)
		}
		out = append(out, TypeChange{FromType: from, ToType: to, FieldPath: e.FieldPath})
	}
	return out, nil
}

// WideningSupported reports whether changing a column from type from to type to is one of the
// type changes PROTOCOL.md "Type Widening" lists: byte → short → integer → long; float →
// double; byte, short or integer → double; date → timestamp_ntz; decimal(p, s) →
// decimal(p+k1, s+k2) with k1 ≥ k2 ≥ 0; byte, short or integer → decimal(10+k1, k2) and long
// → decimal(20+k1, k2) with k1 ≥ k2 ≥ 0. A type is never a change of itself (false).
func WideningSupported(from, to DataType) bool {
	intRank := map[DataType]int{TypeByte: 1, TypeShort: 2, TypeInteger: 3, TypeLong: 4}
	fr, fromInt := intRank[from]
	switch t := to.(type) {
	case PrimitiveType:
		switch {
		case fromInt && intRank[t] > fr:
			return true
		case t == TypeDouble:
			return from == TypeFloat || fromInt && fr <= 3
		case t == TypeTimestampNTZ:
			return from == TypeDate
		}
	case DecimalType:
		if fd, ok := from.(DecimalType); ok {
			k1, k2 := t.Precision-fd.Precision, t.Scale-fd.Scale
			return k2 >= 0 && k1 >= k2 && (k1 > 0 || k2 > 0)
		}
		if fromInt {
			digits := 10
			if from == TypeLong {
				digits = 20
			}
			return t.Scale >= 0 && t.Precision-t.Scale >= digits
		}
	}
	return false
}

// checkTypeChanges verifies every delta.typeChanges entry of schema st (nested fields
// included) is a supported widening (PROTOCOL.md "Reader Requirements for Type Widening":
// readers fail on a type change they do not support). The error names the column and change.
func checkTypeChanges(st *StructType, prefix string) error {
	for _, f := range st.Fields {
		tcs, err := f.TypeChanges()
		if err != nil {
			return unsupported("%s", err)
		}
		for _, tc := range tcs {
			if !WideningSupported(tc.FromType, tc.ToType) {
				at := prefix + f.Name
				if tc.FieldPath != "" {
					at += "." + tc.FieldPath
				}
				return unsupported("column %s changed type from %s to %s, which is not a type widening streamkit reads (writer feature typeWidening)", at, tc.FromType, tc.ToType)
			}
		}
		if err := forNestedStructs(f.Type, func(inner *StructType) error {
			return checkTypeChanges(inner, prefix+f.Name+".")
		}); err != nil {
			return err
		}
	}
	return nil
}

// forNestedStructs calls fn for each struct type directly inside t (t itself, array elements,
// map keys and values, through nested arrays and maps).
func forNestedStructs(t DataType, fn func(*StructType) error) error {
	switch t := t.(type) {
	case *StructType:
		return fn(t)
	case ArrayType:
		return forNestedStructs(t.ElementType, fn)
	case MapType:
		if err := forNestedStructs(t.KeyType, fn); err != nil {
			return err
		}
		return forNestedStructs(t.ValueType, fn)
	}
	return nil
}

// hasTypeWidening reports whether the protocol lists a type widening feature among features.
func hasTypeWidening(features []string) bool {
	for _, f := range features {
		if f == FeatureTypeWidening || f == FeatureTypeWideningPreview {
			return true
		}
	}
	return false
}

// withoutSupportedProperties returns conf without the feature properties that do not stop a
// write when the table supports their feature: delta.enableTypeWidening only lets ALTER TABLE
// widen columns, which appends never do (write-delta never retypes a column), and
// delta.enableIcebergCompatV2 is honoured by checkIcebergCompatV2.
func withoutSupportedProperties(p *Protocol, conf map[string]string) map[string]string {
	features := writerFeaturesOf(p)
	supported := map[string]bool{
		"delta.enableTypeWidening":    hasTypeWidening(features),
		"delta.enableIcebergCompatV2": slices.Contains(features, FeatureIcebergCompatV2),
	}
	out := conf
	for key, ok := range supported {
		if _, set := conf[key]; set && ok {
			if len(out) == len(conf) {
				out = maps.Clone(conf) // once: the clone loses a key at once
			}
			delete(out, key)
		}
	}
	return out
}
