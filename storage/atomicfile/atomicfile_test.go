package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplaceAndPutIfAbsent(t *testing.T) {
	dir := t.TempDir()
	tmp := Temp{Pattern: func(name string) string { return "_tmp_*." + name + ".tmp" }, Perm: 0o644}
	if err := tmp.PutIfAbsent(dir, "a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := tmp.PutIfAbsent(dir, "a", []byte("two")); !errors.Is(err, ErrExist) {
		t.Fatalf("second put-if-absent: err = %v, want ErrExist", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "one" {
		t.Fatalf("put-if-absent replaced the file: %q", b)
	}
	if err := tmp.Replace(dir, "a", []byte("three")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "three" {
		t.Fatalf("replace: %q", b)
	}
	private := Temp{Pattern: func(name string) string { return ".tmp-" + name + "-*" }, Perm: 0o600}
	if err := private.Replace(dir, "p", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "p")); err != nil || st.Mode().Perm()&0o077 != 0 {
		t.Fatalf("private file: mode %v, %v", st.Mode(), err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("temporary files left: %v", ents)
	}
	// A write that cannot create its temporary file leaves nothing and names the target.
	err := tmp.Replace(filepath.Join(dir, "missing"), "b", nil)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "missing", "b")) {
		t.Fatalf("replace into a missing dir: %v", err)
	}
}
