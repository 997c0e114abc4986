package delta

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// MergeSchema returns the table schema extended with the (nested) columns of the Arrow
// schema in that the table lacks, for --merge-schema style schema evolution (Spark's
// mergeSchema): new top-level columns are appended, new struct fields are appended to their
// struct (also inside arrays and maps), all new fields nullable. Columns are matched by name
// ignoring case. A column whose input type cannot be written into the existing Delta type
// (see the DataWriter's conversions) is an error naming it; existing columns are never
// retyped. changed reports whether anything was added. A table whose columns carry physical
// names (column mapping) accepts any column name (see [FromArrowSchemaFor]).
func MergeSchema(table *StructType, in *arrow.Schema) (merged *StructType, changed bool, err error) {
	mode := MappingNone
	if anyFieldMetadata(table, PhysicalNameKey, "") != "" {
		mode = MappingName
	}
	inSt, err := FromArrowSchemaFor(in, mode)
	if err != nil {
		return nil, false, fmt.Errorf("merge schema: %w", err)
	}
	out, changed, err := mergeStruct(table, inSt, "")
	if err != nil {
		return nil, false, fmt.Errorf("merge schema: %w", err)
	}
	if err := validateNames(out, "", !mode.Mapped()); err != nil {
		return nil, false, fmt.Errorf("merge schema: %w", err)
	}
	return out, changed, nil
}

func mergeStruct(table, in *StructType, prefix string) (*StructType, bool, error) {
	out := &StructType{Fields: slices.Clone(table.Fields)}
	changed := false
	for _, f := range in.Fields {
		idx := -1
		for i, tf := range out.Fields {
			if strings.EqualFold(tf.Name, f.Name) {
				idx = i
				break
			}
		}
		if idx < 0 {
			out.Fields = append(out.Fields, StructField{Name: f.Name, Type: f.Type, Nullable: true})
			changed = true
			continue
		}
		t, ch, err := mergeType(out.Fields[idx].Type, f.Type, prefix+f.Name)
		if err != nil {
			return nil, false, err
		}
		if ch {
			out.Fields[idx].Type = t
			changed = true
		}
	}
	return out, changed, nil
}

func mergeType(table, in DataType, path string) (DataType, bool, error) {
	switch tt := table.(type) {
	case *StructType:
		if it, ok := in.(*StructType); ok {
			return mergeStruct(tt, it, path+".")
		}
	case ArrayType:
		if it, ok := in.(ArrayType); ok {
			et, ch, err := mergeType(tt.ElementType, it.ElementType, path+".element")
			if err != nil {
				return nil, false, err
			}
			tt.ElementType = et
			return tt, ch, nil
		}
	case MapType:
		if it, ok := in.(MapType); ok {
			kt, kch, err := mergeType(tt.KeyType, it.KeyType, path+".key")
			if err != nil {
				return nil, false, err
			}
			vt, vch, err := mergeType(tt.ValueType, it.ValueType, path+".value")
			if err != nil {
				return nil, false, err
			}
			tt.KeyType, tt.ValueType = kt, vt
			return tt, kch || vch, nil
		}
	default:
		if table.String() == in.String() {
			return table, false, nil
		}
		ta, err1 := toArrowType(path, table)
		ia, err2 := toArrowType(path, in)
		if err1 == nil && err2 == nil && CastAllowed(ia, ta) {
			return table, false, nil
		}
	}
	return nil, false, fmt.Errorf("column %s: input type %s cannot be written into the table's %s column", path, in, table)
}

// EvolveMetadata returns a copy of meta with schema st, and the protocol the new schema
// needs: p itself, or an upgrade to reader 3 / writer 7 with the timestampNtz feature when st
// gains a timestamp_ntz column (legacy features implied by the old writer version are listed
// explicitly). Under column mapping (mode name or id) every new (nested) column gets a new
// column id and physical name, and delta.columnMapping.maxColumnId is raised to the largest
// id. newProtocol is nil when p suffices. Commit both with CommitRequest.Metadata
// (and .Protocol); concurrent writers then fail with ConflictMetadata and must reload.
func EvolveMetadata(p *Protocol, meta *Metadata, st *StructType) (newProtocol *Protocol, newMeta *Metadata) {
	m := *meta
	if meta.ColumnMapping().Mapped() {
		st, m.Configuration = assignColumnMapping(st, meta.Configuration)
	}
	m.SchemaString = st.JSON()
	if !hasType(st, TypeTimestampNTZ) || slices.Contains(writerFeaturesOf(p), FeatureTimestampNTZ) {
		return nil, &m
	}
	np := &Protocol{MinReaderVersion: 3, MinWriterVersion: 7}
	if p.MinReaderVersion >= 3 {
		np.ReaderFeatures = slices.Clone(p.ReaderFeatures)
	} else if p.MinReaderVersion == 2 {
		np.ReaderFeatures = []string{FeatureColumnMapping}
	}
	np.WriterFeatures = slices.Clone(writerFeaturesOf(p))
	np.ReaderFeatures = append(np.ReaderFeatures, FeatureTimestampNTZ)
	np.WriterFeatures = append(np.WriterFeatures, FeatureTimestampNTZ)
	sort.Strings(np.ReaderFeatures)
	sort.Strings(np.WriterFeatures)
	return np, &m
}

// CastAllowed lists the lossless (or checked) conversions applied to primitive columns:
// integer widening/narrowing with overflow checks, uint64 to decimal(20,0), float32 to
// float64, decimals to decimal128, string/binary variants, Date64 to Date32 and timestamp
// unit changes that keep the with/without-time-zone kind.
func CastAllowed(src, dst arrow.DataType) bool {
	isInt := func(t arrow.DataType) bool { return arrow.IsInteger(t.ID()) }
	switch d := dst.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		return isInt(src)
	case *arrow.Decimal128Type:
		if _, ok := src.(arrow.DecimalType); ok {
			return true
		}
		return isInt(src)
	case *arrow.Float64Type:
		return src.ID() == arrow.FLOAT32
	case *arrow.StringType:
		return src.ID() == arrow.LARGE_STRING || src.ID() == arrow.STRING_VIEW
	case *arrow.BinaryType:
		return src.ID() == arrow.LARGE_BINARY || src.ID() == arrow.BINARY_VIEW || src.ID() == arrow.FIXED_SIZE_BINARY
	case *arrow.Date32Type:
		return src.ID() == arrow.DATE64
	case *arrow.TimestampType:
		s, ok := src.(*arrow.TimestampType)
		return ok && (s.TimeZone == "") == (d.TimeZone == "")
	}
	return false
}
