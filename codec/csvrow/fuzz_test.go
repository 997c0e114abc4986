package csvrow

import (
	"bytes"
	"encoding/json"
	"testing"
	"testing/iotest"
)

// FuzzCSV checks that arbitrary input never panics or leaks, that the result does not depend
// on the buffer size or on how the input is split across reads, and that rescued data is
// valid JSON. Corpus: testdata/fuzz/FuzzCSV.
func FuzzCSV(f *testing.F) {
	for _, s := range []string{
		"a,b,c\r\n\"x\r\ny\",\"\"\"\",3\n",
		"1,2.5,true,2024-01-01,\"q\"\"\"\n,,\n",
		"\xEF\xBB\xBF\"unterminated\n",
		"x\ty\\\tz\n#c\n",
	} {
		f.Add([]byte(s), uint8(3), false)
	}
	s := mustSchema(f, "a int, b double, c string, d date, e timestamp")
	f.Fuzz(func(t *testing.T, data []byte, size uint8, header bool) {
		opts := Options{Header: header, Dialect: Dialect{Comment: '#'}}
		want := read(t, bytes.NewReader(data), s, opts)
		opts.BufferSize = int(size%16) + 1
		got := read(t, iotest.OneByteReader(bytes.NewReader(data)), s, opts)
		if (got.err == nil) != (want.err == nil) || got.rows != want.rows || !equalInts(got.lines, want.lines) || !equalInts(got.offsets, want.offsets) || !sameBad(got.bad, want.bad) {
			t.Fatalf("buffer %d differs:\n%s %v %v\nvs\n%s %v %v", opts.BufferSize, got.rows, got.bad, got.err, want.rows, want.bad, want.err)
		}
		for _, line := range bytes.Split([]byte(got.rows), []byte{'\n'}) {
			if len(line) == 0 {
				continue
			}
			var row map[string]any
			if err := json.Unmarshal(line, &row); err != nil {
				t.Fatalf("row is not JSON: %s", line)
			}
			if r, ok := row["_rescued_data"].(string); ok && !json.Valid([]byte(r)) {
				t.Fatalf("rescued data is not JSON: %q", r)
			}
		}
		// Inference and a TSV dialect with an escape must not panic either.
		read(t, bytes.NewReader(data), nil, Options{Header: header, Dialect: Dialect{Delimiter: '\t', Escape: '\\'}, BufferSize: 2})
	})
}
