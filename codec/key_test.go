package codec

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/zeebo/xxh3"
)

func TestKeyEncoding(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	user := arrow.StructOf(arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	s := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "value", Type: arrow.StructOf(arrow.Field{Name: "user", Type: user, Nullable: true}), Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	sb := b.Field(0).(*array.StringBuilder)
	vb := b.Field(1).(*array.StructBuilder)
	ub := vb.FieldBuilder(0).(*array.StructBuilder)
	ib := ub.FieldBuilder(0).(*array.Int32Builder)
	tb := b.Field(2).(*array.TimestampBuilder)
	// rows: ("", id 42), (null, id 42), ("", user null), ("x", value null)
	rows := []struct {
		s      *string
		value  bool
		user   bool
		id     int32
		tsNull bool
	}{{s: ptr(""), value: true, user: true, id: 42}, {value: true, user: true, id: 42}, {s: ptr(""), value: true}, {s: ptr("x"), tsNull: true}}
	for _, r := range rows {
		if r.s == nil {
			sb.AppendNull()
		} else {
			sb.Append(*r.s)
		}
		vb.Append(r.value)
		if r.value {
			ub.Append(r.user)
			if r.user {
				ib.Append(r.id)
			} else {
				ib.AppendNull()
			}
		} else {
			ub.AppendNull()
			ib.AppendNull()
		}
		if r.tsNull {
			tb.AppendNull()
		} else {
			tb.Append(1_700_000_000_123)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	enc, err := NewKeyEncoder(s, []string{"s", "value.user.id", "ts"})
	if err != nil {
		t.Fatal(err)
	}
	cols := enc.Columns(rec)
	var got []string
	keys := map[string]bool{}
	for r := 0; r < 4; r++ {
		k := AppendRow(nil, cols, r)
		keys[string(k)] = true
		vals, err := DecodeKey(k)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(vals))
	}
	want := []string{"[ 42 2023-11-14T22:13:20.123Z]", "[<nil> 42 2023-11-14T22:13:20.123Z]", "[ <nil> 2023-11-14T22:13:20.123Z]", "[x <nil> <nil>]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if len(keys) != 4 {
		t.Fatalf("null and empty (or null parents) collide: %d distinct keys", len(keys))
	}
	if _, err := NewKeyEncoder(s, []string{"value.user.name"}); err == nil {
		t.Fatal("missing path accepted")
	}
}

func ptr[T any](v T) *T { return &v }

func TestIntWidthsEncodeAlike(t *testing.T) {
	mem := memory.NewGoAllocator()
	a32 := array.NewInt32Builder(mem)
	a32.Append(-5)
	a64 := array.NewInt64Builder(mem)
	a64.Append(-5)
	x, y := a32.NewArray(), a64.NewArray()
	if string(appendValue(nil, x, 0)) != string(appendValue(nil, y, 0)) {
		t.Fatal("int32 -5 and int64 -5 differ")
	}
}

// The shard hash is part of the on-disk contract (a restarted keyby must route every key to
// the same shard): pin its values, computed by the reference implementation (Python xxhash
// 3.5.0, xxh3_64_intdigest).
func TestHash64Stable(t *testing.T) {
	for _, c := range []struct {
		key  []byte
		want uint64
	}{
		{nil, 0x2d06800538d394c2},
		{[]byte("a"), 0xe6c632b61e964e1f},
		{[]byte{tagString, 1, 'a'}, 0x7b6579f547109c07},
		{[]byte{tagNull}, 0xc44bdff4074eecdb},
		{append([]byte{tagBinary, 16}, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 0xb9a4cde857bf66cd},
	} {
		if got := Hash64(c.key); got != c.want {
			t.Fatalf("Hash64(%x) = %x, want %x", c.key, got, c.want)
		}
	}
}

// HashRows equals AppendRow + Hash64 row by row, on its fast paths (one top-level column of
// each type, with and without nulls, short and long values) and on the general path.
// HashRows and AppendRows (whose fast paths take single columns without nulls) agree with
// AppendRow, on whole and sliced batches.
func TestHashRowsMatchesAppendRow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	long := string(make([]byte, 300))
	s := arrow.NewSchema([]arrow.Field{
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "str", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "lstr", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "nonull", Type: arrow.BinaryTypes.String},
		{Name: "nonullbin", Type: arrow.BinaryTypes.Binary},
		{Name: "nonulli64", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	for r := 0; r < 200; r++ {
		null := r%7 == 3
		v := fmt.Sprint(r)
		if r%50 == 0 {
			v = long + v
		}
		if r%5 == 1 { // 16 to 30 bytes: HashRows' inlined XXH3 case
			v = fmt.Sprintf("%0*d", 16+r%15, r)
		}
		if r == 10 {
			v = ""
		}
		for i, f := range b.Fields() {
			if null && i < 6 {
				f.AppendNull()
				continue
			}
			switch f := f.(type) {
			case *array.BinaryBuilder:
				f.Append([]byte(v))
			case *array.StringBuilder:
				f.Append(v)
			case *array.LargeStringBuilder:
				f.Append(v)
			case *array.Int64Builder:
				f.Append(int64(r) - 100)
			case *array.Int32Builder:
				f.Append(int32(r) - 100)
			case *array.Float64Builder:
				f.Append(float64(r) / 3)
			}
		}
	}
	whole := b.NewRecordBatch()
	defer whole.Release()
	sliced := whole.NewSlice(3, 150)
	defer sliced.Release()
	keys := [][]string{{"bin"}, {"str"}, {"lstr"}, {"i64"}, {"i32"}, {"f"}, {"nonull"}, {"nonullbin"}, {"nonulli64"}, {"str", "i64"}, {"nonullbin", "nonulli64"}}
	for _, rec := range []arrow.RecordBatch{whole, sliced} {
		for _, k := range keys {
			enc, err := NewKeyEncoder(s, k)
			if err != nil {
				t.Fatal(err)
			}
			cols := enc.Columns(rec)
			n := int(rec.NumRows())
			got := HashRows(nil, cols, n)
			buf, ends := AppendRows([]byte("x"), []int{1}, cols, n)
			if len(ends) != n+1 {
				t.Fatalf("key %v: AppendRows gave %d ends for %d rows", k, len(ends)-1, n)
			}
			for r := range got {
				want := AppendRow(nil, cols, r)
				if got[r] != Hash64(want) {
					t.Fatalf("key %v row %d: HashRows %x, AppendRow+Hash64 %x", k, r, got[r], Hash64(want))
				}
				if rows := buf[ends[r]:ends[r+1]]; string(rows) != string(want) {
					t.Fatalf("key %v row %d: AppendRows %x, AppendRow %x", k, r, rows, want)
				}
			}
		}
	}
}

func BenchmarkHashRowsBinary16(b *testing.B) {
	mem := memory.NewGoAllocator()
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.Binary}}, nil)
	rb := array.NewRecordBuilder(mem, s)
	for r := 0; r < 65536; r++ {
		var k [16]byte
		k[0], k[1], k[15] = byte(r), byte(r>>8), 1
		rb.Field(0).(*array.BinaryBuilder).Append(k[:])
	}
	rec := rb.NewRecordBatch()
	enc, _ := NewKeyEncoder(s, []string{"id"})
	cols := enc.Columns(rec)
	var dst []uint64
	b.Run("HashRows", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			dst = HashRows(dst, cols, 65536)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/65536, "ns/row")
	})
	b.Run("AppendRow+Hash64", func(b *testing.B) {
		var buf []byte
		for i := 0; i < b.N; i++ {
			for r := 0; r < 65536; r++ {
				buf = AppendRow(buf[:0], cols, r)
				dst[r] = Hash64(buf)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/65536, "ns/row")
	})
}

// hashEncoded16to30 equals XXH3-64 of the encoded key for every value length it takes.
func TestHashEncoded16to30(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for m := 16; m <= 30; m++ {
		for i := 0; i < 200; i++ {
			v := make([]byte, m)
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			for _, tag := range []byte{tagBinary, tagString} {
				if got, want := hashEncoded16to30(tag, v), xxh3.Hash(appendBytes(nil, tag, v)); got != want {
					t.Fatalf("len %d tag %d: %x, want %x", m, tag, got, want)
				}
			}
		}
	}
}
