package parallel

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/streamkit/streamkit/stage"
)

// TestRunOneInterruptDeliveredTwice: timeout -s INT signals run and then run's process group,
// so run gets one interrupt twice within microseconds. That is one Ctrl-C: the members get
// SIGINT and finish (exit 0 here), rather than being killed as by a second Ctrl-C (137).
func TestRunOneInterruptDeliveredTwice(t *testing.T) {
	dir := t.TempDir()
	script := `trap 'sleep 0.5; echo stopped >&2; exit 0' INT; touch "` + dir + `/up.$STREAMKIT_MEMBER"; while :; do sleep 0.05; done`
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{N: 2, Command: []string{script}, Progress: "off", Grace: 20 * time.Second,
			Env: os.Environ(), Stderr: &stderr, Log: slog.New(slog.NewTextHandler(&stderr, nil))})
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		m0, _ := filepath.Glob(filepath.Join(dir, "up.*"))
		if len(m0) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the members did not start in 20 s")
		}
	}
	// 30 ms apart, so that the runtime does not merge them into one pending signal.
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	time.Sleep(30 * time.Millisecond)
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop in 30 s")
	}
	if !errors.Is(err, stage.ErrInterrupted) {
		t.Fatalf("Run = %v, want ErrInterrupted", err)
	}
	if out := stderr.String(); !strings.Contains(out, "exit codes 0 0") || strings.Count(out, "stopped") != 2 {
		t.Fatalf("one interrupt delivered twice killed the members instead of stopping them; stderr:\n%s", out)
	}
}
