package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/peertest"
)

// TestSecondInterrupt: the first Ctrl-C (SIGINT) makes a stage finish its epoch, so a print
// whose upstream sends no barrier for an hour keeps waiting; a second SIGINT ends it at once
// (well under a second, not at the epoch's end) with exit 130 (issue #23, DESIGN.md §3), also
// while it is blocked reading an idle input (a row every 2 s; at first not even the schema),
// which its cancelled context cannot interrupt (stage.AbortHook).
func TestSecondInterrupt(t *testing.T) {
	bin := peertest.Binary(t)
	// The upstream in a process group of its own: only print gets the signals.
	gen := exec.Command(bin, "generate", "--rate", "0.5", "--epoch-interval", "1h", "--progress", "off")
	gen.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// print opens its checkpoint after it installed its signal handler: the directory says
	// when a SIGINT no longer kills it outright.
	ckpt := filepath.Join(t.TempDir(), "print")
	prt := exec.Command(bin, "print", "--progress", "off", "--checkpoint", ckpt)
	pipe, err := gen.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	prt.Stdin = pipe
	prt.Stdout = &bytes.Buffer{}
	errPipe, err := prt.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { gen.Process.Kill(); gen.Wait() }()
	if err := prt.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	exited := make(chan error, 1)
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(ckpt, "metadata.json")); err == nil {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatal("print did not open its checkpoint in 20 s")
		}
	}
	prt.Process.Signal(syscall.SIGINT)
	deadline := time.After(10 * time.Second)
	for said := false; !said; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("print ended after the first SIGINT; want it to wait for the epoch's barrier")
			}
			said = strings.Contains(l, "interrupt: finishing the current epoch")
		case <-deadline:
			t.Fatal("print did not acknowledge the first SIGINT")
		}
	}
	go func() {
		for range lines {
		}
		exited <- prt.Wait()
	}()
	select {
	case err := <-exited:
		t.Fatalf("print ended after one SIGINT (%v); want it to wait for the barrier an hour away", err)
	case <-time.After(300 * time.Millisecond):
	}
	start := time.Now()
	prt.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		took := time.Since(start)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Fatalf("after the second SIGINT: %v, want exit 130", err)
		}
		if took > 500*time.Millisecond {
			t.Errorf("print took %v to end after the second SIGINT, want it at once (< 500ms)", took)
		}
	case <-time.After(5 * time.Second):
		prt.Process.Kill()
		t.Fatal("print still runs 5 s after the second SIGINT")
	}
}
