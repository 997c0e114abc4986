package readfiles_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/peertest"
)

// A side output named .arrow (window --late-output, an Arrow IPC stream) is read back by
// read-files x.arrow, which sniffs the Arrow IPC file format's magic ARROW1 and otherwise
// reads the stream format (issue #26).
func TestReadsArrowSideOutput(t *testing.T) {
	dir := t.TempDir()
	in, late := filepath.Join(dir, "in.ndjson"), filepath.Join(dir, "late.arrow")
	rows := `{"k":"a","ts":"2024-01-01T10:00:10Z","v":1}
{"k":"a","ts":"2024-01-01T10:00:00Z","v":2}
{"k":"a","ts":"2024-01-01T10:00:11Z","v":3}
`
	if err := os.WriteFile(in, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour) // not a file still being written: no settle wait
	os.Chtimes(in, old, old)
	stream, stderr, code := peertest.Run(t, nil, nil, "read-files", in)
	if code != 0 {
		t.Fatalf("read-files: exit %d: %s", code, stderr)
	}
	if _, stderr, code = peertest.Run(t, nil, stream, "window", "tumbling", "--key", "k", "--time", "ts", "--size", "1s",
		"--agg", "count", "--late-output", late); code != 0 {
		t.Fatalf("window: exit %d: %s", code, stderr)
	}
	os.Chtimes(late, old, old)
	stream, stderr, code = peertest.Run(t, nil, nil, "read-files", late)
	if code != 0 {
		t.Fatalf("read-files %s: exit %d: %s", late, code, stderr)
	}
	out, stderr, code := peertest.Run(t, nil, stream, "print", "--format", "json")
	if code != 0 {
		t.Fatalf("print: exit %d: %s", code, stderr)
	}
	if got := strings.TrimSpace(string(out)); !strings.Contains(got, `"ts":"2024-01-01T10:00:00Z","v":2`) || strings.Count(got, "\n") != 0 {
		t.Fatalf("late rows read back: %q, want the one late row (v=2)", got)
	}
}
