package statedump

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

// encodeKeys encodes the rows of the given columns as keys (codec.KeyEncoder).
func encodeKeys(t *testing.T, mem memory.Allocator, cols ...arrow.Array) *array.Binary {
	t.Helper()
	var fields []arrow.Field
	for i, c := range cols {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("c%d", i), Type: c.DataType(), Nullable: true})
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(cols[0].Len()))
	defer rec.Release()
	enc, err := codec.NewKeyEncoder(rec.Schema(), nil)
	if err != nil {
		t.Fatal(err)
	}
	kc := enc.Columns(rec)
	b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	defer b.Release()
	var buf []byte
	for r := 0; r < int(rec.NumRows()); r++ {
		buf = codec.AppendRow(buf[:0], kc, r)
		b.Append(buf)
	}
	return b.NewBinaryArray()
}

// TestDecodeKeysChunked: decoding in chunks gives codec.KeyArrays' result over the whole
// column — typed columns, a column null in whole chunks, a column whose type changes between
// chunks (text), keys of different widths.
func TestDecodeKeysChunked(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	n := 2*keyChunkRows + 123
	ints := func(nullBelow int) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for i := 0; i < n; i++ {
			if i < nullBelow {
				b.AppendNull()
			} else {
				b.Append(int64(i * 7))
			}
		}
		return b.NewArray()
	}
	strs := func() arrow.Array {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		for i := 0; i < n; i++ {
			b.Append(fmt.Sprint("user-", i%1000))
		}
		return b.NewArray()
	}
	cases := map[string]func() *array.Binary{
		"int":             func() *array.Binary { a := ints(0); defer a.Release(); return encodeKeys(t, mem, a) },
		"int null chunks": func() *array.Binary { a := ints(keyChunkRows + 5); defer a.Release(); return encodeKeys(t, mem, a) },
		"all null":        func() *array.Binary { a := ints(n); defer a.Release(); return encodeKeys(t, mem, a) },
		"string and int": func() *array.Binary {
			a, b := strs(), ints(100)
			defer a.Release()
			defer b.Release()
			return encodeKeys(t, mem, a, b)
		},
		"type changes between chunks": func() *array.Binary {
			a, b := ints(0), strs()
			defer a.Release()
			defer b.Release()
			ka, kb := encodeKeys(t, mem, a), encodeKeys(t, mem, b)
			defer ka.Release()
			defer kb.Release()
			bb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
			defer bb.Release()
			for i := 0; i < n; i++ {
				if i < keyChunkRows+10 {
					bb.Append(ka.Value(i))
				} else {
					bb.Append(kb.Value(i))
				}
			}
			return bb.NewBinaryArray()
		},
		"widths differ": func() *array.Binary {
			a, b := ints(0), strs()
			defer a.Release()
			defer b.Release()
			k1, k2 := encodeKeys(t, mem, a), encodeKeys(t, mem, a, b)
			defer k1.Release()
			defer k2.Release()
			bb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
			defer bb.Release()
			for i := 0; i < n; i++ {
				if i < 2*keyChunkRows {
					bb.Append(k1.Value(i))
				} else {
					bb.Append(k2.Value(i))
				}
			}
			return bb.NewBinaryArray()
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			keys := mk()
			defer keys.Release()
			names := []string{"a", "b"}
			gf, ga, err := decodeKeys(mem, keys, names, -1)
			if err != nil {
				t.Fatal(err)
			}
			wf, wa, err := codec.KeyArrays(mem, keysOf(keys, 0, keys.Len()), names)
			if err != nil {
				t.Fatal(err)
			}
			if len(gf) != len(wf) {
				t.Fatalf("fields %v, want %v", gf, wf)
			}
			for i := range wf {
				if gf[i].Name != wf[i].Name || !arrow.TypeEqual(gf[i].Type, wf[i].Type) || !array.Equal(ga[i], wa[i]) {
					t.Errorf("column %d: %v, want %v (arrays equal: %v)", i, gf[i], wf[i], array.Equal(ga[i], wa[i]))
				}
			}
			for _, a := range append(ga, wa...) {
				a.Release()
			}
		})
	}
}
