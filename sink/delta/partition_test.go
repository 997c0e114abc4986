package delta

import (
	"testing"

	"github.com/streamkit/streamkit/delta"
)

func sp(s string) *string { return &s }

func TestEscapePartitionName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"A/A", "A%2FA"},
		{"B B", "B B"},
		{"R&D", "R&D"},
		{"50%", "50%25"},
		{"a?", "a%3F"},
		{"é", "é"},
		{"a:b", "a%3Ab"},
		{"x=y", "x%3Dy"},
		{`"#'*\{[]^}`, `%22%23%27%2A%5C%7B%5B%5D%5E}`},
		{"tab\there\x7f", "tab%09here%7F"},
	} {
		if got := EscapePartitionName(c.in); got != c.want {
			t.Errorf("EscapePartitionName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPartitionDirAndEncodePath(t *testing.T) {
	for _, c := range []struct {
		vals     map[string]*string
		dir, uri string
	}{
		{map[string]*string{"p": sp("a:b c")}, "p=a%3Ab c", "p=a%253Ab%20c"},
		{map[string]*string{"p": sp("A/A")}, "p=A%2FA", "p=A%252FA"},
		{map[string]*string{"p": sp("R&D")}, "p=R&D", "p=R&D"},
		{map[string]*string{"p": sp("é")}, "p=é", "p=%C3%A9"},
		{map[string]*string{"p": nil}, "p=__HIVE_DEFAULT_PARTITION__", "p=__HIVE_DEFAULT_PARTITION__"},
		{map[string]*string{"p": sp("")}, "p=__HIVE_DEFAULT_PARTITION__", "p=__HIVE_DEFAULT_PARTITION__"},
	} {
		dir := PartitionDir([]string{"p"}, c.vals)
		if dir != c.dir {
			t.Errorf("PartitionDir(%v) = %q, want %q", c.vals, dir, c.dir)
		}
		if got := delta.EncodePath(dir); got != c.uri {
			t.Errorf("EncodePath(%q) = %q, want %q", dir, got, c.uri)
		}
		back, err := delta.DecodePath(delta.EncodePath(dir + "/f.parquet"))
		if err != nil || back != dir+"/f.parquet" {
			t.Errorf("DecodePath(EncodePath(%q)) = %q, %v", dir, back, err)
		}
	}
	if got := PartitionDir([]string{"a", "b"}, map[string]*string{"a": sp("1"), "b": sp("x")}); got != "a=1/b=x" {
		t.Errorf("two columns: %q", got)
	}
}

func TestJavaFloatString(t *testing.T) {
	for _, c := range []struct {
		v    float64
		bits int
		want string
	}{
		{1, 64, "1.0"}, {1e10, 64, "1.0E10"}, {1.5e-5, 64, "1.5E-5"}, {0.001, 64, "0.001"},
		{1234567, 64, "1234567.0"}, {12345678, 64, "1.2345678E7"}, {-2.5, 64, "-2.5"},
		{0, 64, "0.0"}, {0.1, 32, "0.1"},
	} {
		if got := javaFloatString(c.v, c.bits); got != c.want {
			t.Errorf("javaFloatString(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}
