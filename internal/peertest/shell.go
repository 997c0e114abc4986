package peertest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Pipeline runs script with bash -o pipefail in dir, with $SK set to the streamkit binary
// (Binary) and the test's environment plus env, and returns its stdout, stderr and exit code
// (with pipefail: the last stage that failed). Failing to start bash fails t.
func Pipeline(t testing.TB, dir string, env []string, script string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("bash", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "SK="+Binary(t)), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// WriteFiles writes files (name and content, alternating) into dir, creating it, with
// modification times one minute apart in the given order (an hour ago onwards), so that
// read-files lists them in that order.
func WriteFiles(t testing.TB, dir string, files ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour)
	for i := 0; i+1 < len(files); i += 2 {
		p := filepath.Join(dir, files[i])
		if err := os.WriteFile(p, []byte(files[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
}
