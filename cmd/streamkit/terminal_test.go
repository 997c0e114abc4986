package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/streamkit/streamkit/internal/peertest"
)

// openPTY opens a pseudo-terminal pair (/dev/ptmx and its /dev/pts/N), which the stages see
// as a terminal on stdin or stdout.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	go func() { _, _ = bytes.NewBuffer(nil).ReadFrom(m) }() // drain what reaches the terminal
	return m, s
}

// TestTerminalMisuse checks what a stage does with a terminal where a pipe belongs (issue
// #23): a stage that would write binary Arrow IPC to a terminal refuses with a usage error
// naming `print`, before it reads or writes anything; a stage whose stdin is a terminal says
// what it waits for.
func TestTerminalMisuse(t *testing.T) {
	bin := peertest.Binary(t)
	_, tty := openPTY(t)

	cmd := exec.Command(bin, "generate", "--rows", "3")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = tty, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "stdout is a terminal: pipe it into a reader, e.g. streamkit generate … | streamkit print") {
		t.Errorf("generate to a terminal: %v, stderr %q; want exit 2 naming print", err, stderr.String())
	}

	cmd = exec.Command(bin, "print")
	cmd.Stdin, cmd.Stdout = tty, &bytes.Buffer{}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	said := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "waiting for an Arrow IPC stream on stdin, which is a terminal") {
				said <- sc.Text()
				return
			}
		}
		said <- ""
	}()
	select {
	case line := <-said:
		if line == "" {
			t.Error("print reading a terminal did not say what it waits for")
		}
	case <-time.After(20 * time.Second):
		t.Error("print reading a terminal said nothing in 20 s")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}
