// Package peertest locates the real test peers (Python venv with pyarrow, deltalake, duckdb,
// pyspark; the Kafka broker) installed by scripts/peers.sh and scripts/kafka.sh.
//
// A test that needs a peer calls one of these helpers. When the peer is missing the test is
// skipped, unless STREAMKIT_REQUIRE_PEERS=1 (set by `make test`), where it fails: the full
// suite never passes without the real peers.
package peertest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
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
	Missing(t, what)
}

// Missing reports that the peer described by what is not available: it skips t, or fails it
// when STREAMKIT_REQUIRE_PEERS=1. For helpers of other packages that locate a peer
// (internal/s3test), so every peer follows the same rule.
func Missing(t testing.TB, what string) {
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

// Binary builds the streamkit binary once per test process and returns its path
// ($STREAMKIT_BIN overrides). Every test process of one checkout shares one file,
// <tmp>/streamkit-bin-<hash of the checkout's path>/streamkit: each builds into a temporary name
// beside it and renames it into place (a process still running the previous file keeps it), so
// test runs leave one binary per checkout behind instead of one per test process.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("STREAMKIT_BIN"); p != "" {
		return p
	}
	binOnce.Do(func() {
		root := Root(t)
		sum := sha256.Sum256([]byte(root))
		dir := filepath.Join(os.TempDir(), "streamkit-bin-"+hex.EncodeToString(sum[:8]))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			binErr = err
			return
		}
		f, err := os.CreateTemp(dir, ".build-*")
		if err != nil {
			binErr = err
			return
		}
		tmp := f.Name()
		f.Close()
		cmd := exec.Command("go", "build", "-o", tmp, "./cmd/streamkit")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err == nil {
			binPath = filepath.Join(dir, "streamkit")
			err = os.Rename(tmp, binPath)
		}
		if err != nil {
			os.Remove(tmp)
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

// Output runs cmd and returns its combined stdout and stderr and its exit code; failing to
// start it fails t.
func Output(t testing.TB, cmd *exec.Cmd) (string, int) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// StartPiped starts cmd, a peer process spoken to over its stdin and stdout (a Spark session
// serving one command per line, a streamkit stage), and returns both pipes; t fails when a
// pipe or the start fails. cmd's stderr and cleanup are the caller's.
func StartPiped(t testing.TB, cmd *exec.Cmd) (stdin io.WriteCloser, stdout io.ReadCloser) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if stdout, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdin, stdout
}
