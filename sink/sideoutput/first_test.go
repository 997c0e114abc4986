package sideoutput

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/streamkit/streamkit/state"
)

// TestFirstMark: the first call records the file's size and says "open it as new"; later calls
// return that record for the same path, whatever was appended since; another path starts over.
func TestFirstMark(t *testing.T) {
	dir := t.TempDir()
	st, err := state.StoreAt(filepath.Join(dir, "ck"))
	if err != nil {
		t.Fatal(err)
	}
	side := filepath.Join(dir, "dropped.ndjson")
	if err := os.WriteFile(side, []byte("{\"a\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := FirstMark(st, "start.json", side)
	if err != nil || m != nil {
		t.Fatalf("first call: %+v, %v; want nil, nil", m, err)
	}
	if err := os.WriteFile(side, []byte("{\"a\":1}\n{\"b\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err = FirstMark(st, "start.json", side)
	if err != nil || m == nil || m.Path != side || m.Size != 8 {
		t.Fatalf("second call: %+v, %v; want %s at 8 bytes", m, err, side)
	}
	other := filepath.Join(dir, "other.ndjson")
	if m, err = FirstMark(st, "start.json", other); err != nil || m != nil {
		t.Fatalf("another file: %+v, %v; want nil, nil", m, err)
	}
	if m, err = FirstMark(st, "start.json", other); err != nil || m == nil || m.Size != 0 {
		t.Fatalf("another file again: %+v, %v; want it at 0 bytes", m, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ck", "start.json"), []byte("{\"crc32c\":\"00000000\",\"data\":{}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FirstMark(st, "start.json", other); err == nil {
		t.Fatal("a corrupt record was not reported")
	}
}
