package delta

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/streamkit/streamkit/codec"
	dl "github.com/streamkit/streamkit/delta"
)

// Column mapping on read (PROTOCOL.md "Reader Requirements for Column Mapping"). In name
// mode a column is found in a data file by its physical name (nested struct fields too), in
// id mode by its Parquet field id; a column a file lacks is null. Partition values and
// statistics are keyed by physical names. The batches carry the display names: a column is
// conformed to its physical Arrow type (as found in the file) and then retyped to the
// display type, which shares every buffer.

// colmap is what a Reader knows of the table's column mapping.
type colmap struct {
	mode dl.ColumnMappingMode
	// phys maps each top-level column's display name to its physical name (partition value
	// keys, Parquet column names in name mode); nil without column mapping.
	phys map[string]string
	// ids and types hold each top-level column's id (-1 when it has none) and its physical
	// Arrow type (with PARQUET:field_id on struct fields), by display name.
	ids   map[string]int64
	types map[string]arrow.DataType
}

// newColmap reads the column mapping of a table with schema st under mode.
func newColmap(st *dl.StructType, mode dl.ColumnMappingMode) (colmap, error) {
	cm := colmap{mode: mode}
	if !mode.Mapped() {
		return cm, nil
	}
	psc, err := st.PhysicalArrow(mode)
	if err != nil {
		return cm, err
	}
	cm.phys = make(map[string]string, len(st.Fields))
	cm.ids = make(map[string]int64, len(st.Fields))
	cm.types = make(map[string]arrow.DataType, len(st.Fields))
	for i := range st.Fields {
		f := &st.Fields[i]
		cm.phys[f.Name] = f.PhysicalName(mode)
		cm.ids[f.Name] = -1
		if id, ok := f.ColumnID(); ok {
			cm.ids[f.Name] = id
		}
		cm.types[f.Name] = psc.Field(i).Type
	}
	return cm, nil
}

// key returns the name under which column c is found in partition values, statistics and
// (name mode) data files.
func (cm *colmap) key(c string) string {
	if p, ok := cm.phys[c]; ok {
		return p
	}
	return c
}

// fieldID is the Parquet field id pqarrow reports for a file's field, -1 when it has none.
func fieldID(f *arrow.Field) int64 {
	if i := f.Metadata.FindKey(dl.ParquetFieldIDKey); i >= 0 {
		if id, err := strconv.ParseInt(f.Metadata.Values()[i], 10, 32); err == nil {
			return id
		}
	}
	return -1
}

// match returns the index of the unused top-level field of a file (its manifest fields mf)
// that holds data column c, -1 when the file lacks it: by display name (exact, else ignoring
// case) without column mapping, by physical name in name mode, by field id in id mode. In id
// mode a file without any field id is an error (PROTOCOL.md allows refusing it).
func (cm *colmap) match(mf []pqarrow.SchemaField, used []bool, c string) (int, error) {
	if cm.mode == dl.MappingID {
		id := cm.ids[c]
		anyID := false
		for i := range mf {
			fid := fieldID(mf[i].Field)
			anyID = anyID || fid >= 0
			if !used[i] && fid >= 0 && fid == id {
				return i, nil
			}
		}
		if !anyID && len(mf) > 0 {
			return -1, fmt.Errorf("%w: the table uses column mapping mode id but the data file has no Parquet field ids", dl.ErrUnsupportedProtocol)
		}
		return -1, nil
	}
	name := cm.key(c)
	for i := range mf {
		if !used[i] && mf[i].Field.Name == name {
			return i, nil
		}
	}
	for i := range mf {
		if !used[i] && strings.EqualFold(mf[i].Field.Name, name) {
			return i, nil
		}
	}
	return -1, nil
}

// fileType returns the type data column c is conformed to when read from a file whose field
// has type src: its physical type, in id mode with every nested struct field named as the
// file's field of the same id (or by a name no field has, so that it reads as null); nil
// without column mapping or when the column has no nested struct (the display type serves).
func (cm *colmap) fileType(c string, src arrow.DataType) arrow.DataType {
	pt, ok := cm.types[c]
	if !ok || !hasStruct(pt) {
		return nil
	}
	if cm.mode == dl.MappingID {
		return byFileIDs(pt, src)
	}
	return pt
}

func hasStruct(t arrow.DataType) bool {
	switch t := t.(type) {
	case *arrow.StructType:
		return true
	case *arrow.MapType:
		return hasStruct(t.KeyType()) || hasStruct(t.ItemType())
	case arrow.ListLikeType:
		return hasStruct(t.Elem())
	}
	return false
}

// byFileIDs renames the struct fields of the physical type pt after the fields of the file
// type src that carry the same field ids.
func byFileIDs(pt, src arrow.DataType) arrow.DataType {
	switch t := pt.(type) {
	case *arrow.StructType:
		ss, _ := src.(*arrow.StructType)
		fields := make([]arrow.Field, t.NumFields())
		for i, f := range t.Fields() {
			id := fieldID(&f)
			f.Name = "\x00missing field id " + strconv.FormatInt(id, 10)
			var sub arrow.DataType
			if ss != nil && id >= 0 {
				for _, sf := range ss.Fields() {
					if fieldID(&sf) == id {
						f.Name, sub = sf.Name, sf.Type
						break
					}
				}
			}
			f.Type = byFileIDs(f.Type, sub)
			fields[i] = f
		}
		return arrow.StructOf(fields...)
	case *arrow.MapType:
		var sk, sv arrow.DataType
		if sm, ok := src.(*arrow.MapType); ok {
			sk, sv = sm.KeyType(), sm.ItemType()
		}
		return arrow.MapOfFields(arrow.Field{Name: "key", Type: byFileIDs(t.KeyType(), sk)},
			arrow.Field{Name: "value", Type: byFileIDs(t.ItemType(), sv), Nullable: t.ItemField().Nullable})
	case arrow.ListLikeType:
		var se arrow.DataType
		if sl, ok := src.(arrow.ListLikeType); ok {
			se = sl.Elem()
		}
		ef := t.ElemField()
		ef.Type = byFileIDs(ef.Type, se)
		return arrow.ListOfField(ef)
	}
	return pt
}

// sameColumn reports whether column f of a newer metadata (schema st, mode) is the column
// the reader outputs as f.Name (identified by physical name and, in id mode, id): false when
// it was dropped and added again under its old name.
func (cm *colmap) sameColumn(st *dl.StructType, mode dl.ColumnMappingMode, name string) bool {
	f := st.Field(name)
	if f == nil || !cm.mode.Mapped() && !mode.Mapped() {
		return true
	}
	if f.PhysicalName(mode) != cm.key(name) {
		return false
	}
	if id, ok := f.ColumnID(); ok && cm.mode == dl.MappingID && id != cm.ids[name] {
		return false
	}
	nt, err := (&dl.StructType{Fields: []dl.StructField{*f}}).PhysicalArrow(mode)
	if err != nil {
		return false
	}
	pt, ok := cm.types[name]
	if !ok {
		return !hasStruct(nt.Field(0).Type)
	}
	return samePhysical(nt.Field(0).Type, pt)
}

// samePhysical reports whether the nested struct fields the physical types a and b share by
// position keep their physical names (fields added at the end are fine).
func samePhysical(a, b arrow.DataType) bool {
	switch at := a.(type) {
	case *arrow.StructType:
		bt, ok := b.(*arrow.StructType)
		if !ok {
			return false
		}
		for _, bf := range bt.Fields() {
			i, ok := at.FieldIdx(bf.Name)
			if ok && !samePhysical(at.Field(i).Type, bf.Type) {
				return false
			}
		}
		for _, af := range at.Fields() {
			if _, ok := bt.FieldIdx(af.Name); !ok {
				return false // a struct field the output knows by another physical name
			}
		}
		return true
	case *arrow.MapType:
		bt, ok := b.(*arrow.MapType)
		return ok && samePhysical(at.KeyType(), bt.KeyType()) && samePhysical(at.ItemType(), bt.ItemType())
	case arrow.ListLikeType:
		bt, ok := b.(arrow.ListLikeType)
		return ok && samePhysical(at.Elem(), bt.Elem())
	}
	return true
}

// conformMapped conforms d to ft, the column's type as named in the data file (fileType),
// and retypes the result to the display type dst (no copy).
func conformMapped(ctx context.Context, mem memory.Allocator, d arrow.ArrayData, ft, dst arrow.DataType, path string) (arrow.ArrayData, error) {
	c, err := conformData(ctx, mem, d, ft, path)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	return codec.Retype(c, dst), nil
}

// readableMapped is readable for a table with column mapping. A metaData action of a
// version up to the one whose schema the output has is older than that schema, which reads
// every file by physical names: only the partitioning (physical names) must be the same. A
// later one must keep every output column under its name and physical name (a rename, or a
// column dropped and added again under its old name, fails the stream as a new column would).
func (s *Source) readableMapped(meta *dl.Metadata, v int64) error {
	st, err := meta.Schema()
	if err != nil {
		return err
	}
	mode := meta.ColumnMapping()
	parts := func(cols []string, phys func(string) string) string {
		out := make([]string, len(cols))
		for i, c := range cols {
			out[i] = phys(c)
		}
		return strings.Join(out, ",")
	}
	if parts(meta.PartitionColumns, func(c string) string { return st.PhysicalColumn(mode, c) }) != parts(s.meta.PartitionColumns, s.rd.cm.key) {
		return fmt.Errorf("partition columns changed from [%s] to [%s]", strings.Join(s.meta.PartitionColumns, ", "), strings.Join(meta.PartitionColumns, ", "))
	}
	if v <= s.schemaVersion {
		return nil
	}
	sc, err := st.ToArrow()
	if err != nil {
		return err
	}
	for i, f := range sc.Fields() {
		idx := s.schema.FieldIndices(f.Name)
		if len(idx) == 0 {
			if len(s.cfg.Columns) > 0 {
				continue // projected away
			}
			phys := st.Fields[i].PhysicalName(mode)
			for out, p := range s.rd.cm.phys {
				if p == phys {
					return fmt.Errorf("column %s renamed to %s", out, f.Name)
				}
			}
			return fmt.Errorf("new column %s", f.Name)
		}
		if !s.rd.cm.sameColumn(st, mode, f.Name) {
			return fmt.Errorf("column %s was dropped and added again (or has a new nested field under an old name)", f.Name)
		}
		if !readsInto(f.Type, s.schema.Field(idx[0]).Type) {
			return fmt.Errorf("column %s changed type to %s", f.Name, typeName(f.Type))
		}
	}
	return nil
}
