package delta

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/delta"
)

func TestConformInputs(t *testing.T) {
	mem := newMem(t)
	target := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: false},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "missing", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "m", Type: arrow.MapOfFields(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
	}, nil)
	c := conformer{mem: mem, target: target}

	// Dictionary-encoded strings, an Int32 id widened to long, a map with uint32 values,
	// columns in another order and with other case.
	db := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
	defer db.Release()
	_ = db.AppendString("x")
	db.AppendNull()
	_ = db.AppendString("x")
	dict := db.NewArray()
	defer dict.Release()
	inSc := arrow.NewSchema([]arrow.Field{
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Uint32), Nullable: true},
		{Name: "S", Type: dict.DataType(), Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	part := recFromJSON(t, mem, arrow.NewSchema([]arrow.Field{inSc.Field(0), inSc.Field(2)}, nil),
		`[{"m":[{"key":"a","value":1}],"id":1},{"m":null,"id":2},{"m":[],"id":3}]`)
	defer part.Release()
	in := array.NewRecordBatch(inSc, []arrow.Array{part.Column(0), dict, part.Column(1)}, 3)
	defer in.Release()
	sliced := in.NewSlice(1, 3) // offsets must be honoured
	defer sliced.Release()
	for _, rec := range []arrow.RecordBatch{in, sliced} {
		out, err := c.record(rec)
		if err != nil {
			t.Fatal(err)
		}
		if !out.Schema().Equal(target) {
			t.Errorf("schema %s", out.Schema())
		}
		got, _ := out.MarshalJSON()
		out.Release()
		want := `[{"id":1,"m":[{"key":"a","value":1}],"missing":null,"s":"x"}` + "\n" + `,{"id":2,"m":null,"missing":null,"s":null}` + "\n" + `,{"id":3,"m":[],"missing":null,"s":"x"}` + "\n" + `]`
		if rec.NumRows() == 2 {
			want = `[{"id":2,"m":null,"missing":null,"s":null}` + "\n" + `,{"id":3,"m":[],"missing":null,"s":"x"}` + "\n" + `]`
		}
		if string(got) != want {
			t.Errorf("conformed\n got: %s\nwant: %s", got, want)
		}
	}

	for _, c2 := range []struct {
		js   string
		sc   *arrow.Schema
		want string
	}{
		{`[{"id":1,"extra":2}]`, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "extra", Type: arrow.PrimitiveTypes.Int64}}, nil), "columns extra: not in the table schema"},
		{`[{"id":null}]`, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil), "column id: 1 null values"},
		{`[{"id":"1"}]`, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil), "column id: cannot write utf8 into a column of Delta type long"},
		{`[{"s":1}]`, arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.PrimitiveTypes.Int64}}, nil), "column id: missing from the input"},
	} {
		rec := recFromJSON(t, mem, c2.sc, c2.js)
		out, err := c.record(rec)
		rec.Release()
		if err == nil {
			out.Release()
		}
		if err == nil || !strings.Contains(err.Error(), c2.want) {
			t.Errorf("%s: err = %v, want %q", c2.js, err, c2.want)
		}
	}
}

// fixed_size_binary without nulls used to panic inside arrow-go's cast (a nil validity bitmap).
func TestConformFixedSizeBinaryWithoutNulls(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, vals := range [][][]byte{{[]byte("ab"), []byte("cd")}, {[]byte("ab"), nil}} {
		b := array.NewFixedSizeBinaryBuilder(mem, &arrow.FixedSizeBinaryType{ByteWidth: 2})
		for _, v := range vals {
			if v == nil {
				b.AppendNull()
			} else {
				b.Append(v)
			}
		}
		col := b.NewArray()
		b.Release()
		s := arrow.NewSchema([]arrow.Field{{Name: "fb", Type: col.DataType(), Nullable: true}}, nil)
		rec := array.NewRecordBatch(s, []arrow.Array{col}, int64(col.Len()))
		col.Release()
		dir := t.TempDir()
		tbl := delta.NewTable(dir, mem)
		res := appendBatches(t, tbl, nil, &delta.CreateOptions{}, s, WriterOptions{Allocator: mem}, nil, rec)
		rec.Release()
		if res.Snapshot.NumFiles() != 1 {
			t.Fatalf("files %d", res.Snapshot.NumFiles())
		}
	}
}

// --truncate-timestamps floors nanoseconds to the microsecond that holds them, also inside
// structs and lists: −1 ns is 1969-12-31 23:59:59.999999, not 1970-01-01 (issue #22).
func TestConformTruncateFloorsBefore1970(t *testing.T) {
	mem := newMem(t)
	us := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	ntz := &arrow.TimestampType{Unit: arrow.Microsecond}
	target := arrow.NewSchema([]arrow.Field{
		{Name: "t", Type: us, Nullable: true},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "n", Type: ntz, Nullable: true}), Nullable: true},
		{Name: "l", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: us, Nullable: true}), Nullable: true},
	}, nil)
	ns := &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
	inSc := arrow.NewSchema([]arrow.Field{
		{Name: "t", Type: ns, Nullable: true},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "n", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true}), Nullable: true},
		{Name: "l", Type: arrow.ListOf(ns), Nullable: true},
	}, nil)
	in := recFromJSON(t, mem, inSc, `[
		{"t": -1, "s": {"n": -1001}, "l": [-1, 1, null, -86400000000000]},
		{"t": null, "s": null, "l": null},
		{"t": -1000, "s": {"n": 999}, "l": [-999999999]}]`)
	defer in.Release()
	sliced := in.NewSlice(1, 3)
	defer sliced.Release()
	for _, c := range []struct {
		rec  arrow.RecordBatch
		want string
	}{
		{in, `[{"l":["1969-12-31T23:59:59.999999Z","1970-01-01T00:00:00Z",null,"1969-12-31T00:00:00Z"],"s":{"n":"1969-12-31T23:59:59.999998"},"t":"1969-12-31T23:59:59.999999Z"}` + "\n" +
			`,{"l":null,"s":null,"t":null}` + "\n" +
			`,{"l":["1969-12-31T23:59:59Z"],"s":{"n":"1970-01-01T00:00:00"},"t":"1969-12-31T23:59:59.999999Z"}` + "\n]"},
		{sliced, `[{"l":null,"s":null,"t":null}` + "\n" +
			`,{"l":["1969-12-31T23:59:59Z"],"s":{"n":"1970-01-01T00:00:00"},"t":"1969-12-31T23:59:59.999999Z"}` + "\n]"},
	} {
		out, err := (&conformer{mem: mem, target: target, truncate: true}).record(c.rec)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := out.MarshalJSON()
		out.Release()
		if string(got) != c.want {
			t.Errorf("conformed\n got: %s\nwant: %s", got, c.want)
		}
	}
	// Without truncation the sub-µs digits are refused, whichever side of 1970.
	if out, err := (&conformer{mem: mem, target: target}).record(in); err == nil {
		out.Release()
		t.Error("nanosecond digits accepted without truncation")
	} else if !strings.Contains(err.Error(), "nanosecond digits") {
		t.Errorf("err = %v", err)
	}
}
