package jsonrow

import (
	"strings"
	"testing"

	"github.com/streamkit/streamkit/codec/rescue"
)

// TestNotUTF8 (issue #17 item 8): a JSON string that is not valid UTF-8 is null with its
// verbatim JSON value base64 in _rescued_data (it used to become U+FFFD, nothing rescued);
// escaped valid strings still decode; a member whose name is not UTF-8 is rescued whole and
// never becomes an inferred column; OnNotUTF8 counts the rows; FailFast names the field.
func TestNotUTF8(t *testing.T) {
	in := "{\"id\":1,\"name\":\"bad\xff\xfeutf8\"}\n{\"id\":2,\"name\":\"a\\nb\"}\n{\"id\":3,\"n\xffame\":\"x\",\"tags\":[\"\xc3\"]}\n"
	n := 0
	res := readAll(t, in, mustSchema(t, "id long, name string, tags array<string>"), ReaderOptions{Options: Options{OnNotUTF8: func() { n++ }}})
	want := `{"_rescued_data":"{\"name_base64\":\"ImJhZP/+dXRmOCI=\"}","id":1,"name":null,"tags":null}
{"_rescued_data":null,"id":2,"name":"a\nb","tags":null}
{"_rescued_data":"{\"n\\ufffdame_base64\":\"Im7/YW1lIjoieCI=\",\"tags[0]_base64\":\"IsMi\"}","id":3,"name":null,"tags":[null]}`
	if res.err != nil || res.rows != want || n != 2 {
		t.Fatalf("got (%d rows not UTF-8, %v)\n%s\nwant\n%s", n, res.err, res.rows, want)
	}
	res = readAll(t, in, mustSchema(t, "id long, name string"), ReaderOptions{Options: Options{Mode: rescue.FailFast}})
	if res.err == nil || !strings.Contains(res.err.Error(), `field name: "\"bad\xff\xfeutf8\"" is not valid UTF-8`) {
		t.Fatalf("failfast: %v", res.err)
	}
	in2 := "{\"id\":1,\"n\xffame\":\"x\"}\n"
	inf := NewInferrer(InferOptions{})
	inf.Add([]byte(strings.TrimSpace(in2)))
	if s := inf.Schema(); s.NumFields() != 1 || s.Field(0).Name != "id" {
		t.Fatalf("inferred %v: a name that is not UTF-8 became a column", s)
	}
}
