package backfill_test

import (
	"encoding/json"
	"fmt"
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

// End-to-end tests of the binary next to a live `read-delta --follow | write-delta` flow, with
// tables written by delta-rs and checked by DuckDB (testdata/flows.py).

func needTool(t *testing.T, bin, tool string) {
	t.Helper()
	if err := exec.Command(bin, tool, "--help").Run(); err != nil {
		if os.Getenv("STREAMKIT_REQUIRE_PEERS") == "1" {
			t.Fatalf("streamkit %s is not in this build", tool)
		}
		t.Skipf("streamkit %s is not in this build yet", tool)
	}
}

func flows(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(peertest.Python(t), append([]string{filepath.Join("testdata", "flows.py")}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("flows.py %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

type tableCheck struct {
	Rows        int            `json:"rows"`
	DistinctIDs int            `json:"distinct_ids"`
	DupIDs      int            `json:"dup_ids"`
	BySource    map[string]int `json:"by_source"`
	MinID       int            `json:"min_id"`
	MaxID       int            `json:"max_id"`
}

func check(t *testing.T, table string) tableCheck {
	t.Helper()
	var c tableCheck
	out := flows(t, "check", table)
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return c
}

func backfill(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	return peertest.Output(t, exec.Command(bin, append([]string{"backfill", "--progress", "off"}, args...)...))
}

// liveFlow runs `read-delta --follow SRC | write-delta DST --with record_source=stream`.
type liveFlow struct {
	cmd    *exec.Cmd
	stderr strings.Builder
	done   chan error
	ckpt   string
}

func startLive(t *testing.T, bin, src, dst, ckpt string) *liveFlow {
	t.Helper()
	script := `"$BIN" read-delta --progress off --follow --epoch-interval 100ms --poll-interval 20ms "$SRC" | "$BIN" write-delta --progress off --with record_source=stream "$DST"`
	l := &liveFlow{cmd: exec.Command("sh", "-c", script), done: make(chan error, 1), ckpt: ckpt}
	l.cmd.Env = append(os.Environ(), "BIN="+bin, "SRC="+src, "DST="+dst, "STREAMKIT_CHECKPOINT="+ckpt)
	l.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	l.cmd.Stderr = &l.stderr
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { l.done <- l.cmd.Wait() }()
	t.Cleanup(func() { syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL) })
	return l
}

// stopWhenCaughtUp waits until the live flow committed everything of src, then stops it.
func (l *liveFlow) stopWhenCaughtUp(t *testing.T, src string) {
	t.Helper()
	vr, err := delta.NewTable(src, nil).Versions()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(l.ckpt, "read-delta")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c, err := state.Committed(dir); err == nil && c > 0 {
			if b, err := state.ReadOffsets(dir, c); err == nil {
				var pos struct{ Version int64 }
				json.Unmarshal(b, &pos)
				if pos.Version > vr.Latest {
					break
				}
			}
		}
		select {
		case err := <-l.done:
			t.Fatalf("live flow ended: %v\n%s", err, l.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("live flow did not catch up\n%s", l.stderr.String())
		}
	}
	syscall.Kill(-l.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-l.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("live flow did not stop\n%s", l.stderr.String())
	}
}

// TestBackfillNextToLiveWriteDelta: a live write-delta flow has written ids 500..1499; a
// backfill of ids 0..999 with --dedup-cols id adds only 0..499 (no duplicate id); run again it
// is a no-op. Then, while the live flow keeps appending, a second backfill (ids 5000..204999)
// commits concurrently: every live row and every backfill row is present exactly once.
func TestBackfillNextToLiveWriteDelta(t *testing.T) {
	peertest.Python(t)
	bin := peertest.Binary(t)
	needTool(t, bin, "write-delta")
	dir := t.TempDir()
	incoming, target, ckpt := filepath.Join(dir, "incoming"), filepath.Join(dir, "target"), filepath.Join(dir, "ckpt")
	hist, hist2 := filepath.Join(dir, "history"), filepath.Join(dir, "history2")
	flows(t, "append", incoming, "10", "100", "500", "0") // live ids 500..1499
	flows(t, "history", hist, "0", "1000")
	flows(t, "history", hist2, "5000", "205000")

	live := startLive(t, bin, incoming, target, ckpt)
	live.stopWhenCaughtUp(t, incoming)
	if c := check(t, target); c.Rows != 1000 || c.BySource["stream"] != 1000 {
		t.Fatalf("live flow wrote %+v", c)
	}

	// Overlap with rows the live flow already wrote: no duplicate id.
	args := []string{"--from-delta", hist, "--to", target, "--flow", "history", "--dedup-cols", "id", "--with", "record_source=backfill"}
	if out, code := backfill(t, bin, args...); code != 0 {
		t.Fatalf("backfill: exit %d\n%s", code, out)
	}
	c := check(t, target)
	if c.Rows != 1500 || c.DupIDs != 0 || c.BySource["backfill"] != 500 || c.MinID != 0 || c.MaxID != 1499 {
		t.Fatalf("after the backfill: %+v", c)
	}
	// Twice: a no-op.
	out, code := backfill(t, bin, args...)
	if code != 0 || !strings.Contains(out, "already done") {
		t.Fatalf("second backfill: exit %d\n%s", code, out)
	}
	if c2 := check(t, target); c2.Rows != 1500 {
		t.Fatalf("second backfill wrote rows: %+v", c2)
	}

	// Concurrent with the live flow: the live flow resumes and appends 30 more commits while a
	// 200,000-row backfill commits.
	live = startLive(t, bin, incoming, target, ckpt)
	appender := exec.Command(peertest.Python(t), filepath.Join("testdata", "flows.py"), "append", incoming, "30", "50", "2000", "0.03")
	if err := appender.Start(); err != nil {
		t.Fatal(err)
	}
	// Start the backfill once the live flow is committing again.
	v0 := version(t, target)
	for deadline := time.Now().Add(30 * time.Second); version(t, target) < v0+2; {
		if time.Now().After(deadline) {
			t.Fatalf("the live flow does not commit\n%s", live.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	out, code = backfill(t, bin, "--from-delta", hist2, "--to", target, "--flow", "history2", "--dedup-cols", "id", "--with", "record_source=backfill")
	if code != 0 {
		t.Fatalf("concurrent backfill: exit %d\n%s", code, out)
	}
	if err := appender.Wait(); err != nil {
		t.Fatal(err)
	}
	live.stopWhenCaughtUp(t, incoming)
	c = check(t, target)
	t.Logf("%+v; backfill: %s", c, strings.TrimSpace(out))
	if c.DupIDs != 0 || c.BySource["stream"] != 1000+1500 || c.BySource["backfill"] != 500+200000 || c.Rows != 1500+1500+200000 {
		t.Fatalf("after the concurrent backfill: %+v", c)
	}
	snap, err := delta.NewTable(target, nil).Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	txns := snap.Txns()
	if txns["history"].Version != 1 || txns["history2"].Version != 1 || len(txns) != 3 {
		t.Fatalf("txns %+v", txns)
	}
}

func version(t *testing.T, table string) int64 {
	vr, err := delta.NewTable(table, nil).Versions()
	if err != nil {
		t.Fatal(err)
	}
	return vr.Latest
}

// TestBackfillRacesLiveFirstEpoch starts a backfill at the same moment as a live
// `read-files | write-delta` flow whose first epoch creates the target, 20 times: whichever
// creates the table, both flows commit (issue #26: the backfill exited 1, "the table was
// created concurrently; run the backfill again").
func TestBackfillRacesLiveFirstEpoch(t *testing.T) {
	bin := peertest.Binary(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "a.ndjson")
	if err := os.WriteFile(src, []byte("{\"id\":1}\n{\"id\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour) // not a file still being written: no settle wait
	os.Chtimes(src, old, old)
	joined := 0
	for trial := 0; trial < 20; trial++ {
		target := filepath.Join(dir, fmt.Sprintf("t%d", trial))
		live := exec.Command("sh", "-c", `"$0" read-files "$1" | "$0" write-delta "$2" --flow live`, bin, src, target)
		liveOut := &strings.Builder{}
		live.Stderr = liveOut
		if err := live.Start(); err != nil {
			t.Fatal(err)
		}
		out, code := backfill(t, bin, "--from", src, "--to", target, "--flow", "history")
		if err := live.Wait(); err != nil {
			t.Fatalf("trial %d: live flow: %v\n%s", trial, err, liveOut)
		}
		if code != 0 {
			t.Fatalf("trial %d: backfill: exit %d\n%s", trial, code, out)
		}
		if strings.Contains(out, "created concurrently") {
			joined++
		}
		snap, err := delta.NewTable(target, nil).Snapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, flow := range []string{"live", "history"} {
			if _, ok := snap.TxnVersion(flow); !ok {
				t.Fatalf("trial %d: no commit of flow %s in the table", trial, flow)
			}
		}
	}
	t.Logf("the backfill joined a table the live flow created in %d of 20 trials", joined)
}
