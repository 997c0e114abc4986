package delta

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"
)

// Column mapping (PROTOCOL.md "Column Mapping"): in modes name and id every struct field,
// top-level or nested, carries a physical name and a 32-bit id in its column metadata. Data
// files, partition values and statistics use the physical names (and Parquet field ids), so a
// column can be renamed or dropped without rewriting data; the schema's names are display
// names only.

// Column mapping table property and column metadata keys.
const (
	ColumnMappingModeKey = "delta.columnMapping.mode"         // table property: none, name or id
	MaxColumnIDKey       = "delta.columnMapping.maxColumnId"  // table property: the largest id assigned
	PhysicalNameKey      = "delta.columnMapping.physicalName" // column metadata: the name in data files
	ColumnIDKey          = "delta.columnMapping.id"           // column metadata: the Parquet field id
)

// ParquetFieldIDKey is the Arrow field metadata key under which pqarrow reads and writes a
// Parquet field id.
const ParquetFieldIDKey = "PARQUET:field_id"

// ColumnMappingMode is the value of delta.columnMapping.mode.
type ColumnMappingMode string

// Column mapping modes.
const (
	MappingNone ColumnMappingMode = "none" // data files use the display names
	MappingName ColumnMappingMode = "name" // data files are read by physical name
	MappingID   ColumnMappingMode = "id"   // data files are read by Parquet field id
)

// ColumnMapping returns the table's column mapping mode: MappingNone when the property is
// absent or "none", else the property's value (name, id, or a value checkRead refuses).
func (m *Metadata) ColumnMapping() ColumnMappingMode {
	v := m.Configuration[ColumnMappingModeKey]
	if v == "" {
		return MappingNone
	}
	return ColumnMappingMode(v)
}

// Mapped reports whether data files use physical names (mode name or id).
func (c ColumnMappingMode) Mapped() bool { return c == MappingName || c == MappingID }

// mappingSupported reports whether protocol p lets the column mapping property take effect
// (PROTOCOL.md: reader version 2, or 3 with the columnMapping reader feature).
func mappingSupported(p *Protocol) bool {
	return p.MinReaderVersion == 2 || p.MinReaderVersion == 3 && slices.Contains(p.ReaderFeatures, FeatureColumnMapping)
}

// PhysicalName returns the field's name in data files, partition values and statistics under
// mode: its delta.columnMapping.physicalName in modes name and id (its display name when the
// metadata is absent, as for columns of a table upgraded to name mode by a writer that kept
// them), else its display name.
func (f *StructField) PhysicalName(mode ColumnMappingMode) string {
	if !mode.Mapped() {
		return f.Name
	}
	if raw, ok := f.Metadata[PhysicalNameKey]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return f.Name
}

// ColumnID returns the field's delta.columnMapping.id, false when it has none.
func (f *StructField) ColumnID() (int64, bool) {
	raw, ok := f.Metadata[ColumnIDKey]
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(string(raw), 10, 32)
	return id, err == nil
}

// PhysicalColumn returns the physical name under mode of the top-level column name (the key
// of its partition value in add.partitionValues); name itself when the schema lacks it.
func (s *StructType) PhysicalColumn(mode ColumnMappingMode, name string) string {
	if f := s.Field(name); f != nil {
		return f.PhysicalName(mode)
	}
	return name
}

// PhysicalArrow returns the Arrow schema of the table's data as stored in data files under
// mode: the types of [StructType.ToArrow], every struct field named by its physical name and,
// when it has a column id, carrying it as Arrow field metadata PARQUET:field_id (which pqarrow
// writes into the Parquet schema and reports on read). Without column mapping it equals
// ToArrow. List elements and map keys and values carry no mapping of their own (PROTOCOL.md
// "Field Path"); the struct fields inside them do.
func (s *StructType) PhysicalArrow(mode ColumnMappingMode) (*arrow.Schema, error) {
	return s.physicalArrow(mode, false)
}

// DataFileArrow is [StructType.PhysicalArrow] for writing data files: list elements and map
// keys and values also carry, as PARQUET:field_id, the nested ids their nearest struct field
// records ([NestedIDs]; IcebergCompatV2 requires them in the Parquet schema).
func (s *StructType) DataFileArrow(mode ColumnMappingMode) (*arrow.Schema, error) {
	return s.physicalArrow(mode, true)
}

func (s *StructType) physicalArrow(mode ColumnMappingMode, nested bool) (*arrow.Schema, error) {
	if !mode.Mapped() {
		return s.ToArrow()
	}
	fields, err := physicalFields(s, mode, "", nested)
	if err != nil {
		return nil, err
	}
	return arrow.NewSchema(fields, nil), nil
}

func physicalFields(s *StructType, mode ColumnMappingMode, prefix string, nested bool) ([]arrow.Field, error) {
	fields := make([]arrow.Field, len(s.Fields))
	for i := range s.Fields {
		f := &s.Fields[i]
		var ids map[string]int64
		if nested {
			var err error
			if ids, err = f.NestedIDs(); err != nil {
				return nil, err
			}
		}
		pt := physicalType{mode: mode, nested: nested, ids: ids}
		t, err := pt.of(prefix+f.Name, f.PhysicalName(mode), f.Type)
		if err != nil {
			return nil, err
		}
		fields[i] = arrow.Field{Name: f.PhysicalName(mode), Type: t, Nullable: f.Nullable}
		if id, ok := f.ColumnID(); ok {
			fields[i].Metadata = fieldIDMetadata(id)
		}
	}
	return fields, nil
}

func fieldIDMetadata(id int64) arrow.Metadata {
	return arrow.NewMetadata([]string{ParquetFieldIDKey}, []string{strconv.FormatInt(id, 10)})
}

// physicalType maps the type of one struct field to its data-file Arrow type; ids are that
// field's nested ids (nil: none), keyed from its physical name.
type physicalType struct {
	mode   ColumnMappingMode
	nested bool
	ids    map[string]int64
}

// of returns the Arrow type of t at display path path and nested-id key key.
func (pt physicalType) of(path, key string, t DataType) (arrow.DataType, error) {
	switch t := t.(type) {
	case *StructType:
		fields, err := physicalFields(t, pt.mode, path+".", pt.nested)
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fields...), nil
	case ArrayType:
		et, err := pt.of(path+".element", key+".element", t.ElementType)
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(pt.field("element", key+".element", et, t.ContainsNull)), nil
	case MapType:
		kt, err := pt.of(path+".key", key+".key", t.KeyType)
		if err != nil {
			return nil, err
		}
		vt, err := pt.of(path+".value", key+".value", t.ValueType)
		if err != nil {
			return nil, err
		}
		return arrow.MapOfFields(pt.field("key", key+".key", kt, false), pt.field("value", key+".value", vt, t.ValueContainsNull)), nil
	}
	return toArrowType(path, t)
}

// field is the Arrow field of a list element or map key or value, with its nested id if any.
func (pt physicalType) field(name, key string, t arrow.DataType, nullable bool) arrow.Field {
	f := arrow.Field{Name: name, Type: t, Nullable: nullable}
	if id, ok := pt.ids[key]; ok {
		f.Metadata = fieldIDMetadata(id)
	}
	return f
}

// checkMapping verifies the column metadata a mapped table needs: in id mode every struct
// field has an id (a file is read by ids only).
func checkMapping(s *StructType, mode ColumnMappingMode) error {
	if mode != MappingID {
		return nil
	}
	return walkFields(s, "", func(path string, f *StructField) error {
		if _, ok := f.ColumnID(); !ok {
			return unsupported("column %s has no %s in column mapping mode id", path, ColumnIDKey)
		}
		return nil
	})
}

// walkFields calls fn on every struct field of s, nested ones too (inside structs, list
// elements and map keys and values), parents first; path is the field's dotted display path.
func walkFields(s *StructType, prefix string, fn func(path string, f *StructField) error) error {
	for i := range s.Fields {
		f := &s.Fields[i]
		if err := fn(prefix+f.Name, f); err != nil {
			return err
		}
		if err := walkNested(f.Type, prefix+f.Name, fn); err != nil {
			return err
		}
	}
	return nil
}

func walkNested(t DataType, path string, fn func(string, *StructField) error) error {
	switch t := t.(type) {
	case *StructType:
		return walkFields(t, path+".", fn)
	case ArrayType:
		return walkNested(t.ElementType, path+".element", fn)
	case MapType:
		if err := walkNested(t.KeyType, path+".key", fn); err != nil {
			return err
		}
		return walkNested(t.ValueType, path+".value", fn)
	}
	return nil
}

// assignColumnMapping gives every struct field of st without a column id a new id (above
// both delta.columnMapping.maxColumnId of conf and every id in st) and a new physical name
// col-<uuid>, as PROTOCOL.md "Writer Requirements for Column Mapping" asks for new columns;
// fields that have them keep theirs. It returns the new schema and a copy of conf with the
// raised maxColumnId. st is not modified.
func assignColumnMapping(st *StructType, conf map[string]string) (*StructType, map[string]string) {
	maxID, _ := strconv.ParseInt(conf[MaxColumnIDKey], 10, 64)
	_ = walkFields(st, "", func(_ string, f *StructField) error {
		if id, ok := f.ColumnID(); ok && id > maxID {
			maxID = id
		}
		return nil
	})
	out := cloneStruct(st)
	_ = walkFields(out, "", func(_ string, f *StructField) error {
		if _, ok := f.ColumnID(); ok {
			return nil
		}
		maxID++
		md := make(map[string]json.RawMessage, len(f.Metadata)+2)
		for k, v := range f.Metadata {
			md[k] = v
		}
		md[ColumnIDKey] = json.RawMessage(strconv.FormatInt(maxID, 10))
		if _, ok := md[PhysicalNameKey]; !ok {
			name, _ := json.Marshal("col-" + uuid.NewString())
			md[PhysicalNameKey] = name
		}
		f.Metadata = md
		return nil
	})
	nc := make(map[string]string, len(conf)+1)
	for k, v := range conf {
		nc[k] = v
	}
	nc[MaxColumnIDKey] = strconv.FormatInt(maxID, 10)
	return out, nc
}

// cloneStruct copies the struct types of st deeply (fields slices; metadata maps are shared
// and must be replaced, not modified).
func cloneStruct(st *StructType) *StructType {
	out := &StructType{Fields: slices.Clone(st.Fields)}
	for i := range out.Fields {
		out.Fields[i].Type = cloneType(out.Fields[i].Type)
	}
	return out
}

func cloneType(t DataType) DataType {
	switch t := t.(type) {
	case *StructType:
		return cloneStruct(t)
	case ArrayType:
		t.ElementType = cloneType(t.ElementType)
		return t
	case MapType:
		t.KeyType, t.ValueType = cloneType(t.KeyType), cloneType(t.ValueType)
		return t
	}
	return t
}

// checkMappingMode refuses a column mapping mode this package does not know, and a mapped
// table whose protocol does not support column mapping (whose property readers disagree on:
// PROTOCOL.md says to ignore it, some readers honour it).
func checkMappingMode(p *Protocol, m *Metadata) error {
	switch mode := m.ColumnMapping(); mode {
	case MappingNone:
		return nil
	case MappingName, MappingID:
		if !mappingSupported(p) {
			return unsupported("table property %s=%s without the columnMapping feature in the protocol (reader version %d)", ColumnMappingModeKey, mode, p.MinReaderVersion)
		}
		st, err := m.Schema()
		if err != nil {
			return err
		}
		return checkMapping(st, mode)
	default:
		return unsupported("column mapping mode %q (known: none, name, id)", string(mode))
	}
}

// String returns the mode's name.
func (c ColumnMappingMode) String() string { return string(c) }
