package codec

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestResolvePath(t *testing.T) {
	i64 := arrow.PrimitiveTypes.Int64
	s := arrow.NewSchema([]arrow.Field{
		{Name: "value", Type: arrow.StructOf(
			arrow.Field{Name: "amount", Type: i64},
			arrow.Field{Name: "user.id", Type: i64},
			arrow.Field{Name: "user", Type: arrow.StructOf(arrow.Field{Name: "id", Type: i64}, arrow.Field{Name: "name", Type: i64})},
		)},
		{Name: "value.amount", Type: i64},
		{Name: "a", Type: i64},
		{Name: "a", Type: arrow.StructOf(arrow.Field{Name: "b", Type: i64})},
	}, nil)
	for _, tt := range []struct {
		path string
		want []int
	}{
		{"value.amount", []int{1}},     // a flat dotted column wins over value → amount
		{"value.user.id", []int{0, 1}}, // so does a dotted member inside a struct
		{"value.user.name", []int{0, 2, 1}},
		{"a.b", []int{3, 0}}, // the first "a" is no struct: the next one is tried
	} {
		p, err := ResolvePath(s, tt.path)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		if got := fmt.Sprint(p.Indexes); got != fmt.Sprint(tt.want) {
			t.Errorf("%s: got %s, want %v", tt.path, got, tt.want)
		}
	}
	_, err := ResolvePath(s, "value.nope")
	if !errors.Is(err, ErrPath) || !strings.Contains(err.Error(), `no field "value.nope"`) || !strings.Contains(err.Error(), "columns: value, value.amount, a, a") {
		t.Errorf("missing path: err = %v", err)
	}
	if _, err := ResolvePath(s, ""); !errors.Is(err, ErrPath) {
		t.Errorf("empty path: err = %v", err)
	}
}

// Arrow does not propagate a struct's nulls into its children (pyarrow and other producers
// leave the child values valid): Column must see them through the ancestors.
func TestColumnParentNulls(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	build := func(vValid, uValid []bool) arrow.RecordBatch {
		ib := array.NewInt32Builder(mem)
		defer ib.Release()
		for i := range vValid {
			ib.Append(int32(i))
		}
		id := ib.NewArray()
		defer id.Release()
		bitmap := func(valid []bool) (*memory.Buffer, int) {
			bb := array.NewBooleanBuilder(mem)
			defer bb.Release()
			nulls := 0
			for _, v := range valid {
				bb.Append(v)
				if !v {
					nulls++
				}
			}
			a := bb.NewBooleanArray()
			defer a.Release()
			buf := a.Data().Buffers()[1]
			buf.Retain()
			return buf, nulls
		}
		ubuf, un := bitmap(uValid)
		defer ubuf.Release()
		u, err := array.NewStructArrayWithNulls([]arrow.Array{id}, []string{"id"}, ubuf, un, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer u.Release()
		vbuf, vn := bitmap(vValid)
		defer vbuf.Release()
		v, err := array.NewStructArrayWithNulls([]arrow.Array{u}, []string{"u"}, vbuf, vn, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Release()
		s := arrow.NewSchema([]arrow.Field{{Name: "v", Type: v.DataType(), Nullable: true}}, nil)
		return array.NewRecordBatch(s, []arrow.Array{v}, int64(len(vValid)))
	}
	rec := build([]bool{true, false, true}, []bool{true, true, false})
	p, err := ResolvePath(rec.Schema(), "v.u.id")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Column(rec)
	if !c.HasNulls() || len(c.parents) != 2 || c.Arr.NullN() != 0 {
		t.Fatalf("HasNulls = %v with %d ancestors and %d leaf nulls, want true, 2, 0", c.HasNulls(), len(c.parents), c.Arr.NullN())
	}
	for i, want := range []bool{false, true, true} {
		if c.IsNull(i) != want {
			t.Errorf("row %d: IsNull = %v, want %v", i, c.IsNull(i), want)
		}
	}
	rec.Release()
	rec = build([]bool{true, true}, []bool{true, true})
	defer rec.Release()
	if c := p.Column(rec); c.HasNulls() || len(c.parents) != 0 {
		t.Errorf("no nulls: HasNulls = %v with %d ancestors", c.HasNulls(), len(c.parents))
	}
}
