package codec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Coarser units floor: an instant before 1970 stays in the unit (second, day, year) that holds
// it, where a truncating division moves it toward 1970.
func TestFloorTimestamps(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"})
	in := []int64{7, -1, -999, -1000, -1001, 0, 999, 1000, 1999, -86_400_000_000_001}
	for i, v := range in {
		if i == 5 {
			b.AppendNull()
			continue
		}
		b.Append(arrow.Timestamp(v))
	}
	arr := b.NewArray()
	b.Release()
	defer arr.Release()
	want := []int64{0, -1, -1, -1, -2, 0, 0, 1, 1, -86_400_000_001}
	to := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	for _, off := range []int{0, 1, 3} { // a slice keeps its offset and its nulls
		sl := array.NewSlice(arr, int64(off), int64(arr.Len()))
		d := FloorTimestamps(mem, sl.Data(), to)
		got := array.MakeFromData(d).(*array.Timestamp)
		if !arrow.TypeEqual(got.DataType(), to) || got.Len() != len(in)-off || got.NullN() != 1 {
			t.Fatalf("offset %d: %s, %d values, %d nulls", off, got.DataType(), got.Len(), got.NullN())
		}
		for i := 0; i < got.Len(); i++ {
			if k := i + off; k == 5 {
				if got.IsValid(i) {
					t.Errorf("offset %d: value %d is not null", off, k)
				}
			} else if int64(got.Value(i)) != want[k] {
				t.Errorf("offset %d: floor(%d ns) = %d µs, want %d", off, in[k], got.Value(i), want[k])
			}
		}
		got.Release()
		d.Release()
		sl.Release()
	}
	ms := FloorTimestamps(mem, arr.Data(), &arrow.TimestampType{Unit: arrow.Millisecond})
	defer ms.Release()
	if v := arrow.Int64Traits.CastFromBytes(ms.Buffers()[1].Bytes())[1]; v != -1 {
		t.Errorf("-1 ns in ms = %d, want -1", v)
	}
	if ts := arrow.Timestamp(want[1]).ToTime(arrow.Microsecond).UTC().Format("2006-01-02 15:04:05.000000"); ts != "1969-12-31 23:59:59.999999" {
		t.Errorf("-1 ns floors to %s", ts)
	}
}

func TestFloorDate64(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewDate64Builder(mem)
	defer b.Release()
	b.AppendValues([]arrow.Date64{-1, -86_400_000, 86_400_000 - 1, 86_400_000, -86_400_001}, nil)
	b.AppendNull()
	arr := b.NewArray()
	defer arr.Release()
	d := FloorDate64(mem, arr.Data())
	defer d.Release()
	got := array.MakeFromData(d).(*array.Date32)
	defer got.Release()
	for i, w := range []arrow.Date32{-1, -1, 0, 1, -2} {
		if got.Value(i) != w {
			t.Errorf("day of %d ms = %d, want %d", arr.(*array.Date64).Value(i), got.Value(i), w)
		}
	}
	if got.IsValid(5) || got.NullN() != 1 {
		t.Errorf("null lost")
	}
}
