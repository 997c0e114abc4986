package expr

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/internal/arrowtest"
)

// filterRecord is a batch of every column type FilterBatch copies itself (fixed-width,
// boolean, string, binary, large string) and of types it leaves to compute.FilterArray
// (struct, list, map), with edge values and nulls every third row in some columns.
func filterRecord(t *testing.T, mem memory.Allocator, rows int) arrow.RecordBatch {
	t.Helper()
	edge := arrow.NewSchema([]arrow.Field{
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
		{Name: "bool", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "str", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary},
		{Name: "date", Type: arrow.FixedWidthTypes.Date32},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 20, Scale: 3}, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "y", Type: arrow.BinaryTypes.String}), Nullable: true},
		{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "map", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)},
	}, nil)
	base := arrowtest.EdgeRecord(mem, edge, rows)
	defer base.Release()
	// Nulls every third row, in a fixed-width, a boolean and a string column.
	ib, bb, sb := array.NewInt64Builder(mem), array.NewBooleanBuilder(mem), array.NewStringBuilder(mem)
	defer ib.Release()
	defer bb.Release()
	defer sb.Release()
	for i := 0; i < rows; i++ {
		if i%3 == 1 {
			ib.AppendNull()
			bb.AppendNull()
			sb.AppendNull()
			continue
		}
		ib.Append(int64(i))
		bb.Append(i%5 < 2)
		sb.Append(fmt.Sprintf("v%d", i*i))
	}
	cols := append([]arrow.Array{}, base.Columns()...)
	fields := append([]arrow.Field{}, edge.Fields()...)
	for _, c := range []struct {
		name string
		a    arrow.Array
	}{{"i64n", ib.NewArray()}, {"booln", bb.NewArray()}, {"strn", sb.NewArray()}} {
		defer c.a.Release()
		cols, fields = append(cols, c.a), append(fields, arrow.Field{Name: c.name, Type: c.a.DataType(), Nullable: true})
	}
	large, err := compute.CastArray(compute.WithAllocator(context.Background(), mem), cols[len(cols)-1], compute.SafeCastOptions(arrow.BinaryTypes.LargeString))
	if err != nil {
		t.Fatal(err)
	}
	defer large.Release()
	cols, fields = append(cols, large), append(fields, arrow.Field{Name: "large", Type: large.DataType(), Nullable: true})
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(rows))
}

// boolMask builds a mask of n rows from keep(i), null where null(i).
func boolMask(mem memory.Allocator, n int, keep, null func(int) bool) arrow.Array {
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	for i := 0; i < n; i++ {
		if null != nil && null(i) {
			b.AppendNull()
		} else {
			b.Append(keep(i))
		}
	}
	return b.NewArray()
}

// FilterBatch keeps exactly the rows a row-at-a-time filter keeps, for every column type, for
// batches and masks that are slices (non-zero offsets), masks with nulls, masks of single
// rows, long runs, runs crossing 64-row words, all and none; and frees everything it made.
func TestFilterBatchKeepsMaskedRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := compute.WithAllocator(context.Background(), mem)
	const rows = 300
	full := filterRecord(t, mem, rows)
	defer full.Release()
	rng := rand.New(rand.NewSource(1))
	random := make([]bool, 2*rows)
	for i := range random {
		random[i] = rng.Intn(3) == 0
	}
	masks := []struct {
		name       string
		keep, null func(int) bool
	}{
		{"random", func(i int) bool { return random[i] }, nil},
		{"random with nulls", func(i int) bool { return random[i] }, func(i int) bool { return i%7 == 3 }},
		{"alternate", func(i int) bool { return i%2 == 0 }, nil},
		{"runs across words", func(i int) bool { return i%100 >= 40 && i%100 < 90 }, nil},
		{"first and last", func(i int) bool { return i == 0 || i == rows-1 }, nil},
		{"one", func(i int) bool { return i == 130 }, nil},
		{"all but nulls", func(int) bool { return true }, func(i int) bool { return i%64 == 63 }},
		{"all", func(int) bool { return true }, nil},
		{"none", func(int) bool { return false }, nil},
		{"all null", func(int) bool { return true }, func(int) bool { return true }},
	}
	for _, sliced := range []bool{false, true} {
		rec, lo := full, 0
		if sliced {
			lo = 7
			rec = full.NewSlice(int64(lo), 250)
		}
		n := int(rec.NumRows())
		for _, m := range masks {
			// The mask is itself a slice of a longer one when the batch is.
			whole := boolMask(mem, n+lo, func(i int) bool { return i >= lo && m.keep(i-lo) }, func(i int) bool { return i >= lo && m.null != nil && m.null(i-lo) })
			mask := array.NewSlice(whole, int64(lo), int64(lo+n))
			whole.Release()
			got, err := FilterBatch(ctx, rec, mask)
			if err != nil {
				t.Fatal(err)
			}
			var idx []int // the rows a row-at-a-time filter keeps
			for i := 0; i < n; i++ {
				if mask.IsValid(i) && mask.(*array.Boolean).Value(i) {
					idx = append(idx, i)
				}
			}
			if int(got.NumRows()) != len(idx) {
				t.Fatalf("sliced=%v %s: %d rows, want %d", sliced, m.name, got.NumRows(), len(idx))
			}
			for c := 0; c < int(rec.NumCols()); c++ {
				g, in := got.Column(c), rec.Column(c)
				nulls := 0
				for _, i := range idx {
					if in.IsNull(i) {
						nulls++
					}
				}
				if g.Len() != len(idx) || g.NullN() != nulls {
					t.Fatalf("sliced=%v %s: column %s: %d rows (%d null), want %d (%d null)", sliced, m.name, rec.ColumnName(c), g.Len(), g.NullN(), len(idx), nulls)
				}
				if err := array.ValidateFull(g); err != nil {
					t.Fatalf("sliced=%v %s: column %s is malformed: %v", sliced, m.name, rec.ColumnName(c), err)
				}
				for j, i := range idx {
					if !arrowtest.SameValue(g, in, j, i) {
						t.Fatalf("sliced=%v %s: column %s row %d: %s, want %s (row %d)", sliced, m.name, rec.ColumnName(c), j, g.ValueStr(j), in.ValueStr(i), i)
					}
				}
			}
			got.Release()
			mask.Release()
		}
		if sliced {
			rec.Release()
		}
	}
}

// Program.Filter over a predicate: the rows where it is true, NULL drops the row.
func TestProgramFilter(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := filterRecord(t, mem, 100)
	defer rec.Release()
	p, err := CompilePredicate("i64n % 4 = 0 AND strn <> 'v16'", rec.Schema(), Options{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Filter(context.Background(), rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	var want []int64
	for i := 0; i < 100; i++ {
		if i%3 != 1 && i%4 == 0 && i != 4 {
			want = append(want, int64(i))
		}
	}
	got := out.Column(out.Schema().FieldIndices("i64n")[0]).(*array.Int64)
	if got.Len() != len(want) {
		t.Fatalf("kept %d rows, want %d", got.Len(), len(want))
	}
	for i, v := range want {
		if got.IsNull(i) || got.Value(i) != v {
			t.Fatalf("row %d: %s, want %d", i, got.ValueStr(i), v)
		}
		if s := out.Column(out.Schema().FieldIndices("strn")[0]).(*array.String).Value(i); s != fmt.Sprintf("v%d", v*v) {
			t.Fatalf("row %d: strn %q, want v%d", i, s, v*v)
		}
	}
}

// The predicates NULL and FALSE keep no row, TRUE every row (the batch itself).
func TestProgramFilterConstant(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := filterRecord(t, mem, 10)
	defer rec.Release()
	for src, want := range map[string]int64{"NULL": 0, "FALSE": 0, "TRUE": 10, "i64 IS NULL OR i64 IS NOT NULL": 10} {
		p, err := CompilePredicate(src, rec.Schema(), Options{Mem: mem})
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Filter(context.Background(), rec, nil)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if out.NumRows() != want || out.NumCols() != rec.NumCols() {
			t.Errorf("%s: %d rows, %d columns; want %d, %d", src, out.NumRows(), out.NumCols(), want, rec.NumCols())
		}
		out.Release()
	}
}
