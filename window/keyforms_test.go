package window

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Key columns run-end encoded, binary_view and dictionary-encoded with a null slot come out
// of the window key codec in their value types, with null where any form holds it and "" kept
// apart from null (issue #17 item 5: an REE key came out as JSON text, a null slot as "").
func TestKeyCodecEncodedForms(t *testing.T) {
	mem := checkedMem(t)
	ends := array.NewInt32Builder(mem)
	ends.AppendValues([]int32{2, 3, 4}, nil)
	runEnds := ends.NewArray()
	ends.Release()
	vals := array.NewInt64Builder(mem)
	vals.AppendValues([]int64{5, 0, 7}, []bool{true, false, true})
	runVals := vals.NewArray()
	vals.Release()
	ree := array.NewRunEndEncodedArray(runEnds, runVals, 4, 0)
	runEnds.Release()
	runVals.Release()
	bvb := array.NewBinaryViewBuilder(mem)
	bvb.AppendValues([][]byte{[]byte("ab"), nil, {}, []byte("a value longer than twelve bytes")}, []bool{true, false, true, true})
	bv := bvb.NewArray()
	bvb.Release()
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"x", "", ""}, []bool{true, false, true})
	dictVals := sb.NewArray()
	sb.Release()
	ib := array.NewInt8Builder(mem)
	ib.AppendValues([]int8{0, 1, 0, 2}, []bool{true, true, false, true}) // x, null slot, null index, ""
	idx := ib.NewArray()
	ib.Release()
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	dict := array.NewDictionaryArray(dt, idx, dictVals)
	idx.Release()
	dictVals.Release()
	s := arrow.NewSchema([]arrow.Field{
		{Name: "r", Type: ree.DataType(), Nullable: true},
		{Name: "bv", Type: bv.DataType(), Nullable: true},
		{Name: "d", Type: dt, Nullable: true},
	}, nil)
	rec := array.NewRecordBatch(s, []arrow.Array{ree, bv, dict}, 4)
	ree.Release()
	bv.Release()
	dict.Release()
	defer rec.Release()
	c, err := NewKeyCodec(s, []string{"r", "bv", "d"})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, f := range c.Fields() {
		types = append(types, f.Type.String())
	}
	if got := strings.Join(types, " "); got != "int64 binary_view utf8" {
		t.Errorf("output types %s, want int64 binary_view utf8", got)
	}
	out := encodeDecode(t, mem, c, rec)
	defer out.Release()
	var got []string
	for i := 0; i < int(out.NumRows()); i++ {
		var row []string
		for _, col := range out.Columns() {
			if col.IsNull(i) {
				row = append(row, "null")
			} else {
				row = append(row, "'"+col.ValueStr(i)+"'")
			}
		}
		got = append(got, strings.Join(row, " "))
	}
	want := []string{"'5' 'YWI=' 'x'", "'5' null null", "null '' null", "'7' 'YSB2YWx1ZSBsb25nZXIgdGhhbiB0d2VsdmUgYnl0ZXM=' ''"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("decoded keys:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// encodeDecode encodes the keys of rec with c and decodes them into a batch of c's fields.
func encodeDecode(t *testing.T, mem memory.Allocator, c *KeyCodec, rec arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	var keys EncodedKeys
	c.Encode(rec, &keys)
	ob := array.NewRecordBuilder(mem, arrow.NewSchema(c.Fields(), nil))
	defer ob.Release()
	for i := 0; i < keys.Len(); i++ {
		if err := c.Decode(keys.Key(i), ob.Fields()); err != nil {
			t.Fatal(err)
		}
	}
	return ob.NewRecordBatch()
}
