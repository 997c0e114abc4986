package codec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ErrPath reports a dot path that names no field of the schema. Callers that also refuse a
// field for its type (window: key, event time, aggregate input) wrap it for that too.
var ErrPath = errors.New("bad field path")

// Path is a dot path (DESIGN.md §1: "value.user.id") resolved against a schema: the field
// index at each level, from the top-level column down to the leaf, which may sit inside
// structs ("value.user.id" → [1, 0, 2]).
type Path struct {
	// Name is the dot path as written.
	Name string
	// Indexes holds the child index at each level: Indexes[0] is the top-level column.
	Indexes []int
	// Field is the leaf field.
	Field arrow.Field
}

// ResolvePath resolves path in s. At every level a name that itself contains dots matches
// before a split into struct levels, so a flat column "value.amount" wins over value → amount
// (and a struct member "a.b" over a → b inside it). Lists and maps are not traversed. Errors
// wrap ErrPath and list the columns of s.
func ResolvePath(s *arrow.Schema, path string) (Path, error) {
	if path == "" {
		return Path{}, fmt.Errorf("%w: empty path", ErrPath)
	}
	idx, f, ok := resolveIn(s.Fields(), path)
	if !ok {
		names := make([]string, 0, s.NumFields())
		for _, f := range s.Fields() {
			names = append(names, f.Name)
		}
		return Path{}, fmt.Errorf("%w: no field %q in the input (columns: %s)", ErrPath, path, strings.Join(names, ", "))
	}
	return Path{Name: path, Indexes: idx, Field: f}, nil
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

// Leaf returns the name of the leaf field ("amount" for "value.amount").
func (p Path) Leaf() string {
	if p.Field.Name != "" {
		return p.Field.Name
	}
	return p.Name[strings.LastIndexByte(p.Name, '.')+1:]
}

// Column is the leaf array of a Path in one batch, with the struct ancestors whose nulls also
// make the leaf null (Arrow does not propagate parent validity into children). Only ancestors
// that have nulls are kept, so a row test costs nothing for them otherwise. A dictionary or
// run-end encoded leaf is null also where its value is (a null dictionary slot, a null run
// value), so that null is one value in every physical form. The arrays are borrowed from the
// batch.
type Column struct {
	Arr     arrow.Array   // the leaf array
	parents []arrow.Array // ancestors that have nulls
	encoded bool          // Arr is dictionary or run-end encoded: nulls may also sit in its values
}

// Column returns the leaf array of p in rec (borrowed, valid while rec is).
func (p Path) Column(rec arrow.RecordBatch) Column {
	var c Column
	a := rec.Column(p.Indexes[0])
	for _, i := range p.Indexes[1:] {
		if a.NullN() > 0 {
			c.parents = append(c.parents, a)
		}
		a = a.(*array.Struct).Field(i)
	}
	c.Arr = a
	switch a.(type) {
	case *array.Dictionary, *array.RunEndEncoded:
		c.encoded = true
	}
	return c
}

// HasNulls reports whether any row of the column may be null (itself, through its dictionary
// or run values, or through an ancestor); false means no row is.
func (c Column) HasNulls() bool {
	return c.Arr.NullN() > 0 || len(c.parents) > 0 || c.encoded && valueNulls(c.Arr)
}

// IsNull reports whether row i is null: a null of the leaf itself (for a dictionary: a null
// index or a null slot; for run-end encoding: a null run value), or of an ancestor struct.
func (c Column) IsNull(i int) bool {
	if c.Arr.IsNull(i) {
		return true
	}
	if c.encoded {
		if _, _, ok := logicalValue(c.Arr, i); !ok {
			return true
		}
	}
	for _, p := range c.parents {
		if p.IsNull(i) {
			return true
		}
	}
	return false
}

// logicalValue returns the array and index that hold the value of row i of a, through
// dictionaries (the slot its index names) and run-end encoding (its run's value), nested
// encodings included, and false where that value is null in any of those forms.
func logicalValue(a arrow.Array, i int) (arrow.Array, int, bool) {
	for {
		switch x := a.(type) {
		case *array.Dictionary:
			if x.IsNull(i) {
				return a, i, false
			}
			a, i = x.Dictionary(), x.GetValueIndex(i)
		case *array.RunEndEncoded:
			a, i = x.Values(), x.GetPhysicalIndex(i)
		default:
			return a, i, a.IsValid(i)
		}
	}
}

// valueNulls reports whether a (dictionary, run-end encoded or plain) may hold a null at any
// level: an index, a dictionary slot, a run value. Values outside a slice count too.
func valueNulls(a arrow.Array) bool {
	switch x := a.(type) {
	case *array.Dictionary:
		return x.NullN() > 0 || valueNulls(x.Dictionary())
	case *array.RunEndEncoded:
		return valueNulls(x.Values())
	}
	return a.NullN() > 0
}
