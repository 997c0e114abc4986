package codec

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A key value encodes and hashes the same in every physical form of its column, and null is
// one key in all of them, distinct from "" and 0 (issue #17 item 5: a null dictionary slot
// read as "", and was another key than a null index). Each family (strings, binaries,
// integers) has its value types (plain, large, view; integer widths); each value type its
// forms: plain, dictionary with null indices, dictionary with null slots (int8 indices, a
// repeated and an unused slot), run-end encoded, run-end encoded over a dictionary with null
// slots; each form also sliced (array offsets), as a struct member (key value.c), and as a
// member of a struct whose own nulls hold the nulls. Every one must give exactly the keys
// built from the logical values, through AppendRow, AppendRows and HashRows; a whole struct
// as the key (JSON text) must give the same keys whatever the form of its member.
func TestKeyFormsEncodeAlike(t *testing.T) {
	mem := memory.NewGoAllocator()
	long, mid := "a value longer than a view's 12 inline bytes", "twenty bytes long..."
	strs := []any{"x", "x", "", nil, nil, long, "", "x", nil, mid, ""}
	bins := make([]any, len(strs))
	for i, v := range strs {
		if v != nil {
			bins[i] = []byte(v.(string))
		}
	}
	ints := []any{int64(7), int64(7), int64(0), nil, nil, int64(-3), int64(0), int64(7), nil, int64(300), int64(0)}
	families := []struct {
		name  string
		vals  []any
		pad   []any // values around the rows of the sliced forms
		types []arrow.DataType
		want  func(v any) []byte
	}{
		{"string", strs, []any{"pad", nil, "x"}, []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.StringView},
			func(v any) []byte { return appendBytes(nil, tagString, []byte(v.(string))) }},
		{"binary", bins, []any{[]byte("pad"), nil, []byte("x")}, []arrow.DataType{arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary, arrow.BinaryTypes.BinaryView},
			func(v any) []byte { return appendBytes(nil, tagBinary, v.([]byte)) }},
		{"int", ints, []any{int64(1), nil, int64(7)}, []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int16},
			func(v any) []byte { return appendU64(nil, tagInt, uint64(v.(int64))) }},
	}
	forms := []struct {
		name string
		make func(mem memory.Allocator, dt arrow.DataType, vals []any) arrow.Array
	}{
		{"plain", plainArray},
		{"dictionary, null index", dictNullIndex},
		{"dictionary, null slot", dictNullSlot},
		{"run-end encoded", func(mem memory.Allocator, dt arrow.DataType, vals []any) arrow.Array {
			return runEndEncoded(mem, dt, vals, plainArray)
		}},
		{"run-end encoded over a dictionary with a null slot", func(mem memory.Allocator, dt arrow.DataType, vals []any) arrow.Array {
			return runEndEncoded(mem, dt, vals, dictNullSlot)
		}},
	}
	for _, fam := range families {
		want := make([][]byte, len(fam.vals))
		for r, v := range fam.vals {
			if v == nil {
				want[r] = []byte{tagNull}
			} else {
				want[r] = fam.want(v)
			}
		}
		var structKeys [][]byte // whole-struct keys of the first form: every other must match
		for _, dt := range fam.types {
			for _, f := range forms {
				padded := append(append(append([]any{}, fam.pad...), fam.vals...), fam.pad...)
				sliced := array.NewSlice(f.make(mem, dt, padded), int64(len(fam.pad)), int64(len(fam.pad)+len(fam.vals)))
				for _, v := range []struct {
					name string
					arr  arrow.Array
				}{{"", f.make(mem, dt, fam.vals)}, {", sliced", sliced}} {
					name := fmt.Sprintf("%s/%s%s", dt, f.name, v.name)
					checkKeys(t, name, v.arr, "c", want)
					st := structOf(t, v.arr, nil)
					checkKeys(t, name+", in a struct", st, "value.c", want)
					keys := structKeyRows(t, st)
					if structKeys == nil {
						structKeys = keys
					}
					for r := range keys {
						if string(keys[r]) != string(structKeys[r]) {
							t.Errorf("%s, whole struct key, row %d: %q, want %q (as the first form)", name, r, keys[r], structKeys[r])
						}
					}
					// Nulls held by the enclosing struct, over a member that holds values there.
					filled := make([]any, len(fam.vals))
					for r, x := range fam.vals {
						if filled[r] = x; x == nil {
							filled[r] = fam.vals[0]
						}
					}
					member := f.make(mem, dt, filled)
					checkKeys(t, name+", in a struct with nulls", structOf(t, member, fam.vals), "value.c", want)
				}
			}
		}
	}
}

// checkKeys checks that the key column path of a one-column batch holding arr (as column c,
// or as the struct column value) encodes as want, row by row, through AppendRow, AppendRows
// and HashRows.
func checkKeys(t *testing.T, name string, arr arrow.Array, path string, want [][]byte) {
	t.Helper()
	col := "c"
	if path != "c" {
		col = "value"
	}
	s := arrow.NewSchema([]arrow.Field{{Name: col, Type: arr.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(s, []arrow.Array{arr}, int64(arr.Len()))
	enc, err := NewKeyEncoder(s, []string{path})
	if err != nil {
		t.Fatal(err)
	}
	cols := enc.Columns(rec)
	n := int(rec.NumRows())
	if n != len(want) {
		t.Fatalf("%s: %d rows, want %d", name, n, len(want))
	}
	hashes := HashRows(nil, cols, n)
	buf, ends := AppendRows(nil, nil, cols, n)
	for r := 0; r < n; r++ {
		if got := AppendRow(nil, cols, r); string(got) != string(want[r]) {
			t.Errorf("%s row %d: AppendRow %q, want %q", name, r, got, want[r])
		}
		lo := 0
		if r > 0 {
			lo = ends[r-1]
		}
		if got := buf[lo:ends[r]]; string(got) != string(want[r]) {
			t.Errorf("%s row %d: AppendRows %q, want %q", name, r, got, want[r])
		}
		if hashes[r] != Hash64(want[r]) {
			t.Errorf("%s row %d: HashRows %x, want %x (Hash64 of %q)", name, r, hashes[r], Hash64(want[r]), want[r])
		}
		if got := cols[0].IsNull(r); got != (want[r][0] == tagNull) {
			t.Errorf("%s row %d: IsNull %v", name, r, got)
		}
	}
	if cols[0].HasNulls() != true {
		t.Errorf("%s: HasNulls false over null rows", name)
	}
}

// structKeyRows returns the keys of the struct column st as the whole key (nested JSON text).
func structKeyRows(t *testing.T, st arrow.Array) [][]byte {
	t.Helper()
	s := arrow.NewSchema([]arrow.Field{{Name: "value", Type: st.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(s, []arrow.Array{st}, int64(st.Len()))
	enc, err := NewKeyEncoder(s, []string{"value"})
	if err != nil {
		t.Fatal(err)
	}
	cols := enc.Columns(rec)
	keys := make([][]byte, st.Len())
	for r := range keys {
		keys[r] = AppendRow(nil, cols, r)
	}
	return keys
}

// structOf wraps arr as the member c of a struct, null where nulls (when given) is nil.
func structOf(t *testing.T, arr arrow.Array, nulls []any) arrow.Array {
	t.Helper()
	var bm *memory.Buffer
	nullN := 0
	if nulls != nil {
		b := make([]byte, bitutil.BytesForBits(int64(len(nulls))))
		for r, v := range nulls {
			if v != nil {
				bitutil.SetBit(b, r)
			} else {
				nullN++
			}
		}
		bm = memory.NewBufferBytes(b)
	}
	st, err := array.NewStructArrayWithNulls([]arrow.Array{arr}, []string{"c"}, bm, nullN, 0)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func plainArray(mem memory.Allocator, dt arrow.DataType, vals []any) arrow.Array {
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
			continue
		}
		switch b := b.(type) {
		case *array.StringBuilder:
			b.Append(v.(string))
		case *array.LargeStringBuilder:
			b.Append(v.(string))
		case *array.StringViewBuilder:
			b.Append(v.(string))
		case *array.BinaryBuilder:
			b.Append(v.([]byte))
		case *array.BinaryViewBuilder:
			b.Append(v.([]byte))
		case *array.Int64Builder:
			b.Append(v.(int64))
		case *array.Int32Builder:
			b.Append(int32(v.(int64)))
		case *array.Int16Builder:
			b.Append(int16(v.(int64)))
		default:
			panic(fmt.Sprintf("no test values for %T", b))
		}
	}
	return b.NewArray()
}

func valueID(v any) string { return fmt.Sprintf("%T:%v", v, v) }

// dictNullIndex is vals as a dictionary of their distinct values, nulls as null indices.
func dictNullIndex(mem memory.Allocator, dt arrow.DataType, vals []any) arrow.Array {
	var dict []any
	slot := map[string]int32{}
	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	for _, v := range vals {
		if v == nil {
			ib.AppendNull()
			continue
		}
		i, ok := slot[valueID(v)]
		if !ok {
			i = int32(len(dict))
			slot[valueID(v)] = i
			dict = append(dict, v)
		}
		ib.Append(i)
	}
	return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: dt}, ib.NewArray(), plainArray(mem, dt, dict))
}

// dictNullSlot is vals as a dictionary (int8 indices, no null index) whose slot 1 is null,
// with every value in two slots (rows alternate between them) and an unused last slot.
func dictNullSlot(mem memory.Allocator, dt arrow.DataType, vals []any) arrow.Array {
	dict := []any{nil, nil}
	slots := map[string][2]int8{}
	for _, v := range vals {
		if _, ok := slots[valueID(v)]; v != nil && !ok {
			slots[valueID(v)] = [2]int8{int8(len(dict)), int8(len(dict) + 1)}
			dict = append(dict, v, v)
		}
	}
	dict[0] = dict[2] // slot 0 holds a value too, so that only slot 1 is null
	dict = append(dict, dict[2])
	ib := array.NewInt8Builder(mem)
	defer ib.Release()
	for r, v := range vals {
		if v == nil {
			ib.Append(1)
		} else {
			ib.Append(slots[valueID(v)][r%2])
		}
	}
	return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: dt}, ib.NewArray(), plainArray(mem, dt, dict))
}

// runEndEncoded is vals as runs of equal values (nulls included), the run values made by
// values.
func runEndEncoded(mem memory.Allocator, dt arrow.DataType, vals []any, values func(memory.Allocator, arrow.DataType, []any) arrow.Array) arrow.Array {
	var runs []any
	eb := array.NewInt32Builder(mem)
	defer eb.Release()
	for r, v := range vals {
		if r+1 < len(vals) && valueID(vals[r+1]) == valueID(v) {
			continue
		}
		runs = append(runs, v)
		eb.Append(int32(r + 1))
	}
	return array.NewRunEndEncodedArray(eb.NewArray(), values(mem, dt, runs), len(vals), 0)
}
