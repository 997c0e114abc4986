package delta

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/delta"
)

// schemaDiff describes, one line per column, how the input schema in differs from the table
// schema: "+ col: type" for a column the table lacks, "~ col: table T, input U" for a column
// whose type differs (with "cannot be converted" when no lossless conversion exists), and
// "- col: type" for a table column missing from the input (written as null). Nested struct
// fields (also inside arrays and maps) are compared field by field, names ignoring case, as
// the writer matches them.
func schemaDiff(table *delta.StructType, in *delta.StructType) []string {
	var out []string
	diffStruct(table, in, "", &out)
	return out
}

func diffStruct(table, in *delta.StructType, prefix string, out *[]string) {
	seen := map[int]bool{}
	for _, f := range in.Fields {
		idx := -1
		for i, tf := range table.Fields {
			if strings.EqualFold(tf.Name, f.Name) {
				idx = i
				break
			}
		}
		if idx < 0 {
			*out = append(*out, fmt.Sprintf("+ %s%s: %s (not in the table)", prefix, f.Name, f.Type))
			continue
		}
		seen[idx] = true
		diffType(table.Fields[idx].Type, f.Type, prefix+table.Fields[idx].Name, out)
	}
	for i, tf := range table.Fields {
		if !seen[i] {
			*out = append(*out, fmt.Sprintf("- %s%s: %s (not in the input: written as null)", prefix, tf.Name, tf.Type))
		}
	}
}

func diffType(table, in delta.DataType, path string, out *[]string) {
	switch tt := table.(type) {
	case *delta.StructType:
		if it, ok := in.(*delta.StructType); ok {
			diffStruct(tt, it, path+".", out)
			return
		}
	case delta.ArrayType:
		if it, ok := in.(delta.ArrayType); ok {
			diffType(tt.ElementType, it.ElementType, path+".element", out)
			return
		}
	case delta.MapType:
		if it, ok := in.(delta.MapType); ok {
			diffType(tt.KeyType, it.KeyType, path+".key", out)
			diffType(tt.ValueType, it.ValueType, path+".value", out)
			return
		}
	}
	if table.String() == in.String() {
		return
	}
	note := "converted on write"
	if !leafConvertible(table, in) {
		note = "cannot be converted"
	}
	*out = append(*out, fmt.Sprintf("~ %s: table %s, input %s (%s)", path, table, in, note))
}

// leafConvertible asks the library whether a column of Delta type in can be written into a
// table column of type table.
func leafConvertible(table, in delta.DataType) bool {
	inSc, err := (&delta.StructType{Fields: []delta.StructField{{Name: "x", Type: in, Nullable: true}}}).ToArrow()
	if err != nil {
		return false
	}
	_, _, err = delta.MergeSchema(&delta.StructType{Fields: []delta.StructField{{Name: "x", Type: table, Nullable: true}}}, inSc)
	return err == nil
}

// relaxNullability makes nullable every (nested struct) field of st that is not nullable
// while the input either lacks it or declares it nullable (--merge-schema), in place, and
// reports whether anything changed. st must not share nested structs with a snapshot's schema
// (delta.MergeSchema returns fresh ones for every column the input has).
func relaxNullability(st *delta.StructType, in []arrow.Field) bool {
	changed := false
	for i := range st.Fields {
		f := &st.Fields[i]
		var match *arrow.Field
		for j := range in {
			if strings.EqualFold(in[j].Name, f.Name) {
				match = &in[j]
				break
			}
		}
		if !f.Nullable && (match == nil || match.Nullable) {
			f.Nullable = true
			changed = true
		}
		if match == nil {
			continue
		}
		if ts, ok := f.Type.(*delta.StructType); ok {
			if is, ok := match.Type.(*arrow.StructType); ok && relaxNullability(ts, is.Fields()) {
				changed = true
			}
		}
	}
	return changed
}
