package codec

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
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
// the same shard): pin its values.
func TestHash64Stable(t *testing.T) {
	for _, c := range []struct {
		key  []byte
		want uint64
	}{{nil, 0xcbf29ce484222325}, {[]byte{tagString, 1, 'a'}, Hash64([]byte{tagString, 1, 'a'})}} {
		if got := Hash64(c.key); got != c.want {
			t.Fatalf("Hash64(%x) = %x, want %x", c.key, got, c.want)
		}
	}
	if got := Hash64([]byte("a")); got != 0xaf63dc4c8601ec8c {
		t.Fatalf("FNV-1a(a) = %x", got)
	}
}
