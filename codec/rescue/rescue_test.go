package rescue

import (
	"encoding/json"
	"testing"
)

func TestBuilder(t *testing.T) {
	var b Builder
	if got := b.Finish("x"); got != nil {
		t.Errorf("empty builder: %s", got)
	}
	b.AddRaw("user.id", []byte(`"abc"`))
	b.AddString("_c2", []byte("a\"b\n\x01"))
	b.AddRawKey([]byte(`"extra"`), []byte(`[1,2]`))
	if b.NotUTF8() {
		t.Error("NotUTF8 without invalid text")
	}
	got := string(b.Finish("dir/x.json"))
	want := `{"user.id":"abc","_c2":"a\"b\n\u0001","extra":[1,2],"_file":"dir/x.json"}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Errorf("not JSON: %s", got)
	}
	// Text that is not UTF-8 keeps its bytes, base64 under <path>_base64: a CSV field, a
	// verbatim JSON value, a JSON member whose name is not UTF-8 (name with U+FFFD, the whole
	// member as the value).
	b.Reset()
	b.AddString("name", []byte("bad\xff\xfeutf8"))
	b.AddRaw("user.nick", []byte("\"x\xff\""))
	b.AddRawKey([]byte(`"ok"`), []byte("[\"\xc3\"]"))
	b.AddRawKey([]byte("\"k\xff\""), []byte(`1`))
	got = string(b.Finish(""))
	want = `{"name_base64":"YmFk//51dGY4","user.nick_base64":"Inj/Ig==","ok_base64":"WyLDIl0=","k\ufffd_base64":"Imv/Ijox"}`
	if got != want || !b.NotUTF8() || !json.Valid([]byte(got)) {
		t.Errorf("not UTF-8: got  %s\nwant %s (NotUTF8 %v)", got, want, b.NotUTF8())
	}
	b.Reset()
	if b.NotUTF8() {
		t.Error("NotUTF8 after Reset")
	}
	b.AddRaw("a", []byte("1"))
	if got := string(b.Finish("")); got != `{"a":1}` {
		t.Errorf("without source: %s", got)
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in   string
		want Mode
		ok   bool
	}{
		{"", Permissive, true}, {"PERMISSIVE", Permissive, true}, {"DropMalformed", DropMalformed, true},
		{"failfast", FailFast, true}, {"strict", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseMode(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	e := &Error{BadRecord{Source: "f.csv", Line: 3, Offset: 40, Reason: "unterminated quoted field"}}
	if got, want := e.Error(), "bad record in f.csv at line 3 (byte 40): unterminated quoted field"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
