package readdelta_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/state"
)

// needTool skips the test when the binary lacks a tool (e.g. write-delta in a build without it).
func needTool(t *testing.T, bin, tool string) {
	t.Helper()
	if err := exec.Command(bin, tool, "--help").Run(); err != nil {
		if os.Getenv("STREAMKIT_REQUIRE_PEERS") == "1" {
			t.Fatalf("streamkit %s is not in this build", tool)
		}
		t.Skipf("streamkit %s is not in this build yet", tool)
	}
}

func python(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(peertest.Python(t), append([]string{filepath.Join("testdata", "bronze.py")}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("bronze.py %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// pipeline is `read-delta --follow bronze | dedup | write-delta silver` in its own process group.
type pipeline struct {
	cmd    *exec.Cmd
	stderr *strings.Builder
	done   chan error
}

func startPipeline(t *testing.T, bin, bronze, silver, ckpt string) *pipeline {
	t.Helper()
	script := `"$BIN" read-delta --progress off --follow --epoch-interval 150ms --poll-interval 30ms --batch-rows 100 "$BRONZE" | "$BIN" dedup --progress off | "$BIN" write-delta --progress off "$SILVER"`
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "BIN="+bin, "BRONZE="+bronze, "SILVER="+silver, "STREAMKIT_CHECKPOINT="+ckpt)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &pipeline{cmd: cmd, stderr: &strings.Builder{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	return p
}

func (p *pipeline) signal(sig syscall.Signal) { syscall.Kill(-p.cmd.Process.Pid, sig) }

// caughtUp reports whether read-delta has a committed epoch whose position is past version v.
func caughtUp(t *testing.T, ckpt string, v int64) bool {
	dir := filepath.Join(ckpt, "read-delta")
	c, err := state.Committed(dir)
	if err != nil || c == 0 {
		return false
	}
	b, err := state.ReadOffsets(dir, c)
	if err != nil {
		return false
	}
	var pos struct {
		Version int64 `json:"version"`
		Initial bool  `json:"initial"`
	}
	json.Unmarshal(b, &pos)
	return pos.Version > v
}

// TestBronzeToSilverKill9 runs `read-delta --follow bronze | dedup | write-delta silver` while
// delta-rs appends commits with duplicate rows to bronze, kills the whole pipeline with
// SIGKILL at random moments and restarts it; in the end silver must equal DuckDB's
// SELECT DISTINCT * of bronze, without a duplicate.
func TestBronzeToSilverKill9(t *testing.T) {
	peertest.Python(t)
	bin := peertest.Binary(t)
	needTool(t, bin, "write-delta")
	needTool(t, bin, "dedup")
	dir := t.TempDir()
	bronze, silver, ckpt := filepath.Join(dir, "bronze"), filepath.Join(dir, "silver"), filepath.Join(dir, "ckpt")
	python(t, "append", bronze, "2", "100", "1", "0") // the table exists before the stream starts

	appender := exec.Command(peertest.Python(t), filepath.Join("testdata", "bronze.py"), "append", bronze, "40", "150", "2", "0.05")
	var appOut strings.Builder
	appender.Stdout, appender.Stderr = &appOut, &appOut
	if err := appender.Start(); err != nil {
		t.Fatal(err)
	}
	appDone := make(chan error, 1)
	go func() { appDone <- appender.Wait() }()

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 1))
	kills := 0
	p := startPipeline(t, bin, bronze, silver, ckpt)
	appending := true
	for kills < 5 {
		select {
		case err := <-appDone:
			if err != nil {
				t.Fatalf("appender: %v\n%s", err, appOut.String())
			}
			appending = false
		case <-time.After(time.Duration(300+rnd.IntN(900)) * time.Millisecond):
		}
		if !appending && kills >= 2 {
			break
		}
		p.signal(syscall.SIGKILL)
		<-p.done
		kills++
		p = startPipeline(t, bin, bronze, silver, ckpt)
	}
	if appending {
		if err := <-appDone; err != nil {
			t.Fatalf("appender: %v\n%s", err, appOut.String())
		}
	}
	latest, err := delta.NewTable(bronze, nil).Versions()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for !caughtUp(t, ckpt, latest.Latest) {
		select {
		case err := <-p.done:
			t.Fatalf("pipeline ended early: %v\n%s", err, p.stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.signal(syscall.SIGKILL)
			t.Fatalf("silver did not catch up with bronze version %d\n%s", latest.Latest, p.stderr.String())
		}
	}
	p.signal(syscall.SIGINT)
	select {
	case err := <-p.done:
		// The stages exit 130; sh itself may die of the SIGINT.
		ee, ok := err.(*exec.ExitError)
		ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ok || (ee.ExitCode() != 130 && !(ws.Signaled() && ws.Signal() == syscall.SIGINT)) {
			t.Fatalf("pipeline after SIGINT: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		p.signal(syscall.SIGKILL)
		t.Fatalf("pipeline did not stop on SIGINT\n%s", p.stderr.String())
	}
	got := python(t, "check", bronze, silver)
	t.Logf("%d kills; bronze version %d; %s", kills, latest.Latest, got)
	var distinct, total, dup, missing, extra int
	fmt.Sscanf(got, "distinct %d silver %d dup %d missing %d extra %d", &distinct, &total, &dup, &missing, &extra)
	if distinct == 0 || total != distinct || dup != 0 || missing != 0 || extra != 0 {
		t.Fatalf("silver is not bronze's distinct rows: %s", got)
	}
}
