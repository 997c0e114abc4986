package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

// TestClosedStdoutIsSuccess runs commands that print text into a pipe whose reader is gone
// (`| head -1` once head has exited): each exits 0 and says nothing, as every Unix filter does
// (issue #23: `delta history … | head -2` failed with "broken pipe" in 3 runs of 5).
func TestClosedStdoutIsSuccess(t *testing.T) {
	bin := peertest.Binary(t)
	dir := t.TempDir()
	table := filepath.Join(dir, "t")
	for i := 0; i < 2; i++ {
		gen := exec.Command(bin, "generate", "--rows", "1", "--schema", "id bigint")
		wd := exec.Command(bin, "write-delta", table)
		var err error
		if wd.Stdin, err = gen.StdoutPipe(); err != nil {
			t.Fatal(err)
		}
		if err := gen.Start(); err != nil {
			t.Fatal(err)
		}
		if out, err := wd.CombinedOutput(); err != nil {
			t.Fatalf("write-delta: %v\n%s", err, out)
		}
		_ = gen.Wait()
	}
	parquet, err := filepath.Glob(filepath.Join(table, "*.parquet"))
	if err != nil || len(parquet) == 0 {
		t.Fatalf("no data file in %s: %v", table, err)
	}
	for _, args := range [][]string{
		{"delta", "history", table},
		{"delta", "history", table, "--format", "json"},
		{"delta", "describe", table},
		{"delta", "describe", table, "--format", "json"},
		{"schema", parquet[0]},
		{"schema", parquet[0], "--format", "json"},
		{"--help"},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close() // the reader is gone before the first write
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = w, &stderr
		err = cmd.Run()
		w.Close()
		if err != nil || stderr.Len() > 0 {
			t.Errorf("streamkit %q into a closed pipe: %v, stderr %q; want exit 0 and no message", args, err, stderr.String())
		}
	}
}
