package jsonrow

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/rescue"
)

// FuzzJSON checks that arbitrary input never panics or leaks, that the tokenizer agrees with
// encoding/json on validity, that every non-blank line becomes a row or a bad record, and that
// rescued data is valid JSON. Corpus: testdata/fuzz/FuzzJSON.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"user":{"id":2,"name":"a"},"tags":["x"],"m":{"k":1.5},"ts":"2024-01-01T00:00:00Z"}`,
		`{"id":"x","extra":[1,{"a":null}],"d":"1e400"}`,
		"[{\"id\":1},\n{\"id\":2}]",
		`{"a":"\ud800","b":"\u00e9\\\"","id":-0.0e+1}`,
		"{\"id\":1}\r\n\n{bad\n",
	} {
		f.Add([]byte(s))
	}
	s := mustSchema(f, "id long, user struct<id:long,name:string>, tags array<string>, m map<string,double>, ts timestamp, d decimal(5,2), b binary, day date")
	f.Fuzz(func(t *testing.T, data []byte) {
		var tz tokenizer
		if got, want := tz.tokenize(data) == nil, json.Valid(data); got != want {
			t.Fatalf("tokenizer valid=%v, encoding/json valid=%v for %q", got, want, data)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		nbad := 0
		opts := ReaderOptions{Layout: LinesLayout, BufferSize: 7, Options: Options{Allocator: mem, OnBadRecord: func(rescue.BadRecord) error { nbad++; return nil }}}
		r, err := NewReader(bytes.NewReader(data), s, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		rows := 0
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			rows += int(rec.NumRows())
			col := rec.Column(int(rec.NumCols()) - 1).(*array.String)
			for i := 0; i < col.Len(); i++ {
				if col.IsValid(i) && !json.Valid([]byte(col.Value(i))) {
					t.Fatalf("rescued data is not JSON: %q", col.Value(i))
				}
			}
			rec.Release()
		}
		lines := 0
		// The reader skips a UTF-8 byte order mark at the start of the stream.
		for _, l := range bytes.Split(bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF")), []byte{'\n'}) {
			if !isBlank(bytes.TrimSuffix(l, []byte{'\r'})) {
				lines++
			}
		}
		if rows+nbad != lines {
			t.Fatalf("rows %d + bad %d != non-blank lines %d", rows, nbad, lines)
		}
		// The array layout and inference must not panic either.
		r2, err := NewReader(bytes.NewReader(data), nil, ReaderOptions{Layout: ArrayLayout, BufferSize: 5, Options: Options{Allocator: mem, OnBadRecord: func(rescue.BadRecord) error { return nil }}})
		if err != nil {
			t.Fatal(err)
		}
		defer r2.Release()
		for {
			rec, err := r2.Next()
			if err != nil {
				break
			}
			rec.Release()
		}
	})
}
