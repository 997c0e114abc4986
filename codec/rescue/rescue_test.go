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
	b.AddString("_c3", []byte("a\"b\n\x01\xff"))
	b.AddRawKey([]byte(`"extra"`), []byte(`[1,2]`))
	got := string(b.Finish("dir/x.json"))
	want := `{"user.id":"abc","_c3":"a\"b\n\u0001\ufffd","extra":[1,2],"_file":"dir/x.json"}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Errorf("not JSON: %s", got)
	}
	b.Reset()
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
