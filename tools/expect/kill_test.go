package expect

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/state"
)

// killRuns is how many times TestKillRestartCountsExact kills the pipeline: a few in make test,
// $STREAMKIT_EXPECT_KILLS (make chaos) for more.
func killRuns(t *testing.T) int {
	if v := os.Getenv("STREAMKIT_EXPECT_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("STREAMKIT_EXPECT_KILLS=%q", v)
		}
		return n
	}
	return 4
}

// TestKillRestartCountsExact: `read-files | expect | write-delta` with checkpoints, killed -9
// as a whole (every process of the pipeline) at random moments and restarted each time until
// a run completes (at moments up to the time an uninterrupted run takes), ends with the cumulative counters of an uninterrupted run (and DuckDB's),
// with the same counts for every retained epoch, the same --dropped-output rows and exactly
// the same table (read by delta-rs).
func TestKillRestartCountsExact(t *testing.T) {
	kills := killRuns(t)
	files := 20 + kills
	root := t.TempDir()
	paths := writeInput(t, root, files, 300, 11)
	want := sum(duckDB(t, paths))
	script := `export STREAMKIT_CHECKPOINT=ck; "$SK" read-files --stable-after 0 --max-files-per-epoch 1 --schema '` + testSchema + `' '../in/*.csv' |
		"$SK" expect` + expectArgs() + ` --dropped-output dropped.ndjson | "$SK" write-delta lake`

	// The uninterrupted run.
	clean := filepath.Join(root, "clean")
	os.MkdirAll(clean, 0o755)
	peertest.Binary(t) // built before the clock starts
	start := time.Now()
	if _, stderr, code := peertest.Pipeline(t, clean, nil, script); code != 0 {
		t.Fatalf("uninterrupted run: exit %d: %s", code, stderr)
	}
	took := time.Since(start)
	cleanSum := stateDump(t, clean)
	checkCounts(t, "uninterrupted run", cleanSum.Total.DataQuality, want)

	// The killed runs, then one to the end.
	run := filepath.Join(root, "killed")
	os.MkdirAll(run, 0o755)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	killed, finished := 0, false
	for killed < kills && !finished {
		// Anywhere from the processes' start to near the end of what is left of a run.
		left := 1.0
		if c, err := state.Committed(filepath.Join(run, "ck", "write-delta")); err == nil {
			left = max(0.1, 1-float64(c)/float64(files))
		}
		d := 20*time.Millisecond + time.Duration(r.Int64N(int64(float64(took)*0.9*left)))
		finished = runKilled(t, run, script, d)
		if !finished {
			killed++
		}
	}
	if !finished {
		if _, stderr, code := peertest.Pipeline(t, run, nil, script); code != 0 {
			t.Fatalf("run after %d kills: exit %d: %s", killed, code, stderr)
		}
	}
	if killed == 0 {
		t.Fatal("every run finished before its kill: the pipeline is too fast for this test")
	}
	got := stateDump(t, run)
	// A restart after the last file was read emits one more (empty) epoch before its end
	// (docs/protocol.md §5), so there may be more epochs than files.
	if got.Committed < uint64(files) || got.Total == nil || got.Total.Epoch != got.Committed {
		t.Fatalf("after %d kills: committed epoch %d, want ≥ %d with the totals", killed, got.Committed, files)
	}
	checkCounts(t, fmt.Sprintf("after %d kills", killed), got.Total.DataQuality, want)
	cleanEpochs := map[uint64]DataQuality{}
	for _, e := range cleanSum.Epochs {
		cleanEpochs[e.Epoch] = e.DataQuality
	}
	compared := 0
	for _, e := range got.Epochs {
		c, ok := cleanEpochs[e.Epoch]
		switch {
		case ok:
			compared++
			if fmt.Sprint(e.DataQuality) != fmt.Sprint(c) {
				t.Errorf("epoch %d after %d kills: %+v; uninterrupted: %+v", e.Epoch, killed, e.DataQuality, c)
			}
		case e.Epoch <= uint64(files):
			// retained here, collected in the shorter uninterrupted run
		default:
			for _, m := range e.DataQuality.Expectations {
				if m.PassedRecords != 0 || m.FailedRecords != 0 {
					t.Errorf("epoch %d after the last file: %+v", e.Epoch, e.DataQuality)
				}
			}
		}
	}
	if compared == 0 {
		t.Fatal("no epoch's counts to compare")
	}
	gotRows, _ := tableRows(t, filepath.Join(run, "lake"))
	wantRows, _ := tableRows(t, filepath.Join(clean, "lake"))
	if !slices.Equal(gotRows, wantRows) {
		t.Fatalf("after %d kills the table holds %d rows, uninterrupted %d", killed, len(gotRows), len(wantRows))
	}
	if int64(len(gotRows)) != want.Rows-want.Dropped {
		t.Fatalf("the table holds %d rows, want %d read - %d dropped", len(gotRows), want.Rows, want.Dropped)
	}
	gotDrop, wantDrop := sortedLines(t, filepath.Join(run, "dropped.ndjson")), sortedLines(t, filepath.Join(clean, "dropped.ndjson"))
	if !slices.Equal(gotDrop, wantDrop) || int64(len(gotDrop)) != want.Dropped {
		t.Fatalf("after %d kills --dropped-output holds %d rows, uninterrupted %d, DuckDB %d", killed, len(gotDrop), len(wantDrop), want.Dropped)
	}
	t.Logf("%d kills (a whole run took %v); %d epochs, %d rows, %d dropped", killed, took, files, want.Rows, want.Dropped)
}

// runKilled starts the pipeline in its own process group and kills the whole group with
// SIGKILL after d; it reports whether the pipeline finished (exit 0) before that.
func runKilled(t *testing.T, dir, script string, d time.Duration) bool {
	cmd := exec.Command("bash", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SK="+peertest.Binary(t))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pipeline failed before its kill: %v: %s", err, stderr.String())
		}
		return true
	case <-time.After(d):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group this test started
		err := <-done
		var ee *exec.ExitError
		if err == nil || !errors.As(err, &ee) {
			return err == nil
		}
		return false
	}
}

func sortedLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := slices.DeleteFunc(bytes.Split(b, []byte("\n")), func(l []byte) bool { return len(l) == 0 })
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	slices.Sort(out)
	return out
}
