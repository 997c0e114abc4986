package interop

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/textdiff"
)

var update = flag.Bool("update", false, "rewrite the golden stdout files of testdata/cli/<tool>/<case>/")

// TestPrintGolden runs the pyarrow-fed CLI golden cases of print: each directory
// testdata/cli/print/<case>/ with a file args holds
//
//	input   the arrowgen.py case piped into streamkit (pyarrow → streamkit over a real pipe)
//	args    the streamkit command line after "streamkit", split on white space
//	stdout  the expected output, byte for byte (rewritten with -update)
//
// Both processes must exit 0.
func TestPrintGolden(t *testing.T) {
	p := needPeers(t)
	// The cases with an args file; those with a cmd file are cmd/streamkit's TestCLI.
	argFiles, err := filepath.Glob(filepath.Join(peertest.Root(t), "testdata", "cli", "print", "*", "args"))
	if err != nil {
		t.Fatal(err)
	}
	if len(argFiles) == 0 {
		t.Fatal("no golden cases under testdata/cli/print")
	}
	for _, argFile := range argFiles {
		dir := filepath.Dir(argFile)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			input := readCaseFile(t, dir, "input")
			args := strings.Fields(readCaseFile(t, dir, "args"))
			if len(args) == 0 || args[0] != "print" {
				t.Fatalf("%s/args: got %q, want a print command line", dir, args)
			}
			got, exits := run(t, nil, p.gen("produce", input), p.sk(args...))
			wantCodes(t, exits, 0, 0)
			golden := filepath.Join(dir, "stdout")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("streamkit %s < %s: stdout differs from %s (-update rewrites it)\n%s",
					strings.Join(args, " "), input, golden, textdiff.Lines(string(got), string(want)))
			}
		})
	}
}

func readCaseFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
