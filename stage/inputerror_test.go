package stage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

// TestInputErrorEmptyPipe: an empty pipe is ErrEmptyPipe (no message of the stage's own, exit
// 1); an empty file or in-memory reader keeps the "input is empty" message with its hint;
// other reader errors are prefixed with the tool.
func TestInputErrorEmptyPipe(t *testing.T) {
	noStream := func(r interface{ Read([]byte) (int, error) }) error {
		_, err := codec.NewReader(r, memory.DefaultAllocator)
		if !errors.Is(err, codec.ErrNoStream) {
			t.Fatalf("NewReader = %v, want ErrNoStream", err)
		}
		return err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer pr.Close()
	if got := InputError("print", pr, noStream(pr)); got != ErrEmptyPipe {
		t.Errorf("empty pipe: got %v, want ErrEmptyPipe", got)
	}
	if ExitCode(ErrEmptyPipe) != ExitError {
		t.Errorf("ErrEmptyPipe exits %d, want %d", ExitCode(ErrEmptyPipe), ExitError)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "empty"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, r := range map[string]interface{ Read([]byte) (int, error) }{"file": f, "buffer": &bytes.Buffer{}} {
		got := InputError("print", r, noStream(r))
		if got == ErrEmptyPipe || !errors.Is(got, codec.ErrNoStream) || !strings.HasPrefix(got.Error(), "print: stdin: the input is empty") || !strings.Contains(got.Error(), "pipe a streamkit source") {
			t.Errorf("empty %s: got %v, want the input-is-empty message", name, got)
		}
	}

	other := errors.New("boom")
	if got := InputError("dedup", pr, other); !errors.Is(got, other) || got.Error() != "dedup: stdin: boom" {
		t.Errorf("other error: got %v", got)
	}
}
