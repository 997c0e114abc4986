package window

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// checkedMem returns a checked allocator that fails the test if buffers leak.
func checkedMem(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// fakeClock is an injected processing-time clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Set(s string)            { c.t, _ = time.Parse(time.RFC3339Nano, s) }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

// buildBatch builds a record batch of schema s from rows of Go values: nil, int64/int,
// float64, string, bool, time.Time (timestamps), []any (structs).
func buildBatch(t testing.TB, mem memory.Allocator, s *arrow.Schema, rows [][]any) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	for _, r := range rows {
		for j, v := range r {
			appendAny(t, b.Field(j), v)
		}
	}
	return b.NewRecordBatch()
}

func appendAny(t testing.TB, b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		switch x := v.(type) {
		case int:
			b.Append(int64(x))
		case int64:
			b.Append(x)
		}
	case *array.Int32Builder:
		b.Append(int32(v.(int)))
	case *array.Uint32Builder:
		b.Append(uint32(v.(int)))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.TimestampBuilder:
		switch x := v.(type) {
		case time.Time:
			b.Append(arrow.Timestamp(Micros(x)))
		case string:
			b.Append(arrow.Timestamp(us(t, x)))
		case int64:
			b.Append(arrow.Timestamp(x))
		}
	case *array.StructBuilder:
		b.Append(true)
		for i, f := range v.([]any) {
			appendAny(t, b.FieldBuilder(i), f)
		}
	default:
		t.Fatalf("appendAny: unsupported builder %T", b)
	}
}

// rowsOf renders output batches as one string per row: start/end as RFC 3339 (UTC, or only
// the clock when timeOnly), other columns via ValueStr, separated by spaces.
func rowsOf(recs []arrow.RecordBatch, layout string) []string {
	var out []string
	for _, r := range recs {
		for i := 0; i < int(r.NumRows()); i++ {
			var parts []string
			for _, c := range r.Columns() {
				if c.IsNull(i) {
					parts = append(parts, "null")
					continue
				}
				if ts, ok := c.(*array.Timestamp); ok {
					parts = append(parts, TimeOf(int64(ts.Value(i))).Format(layout))
					continue
				}
				parts = append(parts, c.ValueStr(i))
			}
			out = append(out, strings.Join(parts, " "))
		}
	}
	return out
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

func diffRows(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n got: %s\nwant: %s", fmt.Sprintf("%q", got), fmt.Sprintf("%q", want))
	}
}
