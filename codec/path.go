package codec

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Path is a resolved dot path into a schema: the field indexes from the top-level column down
// through struct children ("value.user.id" → [1, 0, 2]).
type Path struct {
	Name    string // the dot path as written
	Indexes []int
	Field   arrow.Field // the leaf field
}

// ResolvePath resolves a dot path (e.g. "value.user_id") against s. A top-level column whose
// name contains dots is matched first, as written. Errors name the path, the missing segment
// and the fields that exist at that level.
func ResolvePath(s *arrow.Schema, path string) (Path, error) {
	if idx := s.FieldIndices(path); len(idx) == 1 {
		return Path{Name: path, Indexes: idx, Field: s.Field(idx[0])}, nil
	}
	segs := strings.Split(path, ".")
	fields := s.Fields()
	p := Path{Name: path}
	for i, seg := range segs {
		found := -1
		for j, f := range fields {
			if f.Name == seg {
				found = j
				break
			}
		}
		if found < 0 {
			names := make([]string, len(fields))
			for j, f := range fields {
				names[j] = f.Name
			}
			return Path{}, fmt.Errorf("column %q: no field %q (have: %s)", path, seg, strings.Join(names, ", "))
		}
		p.Indexes = append(p.Indexes, found)
		p.Field = fields[found]
		if i < len(segs)-1 {
			st, ok := p.Field.Type.(*arrow.StructType)
			if !ok {
				return Path{}, fmt.Errorf("column %q: %q is %s, not a struct", path, seg, p.Field.Type)
			}
			fields = st.Fields()
		}
	}
	return p, nil
}

// Column returns the array at p in rec (borrowed: valid while rec is). Struct parents' nulls
// are not merged into the child; use IsNull to test a row through every level.
func (p Path) Column(rec arrow.RecordBatch) arrow.Array {
	a := rec.Column(p.Indexes[0])
	for _, i := range p.Indexes[1:] {
		a = a.(*array.Struct).Field(i)
	}
	return a
}

// IsNull reports whether row r is null at p or at any struct level above it.
func (p Path) IsNull(rec arrow.RecordBatch, r int) bool {
	a := rec.Column(p.Indexes[0])
	if a.IsNull(r) {
		return true
	}
	for _, i := range p.Indexes[1:] {
		a = a.(*array.Struct).Field(i)
		if a.IsNull(r) {
			return true
		}
	}
	return false
}
