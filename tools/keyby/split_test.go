package keyby

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

// takeRows equals compute.Take on every kind of column — its own fast paths (fixed widths of
// 1, 2, 4, 8 and 16 bytes, fixed-size binary, binary and string with 32- and 64-bit offsets,
// with and without nulls) and the fallback (booleans, structs, lists, dictionaries) —, also on
// a sliced batch, without leaking Arrow memory.
func TestTakeRowsMatchesTake(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := `[`
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300; i++ {
		if i > 0 {
			rows += ","
		}
		null := func(v string) string {
			if rng.IntN(5) == 0 {
				return "null"
			}
			return v
		}
		s := strings.Repeat("x", rng.IntN(20))
		rows += `{"i8":` + null("-3") + `,"i16":` + null("300") + `,"i32":` + null("-70000") + `,"i64":` + null("123456789012") +
			`,"f64":` + null("1.5") + `,"dec":` + null(`"12.34"`) + `,"fsb":` + null(`"AAECAw=="`) +
			`,"ts":` + null(`"2024-05-01T10:00:00Z"`) + `,"bin":` + null(`"`+"AQI="+`"`) + `,"str":` + null(`"`+s+`"`) +
			`,"lstr":` + null(`"`+s+s+`"`) + `,"b":` + null("true") + `,"st":` + null(`{"a":1,"b":"`+s+`"}`) +
			`,"l":` + null("[1,2,3]") + `,"nonull":"` + s + `"}`
	}
	rows += `]`
	s := arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 4}, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "str", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "lstr", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String}), Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "nonull", Type: arrow.BinaryTypes.String},
	}, nil)
	whole, _, err := array.RecordFromJSON(mem, s, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Release()
	// A dictionary column besides.
	db := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String})
	for i := 0; i < 300; i++ {
		if i%7 == 0 {
			db.AppendNull()
		} else {
			db.(*array.BinaryDictionaryBuilder).AppendString([]string{"a", "b", "c"}[i%3])
		}
	}
	dict := db.NewArray()
	db.Release()
	defer dict.Release()
	cols := append(append([]arrow.Array{}, whole.Columns()...), dict)
	fields := append(append([]arrow.Field{}, s.Fields()...), arrow.Field{Name: "dict", Type: dict.DataType(), Nullable: true})
	full := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 300)
	defer full.Release()
	ctx := compute.WithAllocator(context.Background(), mem)
	// Flat columns come from a Recycler: the later rounds get the dirty buffers of the earlier.
	bufs := codec.NewRecycler(mem)
	defer bufs.Release()
	for _, rec := range []arrow.RecordBatch{full, full.NewSlice(37, 251), full, full.NewSlice(5, 290)} {
		n := int(rec.NumRows())
		var rows []int32
		for r := 0; r < n; r++ {
			if rng.IntN(2) == 0 {
				rows = append(rows, int32(r))
			}
		}
		got, err := takeRows(ctx, mem, bufs, rec, rows)
		if err != nil {
			t.Fatal(err)
		}
		ib := array.NewInt32Builder(mem)
		ib.AppendValues(rows, nil)
		idx := ib.NewArray()
		ib.Release()
		wantD, err := compute.Take(ctx, *compute.DefaultTakeOptions(), compute.NewDatumWithoutOwning(rec), compute.NewDatumWithoutOwning(idx))
		if err != nil {
			t.Fatal(err)
		}
		want := wantD.(*compute.RecordDatum).Value
		if !array.RecordEqual(got, want) {
			for i := range got.Columns() {
				if !array.Equal(got.Column(i), want.Column(i)) {
					t.Errorf("column %s: got %v, want %v", rec.ColumnName(i), got.Column(i), want.Column(i))
				}
			}
		}
		for i, a := range rec.Columns() {
			fast := takeFlat(mem, a, rows)
			if (fast != nil) != !strings.Contains(" b st l dict ", " "+rec.ColumnName(i)+" ") {
				t.Errorf("column %s: fast path taken %v", rec.ColumnName(i), fast != nil)
			}
			if fast != nil {
				fast.Release()
			}
		}
		got.Release()
		wantD.Release()
		idx.Release()
		if rec != full {
			rec.Release()
		}
	}
}

// shardRows puts row r in shard hash % n, in row order, for powers of two and other n, with
// index slices reused from a larger earlier batch.
func TestShardRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 3, 4, 5, 8} {
		idx := make([][]int32, n)
		for _, rows := range []int{1000, 17, 0} {
			hashes := make([]uint64, rows)
			for r := range hashes {
				hashes[r] = rng.Uint64()
			}
			shardRows(idx, hashes, n)
			want := make([][]int32, n)
			for r, h := range hashes {
				want[h%uint64(n)] = append(want[h%uint64(n)], int32(r))
			}
			for i := range idx {
				if fmt.Sprint(idx[i]) != fmt.Sprint(want[i]) && !(len(idx[i]) == 0 && len(want[i]) == 0) {
					t.Fatalf("n=%d rows=%d shard %d: got %v, want %v", n, rows, i, idx[i], want[i])
				}
			}
		}
	}
}

// A streamkit child gets STREAMKIT_SHARD, the shard commit directory, the routing,
// STREAMKIT_SHARD_PROGRESS (keyby sends it progress when its first schema declares an event
// time) and GOGC=ShardGOGC unless the environment sets GOGC; another command no GOGC and no
// inherited progress flag.
func TestChildEnv(t *testing.T) {
	s := &Sharded{Key: []string{"value.id", "k"}, N: 2, Cmd: []string{"dedup"}, Tools: map[string]bool{"dedup": true}, shardCommits: "/ck/keyby/shards"}
	common := "STREAMKIT_SHARD_COMMITS=/ck/keyby/shards STREAMKIT_SHARD_ROUTE=2 by xxh3-64(value.id,k)"
	if got, want := strings.Join(s.childEnv([]string{"A=1"}, 1), " "), "A=1 STREAMKIT_SHARD=1 "+common+" STREAMKIT_SHARD_PROGRESS=1 GOGC=200"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := strings.Join(s.childEnv([]string{"GOGC=50"}, 0), " "), "GOGC=50 STREAMKIT_SHARD=0 "+common+" STREAMKIT_SHARD_PROGRESS=1"; got != want {
		t.Errorf("user setting: got %q, want %q", got, want)
	}
	if got, want := strings.Join(s.childEnv([]string{"A=1", "STREAMKIT_SHARD_PROGRESS=1"}, 1), " "), "A=1 STREAMKIT_SHARD=1 "+common+" STREAMKIT_SHARD_PROGRESS=1 GOGC=200"; got != want {
		t.Errorf("event time: got %q, want %q", got, want)
	}
	// A nested keyby (itself shard 1, or shard 0 of shard 2) names its children after it.
	if got := strings.Join(s.childEnv([]string{"STREAMKIT_SHARD=1"}, 0), " "); !strings.Contains(got, "STREAMKIT_SHARD=0 ") || !strings.Contains(got, "STREAMKIT_SHARD_PATH=1.0") {
		t.Errorf("nested: got %q", got)
	}
	if got := strings.Join(s.childEnv([]string{"STREAMKIT_SHARD_PATH=2.0", "STREAMKIT_SHARD=0"}, 1), " "); !strings.Contains(got, "STREAMKIT_SHARD_PATH=2.0.1") || strings.Contains(got, "STREAMKIT_SHARD_PATH=2.0 ") {
		t.Errorf("nested twice: got %q", got)
	}
	s.Cmd = []string{"./my-operator"}
	if got, want := strings.Join(s.childEnv([]string{"A=1", "STREAMKIT_SHARD_PROGRESS=1"}, 0), " "), "A=1 STREAMKIT_SHARD=0 "+common; got != want {
		t.Errorf("foreign command: got %q, want %q", got, want)
	}
}
