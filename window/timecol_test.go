package window

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

func TestTimeExtractor(t *testing.T) {
	la := mustLoc(t, "America/Los_Angeles")
	kol := mustLoc(t, "Asia/Kolkata")
	want := func(ss ...string) []int64 {
		var out []int64
		for _, s := range ss {
			if s == "" {
				out = append(out, 0)
				continue
			}
			out = append(out, us(t, s))
		}
		return out
	}
	tests := []struct {
		name   string
		dt     arrow.DataType
		path   string // defaults to "t"
		opt    TimeOptions
		values []any // appended to a builder of dt; nil is null
		want   []int64
		ok     []bool
	}{
		{"timestamp s zoned", &arrow.TimestampType{Unit: arrow.Second, TimeZone: "Europe/Paris"}, "", TimeOptions{},
			[]any{int64(1700000000), nil}, want("2023-11-14T22:13:20Z", ""), []bool{true, false}},
		{"timestamp ns zoned, negative truncates to the past", &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, "", TimeOptions{},
			[]any{int64(-1)}, []int64{-1}, []bool{true}},
		{"timestamp ms zone-less in LA", &arrow.TimestampType{Unit: arrow.Millisecond}, "", TimeOptions{Location: la},
			[]any{us(t, "2021-03-14T02:30:00Z") / 1000, us(t, "2021-07-01T12:00:00Z") / 1000},
			want("2021-03-14T03:30:00-07:00", "2021-07-01T12:00:00-07:00"), []bool{true, true}},
		{"int64 epoch ms", arrow.PrimitiveTypes.Int64, "", TimeOptions{Unit: UnitMillis},
			[]any{int64(1700000000123)}, want("2023-11-14T22:13:20.123Z"), []bool{true}},
		{"int32 epoch s", arrow.PrimitiveTypes.Int32, "", TimeOptions{Unit: UnitSeconds},
			[]any{int32(86400)}, want("1970-01-02T00:00:00Z"), []bool{true}},
		{"int64 epoch µs", arrow.PrimitiveTypes.Int64, "", TimeOptions{Unit: UnitMicros},
			[]any{int64(5)}, []int64{5}, []bool{true}},
		{"text with offsets", arrow.BinaryTypes.String, "", TimeOptions{},
			[]any{"2024-05-01T10:00:00Z", "2024-05-01 12:00:00.123456789+02:00", "2024-05-01T10:00:00,5-0130", "garbage", "2024-02-30T00:00:00Z", nil},
			want("2024-05-01T10:00:00Z", "2024-05-01T10:00:00.123456Z", "2024-05-01T11:30:00.5Z", "", "", ""),
			[]bool{true, true, true, false, false, false}},
		{"zone-less text in Kolkata", arrow.BinaryTypes.String, "", TimeOptions{Location: kol},
			[]any{"2024-05-01T10:00:00", "2024-05-01", "2024-05-01T10:00:00Z"},
			want("2024-05-01T04:30:00Z", "2024-04-30T18:30:00Z", "2024-05-01T10:00:00Z"), []bool{true, true, true}},
		{"date32 in LA", arrow.FixedWidthTypes.Date32, "", TimeOptions{Location: la},
			[]any{arrow.Date32(18700)}, want("2021-03-14T00:00:00-08:00"), []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := checkedMem(t)
			s := arrow.NewSchema([]arrow.Field{{Name: "t", Type: tt.dt, Nullable: true}}, nil)
			b := array.NewRecordBuilder(mem, s)
			defer b.Release()
			for _, v := range tt.values {
				appendRawValue(t, b.Field(0), v)
			}
			rec := b.NewRecordBatch()
			defer rec.Release()
			x, err := NewTimeExtractor(s, "t", tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			ts, ok, err := x.Extract(rec, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tt.want {
				if ok[i] != tt.ok[i] || (ok[i] && ts[i] != tt.want[i]) {
					t.Errorf("row %d: got %s ok=%v, want %s ok=%v", i, TimeOf(ts[i]), ok[i], TimeOf(tt.want[i]), tt.ok[i])
				}
			}
		})
	}
}

func appendRawValue(t *testing.T, b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(int64)))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.Date32Builder:
		b.Append(v.(arrow.Date32))
	default:
		t.Fatalf("unsupported %T", b)
	}
}

func TestTimeExtractorErrors(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "naive", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "epoch", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
		{Name: "txt", Type: arrow.BinaryTypes.String},
		{Name: "value", Type: arrow.StructOf(arrow.Field{Name: "when", Type: tsUTC})},
	}, nil)
	for _, tt := range []struct{ path, want string }{
		{"naive", "--tz"},
		{"epoch", "--time-unit"},
		{"f", "want a timestamp"},
		{"nope", "no field"},
	} {
		if _, err := NewTimeExtractor(s, tt.path, TimeOptions{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.path, err, tt.want)
		}
	}
	if _, err := NewTimeExtractor(s, "value.when", TimeOptions{}); err != nil {
		t.Errorf("struct path: %v", err)
	}
	// zone-less text without a location fails at extraction
	mem := checkedMem(t)
	ts := arrow.NewSchema([]arrow.Field{{Name: "txt", Type: arrow.BinaryTypes.String}}, nil)
	rec := buildBatch(t, mem, ts, [][]any{{"2024-05-01T10:00:00"}})
	defer rec.Release()
	x, _ := NewTimeExtractor(ts, "txt", TimeOptions{})
	if _, _, err := x.Extract(rec, nil, nil); !errors.Is(err, ErrZoneless) {
		t.Errorf("zone-less text: err = %v, want ErrZoneless", err)
	}
}

func TestParseRFC3339MatchesTime(t *testing.T) {
	for _, s := range []string{"2024-02-29T23:59:59.999999Z", "1969-12-31T23:59:59.5Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59+14:00", "2000-03-01T00:00:00-12:00"} {
		civil, off, has, ok := parseRFC3339(s)
		ref, err := time.Parse(time.RFC3339Nano, s)
		if !ok || !has || err != nil {
			t.Fatalf("%s: ok=%v has=%v err=%v", s, ok, has, err)
		}
		if got := civil - off; got != Micros(ref) {
			t.Errorf("%s: %d, want %d", s, got, Micros(ref))
		}
	}
}

func TestKeyCodecRoundTrip(t *testing.T) {
	mem := checkedMem(t)
	s := arrow.NewSchema([]arrow.Field{
		{Name: "value", Type: arrow.StructOf(
			arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		), Nullable: true},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: tsUTC, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	rec := buildBatch(t, mem, s, [][]any{
		{[]any{1, "eu"}, "x", "2024-05-01T00:00:00Z", 0.0},
		{[]any{nil, "us"}, nil, nil, math.Copysign(0, -1)},
		{nil, "y", "2024-05-01T00:00:01Z", 1.5},
	})
	defer rec.Release()
	c, err := NewKeyCodec(s, []string{"value.id", "value.region", "region", "ts", "f"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range c.Fields() {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "id,value_region,region,ts,f" {
		t.Errorf("fields %s", got)
	}
	var keys EncodedKeys
	c.Encode(rec, &keys)
	if string(keys.Key(0)) == string(keys.Key(1)) {
		t.Error("distinct rows encode equal")
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(c.Fields(), nil))
	defer b.Release()
	for i := 0; i < keys.Len(); i++ {
		if err := c.Decode(keys.Key(i), b.Fields()); err != nil {
			t.Fatal(err)
		}
	}
	out := b.NewRecordBatch()
	defer out.Release()
	got := rowsOf([]arrow.RecordBatch{out}, time.RFC3339)
	diffRows(t, got, []string{
		"1 eu x 2024-05-01T00:00:00Z 0",
		"null us null null 0", // -0 is normalised
		"null null y 2024-05-01T00:00:01Z 1.5",
	})
}

func TestKeyCodecTypes(t *testing.T) {
	mem := checkedMem(t)
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	s := arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "d32", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "d64", Type: arrow.FixedWidthTypes.Date64, Nullable: true},
		{Name: "dict", Type: dict, Nullable: true},
		{Name: "t32", Type: arrow.FixedWidthTypes.Time32s, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	b.Field(0).(*array.Int8Builder).AppendValues([]int8{-5, 0}, []bool{true, false})
	b.Field(1).(*array.Uint64Builder).AppendValues([]uint64{1 << 63, 1}, nil)
	b.Field(2).(*array.Float32Builder).AppendValues([]float32{1.5, 0}, nil)
	b.Field(3).(*array.BooleanBuilder).AppendValues([]bool{true, false}, nil)
	b.Field(4).(*array.BinaryBuilder).AppendValues([][]byte{{0, 1}, nil}, []bool{true, false})
	b.Field(5).(*array.Date32Builder).AppendValues([]arrow.Date32{18700, 0}, nil)
	b.Field(6).(*array.Date64Builder).AppendValues([]arrow.Date64{18700 * 86_400_000, 0}, nil)
	db := b.Field(7).(*array.BinaryDictionaryBuilder)
	db.AppendString("x")
	db.AppendNull()
	b.Field(8).(*array.Time32Builder).AppendValues([]arrow.Time32{3600, 0}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var paths []string
	for _, f := range s.Fields() {
		paths = append(paths, f.Name)
	}
	c, err := NewKeyCodec(s, paths)
	if err != nil {
		t.Fatal(err)
	}
	out := encodeDecode(t, mem, c, rec)
	defer out.Release()
	var types []string
	for _, f := range c.Fields() {
		types = append(types, f.Type.String())
	}
	if got := strings.Join(types, " "); got != "int8 uint64 float32 bool binary date32 date64 utf8 utf8" {
		t.Errorf("output types %s", got)
	}
	diffRows(t, rowsOf([]arrow.RecordBatch{out}, time.RFC3339), []string{
		"-5 9223372036854775808 1.5 true AAE= 2021-03-14 2021-03-14 x \"01:00:00\"",
		"null 1 0 false null 1970-01-01 1970-01-01 null \"00:00:00\"",
	})
}

func TestTimeExtractorStructPath(t *testing.T) {
	mem := checkedMem(t)
	s := arrow.NewSchema([]arrow.Field{{Name: "value", Type: arrow.StructOf(
		arrow.Field{Name: "date", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true}}, nil)
	rec := buildBatch(t, mem, s, [][]any{{[]any{"2024-05-01T10:00:00+02:00"}}, {nil}, {[]any{nil}}})
	defer rec.Release()
	x, err := NewTimeExtractor(s, "value.date", TimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ts, ok, err := x.Extract(rec, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(TimeOf(ts[0]).Format(time.RFC3339), " ", ok); got != "2024-05-01T08:00:00Z [true false false]" {
		t.Errorf("got %s", got)
	}
}

// Event-time text is read with the spellings CSV and JSON timestamp columns accept
// (codec.ParseTimestampText), so a column read-files parses as a timestamp also parses here
// when it arrives as text.
func TestParseRFC3339SameAsCSV(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // RFC 3339 UTC, "" = unparseable
	}{
		{"2024-05-01T10:00Z", "2024-05-01T10:00:00Z"},
		{"2024-05-01 10:00:00 UTC", "2024-05-01T10:00:00Z"},
		{"2024-05-01T10:00:00+02", "2024-05-01T08:00:00Z"},
		{"2024-05-01T10:00:00.1234567890Z", ""}, // at most 9 fraction digits
	} {
		civil, off, _, ok := parseRFC3339(tt.in)
		got := ""
		if ok {
			got = TimeOf(civil - off).Format(time.RFC3339)
		}
		if got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}
