// Package peertest locates the real test peers (Python venv with pyarrow, deltalake, duckdb,
// pyspark; the Kafka broker) installed by scripts/peers.sh and scripts/kafka.sh.
//
// A test that needs a peer calls one of these helpers. When the peer is missing the test is
// skipped, unless STREAMKIT_REQUIRE_PEERS=1 (set by `make test`), where it fails: the full
// suite never passes without the real peers.
package peertest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Root returns the repository root (the directory holding go.mod).
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// missing skips or fails t, depending on STREAMKIT_REQUIRE_PEERS.
func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("STREAMKIT_REQUIRE_PEERS") == "1" {
		t.Fatalf("test peer missing: %s (run scripts/peers.sh)", what)
	}
	t.Skipf("test peer missing: %s (run scripts/peers.sh, or make test)", what)
}

// Python returns the venv interpreter ($STREAMKIT_PYTHON or <root>/.venv/bin/python).
func Python(t testing.TB) string {
	t.Helper()
	p := os.Getenv("STREAMKIT_PYTHON")
	if p == "" {
		p = filepath.Join(Root(t), ".venv", "bin", "python")
	}
	if _, err := os.Stat(p); err != nil {
		missing(t, "python venv at "+p)
	}
	return p
}

// Binary builds the streamkit binary once per test process into a temporary directory and
// returns its path ($STREAMKIT_BIN overrides).
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("STREAMKIT_BIN"); p != "" {
		return p
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "streamkit-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "streamkit")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/streamkit")
		cmd.Dir = Root(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = &buildError{out: string(out), err: err}
		}
	})
	if binErr != nil {
		t.Fatalf("build streamkit: %v", binErr)
	}
	return binPath
}

// Run runs the streamkit binary (Binary) with args, the test's environment plus env, and
// stdin, and returns its stdout, stderr and exit code. Failing to start it fails t.
func Run(t testing.TB, env []string, stdin []byte, args ...string) (stdout []byte, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), errb.String(), code
}
