package csvrow

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/codec/schema"
)

func mustSchema(t testing.TB, ddl string) *arrow.Schema {
	t.Helper()
	s, err := schema.ParseDDL(ddl)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type result struct {
	rows    string
	bad     []rescue.BadRecord
	lines   []int64
	offsets []int64
	schema  *arrow.Schema
	err     error
}

func read(t testing.TB, r io.Reader, s *arrow.Schema, opts Options) result {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts.Allocator = mem
	var res result
	if opts.OnBadRecord == nil && opts.Mode != rescue.FailFast {
		opts.OnBadRecord = func(b rescue.BadRecord) error { res.bad = append(res.bad, b); return nil }
	}
	rd, err := NewReader(r, s, opts)
	if err != nil {
		res.err = err
		return res
	}
	defer rd.Release()
	res.schema = rd.Schema()
	var b bytes.Buffer
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			res.err = err
			break
		}
		if err := array.RecordToJSON(rec, &b); err != nil {
			t.Fatal(err)
		}
		l, o := rd.Positions()
		res.lines = append(res.lines, l...)
		res.offsets = append(res.offsets, o...)
		rec.Release()
	}
	res.rows = strings.TrimSpace(b.String())
	return res
}

func readString(t testing.TB, input string, s *arrow.Schema, opts Options) result {
	return read(t, strings.NewReader(input), s, opts)
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name, ddl, input string
		opts             Options
		want             string
	}{
		{
			name:  "types",
			ddl:   "id long, amount double, ok boolean, s string, d decimal(6,2), day date, ts timestamp, n int",
			input: "1,2.5,TRUE,hello,12.345,2024-02-29,2024-03-01T12:00:00+01:00,-3\n",
			want:  `{"_rescued_data":null,"amount":2.5,"d":"12.35","day":"2024-02-29","id":1,"n":-3,"ok":true,"s":"hello","ts":"2024-03-01T11:00:00Z"}`,
		},
		{
			name:  "quoting",
			ddl:   "a string, b string, c string",
			input: "\"x,y\",\"he said \"\"hi\"\"\",\"line1\nline2\"\r\n\"\",,plain\"quote\n",
			want: `{"_rescued_data":null,"a":"x,y","b":"he said \"hi\"","c":"line1\nline2"}
{"_rescued_data":null,"a":"","b":null,"c":"plain\"quote"}`,
		},
		{
			name:  "header binds by name; extra and missing columns",
			ddl:   "id long, name string, score double",
			input: "name,id,extra\nann,1,x\nbob,2,\n",
			opts:  Options{Header: true, Source: "p.csv"},
			want: `{"_rescued_data":"{\"extra\":\"x\",\"_file\":\"p.csv\"}","id":1,"name":"ann","score":null}
{"_rescued_data":null,"id":2,"name":"bob","score":null}`,
		},
		{
			name:  "mistyped values and ragged rows are rescued",
			ddl:   "a int, b double",
			input: "1,x\n2\n3,4,5,\"\"\n",
			want: `{"_rescued_data":"{\"b\":\"x\"}","a":1,"b":null}
{"_rescued_data":null,"a":2,"b":null}
{"_rescued_data":"{\"_c2\":\"5\",\"_c3\":\"\"}","a":3,"b":4}`,
		},
		{
			name:  "tsv with escape and null value",
			ddl:   "a string, b int",
			input: "x\\ty\tNA\n\"q\\\"uote\"\t7\n",
			opts:  Options{Dialect: Dialect{Delimiter: '\t', Escape: '\\'}, NullValue: "NA"},
			want: `{"_rescued_data":null,"a":"x\\ty","b":null}
{"_rescued_data":null,"a":"q\"uote","b":7}`,
		},
		{
			name:  "comments, blank lines, CR line ends, BOM",
			ddl:   "a string, b string",
			input: "\xEF\xBB\xBF# comment\n\nx,1\r\ry,2\r\n\r\n\xEF\xBB\xBFz,3",
			opts:  Options{Dialect: Dialect{Comment: '#'}},
			want: `{"_rescued_data":null,"a":"x","b":"1"}
{"_rescued_data":null,"a":"y","b":"2"}
{"_rescued_data":null,"a":"` + "\ufeff" + `z","b":"3"}`,
		},
		{
			name:  "timestamps: epoch ms, ntz rejects zones",
			ddl:   "t timestamp, n timestamp_ntz",
			input: "1700000000123,2024-01-01 10:00:00\n2024-01-01,2024-01-01T00:00:00Z\n",
			want: `{"_rescued_data":null,"n":"2024-01-01T10:00:00","t":"2023-11-14T22:13:20.123Z"}
{"_rescued_data":"{\"n\":\"2024-01-01T00:00:00Z\"}","n":null,"t":"2024-01-01T00:00:00Z"}`,
		},
		{
			name:  "invalid utf-8 is kept base64 in the rescued data",
			ddl:   "s string, b binary",
			input: "a\xffb,\xff\n",
			want:  `{"_rescued_data":"{\"s_base64\":\"Yf9i\"}","b":"/w==","s":null}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := readString(t, tt.input, mustSchema(t, tt.ddl), tt.opts)
			if res.err != nil {
				t.Fatal(res.err)
			}
			if len(res.bad) > 0 {
				t.Fatalf("bad: %+v", res.bad)
			}
			if res.rows != tt.want {
				t.Errorf("got\n%s\nwant\n%s", res.rows, tt.want)
			}
		})
	}
}

func TestBadRecordsAndModes(t *testing.T) {
	s := mustSchema(t, "a int, b string")
	input := "1,x\n2,y,extra\nz,3\n4,\"unterminated\nstill"

	res := readString(t, input, s, Options{Source: "in.csv"})
	wantRows := `{"_rescued_data":null,"a":1,"b":"x"}
{"_rescued_data":"{\"_c2\":\"extra\",\"_file\":\"in.csv\"}","a":2,"b":"y"}
{"_rescued_data":"{\"a\":\"z\",\"_file\":\"in.csv\"}","a":null,"b":"3"}`
	if res.rows != wantRows {
		t.Errorf("permissive rows\n%s\nwant\n%s", res.rows, wantRows)
	}
	if len(res.bad) != 1 || res.bad[0].Reason != "unterminated quoted field" || res.bad[0].Line != 4 || res.bad[0].Offset != 18 || string(res.bad[0].Raw) != "4,\"unterminated\nstill" {
		t.Errorf("permissive bad: %+v", res.bad)
	}
	if want := []int64{1, 2, 3}; !equalInts(res.lines, want) {
		t.Errorf("lines %v want %v", res.lines, want)
	}

	res = readString(t, input, s, Options{Mode: rescue.DropMalformed})
	if res.rows != `{"_rescued_data":null,"a":1,"b":"x"}` {
		t.Errorf("dropmalformed rows: %s", res.rows)
	}
	var reasons []string
	for _, b := range res.bad {
		reasons = append(reasons, b.Reason)
	}
	wantReasons := []string{"record has 3 fields, expected 2", `field a: "z" is not a valid int`, "unterminated quoted field"}
	if strings.Join(reasons, "|") != strings.Join(wantReasons, "|") {
		t.Errorf("dropmalformed reasons %q, want %q", reasons, wantReasons)
	}

	res = readString(t, input, s, Options{Mode: rescue.FailFast, Source: "in.csv"})
	var re *rescue.Error
	if !errors.As(res.err, &re) || re.Line != 2 {
		t.Errorf("failfast: %v", res.err)
	}

	res = readString(t, "1,x\n,y\n", mustSchema(t, "a int not null, b string"), Options{})
	if len(res.bad) != 1 || res.bad[0].Reason != "field a: null value for NOT NULL column" {
		t.Errorf("not null: %+v", res.bad)
	}
}

// TestBufferBoundaries reads inputs full of quoted line breaks, doubled quotes and CRLFs with
// every buffer size from 1 byte up, through readers that return 1 byte or half a buffer per
// Read, and requires the same rows, positions and bad records as a single large read.
func TestBufferBoundaries(t *testing.T) {
	inputs := []struct {
		input string
		opts  Options
	}{
		{"a,b,c\r\n\"x\r\ny\",\"\"\"\",\"q\"\"\"\"\"\r\n1,\"\",3\n\"\n\",\"\r\",\"a\"\"b\r\n\"\r\n", Options{Header: true}},
		{"\xEF\xBB\xBF\"a\"\"\",b\n\"multi\nline\nvalue\",2\r\r\n\nlast,\"unterminated\n", Options{}},
		{"x\t\"a\\\"b\"\t\"c\\\\d\"\n\"\\\n\"\ty\tz\n", Options{Dialect: Dialect{Delimiter: '\t', Escape: '\\'}}},
		{"# c\r\n1;\"2;3\"\r\n#\n4;5", Options{Dialect: Dialect{Delimiter: ';', Comment: '#'}}},
	}
	for n, in := range inputs {
		s := mustSchema(t, "c0 string, c1 string, c2 string")
		if in.opts.Header {
			s = mustSchema(t, "a string, b string, c string")
		}
		want := readString(t, in.input, s, in.opts)
		if want.err != nil {
			t.Fatal(want.err)
		}
		for size := 1; size <= len(in.input)+1; size++ {
			for _, wrap := range []func(io.Reader) io.Reader{iotest.OneByteReader, iotest.HalfReader, func(r io.Reader) io.Reader { return r }} {
				opts := in.opts
				opts.BufferSize = size
				got := read(t, wrap(strings.NewReader(in.input)), s, opts)
				if got.err != nil || got.rows != want.rows || !equalInts(got.lines, want.lines) || !equalInts(got.offsets, want.offsets) || !sameBad(got.bad, want.bad) {
					t.Fatalf("input %d, buffer %d: got\n%s %v %v %v %v\nwant\n%s %v %v %v", n, size, got.rows, got.lines, got.offsets, got.bad, got.err, want.rows, want.lines, want.offsets, want.bad)
				}
			}
		}
	}
	// And the expected values of the first input, spelled out.
	want := `{"_rescued_data":null,"a":"x\r\ny","b":"\"","c":"q\"\""}
{"_rescued_data":null,"a":"1","b":"","c":"3"}
{"_rescued_data":null,"a":"\n","b":"\r","c":"a\"b\r\n"}`
	got := readString(t, inputs[0].input, mustSchema(t, "a string, b string, c string"), inputs[0].opts)
	if got.rows != want {
		t.Errorf("got\n%s\nwant\n%s", got.rows, want)
	}
	if !equalInts(got.lines, []int64{2, 4, 5}) {
		t.Errorf("lines %v", got.lines)
	}
}

func sameBad(a, b []rescue.BadRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Line != b[i].Line || a[i].Offset != b[i].Offset || a[i].Reason != b[i].Reason || !bytes.Equal(a[i].Raw, b[i].Raw) {
			return false
		}
	}
	return true
}

func equalInts(a, b []int64) bool {
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

func TestInfer(t *testing.T) {
	input := "id,score,flag,day,name,empty,mixed\n1,1.5,true,2024-01-01,a,,1\n3000000000,2,false,2024-01-02T10:00:00Z,b,,x\n"
	res := readString(t, input, nil, Options{Header: true, Infer: InferOptions{Timestamps: true}})
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := "id bigint, score double, flag boolean, day timestamp, name string, empty string, mixed string, _rescued_data string"
	if got := schema.DDL(res.schema); got != want {
		t.Errorf("schema %s\nwant   %s", got, want)
	}
	wantRows := `{"_rescued_data":null,"day":"2024-01-01T00:00:00Z","empty":null,"flag":true,"id":1,"mixed":"1","name":"a","score":1.5}
{"_rescued_data":null,"day":"2024-01-02T10:00:00Z","empty":null,"flag":false,"id":3000000000,"mixed":"x","name":"b","score":2}`
	if res.rows != wantRows {
		t.Errorf("rows\n%s\nwant\n%s", res.rows, wantRows)
	}
	// No header: _c<i> names; duplicate header names get their position.
	res = readString(t, "a,a\n1,2\n", nil, Options{Header: true})
	if got := schema.DDL(res.schema); got != "a int, a1 int, _rescued_data string" {
		t.Errorf("duplicate header schema %s", got)
	}
	if res.rows != `{"_rescued_data":null,"a":1,"a1":2}` {
		t.Errorf("duplicate header rows %s", res.rows)
	}
	res = readString(t, "1,x\n", nil, Options{})
	if got := schema.DDL(res.schema); got != "_c0 int, _c1 string, _rescued_data string" {
		t.Errorf("no header schema %s", got)
	}
}

func TestBatchRows(t *testing.T) {
	res := readString(t, strings.Repeat("1\n", 10), mustSchema(t, "a int"), Options{BatchRows: 3})
	if n := strings.Count(res.rows, "\n") + 1; n != 10 {
		t.Errorf("rows %d", n)
	}
}

func TestDecoderAppend(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var bad []rescue.BadRecord
	d, err := NewDecoder(mustSchema(t, "id long, name string"), Options{Allocator: mem, OnBadRecord: func(b rescue.BadRecord) error { bad = append(bad, b); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	for i, v := range []string{"1,ann\n", "x,\"b,c\"", "3,a\n4,b\n", "\"open", "5,e,extra"} {
		if _, err := d.Append([]byte(v), Source{Name: "t/0@" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	rec := d.NewRecordBatch()
	defer rec.Release()
	var b bytes.Buffer
	array.RecordToJSON(rec, &b)
	want := `{"_rescued_data":null,"id":1,"name":"ann"}
{"_rescued_data":"{\"id\":\"x\",\"_file\":\"t/0@1\"}","id":null,"name":"b,c"}
{"_rescued_data":"{\"_c2\":\"extra\",\"_file\":\"t/0@4\"}","id":5,"name":"e"}`
	if got := strings.TrimSpace(b.String()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if len(bad) != 2 || bad[0].Reason != "value holds more than one CSV record" || bad[1].Reason != "unterminated quoted field" || bad[1].Source != "t/0@3" {
		t.Errorf("bad %+v", bad)
	}
}
