package delta

import (
	"errors"
	"testing"
)

func TestDecodePathRejectsEscapes(t *testing.T) {
	for _, p := range []string{"../x.parquet", "a/../../x", "/etc/passwd", "file:///etc/passwd", "s3://b/k",
		"a//b", "./a", "a%2F..%2F..%2Fx", "_delta_log/00.json", "a\\b", "a%00b", ""} {
		if _, err := DecodePath(p); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("DecodePath(%q) = %v, want ErrUnsafePath", p, err)
		}
	}
}
