package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/peertest"
)

// timeout bounds every pipeline; a hung process fails the test instead of hanging it.
const timeout = 2 * time.Minute

// peers are the programs a test pipeline is made of.
type peers struct {
	python    string // venv interpreter with pyarrow
	streamkit string // the built binary
	arrowgen  string // interop/testdata/arrowgen.py
	source    string // scripts/examples/source.py
}

func needPeers(t *testing.T) peers {
	t.Helper()
	root := peertest.Root(t)
	return peers{
		python:    peertest.Python(t),
		streamkit: peertest.Binary(t),
		arrowgen:  filepath.Join(root, "interop", "testdata", "arrowgen.py"),
		source:    filepath.Join(root, "scripts", "examples", "source.py"),
	}
}

// gen is the argv of `arrowgen.py args...`.
func (p peers) gen(args ...string) []string {
	return append([]string{p.python, p.arrowgen}, args...)
}

// sk is the argv of `streamkit args...`.
func (p peers) sk(args ...string) []string { return append([]string{p.streamkit}, args...) }

// src is the argv of `source.py args...`.
func (p peers) src(args ...string) []string {
	return append([]string{p.python, p.source}, args...)
}

// exit is how one process of a pipeline ended.
type exit struct {
	argv   []string
	code   int // exit status; -1 when killed by a signal
	signal syscall.Signal
	stderr string
}

func (e exit) String() string {
	s := fmt.Sprintf("%s: exit %d", filepath.Base(e.argv[0])+" "+strings.Join(e.argv[1:], " "), e.code)
	if e.code < 0 {
		s += " (" + e.signal.String() + ")"
	}
	if e.stderr != "" {
		s += "\n    stderr: " + strings.ReplaceAll(strings.TrimRight(e.stderr, "\n"), "\n", "\n    stderr: ")
	}
	return s
}

// pipeline is processes joined by real pipes (os.Pipe): the stdout of each is the stdin of
// the next, as `a | b | c` in a shell.
type pipeline struct {
	cmds   []*exec.Cmd
	stderr []*bytes.Buffer
	// Stdout is the read end of the last process's stdout; the caller reads it to EOF.
	Stdout *os.File
	cancel context.CancelFunc
}

// start starts argvs as a pipeline reading stdin (nil: empty input). With group, all
// processes share one new process group (its id is the first process's pid), so a signal can
// reach the whole pipeline as Ctrl-C in a terminal does.
func start(t *testing.T, group bool, stdin io.Reader, argvs ...[]string) *pipeline {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	p := &pipeline{cancel: cancel}
	var prev *os.File
	for i, argv := range argvs {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "PYTHONDONTWRITEBYTECODE=1")
		if i == 0 {
			cmd.Stdin = stdin
		} else {
			cmd.Stdin = prev
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout = w
		var eb bytes.Buffer
		cmd.Stderr = &eb
		if group {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if i > 0 {
				cmd.SysProcAttr.Pgid = p.cmds[0].Process.Pid
			}
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %v: %v", argv, err)
		}
		w.Close() // only the child holds the write end now: EOF reaches the reader when it exits
		if prev != nil {
			prev.Close()
		}
		prev = r
		p.cmds = append(p.cmds, cmd)
		p.stderr = append(p.stderr, &eb)
	}
	p.Stdout = prev
	t.Cleanup(func() {
		cancel()
		p.Stdout.Close()
	})
	return p
}

// interrupt sends sig to the pipeline's process group.
func (p *pipeline) interrupt(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(-p.cmds[0].Process.Pid, sig); err != nil {
		t.Fatalf("kill process group: %v", err)
	}
}

// wait waits for every process and returns how each ended.
func (p *pipeline) wait(t *testing.T) []exit {
	t.Helper()
	out := make([]exit, len(p.cmds))
	for i, cmd := range p.cmds {
		err := cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("wait %v: %v", cmd.Args, err)
		}
		e := exit{argv: cmd.Args, code: cmd.ProcessState.ExitCode(), stderr: p.stderr[i].String()}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.signal = ws.Signal()
		}
		out[i] = e
	}
	p.cancel()
	return out
}

// run runs argvs as a pipeline to the end and returns the last process's stdout.
func run(t *testing.T, stdin io.Reader, argvs ...[]string) ([]byte, []exit) {
	t.Helper()
	p := start(t, false, stdin, argvs...)
	out, err := io.ReadAll(p.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	return out, p.wait(t)
}

// codes lists the exit codes of exits.
func codes(exits []exit) []int {
	c := make([]int, len(exits))
	for i, e := range exits {
		c[i] = e.code
	}
	return c
}

// report renders exits for a failure message.
func report(exits []exit) string {
	var b strings.Builder
	for _, e := range exits {
		b.WriteString("\n  " + e.String())
	}
	return b.String()
}

// wantCodes fails t unless the pipeline's exit codes are want.
func wantCodes(t *testing.T, exits []exit, want ...int) {
	t.Helper()
	if got := codes(exits); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("exit codes: got %v, want %v%s", got, want, report(exits))
	}
}
