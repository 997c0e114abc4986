package csvrow

import (
	"strings"
	"testing"

	"github.com/streamkit/streamkit/codec/rescue"
)

// TestNotUTF8 (issue #17 item 8): a string field that is not valid UTF-8 is null with its bytes
// base64 in _rescued_data (it used to be rewritten with U+FFFD, nothing rescued), so are extra
// columns; OnNotUTF8 counts the rows; FailFast names the field; a header name that is not UTF-8
// is read with U+FFFD (a schema name must be UTF-8).
func TestNotUTF8(t *testing.T) {
	in := "id,name,x\xff\n1,bad\xff\xfeutf8,\n2,ok,\n3,fine,extra\xc3\n"
	n := 0
	res := readString(t, in, mustSchema(t, "id long, name string"), Options{Header: true, OnNotUTF8: func() { n++ }})
	want := `{"_rescued_data":"{\"name_base64\":\"YmFk//51dGY4\"}","id":1,"name":null}
{"_rescued_data":null,"id":2,"name":"ok"}
{"_rescued_data":"{\"x�_base64\":\"ZXh0cmHD\"}","id":3,"name":"fine"}`
	if res.err != nil || res.rows != want || n != 2 || len(res.bad) != 0 {
		t.Fatalf("got (%d rows not UTF-8, %v, %v)\n%s\nwant\n%s", n, res.err, res.bad, res.rows, want)
	}
	res = readString(t, in, mustSchema(t, "id long, name string"), Options{Header: true, Mode: rescue.FailFast})
	if res.err == nil || !strings.Contains(res.err.Error(), `field name: "bad\xff\xfeutf8" is not valid UTF-8`) {
		t.Fatalf("failfast: %v", res.err)
	}
	res = readString(t, "n\xffame\nv\n", nil, Options{Header: true})
	if res.err != nil || res.schema.Field(0).Name != "n\uFFFDame" {
		t.Fatalf("inferred header name: %v %v", res.schema, res.err)
	}
}
