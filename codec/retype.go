package codec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Retype returns d with type t, which must have d's physical layout and differ from d's type
// only in the names, nullability flags and metadata of struct fields, list elements and map
// entries (e.g. a Delta column's display names and the physical names of its data files under
// column mapping). Buffers are shared, nothing is copied; the result is a new reference.
func Retype(d arrow.ArrayData, t arrow.DataType) arrow.ArrayData {
	var children []arrow.ArrayData
	switch tt := t.(type) {
	case *arrow.StructType:
		children = make([]arrow.ArrayData, len(d.Children()))
		for i, c := range d.Children() {
			children[i] = Retype(c, tt.Field(i).Type)
		}
	case *arrow.MapType:
		children = []arrow.ArrayData{Retype(d.Children()[0], tt.Elem())}
	case arrow.ListLikeType:
		children = []arrow.ArrayData{Retype(d.Children()[0], tt.Elem())}
	default:
		children = d.Children()
		for _, c := range children {
			c.Retain()
		}
	}
	out := array.NewData(t, d.Len(), d.Buffers(), children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	return out
}
