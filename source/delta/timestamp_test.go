package delta

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Nanosecond timestamps written by other writers (pyarrow, Polars) are read as the
// microsecond that holds them, as Spark reads them: floored, also inside structs and lists, so
// an instant before 1970 keeps its second, day and year (issue #22).
func TestConformFloorsNanosecondsBefore1970(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ns := &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
	st := arrow.StructOf(arrow.Field{Name: "t", Type: ns, Nullable: true}, arrow.Field{Name: "l", Type: arrow.ListOf(&arrow.TimestampType{Unit: arrow.Nanosecond}), Nullable: true})
	in, _, err := array.FromJSON(mem, st, strings.NewReader(`[
		{"t": -1, "l": [-1001, 999]},
		null,
		{"t": -86400000000001, "l": null}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Release()
	us := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	dst := arrow.StructOf(arrow.Field{Name: "t", Type: us, Nullable: true}, arrow.Field{Name: "l", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true}), Nullable: true})
	for _, c := range []struct {
		arr  arrow.Array
		want string
	}{
		{in, `[{"l":["1969-12-31T23:59:59.999998","1970-01-01T00:00:00"],"t":"1969-12-31T23:59:59.999999Z"},null,{"l":null,"t":"1969-12-30T23:59:59.999999Z"}]`},
		{array.NewSlice(in, 2, 3), `[{"l":null,"t":"1969-12-30T23:59:59.999999Z"}]`},
	} {
		out, err := ConformArray(context.Background(), mem, "s", c.arr, dst)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := out.MarshalJSON()
		out.Release()
		if c.arr != in {
			c.arr.Release()
		}
		if g := strings.ReplaceAll(string(got), "\n", ""); g != c.want {
			t.Errorf("conformed\n got: %s\nwant: %s", g, c.want)
		}
	}
}
