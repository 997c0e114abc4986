package delta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// IcebergCompatV2 (PROTOCOL.md "Iceberg Compatibility V2"): a table whose writers keep it
// convertible to Apache Iceberg. This package does not write Iceberg metadata (nor does the
// feature ask it to); it appends to such a table only where it meets the writer requirements,
// and refuses, naming the feature and the requirement, where it does not.

// FeatureIcebergCompatV2 is the writer feature of IcebergCompatV2 tables.
const FeatureIcebergCompatV2 = "icebergCompatV2"

// NestedIDsKey is the column metadata key under which delta-spark records the ids of the list
// elements and map keys and values of a struct field (a JSON object: "<physical name>.element",
// ".key", ".value", nested levels dot-joined, to the id). PROTOCOL.md names the key
// parquet.field.nested.ids ([nestedIDsProtocolKey]); both are read.
const NestedIDsKey = "delta.columnMapping.nested.ids"

const nestedIDsProtocolKey = "parquet.field.nested.ids"

// NestedIDs returns the nested ids of f ([NestedIDsKey]); nil when it records none.
func (f *StructField) NestedIDs() (map[string]int64, error) {
	raw, ok := f.Metadata[NestedIDsKey]
	if !ok {
		if raw, ok = f.Metadata[nestedIDsProtocolKey]; !ok {
			return nil, nil
		}
	}
	var ids map[string]int64
	if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, fmt.Errorf("column %s: %s is not an object of ids: %w", f.Name, NestedIDsKey, err)
	}
	return ids, nil
}

// checkIcebergCompatV2 verifies, for a table with writer feature icebergCompatV2 and
// delta.enableIcebergCompatV2=true, the writer requirements of PROTOCOL.md "Writer
// Requirements for IcebergCompatV2" that an append by this package could break:
//   - column mapping in mode name or id;
//   - IcebergCompatV1 and deletion vectors not active;
//   - not partitioned: partition values must be materialized in the data files, which this
//     package does not do (refused);
//   - only the allowed types (byte … date, array, map, struct);
//   - every list element and map key and value has a nested id (written as its Parquet field
//     id, [StructType.DataFileArrow]), also in a schema evolved by the write.
//
// The others hold for every file this package writes: numRecords in every add's stats, and
// timestamps as INT64.
func checkIcebergCompatV2(p *Protocol, m *Metadata, schema *StructType) error {
	if !strings.EqualFold(m.Configuration["delta.enableIcebergCompatV2"], "true") {
		return nil
	}
	refuse := func(format string, args ...any) error {
		return unsupported("writer feature icebergCompatV2: "+format, args...)
	}
	if mode := m.ColumnMapping(); mode != MappingName && mode != MappingID {
		return refuse("column mapping mode %q (it needs name or id)", mode)
	}
	if slices.Contains(writerFeaturesOf(p), "icebergCompatV1") || strings.EqualFold(m.Configuration["delta.enableIcebergCompatV1"], "true") {
		return refuse("IcebergCompatV1 is active too")
	}
	if slices.Contains(writerFeaturesOf(p), FeatureDeletionVectors) && strings.EqualFold(m.Configuration["delta.enableDeletionVectors"], "true") {
		return refuse("deletion vectors are active (delta.enableDeletionVectors=true)")
	}
	if len(m.PartitionColumns) > 0 {
		return refuse("the table is partitioned (by %s): IcebergCompatV2 needs the partition values inside the data files, which streamkit does not write", strings.Join(m.PartitionColumns, ", "))
	}
	return walkFields(schema, "", func(path string, f *StructField) error {
		ids, err := f.NestedIDs()
		if err != nil {
			return err
		}
		return checkIcebergType(path, f.PhysicalName(m.ColumnMapping()), f.Type, ids, refuse)
	})
}

// checkIcebergType checks that t (of the field at display path path, nested-id key key) is an
// allowed type and that its list elements and map keys and values have ids in ids; struct
// fields below are walkFields' (their ids are their own).
func checkIcebergType(path, key string, t DataType, ids map[string]int64, refuse func(string, ...any) error) error {
	need := func(sub string, et DataType) error {
		if _, ok := ids[key+"."+sub]; !ok {
			return refuse("column %s has no nested id for %s.%s (%s), which IcebergCompatV2 requires", path, path, sub, NestedIDsKey)
		}
		return checkIcebergType(path+"."+sub, key+"."+sub, et, ids, refuse)
	}
	switch t := t.(type) {
	case *StructType:
		return nil
	case ArrayType:
		return need("element", t.ElementType)
	case MapType:
		if err := need("key", t.KeyType); err != nil {
			return err
		}
		return need("value", t.ValueType)
	case DecimalType:
		return nil
	case PrimitiveType:
		switch t {
		case TypeByte, TypeShort, TypeInteger, TypeLong, TypeFloat, TypeDouble, TypeString, TypeBinary,
			TypeBoolean, TypeTimestamp, TypeTimestampNTZ, TypeDate:
			return nil
		}
	}
	return refuse("column %s has type %s, which IcebergCompatV2 does not allow", path, t)
}
