package window

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ErrPath reports a dot path that names no field of the schema, or a field of an unsupported
// type for its use (key, event time, aggregate input).
var ErrPath = errors.New("bad field path")

// FieldPath is a dot path (DESIGN.md §1: "value.user.id") resolved against a schema: the field
// index at each level, from the top-level field down to the leaf, which may sit inside structs.
type FieldPath struct {
	// Path is the dot path as given.
	Path string
	// Index holds the child index at each level: Index[0] is the top-level column.
	Index []int
	// Field is the leaf field.
	Field arrow.Field
}

// ResolvePath resolves path in s. A name that itself contains dots matches before a split into
// struct levels, so a flat column "value.amount" wins over value → amount. Lists and maps are
// not traversed. Errors wrap ErrPath and list the fields available at the failing level.
func ResolvePath(s *arrow.Schema, path string) (FieldPath, error) {
	if path == "" {
		return FieldPath{}, fmt.Errorf("%w: empty path", ErrPath)
	}
	idx, f, ok := resolveIn(s.Fields(), path)
	if !ok {
		names := make([]string, 0, s.NumFields())
		for _, f := range s.Fields() {
			names = append(names, f.Name)
		}
		return FieldPath{}, fmt.Errorf("%w: no field %q in the input (columns: %s)", ErrPath, path, strings.Join(names, ", "))
	}
	return FieldPath{Path: path, Index: idx, Field: f}, nil
}

func resolveIn(fields []arrow.Field, rem string) ([]int, arrow.Field, bool) {
	for i, f := range fields {
		if f.Name == rem {
			return []int{i}, f, true
		}
	}
	for i, f := range fields {
		st, isStruct := f.Type.(*arrow.StructType)
		if !isStruct || !strings.HasPrefix(rem, f.Name+".") {
			continue
		}
		if idx, leaf, ok := resolveIn(st.Fields(), rem[len(f.Name)+1:]); ok {
			return append([]int{i}, idx...), leaf, true
		}
	}
	return nil, arrow.Field{}, false
}

// Leaf returns the last component of the path ("amount" for "value.amount").
func (p FieldPath) Leaf() string {
	if p.Field.Name != "" {
		return p.Field.Name
	}
	return p.Path[strings.LastIndexByte(p.Path, '.')+1:]
}

// Column is the leaf array of a FieldPath in one batch, with the struct ancestors whose nulls
// also make the leaf null (Arrow does not propagate parent validity into children). The arrays
// are borrowed from the batch.
type Column struct {
	Arr     arrow.Array   // the leaf array
	parents []arrow.Array // ancestors that have nulls
}

// Column returns the leaf array of p in rec (borrowed, valid while rec is).
func (p FieldPath) Column(rec arrow.RecordBatch) Column {
	var c Column
	a := rec.Column(p.Index[0])
	for _, i := range p.Index[1:] {
		if a.NullN() > 0 {
			c.parents = append(c.parents, a)
		}
		a = a.(*array.Struct).Field(i)
	}
	c.Arr = a
	return c
}

// HasNulls reports whether any row of the column is null (itself or through an ancestor).
func (c Column) HasNulls() bool { return c.Arr.NullN() > 0 || len(c.parents) > 0 }

// IsNull reports whether row i is null, itself or through a null ancestor struct.
func (c Column) IsNull(i int) bool {
	if c.Arr.IsNull(i) {
		return true
	}
	for _, p := range c.parents {
		if p.IsNull(i) {
			return true
		}
	}
	return false
}
