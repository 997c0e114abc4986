package textout_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/csvrow"
	"github.com/streamkit/streamkit/codec/jsonrow"
	"github.com/streamkit/streamkit/codec/textout"
	"github.com/streamkit/streamkit/internal/arrowtest"
)

var (
	ntz    = &arrow.TimestampType{Unit: arrow.Microsecond}
	utcNS  = &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
	berlin = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "Europe/Berlin"}
	inner  = arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		arrow.Field{Name: "t", Type: ntz, Nullable: true},
	)
)

// edgeRecord is 16 rows of edge values (arrowtest.EdgeRecord); nested columns only when
// nested is true (CSV has no nested types).
func edgeRecord(t *testing.T, nested bool) arrow.RecordBatch {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	fields := []arrow.Field{
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ntz", Type: ntz, Nullable: true},
		{Name: "ns", Type: utcNS, Nullable: true},
		{Name: "berlin", Type: berlin, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}
	if nested {
		fields = append(fields,
			arrow.Field{Name: "st", Type: inner, Nullable: true},
			arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
			arrow.Field{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
			arrow.Field{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
		)
	}
	return arrowtest.EdgeRecord(mem, arrow.NewSchema(fields, nil), 16)
}

// compare checks that got (a reader's output, with _rescued_data last) holds the rows of want
// unchanged and rescued nothing.
func compare(t *testing.T, text []byte, want, got arrow.RecordBatch) {
	t.Helper()
	if got.NumRows() != want.NumRows() {
		t.Fatalf("read back %d rows, wrote %d:\n%s", got.NumRows(), want.NumRows(), text)
	}
	for c := 0; c < int(want.NumCols()); c++ {
		for r := 0; r < int(want.NumRows()); r++ {
			if !arrowtest.SameValue(want.Column(c), got.Column(c), r, r) {
				w, _ := textout.AppendText(nil, want.Column(c), r)
				g, _ := textout.AppendText(nil, got.Column(c), r)
				t.Errorf("column %s row %d: wrote %s, read back %s (%v vs %v)", want.Schema().Field(c).Name, r, w, g,
					want.Column(c).GetOneForMarshal(r), got.Column(c).GetOneForMarshal(r))
			}
		}
	}
	if resc := got.Column(int(got.NumCols()) - 1); resc.NullN() != resc.Len() {
		for r := 0; r < resc.Len(); r++ {
			if resc.IsValid(r) {
				t.Errorf("row %d rescued %s", r, resc.(*array.String).Value(r))
			}
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	rec := edgeRecord(t, true)
	defer rec.Release()
	var text []byte
	for r := 0; r < int(rec.NumRows()); r++ {
		text = append(text, '{')
		for c, col := range rec.Columns() {
			if c > 0 {
				text = append(text, ',')
			}
			text = append(text, '"')
			text = append(text, rec.Schema().Field(c).Name...)
			text = append(text, `":`...)
			text = textout.AppendJSON(text, col, r)
		}
		text = append(text, "}\n"...)
	}
	rd, err := jsonrow.NewReader(bytes.NewReader(text), rec.Schema(), jsonrow.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	got, err := rd.Next()
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	defer got.Release()
	compare(t, text, rec, got)
}

func TestCSVRoundTrip(t *testing.T) {
	rec := edgeRecord(t, false)
	defer rec.Release()
	for _, null := range []string{"", "NULL"} {
		var text, field []byte
		for c, f := range rec.Schema().Fields() {
			if c > 0 {
				text = append(text, ',')
			}
			text = textout.AppendCSVField(text, []byte(f.Name), false, null)
		}
		text = append(text, '\n')
		for r := 0; r < int(rec.NumRows()); r++ {
			for c, col := range rec.Columns() {
				if c > 0 {
					text = append(text, ',')
				}
				var isNull bool
				field, isNull = textout.AppendText(field[:0], col, r)
				text = textout.AppendCSVField(text, field, isNull, null)
			}
			text = append(text, '\n')
		}
		rd, err := csvrow.NewReader(bytes.NewReader(text), rec.Schema(), csvrow.Options{Header: true, NullValue: null})
		if err != nil {
			t.Fatal(err)
		}
		got, err := rd.Next()
		if err != nil {
			t.Fatalf("null value %q: %v\n%s", null, err, text)
		}
		compare(t, text, rec, got)
		got.Release()
		rd.Release()
	}
}

// TestText pins the spellings of the package doc.
func TestText(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	tests := []struct {
		typ  arrow.DataType
		row  int
		json string
	}{
		{arrow.PrimitiveTypes.Float64, 1, `"NaN"`},
		{arrow.PrimitiveTypes.Float64, 2, `"Infinity"`},
		{arrow.PrimitiveTypes.Float64, 3, `"-Infinity"`},
		{arrow.PrimitiveTypes.Float64, 4, `-0`},
		{arrow.PrimitiveTypes.Float64, 7, `1.7976931348623157e+308`},
		{arrow.PrimitiveTypes.Float32, 2, `"Infinity"`},
		{arrow.PrimitiveTypes.Float32, 3, `"-Infinity"`},
		{arrow.ListOf(arrow.PrimitiveTypes.Float64), 1, `["NaN",null,"-Infinity"]`},
		{inner, 1, `{"x":"Infinity","y":"-Infinity","t":"1970-01-01T00:00:00"}`},
		{arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), 0, `{"":"-Infinity"}`},
		{arrow.MapOf(arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64), 0, `{"-9223372036854775808":"-Infinity"}`},
		{ntz, 0, `"2001-01-01T00:01:00"`},
		{ntz, 1, `"1969-12-31T23:59:59.999999"`},
		{ntz, 2, `"+10000-01-01T00:00:00"`},
		{ntz, 3, `"-0001-01-01T00:00:00"`},
		{ntz, 7, `"1970-01-01T00:00:01.5"`},
		{utcNS, 0, `"2023-11-14T22:13:19.123456789Z"`},
		{utcNS, 1, `"1969-12-31T23:59:59.999999999Z"`},
		{berlin, 0, `"2001-01-01T01:01:00+01:00"`},
		{&arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}, 2, `"+10000-01-01T00:00:00Z"`},
		{arrow.FixedWidthTypes.Date32, 0, `"0001-01-01"`},
		{arrow.FixedWidthTypes.Date32, 3, `"+10000-01-01"`},
		{&arrow.Decimal128Type{Precision: 38, Scale: 10}, 0, `-0.0000020000`},
		{arrow.BinaryTypes.String, 0, `""`},
		{arrow.BinaryTypes.String, 15, `null`},
		{arrow.BinaryTypes.Binary, 1, `"YSxi"`},
	}
	for _, tt := range tests {
		rec := arrowtest.EdgeRecord(mem, arrow.NewSchema([]arrow.Field{{Name: "c", Type: tt.typ, Nullable: true}}, nil), 16)
		if got := string(textout.AppendJSON(nil, rec.Column(0), tt.row)); got != tt.json {
			t.Errorf("%s row %d: JSON %s, want %s", tt.typ, tt.row, got, tt.json)
		}
		rec.Release()
	}
	for _, tt := range []struct {
		field string
		null  bool
		want  string
	}{{"", false, `""`}, {"", true, ``}, {"a,b", false, `"a,b"`}, {`q"`, false, `"q"""`}, {"plain", false, "plain"}, {" x", false, `" x"`}} {
		if got := string(textout.AppendCSVField(nil, []byte(tt.field), tt.null, "")); got != tt.want {
			t.Errorf("CSV field %q null=%v: %s, want %s", tt.field, tt.null, got, tt.want)
		}
	}
	if got := string(textout.AppendCSVField(nil, []byte("NULL"), false, "NULL")); got != `"NULL"` {
		t.Errorf("the string NULL with --null-value NULL: %s, want \"NULL\"", got)
	}
}

// TestAppendJSONOmitNull checks that AppendJSONOmitNull leaves a struct's null fields out at
// every depth, as Spark's to_json does, and keeps nulls in arrays and map values.
func TestAppendJSONOmitNull(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	inner := arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	typ := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "s", Type: inner, Nullable: true},
		arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	)
	arr, _, err := array.FromJSON(mem, typ, strings.NewReader(`[{"a": null, "s": {"x": null}, "l": [1, null]}, {"a": 1, "s": null, "l": null}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer arr.Release()
	for i, want := range []string{`{"s":{},"l":[1,null]}`, `{"a":1}`} {
		if got := string(textout.AppendJSONOmitNull(nil, arr, i)); got != want {
			t.Errorf("row %d: %s, want %s", i, got, want)
		}
	}
	if got, want := string(textout.AppendJSON(nil, arr, 1)), `{"a":1,"s":null,"l":null}`; got != want {
		t.Errorf("AppendJSON row 1: %s, want %s", got, want)
	}
}

// TestBinaryOptions: each spelling of binary values, at the top and inside a struct, in JSON
// and as text; the default is base64 in JSON and hex in text.
func TestBinaryOptions(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	st := arrow.StructOf(arrow.Field{Name: "k", Type: arrow.BinaryTypes.Binary, Nullable: true})
	b := array.NewStructBuilder(mem, st)
	defer b.Release()
	vals := [][]byte{[]byte("user-1"), {0, 0, 0, 1}, []byte("é\tx"), {0xff}, {}, []byte("a\u0085")}
	for _, v := range vals {
		b.Append(true)
		b.FieldBuilder(0).(*array.BinaryBuilder).Append(v)
	}
	arr := b.NewStructArray()
	defer arr.Release()
	bin := arr.Field(0)
	for _, c := range []struct {
		o          textout.Options
		json, text []string
	}{
		{textout.Options{},
			[]string{`"dXNlci0x"`, `"AAAAAQ=="`, `"w6kJeA=="`, `"/w=="`, `""`, `"YcKF"`},
			[]string{"757365722d31", "00000001", "c3a90978", "ff", "", "61c285"}},
		{textout.Options{Binary: textout.BinaryText},
			[]string{`"user-1"`, `"\\x00000001"`, `"é\tx"`, `"\\xff"`, `""`, `"\\x61c285"`},
			[]string{"user-1", `\x00000001`, "é\tx", `\xff`, "", `\x61c285`}},
		{textout.Options{Binary: textout.BinaryBase64},
			[]string{`"dXNlci0x"`, `"AAAAAQ=="`, `"w6kJeA=="`, `"/w=="`, `""`, `"YcKF"`},
			[]string{"dXNlci0x", "AAAAAQ==", "w6kJeA==", "/w==", "", "YcKF"}},
		{textout.Options{Binary: textout.BinaryHex},
			[]string{`"757365722d31"`, `"00000001"`, `"c3a90978"`, `"ff"`, `""`, `"61c285"`},
			[]string{"757365722d31", "00000001", "c3a90978", "ff", "", "61c285"}},
	} {
		for i := range vals {
			if got := string(c.o.AppendJSON(nil, bin, i)); got != c.json[i] {
				t.Errorf("%+v JSON of %q: got %s, want %s", c.o, vals[i], got, c.json[i])
			}
			if got, _ := c.o.AppendText(nil, bin, i); string(got) != c.text[i] {
				t.Errorf("%+v text of %q: got %s, want %s", c.o, vals[i], got, c.text[i])
			}
			if got, want := string(c.o.AppendJSON(nil, arr, i)), `{"k":`+c.json[i]+`}`; got != want {
				t.Errorf("%+v JSON of struct with %q: got %s, want %s", c.o, vals[i], got, want)
			}
		}
	}
	if got := string(textout.AppendJSON(nil, bin, 0)); got != `"dXNlci0x"` {
		t.Errorf("AppendJSON: got %s, want base64", got)
	}
	if got, _ := textout.AppendText(nil, bin, 0); string(got) != "757365722d31" {
		t.Errorf("AppendText: got %s, want hex", got)
	}
}
