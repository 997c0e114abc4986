// Package parallel runs N copies of one pipeline as member processes on one machine (`streamkit
// run --parallel N`, docs/protocol.md §13): it starts them with their member index in the
// environment, merges their progress and log lines on its stderr, and ends them together,
// failing as the first member that failed.
package parallel

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/streamkit/streamkit/stage"
)

// The environment every member gets beside run's own (Config.Env), with stage.EnvProgress=json:
// run reads the stages' progress lines from the member's stderr and merges them.
const (
	// EnvMember is the member's index i, 0 ≤ i < N, in decimal: a pipeline that splits its
	// input itself (files, a static assignment) picks its share by it.
	EnvMember = "STREAMKIT_MEMBER"
	// EnvMembers is N, the number of members.
	EnvMembers = "STREAMKIT_MEMBERS"
)

// Config is one run of N members.
type Config struct {
	// N is the number of members, ≥ 1.
	N int
	// Command is the member's command: one element is a shell command line run by `sh -c`
	// (a pipeline), several are an argv run as it is.
	Command []string
	// Env is the environment of the members before run's additions (nil: os.Environ()).
	Env []string
	// Progress is run's --progress: auto (on a terminal, one live view of every member; a
	// summary line at the end), json (each member's progress lines on stderr with a "member"
	// field, and one line per member exit) or off.
	Progress string
	// Grace is how long members may take to stop after SIGINT (after the first failure, or a
	// Ctrl-C) before they are killed (SIGKILL). Default 30 s.
	Grace time.Duration
	// Tail is how many of a failing member's last stderr lines (progress excluded) its error
	// quotes. Default 20.
	Tail int
	// Stderr receives the merged progress and log lines (os.Stderr).
	Stderr io.Writer
	// Log is run's own logger.
	Log *slog.Logger
}

// member is one running copy.
type member struct {
	i      int
	cmd    *exec.Cmd
	start  time.Time
	stages []*stageStat // in the order their first progress line came
	tail   []string     // the last Config.Tail non-progress lines of stderr
	stdout atomic.Int64 // bytes the member wrote to stdout (discarded)
	warned atomic.Bool  // the stdout warning was logged

	exited  bool
	code    int
	elapsed time.Duration
}

// stageStat is a member's stage as its latest progress line shows it.
type stageStat struct {
	name string
	snap snapshot
}

// exit is a member's end, sent by its reader goroutine.
type exit struct {
	m    *member
	code int
}

// Run starts the members, waits for all of them and returns nil when every member exited 0.
// The first member that exits non-zero stops the others (SIGINT to each member's process
// group, SIGKILL after Config.Grace); Run then returns a *stage.ChildExitError with that
// member's exit code, naming it and quoting its last stderr lines. SIGINT or SIGTERM to run
// is forwarded (as SIGINT) to every member; Run then returns stage.ErrInterrupted once they
// stopped (exit 130), and a second one (sameSignal or more after the first) kills them at
// once.
func Run(ctx context.Context, cfg Config) error {
	if cfg.N < 1 {
		return stage.Usagef("run: --parallel must be at least 1, got %d", cfg.N)
	}
	if len(cfg.Command) == 0 || strings.TrimSpace(strings.Join(cfg.Command, " ")) == "" {
		return stage.Usagef("run: no pipeline given: streamkit run --parallel N -- 'PIPELINE'")
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 30 * time.Second
	}
	if cfg.Tail <= 0 {
		cfg.Tail = 20
	}
	if cfg.Env == nil {
		cfg.Env = os.Environ()
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	s := &supervisor{cfg: cfg, exits: make(chan exit, cfg.N), began: time.Now()}
	s.out = newOutput(cfg.Stderr, cfg.Progress, s)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	for i := 0; i < cfg.N; i++ {
		m, err := s.startMember(i)
		if err != nil {
			s.stop(syscall.SIGKILL)
			s.waitAll()
			s.out.close(s.summary())
			return fmt.Errorf("run: member %d: %w", i, err)
		}
		s.members = append(s.members, m)
	}
	s.out.startView()
	var (
		failed      *member
		interrupted bool
		stopping    bool
		kill        <-chan time.Time
		firstSig    time.Time
		running     = cfg.N
	)
	for running > 0 {
		select {
		case e := <-s.exits:
			running--
			s.mu.Lock()
			e.m.exited, e.m.code, e.m.elapsed = true, e.code, time.Since(e.m.start)
			s.mu.Unlock()
			s.out.memberExit(e.m)
			if e.code != 0 && failed == nil && !interrupted {
				failed = e.m
			}
			if e.code != 0 && !stopping && running > 0 {
				stopping = true
				if !interrupted {
					cfg.Log.Warn("run: a member failed; stopping the others", "member", e.m.i, "exit", e.code, "grace", cfg.Grace)
				}
				s.stop(syscall.SIGINT)
				kill = time.After(cfg.Grace)
			}
		case <-sigs:
			if interrupted {
				if time.Since(firstSig) < sameSignal {
					continue // one interrupt delivered twice (timeout -s INT: to run and its group)
				}
				s.stop(syscall.SIGKILL) // the second Ctrl-C: at once
				continue
			}
			interrupted, firstSig = true, time.Now()
			if !stopping {
				stopping = true
				s.stop(syscall.SIGINT)
				kill = time.After(cfg.Grace)
			}
		case <-ctx.Done():
			if !stopping {
				stopping, interrupted = true, true
				s.stop(syscall.SIGINT)
				kill = time.After(cfg.Grace)
			}
		case <-kill:
			cfg.Log.Warn("run: members still running after the grace period; killing them", "grace", cfg.Grace)
			s.stop(syscall.SIGKILL)
			kill = nil
		}
	}
	s.out.close(s.summary())
	switch {
	case failed != nil && !interrupted:
		return &stage.ChildExitError{Code: failed.code, Err: s.failure(failed)}
	case interrupted:
		return stage.ErrInterrupted
	}
	return nil
}

// sameSignal is how soon after the first interrupt another one is the same interrupt
// delivered twice, not a second Ctrl-C: coreutils' timeout -s INT (without --foreground)
// signals its child and then its own process group, which holds the child too, within
// microseconds; a person pressing Ctrl-C twice takes far longer.
const sameSignal = 300 * time.Millisecond

// supervisor holds the members of one Run.
type supervisor struct {
	cfg     Config
	mu      sync.Mutex // members' progress, tails and exits
	members []*member
	exits   chan exit
	out     *output
	began   time.Time
}

// startMember starts member i in a process group of its own (so that a signal reaches its
// whole pipeline, and a Ctrl-C on the terminal reaches run alone, which forwards it).
func (s *supervisor) startMember(i int) (*member, error) {
	var cmd *exec.Cmd
	if len(s.cfg.Command) == 1 {
		cmd = exec.Command("sh", "-c", s.cfg.Command[0])
	} else {
		cmd = exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
	}
	cmd.Env = memberEnv(s.cfg.Env, i, s.cfg.N)
	cmd.SysProcAttr = procAttr()
	m := &member{i: i, cmd: cmd}
	cmd.Stdout = &discard{m: m, log: s.cfg.Log}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	m.start = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go s.read(m, stderr)
	return m, nil
}

// memberEnv is env with member i of n's variables set: EnvMember, EnvMembers, stage.EnvProgress=json
// (unless env sets it) and PATH starting with the directory of run's own binary, so that
// `streamkit` in the pipeline is the same streamkit.
func memberEnv(env []string, i, n int) []string {
	out := make([]string, 0, len(env)+4)
	progress := false
	path := ""
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case EnvMember, EnvMembers:
			continue
		case stage.EnvProgress:
			progress = true
		case "PATH":
			path = v
			continue
		}
		out = append(out, kv)
	}
	if exe, err := os.Executable(); err == nil {
		if path == "" {
			path = filepath.Dir(exe)
		} else {
			path = filepath.Dir(exe) + string(os.PathListSeparator) + path
		}
	}
	out = append(out, "PATH="+path, fmt.Sprintf("%s=%d", EnvMember, i), fmt.Sprintf("%s=%d", EnvMembers, n))
	if !progress {
		out = append(out, stage.EnvProgress+"="+stage.ProgressJSON)
	}
	return out
}

// read reads member m's stderr line by line until it closes, then waits for m and reports its
// exit.
func (s *supervisor) read(m *member, r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			s.line(m, bytes.TrimRight(line, "\r\n"))
		}
		if err != nil {
			break
		}
	}
	err := m.cmd.Wait()
	s.exits <- exit{m: m, code: exitCode(err)}
}

// exitCode is the exit status of a member's Wait: 128+n for one killed by signal n, as a
// shell reports it.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return stage.ExitError
}

// line handles one line of a member's stderr: a stage's progress line updates the member's
// view (and is forwarded with --progress=json), any other line is forwarded and kept in the
// member's tail.
func (s *supervisor) line(m *member, b []byte) {
	if snap, ok := parseSnapshot(b); ok {
		s.mu.Lock()
		st := m.stage(snap.Stage)
		st.snap = snap
		s.mu.Unlock()
		s.out.progress(m, b)
		return
	}
	text := string(b)
	s.mu.Lock()
	if len(m.tail) == s.cfg.Tail {
		m.tail = append(m.tail[:0], m.tail[1:]...)
	}
	m.tail = append(m.tail, text)
	s.mu.Unlock()
	s.out.log(m, b)
}

// stage returns m's stage name, adding it on its first progress line.
func (m *member) stage(name string) *stageStat {
	for _, st := range m.stages {
		if st.name == name {
			return st
		}
	}
	st := &stageStat{name: name}
	m.stages = append(m.stages, st)
	return st
}

// stop sends sig to every member still running, to its whole process group.
func (s *supervisor) stop(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.members {
		if !m.exited && m.cmd.Process != nil {
			_ = syscall.Kill(-m.cmd.Process.Pid, sig)
		}
	}
}

// waitAll waits for the members started so far (after a failed start).
func (s *supervisor) waitAll() {
	for range s.members {
		e := <-s.exits
		e.m.exited = true
	}
}

// failure is the error naming failed member m, its exit code and its last stderr lines.
func (s *supervisor) failure(m *member) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "run: member %d of %d failed (exit %d) after %s; the others were stopped", m.i, s.cfg.N, m.code, m.elapsed.Round(time.Millisecond))
	if len(m.tail) > 0 {
		fmt.Fprintf(&b, "; its last lines of stderr:")
		for _, l := range m.tail {
			b.WriteString("\n  " + l)
		}
	}
	return errors.New(b.String())
}

// discard takes a member's stdout: run's stdout carries nothing of the members (their Arrow
// streams could not be merged into one), so what a member writes there is dropped, with one
// warning.
type discard struct {
	m   *member
	log *slog.Logger
}

func (d *discard) Write(p []byte) (int, error) {
	d.m.stdout.Add(int64(len(p)))
	if !d.m.warned.Swap(true) {
		d.log.Warn("run: a member writes to stdout, which run discards: redirect it in the pipeline (e.g. > out.$"+EnvMember+")", "member", d.m.i)
	}
	return len(p), nil
}
