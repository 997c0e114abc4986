package jsonrow

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/codec/schema"
)

// rowsJSON renders a batch as one JSON object per row (arrow's RecordToJSON).
func rowsJSON(t *testing.T, rec arrow.RecordBatch) string {
	t.Helper()
	var b bytes.Buffer
	if err := array.RecordToJSON(rec, &b); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(b.String())
}

func mustSchema(t testing.TB, ddl string) *arrow.Schema {
	t.Helper()
	s, err := schema.ParseDDL(ddl)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type readResult struct {
	rows    string
	bad     []rescue.BadRecord
	lines   []int64
	offsets []int64
	err     error
}

func readAll(t *testing.T, input string, s *arrow.Schema, opts ReaderOptions) readResult {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts.Allocator = mem
	var res readResult
	if opts.OnBadRecord == nil && opts.Mode != rescue.FailFast {
		opts.OnBadRecord = func(br rescue.BadRecord) error { res.bad = append(res.bad, br); return nil }
	}
	r, err := NewReader(strings.NewReader(input), s, opts)
	if err != nil {
		res.err = err
		return res
	}
	defer r.Release()
	var rows []string
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			res.err = err
			break
		}
		if rec.NumRows() > 0 {
			rows = append(rows, rowsJSON(t, rec))
		}
		l, o := r.Positions()
		res.lines = append(res.lines, l...)
		res.offsets = append(res.offsets, o...)
		rec.Release()
	}
	res.rows = strings.Join(rows, "\n")
	return res
}

func TestDecodeTypes(t *testing.T) {
	tests := []struct {
		name, ddl, input, want string
	}{
		{
			name:  "scalars",
			ddl:   "id long, amount double, ok boolean, s string, n int, sh short, ti tinyint, f float",
			input: `{"id":1,"amount":2.5,"ok":true,"s":"x\ny\u00e9","n":-7,"sh":300,"ti":-128,"f":1.5}`,
			want:  `{"_rescued_data":null,"amount":2.5,"f":1.5,"id":1,"n":-7,"ok":true,"s":"x\nyé","sh":300,"ti":-128}`,
		},
		{
			name:  "nulls and missing",
			ddl:   "id long, s string",
			input: `{"id":null}`,
			want:  `{"_rescued_data":null,"id":null,"s":null}`,
		},
		{
			name:  "extra and mistyped fields are rescued",
			ddl:   "id long, amount double",
			input: `{"id":1,"extra":{"a":[1,2]},"amount":"abc"}`,
			want:  `{"_rescued_data":"{\"extra\":{\"a\":[1,2]},\"amount\":\"abc\",\"_file\":\"x.json\"}","amount":null,"id":1}`,
		},
		{
			name:  "integers are strict",
			ddl:   "a int, b long, c tinyint",
			input: `{"a":1.0,"b":"2","c":200}`,
			want:  `{"_rescued_data":"{\"a\":1.0,\"b\":\"2\",\"c\":200,\"_file\":\"x.json\"}","a":null,"b":null,"c":null}`,
		},
		{
			name:  "strings take any value as JSON text",
			ddl:   "a string, b string, c string",
			input: `{"a":12,"b":{"x": [true, null]},"c":false}`,
			want:  `{"_rescued_data":null,"a":"12","b":"{\"x\": [true, null]}","c":"false"}`,
		},
		{
			name:  "special floats and decimals",
			ddl:   "a double, b double, d decimal(10,2), e decimal(4,1)",
			input: `{"a":"NaN","b":-1e3,"d":"12.345","e":12345}`,
			want:  `{"_rescued_data":"{\"e\":12345,\"_file\":\"x.json\"}","a":"NaN","b":-1000,"d":"12.35","e":null}`,
		},
		{
			name:  "timestamps",
			ddl:   "a timestamp, b timestamp, c timestamp, d timestamp_ntz, e timestamp_ntz, f date",
			input: `{"a":"2024-03-01T12:00:00.123456+02:00","b":"2024-03-01 12:00:00","c":1700000000123,"d":"2024-03-01T12:00:00","e":"2024-03-01T12:00:00Z","f":"2024-02-29"}`,
			want:  `{"_rescued_data":"{\"e\":\"2024-03-01T12:00:00Z\",\"_file\":\"x.json\"}","a":"2024-03-01T10:00:00.123456Z","b":"2024-03-01T12:00:00Z","c":"2023-11-14T22:13:20.123Z","d":"2024-03-01T12:00:00","e":null,"f":"2024-02-29"}`,
		},
		{
			name:  "nested",
			ddl:   "user struct<id:long,name:string>, tags array<string>, m map<string,int>, l array<struct<x:int>>",
			input: `{"user":{"id":7,"name":"ann","age":3},"tags":["a",null,"b"],"m":{"k":1,"j":"bad"},"l":[{"x":1},{"x":"no"},null]}`,
			want:  `{"_rescued_data":"{\"user.age\":3,\"m.j\":\"bad\",\"l[1].x\":\"no\",\"_file\":\"x.json\"}","l":[{"x":1},{"x":null},null],"m":[{"key":"k","value":1},{"key":"j","value":null}],"tags":["a",null,"b"],"user":{"id":7,"name":"ann"}}`,
		},
		{
			name:  "wrong container kinds",
			ddl:   "user struct<id:long>, tags array<string>",
			input: `{"user":[1],"tags":{"a":1}}`,
			want:  `{"_rescued_data":"{\"user\":[1],\"tags\":{\"a\":1},\"_file\":\"x.json\"}","tags":null,"user":null}`,
		},
		{
			name:  "duplicate keys: last wins, earlier rescued",
			ddl:   "a long",
			input: `{"a":1,"a":2}`,
			want:  `{"_rescued_data":"{\"a\":1,\"_file\":\"x.json\"}","a":2}`,
		},
		{
			name:  "members in any order; a record's own _rescued_data member is rescued, not taken",
			ddl:   "a long, b long, c long",
			input: `{"c":3,"b":2,"_rescued_data":"x","a":1,"b":5}`,
			want:  `{"_rescued_data":"{\"_rescued_data\":\"x\",\"b\":2,\"_file\":\"x.json\"}","a":1,"b":5,"c":3}`,
		},
		{
			name:  "member after the last matched one is the rescued column's place",
			ddl:   "a long",
			input: `{"a":1,"_rescued_data":2}`,
			want:  `{"_rescued_data":"{\"_rescued_data\":2,\"_file\":\"x.json\"}","a":1}`,
		},
		{
			name:  "escaped keys match",
			ddl:   "`a\"b` long, `é` long",
			input: `{"a\"b":1,"\u00e9":2}`,
			want:  `{"_rescued_data":null,"a\"b":1,"é":2}`,
		},
		{
			name:  "binary is base64",
			ddl:   "b binary",
			input: `{"b":"aGVsbG8="}`,
			want:  `{"_rescued_data":null,"b":"aGVsbG8="}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := readAll(t, tt.input, mustSchema(t, tt.ddl), ReaderOptions{Source: "x.json"})
			if res.err != nil {
				t.Fatal(res.err)
			}
			if len(res.bad) > 0 {
				t.Fatalf("bad records: %+v", res.bad)
			}
			if got := res.rows; got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestLocation(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	res := readAll(t, `{"ts":"2024-07-01T08:00:00"}`, mustSchema(t, "ts timestamp"), ReaderOptions{Options: Options{Location: ny}})
	if want := `{"_rescued_data":null,"ts":"2024-07-01T12:00:00Z"}`; res.rows != want {
		t.Errorf("got %s, want %s", res.rows, want)
	}
}

func TestBadRecords(t *testing.T) {
	input := "{\"id\":1}\n{\"id\":2,\n\n[1,2]\n{\"id\":3}   \r\n{\"id\":\"x\"}\n{\"id\":4} trailing\n"
	s := mustSchema(t, "id long")
	res := readAll(t, input, s, ReaderOptions{Source: "f.json"})
	if res.err != nil {
		t.Fatal(res.err)
	}
	wantRows := `{"_rescued_data":null,"id":1}
{"_rescued_data":null,"id":3}
{"_rescued_data":"{\"id\":\"x\",\"_file\":\"f.json\"}","id":null}`
	if res.rows != wantRows {
		t.Errorf("rows:\n%s\nwant\n%s", res.rows, wantRows)
	}
	type badSummary struct {
		line, offset int64
		reason, raw  string
	}
	var got []badSummary
	for _, b := range res.bad {
		got = append(got, badSummary{b.Line, b.Offset, b.Reason, string(b.Raw)})
	}
	want := []badSummary{
		{2, 9, "unexpected end of input at byte 8", `{"id":2,`},
		{4, 19, "record is a JSON array, not an object", "[1,2]"},
		{7, 49, "invalid character 't' after top-level value at byte 9", `{"id":4} trailing`},
	}
	if len(got) != len(want) {
		t.Fatalf("bad records: got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bad record %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if wantLines := []int64{1, 5, 6}; !equal(res.lines, wantLines) {
		t.Errorf("lines %v, want %v", res.lines, wantLines)
	}
	if wantOffsets := []int64{0, 25, 38}; !equal(res.offsets, wantOffsets) {
		t.Errorf("offsets %v, want %v", res.offsets, wantOffsets)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestModes(t *testing.T) {
	input := "{\"id\":1,\"extra\":true}\n{\"id\":\"x\"}\n{\"id\":3}\n"
	s := mustSchema(t, "id long")

	res := readAll(t, input, s, ReaderOptions{Options: Options{Mode: rescue.DropMalformed}})
	want := `{"_rescued_data":"{\"extra\":true}","id":1}
{"_rescued_data":null,"id":3}`
	if res.err != nil || res.rows != want {
		t.Errorf("dropmalformed: rows %s err %v, want %s", res.rows, res.err, want)
	}
	if len(res.bad) != 1 || res.bad[0].Reason != `field id: "x" is not a valid bigint` || res.bad[0].Line != 2 {
		t.Errorf("dropmalformed bad: %+v", res.bad)
	}

	res = readAll(t, input, s, ReaderOptions{Options: Options{Mode: rescue.FailFast}, Source: "in.json"})
	var re *rescue.Error
	if !errors.As(res.err, &re) || re.Line != 2 || !strings.Contains(res.err.Error(), "in.json at line 2") {
		t.Errorf("failfast: err %v", res.err)
	}

	// NOT NULL: a missing or null value makes the record bad, in permissive mode too.
	res = readAll(t, "{\"id\":1}\n{\"name\":\"a\"}\n{\"id\":null}\n", mustSchema(t, "id long not null"), ReaderOptions{})
	if len(res.bad) != 2 || res.bad[0].Reason != "field id: missing value for NOT NULL column" || res.bad[1].Reason != "field id: null value for NOT NULL column" {
		t.Errorf("not null: %+v", res.bad)
	}
	if res.rows != `{"_rescued_data":null,"id":1}` {
		t.Errorf("not null rows: %s", res.rows)
	}

	// No handler: the first bad record is an error.
	r, err := NewReader(strings.NewReader("{\n"), s, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if _, err := r.Next(); !errors.As(err, &re) {
		t.Errorf("no handler: err %v", err)
	}
}

func TestArrayLayout(t *testing.T) {
	input := "\xEF\xBB\xBF [\n {\"a\": 1},\n {\"a\": [\"]\", {}]},\n{\"a\":\n 3} , {bad}, {\"a\":4}\n]\n"
	res := readAll(t, input, mustSchema(t, "a string"), ReaderOptions{BufferSize: 3})
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := `{"_rescued_data":null,"a":"1"}
{"_rescued_data":null,"a":"[\"]\", {}]"}
{"_rescued_data":null,"a":"3"}
{"_rescued_data":null,"a":"4"}`
	if res.rows != want {
		t.Errorf("got\n%s\nwant\n%s", res.rows, want)
	}
	if len(res.bad) != 1 || string(res.bad[0].Raw) != "{bad}" || res.bad[0].Line != 5 {
		t.Errorf("bad: %+v", res.bad)
	}
	if want := []int64{2, 3, 4, 5}; !equal(res.lines, want) {
		t.Errorf("lines %v, want %v", res.lines, want)
	}
}

// TestBufferBoundaries decodes the same input with every small buffer size.
func TestBufferBoundaries(t *testing.T) {
	input := "{\"a\":\"x\\\"y\",\"b\":[1,2]}\r\n\n{\"a\":\"ü\",\"b\":[]}\n{\"a\":null,\"b\":[3]}"
	s := mustSchema(t, "a string, b array<long>")
	want := readAll(t, input, s, ReaderOptions{}).rows
	for size := 1; size < 40; size++ {
		for _, layout := range []Layout{AutoLayout, LinesLayout} {
			got := readAll(t, input, s, ReaderOptions{BufferSize: size, Layout: layout})
			if got.rows != want || got.err != nil || len(got.bad) > 0 {
				t.Fatalf("buffer %d: got %s (%v, %v), want %s", size, got.rows, got.err, got.bad, want)
			}
		}
	}
	arr := "[" + strings.ReplaceAll(strings.ReplaceAll(input, "\n\n", "\n"), "\n", ",") + "]"
	for size := 1; size < 40; size++ {
		got := readAll(t, arr, s, ReaderOptions{BufferSize: size})
		if got.rows != want || got.err != nil || len(got.bad) > 0 {
			t.Fatalf("array, buffer %d: got %s (%v, %v), want %s", size, got.rows, got.err, got.bad, want)
		}
	}
}

func TestBatching(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 10; i++ {
		b.WriteString(`{"a":1}` + "\n")
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r, err := NewReader(strings.NewReader(b.String()), mustSchema(t, "a int"), ReaderOptions{BatchRows: 4, Options: Options{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var sizes []int64
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, rec.NumRows())
		rec.Release()
	}
	if !equal(sizes, []int64{4, 4, 2}) {
		t.Errorf("batch sizes %v", sizes)
	}
}

func TestAppendValue(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var bad []rescue.BadRecord
	d, err := NewDecoder(mustSchema(t, "order_id long, amount decimal(10,2)"), Options{Allocator: mem, OnBadRecord: func(b rescue.BadRecord) error { bad = append(bad, b); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	values := []string{`{"order_id":1,"amount":9.99}`, ``, `not json`, `{"order_id":2,"x":1}`}
	for i, v := range values {
		if v == "" {
			d.AppendNull() // a tombstone
			continue
		}
		ok, err := d.Append([]byte(v), Source{Name: "orders/0@" + string(rune('0'+i))})
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			d.AppendNull() // keep the row aligned with the Kafka batch
		}
	}
	sa := d.NewStruct()
	defer sa.Release()
	js, _ := sa.MarshalJSON()
	got := strings.ReplaceAll(string(js), "\n", "")
	want := `[{"_rescued_data":null,"amount":"9.99","order_id":1},null,null,{"_rescued_data":"{\"x\":1,\"_file\":\"orders/0@3\"}","amount":null,"order_id":2}]`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if len(bad) != 1 || bad[0].Source != "orders/0@2" || bad[0].Reason != "invalid literal at byte 0" {
		t.Errorf("bad: %+v", bad)
	}
}

func TestInfer(t *testing.T) {
	input := `{"a":1,"b":"x","c":[1,2],"d":{"x":1}}
{"a":2.5,"b":3,"c":[1.5],"d":{"y":"z"},"e":null,"f":true}
{"a":3,"g":"2024-01-01T00:00:00Z"}`
	res := readAll(t, input, nil, ReaderOptions{})
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := `{"_rescued_data":null,"a":1,"b":"x","c":[1,2],"d":{"x":1,"y":null},"e":null,"f":null,"g":null}
{"_rescued_data":null,"a":2.5,"b":"3","c":[1.5],"d":{"x":null,"y":"z"},"e":null,"f":true,"g":null}
{"_rescued_data":null,"a":3,"b":null,"c":null,"d":null,"e":null,"f":null,"g":"2024-01-01T00:00:00Z"}`
	if res.rows != want {
		t.Errorf("got\n%s\nwant\n%s", res.rows, want)
	}
	in := NewInferrer(InferOptions{Timestamps: true})
	for _, l := range strings.Split(input, "\n") {
		in.Add([]byte(l))
	}
	wantSchema := "a double, b string, c array<double>, d struct<x:bigint,y:string>, e string, f boolean, g timestamp"
	if got := schema.DDL(in.Schema()); got != wantSchema {
		t.Errorf("schema %s\nwant   %s", got, wantSchema)
	}
}

// TestSwarStop: the word scan flags every byte strClass stops at, in every lane, and no word
// of plain bytes.
func TestSwarStop(t *testing.T) {
	for c := 0; c < 256; c++ {
		for lane := 0; lane < 8; lane++ {
			w := []byte("aZ ~09!}")
			w[lane] = byte(c)
			x := binary.LittleEndian.Uint64(w)
			if got := swarStop(x); got != strClass[c] {
				t.Fatalf("byte %#x in lane %d: swarStop %v, strClass %v", c, lane, got, strClass[c])
			}
		}
	}
}
