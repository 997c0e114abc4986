package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// stageSpec is one process of a pipeline: its name (for logs and metrics) and its arguments
// after the streamkit binary.
type stageSpec struct {
	name string
	args []string
}

// proc is one running stage.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited atomic.Bool
	err    error
}

// pipeline is stage 1 | stage 2 | … | stage n, each a streamkit process, connected by OS pipes
// (no copying in the test process), all in one new process group, so that a signal can go to
// one stage (kill -9 of a random stage) or to the whole group (Ctrl-C). Stderr of each stage
// goes to a log file.
type pipeline struct {
	procs []*proc
	pgid  int
	start time.Time
	wall  time.Duration
	done  chan struct{}
}

// shellLine renders the pipeline as a shell command line (for logs and reproduction).
func shellLine(env map[string]string, stages []stageSpec) string {
	var parts []string
	for _, s := range stages {
		q := []string{"streamkit"}
		for _, a := range s.args {
			if a == "" || strings.ContainsAny(a, " ,'\"()*$") {
				a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
			}
			q = append(q, a)
		}
		parts = append(parts, strings.Join(q, " "))
	}
	var pre []string
	for k, v := range env {
		pre = append(pre, k+"="+v)
	}
	line := strings.Join(parts, " \\\n  | ")
	if len(pre) > 0 {
		line = strings.Join(pre, " ") + " \\\n  " + line
	}
	return line
}

// baseEnv is the test's environment without variables that would change what the stages do.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "STREAMKIT_CHECKPOINT=") || strings.HasPrefix(kv, "STREAMKIT_SHARD=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// startPipeline starts the stages; logPrefix + "-" + name + ".log" receives each stage's stderr.
// ckpt, when set, is $STREAMKIT_CHECKPOINT of every stage.
func startPipeline(t testing.TB, bin, ckpt, logPrefix string, stages []stageSpec) *pipeline {
	t.Helper()
	return startPipelineEnv(t, bin, nil, ckpt, logPrefix, stages)
}

// startPipelineEnv is startPipeline with extra KEY=VALUE variables for every stage (after the
// test's own, so they win): e.g. the object store's endpoint and credentials.
func startPipelineEnv(t testing.TB, bin string, extraEnv []string, ckpt, logPrefix string, stages []stageSpec) *pipeline {
	t.Helper()
	p := &pipeline{done: make(chan struct{}), start: time.Now()}
	env := append(baseEnv(), extraEnv...)
	if ckpt != "" {
		env = append(env, "STREAMKIT_CHECKPOINT="+ckpt)
	}
	var prevR *os.File
	for i, s := range stages {
		cmd := exec.Command(bin, append(append([]string{}, s.args...), "--progress", "off")...)
		cmd.Env = env
		if prevR != nil {
			cmd.Stdin = prevR
		}
		var nextR, w *os.File
		if i < len(stages)-1 {
			var err error
			if nextR, w, err = os.Pipe(); err != nil {
				t.Fatal(err)
			}
			cmd.Stdout = w
		}
		logName := logPrefix + "-" + s.name + ".log"
		f, err := os.Create(logName)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = f
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: p.pgid}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", s.name, err)
		}
		if i == 0 {
			p.pgid = cmd.Process.Pid
		}
		f.Close()
		if prevR != nil {
			prevR.Close()
		}
		if w != nil {
			w.Close()
		}
		prevR = nextR
		p.procs = append(p.procs, &proc{name: s.name, cmd: cmd, log: logName})
	}
	var wg sync.WaitGroup
	for _, pr := range p.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr.err = pr.cmd.Wait()
			pr.exited.Store(true)
		}()
	}
	go func() {
		wg.Wait()
		p.wall = time.Since(p.start)
		close(p.done)
	}()
	return p
}

// wait waits for every stage to exit; after timeout the group is killed and t fails.
func (p *pipeline) wait(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		syscall.Kill(-p.pgid, syscall.SIGKILL)
		<-p.done
		t.Fatalf("pipeline did not finish within %s (killed)\n%s", timeout, p.logs())
	}
}

// finished reports whether every stage has exited.
func (p *pipeline) finished() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// killStage sends SIGKILL to stage i; it reports false when the stage had already exited.
func (p *pipeline) killStage(i int) bool {
	if p.procs[i].exited.Load() {
		return false
	}
	return p.procs[i].cmd.Process.Signal(syscall.SIGKILL) == nil
}

// interrupt sends SIGINT to the whole process group, as Ctrl-C in a terminal does.
func (p *pipeline) interrupt() { syscall.Kill(-p.pgid, syscall.SIGINT) }

// status describes how stage i ended: "exit N" or "signal S".
func (p *pipeline) status(i int) string {
	ps := p.procs[i].cmd.ProcessState
	if ps == nil {
		return "running"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exit %d", ps.ExitCode())
}

// killedBy reports whether stage i died of sig.
func (p *pipeline) killedBy(i int, sig syscall.Signal) bool {
	ps := p.procs[i].cmd.ProcessState
	if ps == nil {
		return false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// exitCodes returns each stage's exit code (-1 when killed by a signal).
func (p *pipeline) exitCodes() []int {
	var out []int
	for _, pr := range p.procs {
		out = append(out, pr.cmd.ProcessState.ExitCode())
	}
	return out
}

// requireSuccess fails t unless every stage exited 0.
func (p *pipeline) requireSuccess(t testing.TB, what string) {
	t.Helper()
	for i := range p.procs {
		if p.status(i) != "exit 0" {
			t.Fatalf("%s: %s ended with %s\n%s", what, p.procs[i].name, p.status(i), p.logs())
		}
	}
}

// logs returns the tail of every stage's log.
func (p *pipeline) logs() string {
	var b strings.Builder
	for i, pr := range p.procs {
		data, _ := os.ReadFile(pr.log)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "--- %s (%s) %s\n%s\n", pr.name, p.status(i), filepath.Base(pr.log), strings.Join(lines, "\n"))
	}
	return b.String()
}

// stageUsage is what the kernel accounted for one finished stage.
type stageUsage struct {
	Stage   string  `json:"stage"`
	Status  string  `json:"status"`
	UserS   float64 `json:"user_s"`
	SysS    float64 `json:"sys_s"`
	CPUS    float64 `json:"cpu_s"`
	MaxRSSM float64 `json:"max_rss_mib"`
}

// usage returns the CPU time and peak RSS of every finished stage (getrusage of the child).
func (p *pipeline) usage() []stageUsage {
	var out []stageUsage
	for i, pr := range p.procs {
		u := stageUsage{Stage: pr.name, Status: p.status(i)}
		if ps := pr.cmd.ProcessState; ps != nil {
			if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
				u.UserS = time.Duration(ru.Utime.Nano()).Seconds()
				u.SysS = time.Duration(ru.Stime.Nano()).Seconds()
				u.MaxRSSM = float64(ru.Maxrss) / 1024 // KiB on Linux
			}
		}
		u.CPUS = u.UserS + u.SysS
		out = append(out, u)
	}
	return out
}

// checkLogs fails t when a stage's log shows a crash or a corrupt checkpoint: a kill -9 may
// end a stage anywhere, but it must never leave state that a restart cannot read.
func (p *pipeline) checkLogs(t testing.TB, what string) {
	t.Helper()
	for _, pr := range p.procs {
		data, _ := os.ReadFile(pr.log)
		for _, bad := range []string{"panic:", "fatal error:", "DATA RACE", "corrupt checkpoint"} {
			if bytes.Contains(data, []byte(bad)) {
				t.Fatalf("%s: %s logged %q\n%s", what, pr.name, bad, p.logs())
			}
		}
	}
}
