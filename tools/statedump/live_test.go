package statedump

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/textdiff"
)

// livePipeline is a checkpointed pipeline paced by generate --rate RATE: at 1500/s it runs
// for about six seconds, long enough for ten rounds of dumps on a loaded machine, and the
// test runs it slower when that was not enough. 9000 rows in epochs of 200, deduplicated by id
// (no TTL: the state after epoch n is the distinct ids of its first 200·n rows), then counted
// and summed per user in 1-minute event-time windows (no lateness: the open windows are those
// whose end lies after the largest event time seen).
const (
	liveRows     = 9000
	liveEpochRow = 200
	liveGen      = `--schema 'id bigint, user string, amount bigint, ts timestamp' --gen 'id=uniform(1, 3000)' ` +
		`--gen 'user=choice(ann, bob, cy, dee)' --gen 'amount=uniform(1, 100)' --gen 'ts=timestamp(2024-05-01T00:00:00.25Z, 20/s)' --seed 11`
	livePipeline = `streamkit --progress=off generate ` + liveGen + ` --rows 9000 --rate RATE --max-records-per-epoch 200 --epoch-interval 1h \
  | streamkit --progress=off dedup --key id \
  | streamkit --progress=off window tumbling --key user --time ts --size 1m --agg 'count, sum(amount) as total' \
  | streamkit --progress=off print --format json > out.ndjson`
)

func liveCmd(t *testing.T, dir, script string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "STREAMKIT_CHECKPOINT=ckpt",
		"PATH="+filepath.Dir(peertest.Binary(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd
}

// liveRow is one generated row.
type liveRow struct {
	ID     int64  `json:"id"`
	User   string `json:"user"`
	Amount int64  `json:"amount"`
	TS     string `json:"ts"`
}

// attempt is one state-dump run during the pipeline's run.
type attempt struct {
	args   []string
	epoch  uint64 // the epoch asked for (0: the default, the committed one)
	out    string
	stderr string
	code   int
	during bool // the pipeline was still running when it ended
}

// TestDumpLivePipeline dumps a running pipeline's checkpoint directory over and over — the root
// listing, stage summaries, and the dedup and window state at the committed epoch, at the
// newest epoch the source has logged (often not written yet) and at the default epoch — and
// checks that (1) the pipeline's output equals an undisturbed run's, byte for byte, and (2)
// every dump either fails cleanly (exit 1 with a message, never a crash or a usage error) or
// shows complete epochs only: every dumped state equals the state the input prefix of that
// epoch implies — the distinct ids for dedup, the open windows with their exact count and total
// for window — so no dump ever saw a half-written epoch (a missing changelog would lose keys
// or change counts).
func TestDumpLivePipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two paced pipelines (about 8 s)")
	}
	bin := peertest.Binary(t)
	// The input, for the expectations: generated rows depend only on the seed and the index.
	gen := exec.Command("sh", "-c", fmt.Sprintf("%q --progress=off generate %s --rows %d | %q --progress=off print --format json", bin, liveGen, liveRows, bin))
	raw, err := gen.Output()
	if err != nil {
		t.Fatal(err)
	}
	var rows []liveRow
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r liveRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	if len(rows) != liveRows {
		t.Fatalf("%d input rows", len(rows))
	}

	// The undisturbed run.
	ref := t.TempDir()
	if out, err := liveCmd(t, ref, strings.Replace(livePipeline, "RATE", "1500/s", 1)).CombinedOutput(); err != nil {
		t.Fatalf("undisturbed run: %v\n%s", err, out)
	}
	want, err := os.ReadFile(filepath.Join(ref, "out.ndjson"))
	if err != nil || len(want) == 0 {
		t.Fatalf("undisturbed output: %v (%d bytes)", err, len(want))
	}

	// The disturbed run: dump in a loop while it runs. On a machine so loaded that a run
	// at 1500 rows/s ends before ten dumps succeeded, it runs again, slower; the output does
	// not depend on the rate (epochs are counted in rows).
	var attempts []attempt
	for _, rate := range []string{"1500/s", "500/s", "200/s"} {
		attempts = append(attempts, disturbedRun(t, rate, want)...)
		if ok, checked := countDumps(attempts); ok >= 10 && checked >= 10 {
			break
		}
	}

	// Every dump: clean, and equal to the state of a complete epoch.
	expect := newLiveExpect(rows)
	ok, failed, checked := 0, 0, 0
	for _, a := range attempts {
		if strings.Contains(a.stderr, "panic") || strings.Contains(a.stderr, "goroutine ") {
			t.Fatalf("%v crashed:\n%s", a.args, a.stderr)
		}
		if a.code != 0 {
			if a.code != 1 || strings.TrimSpace(a.stderr) == "" {
				t.Errorf("%v: exit %d, want 0 or a clean exit 1 with a message: %q", a.args, a.code, a.stderr)
			}
			failed++
			t.Logf("clean failure while running=%v: %v: %s", a.during, a.args[1:], strings.TrimSpace(a.stderr))
			continue
		}
		if a.during {
			ok++
		}
		if len(a.args) < 4 || a.args[2] != "--stage" {
			continue
		}
		st := a.args[3]
		lines := decodeLines(t, a.out)
		// The epoch shown: the one asked for, or for the default some committed epoch; find
		// the one whose expected state the dump equals.
		candidates := []uint64{a.epoch}
		if a.epoch == 0 {
			candidates = nil
			for n := uint64(1); n <= liveRows/liveEpochRow; n++ {
				candidates = append(candidates, n)
			}
		}
		match := false
		for _, n := range candidates {
			if expect.state(st, n) == canonical(st, lines) {
				match = true
				break
			}
		}
		if !match {
			t.Errorf("%v: the dump is not the state of epoch %v:\n%s\nwant (epoch %d):\n%s", a.args[1:], candidates, canonical(st, lines), a.epoch, expect.state(st, a.epoch))
		}
		checked++
	}
	t.Logf("%d dumps: %d succeeded while the pipeline ran, %d failed cleanly, %d state dumps checked against the input", len(attempts), ok, failed, checked)
	if ok < 10 || checked < 10 {
		t.Errorf("too few dumps while the pipeline ran (%d succeeded, %d state dumps checked): the test proves little", ok, checked)
	}
}

// liveExpect computes the state of the live pipeline's stages after each epoch from the input.
type liveExpect struct {
	rows  []liveRow
	cache map[string]string
}

func newLiveExpect(rows []liveRow) *liveExpect {
	return &liveExpect{rows: rows, cache: map[string]string{}}
}

// state is the canonical text of stage st's state after epoch n: the input prefix of n epochs,
// deduplicated by id (first occurrence), is the dedup state (its ids) and the window input;
// the window state is the windows of that input that have not fired, i.e. whose end is after
// the largest event time seen (watermark delay 0, no lateness), with count and sum.
func (e *liveExpect) state(st string, n uint64) string {
	k := fmt.Sprint(st, n)
	if s, ok := e.cache[k]; ok {
		return s
	}
	end := min(int(n)*liveEpochRow, len(e.rows))
	seen := map[int64]bool{}
	var kept []liveRow
	for _, r := range e.rows[:end] {
		if !seen[r.ID] {
			seen[r.ID] = true
			kept = append(kept, r)
		}
	}
	var lines []string
	if st == "dedup" {
		for id := range seen {
			lines = append(lines, fmt.Sprint(id))
		}
	} else {
		var wm time.Time
		type agg struct{ count, total int64 }
		wins := map[string]*agg{}
		for _, r := range kept {
			ts, err := time.Parse(time.RFC3339Nano, r.TS)
			if err != nil {
				panic(err)
			}
			if ts.After(wm) {
				wm = ts
			}
			start := ts.Truncate(time.Minute)
			key := fmt.Sprintf("%s %s %s", r.User, start.Format(time.RFC3339), start.Add(time.Minute).Format(time.RFC3339))
			if wins[key] == nil {
				wins[key] = &agg{}
			}
			wins[key].count++
			wins[key].total += r.Amount
		}
		for key, a := range wins {
			f := strings.Fields(key)
			we, _ := time.Parse(time.RFC3339, f[2])
			if we.After(wm) {
				lines = append(lines, fmt.Sprintf("%s %d %d", key, a.count, a.total))
			}
		}
	}
	sort.Strings(lines)
	s := strings.Join(lines, "\n")
	e.cache[k] = s
	return s
}

// canonical is the text state would give for the dumped rows of stage st.
func canonical(st string, rows []map[string]any) string {
	var lines []string
	for _, r := range rows {
		if st == "dedup" {
			lines = append(lines, fmt.Sprint(r["id"]))
		} else {
			lines = append(lines, fmt.Sprintf("%v %v %v %v %v", r["user"], r["window_start"], r["window_end"], r["count"], r["total"]))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// disturbedRun runs the pipeline at rate, dumping its checkpoints in a loop, checks that its
// output equals want and returns the dumps.
func disturbedRun(t *testing.T, rate string, want []byte) []attempt {
	t.Helper()
	dir := t.TempDir()
	cmd := liveCmd(t, dir, strings.Replace(livePipeline, "RATE", rate, 1))
	var perr bytes.Buffer
	cmd.Stderr = &perr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var attempts []attempt
	running := true
	var runErr error
	dump := func(epoch uint64, args ...string) attempt {
		o, e, c := inDir(t, dir, args...)
		select {
		case runErr = <-done:
			running = false
		default:
		}
		a := attempt{args: args, epoch: epoch, out: o, stderr: e, code: c, during: running}
		attempts = append(attempts, a)
		return a
	}
	committed, newest := uint64(0), uint64(0)
	for i := 0; running; i++ {
		if _, err := os.Stat(filepath.Join(dir, "ckpt", "window", "metadata.json")); err != nil {
			select {
			case runErr = <-done:
				running = false
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		dump(0, "state-dump", "ckpt", "--format", "json")
		if a := dump(0, "state-dump", "ckpt/generate", "--format", "json"); a.code == 0 {
			var s struct {
				Committed uint64 `json:"committed_epoch"`
				Epochs    []struct {
					Epoch uint64 `json:"epoch"`
				} `json:"epochs"`
			}
			if err := json.Unmarshal([]byte(a.out), &s); err != nil {
				t.Fatalf("generate summary: %v\n%s", err, a.out)
			}
			committed = s.Committed
			if n := len(s.Epochs); n > 0 {
				newest = s.Epochs[n-1].Epoch
			}
		}
		dump(0, "state-dump", "ckpt/window", "--format", "json")
		for _, st := range []string{"dedup", "window"} {
			switch i % 3 {
			case 0:
				if committed > 0 {
					dump(committed, "state-dump", "ckpt", "--stage", st, "--epoch", fmt.Sprint(committed), "--format", "json")
				}
			case 1:
				if newest > 0 {
					dump(newest, "state-dump", "ckpt", "--stage", st, "--epoch", fmt.Sprint(newest), "--format", "json")
				}
			default:
				dump(0, "state-dump", "ckpt", "--stage", st, "--format", "json")
			}
		}
	}
	if runErr != nil {
		t.Fatalf("disturbed run: %v\n%s", runErr, perr.String())
	}
	got, err := os.ReadFile(filepath.Join(dir, "out.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the dumped pipeline's output differs from the undisturbed run's\n%s", textdiff.Lines(string(got), string(want)))
	}

	return attempts
}

// countDumps returns how many of attempts succeeded while the pipeline ran and how many of
// those dumped a stage's state.
func countDumps(attempts []attempt) (ok, checked int) {
	for _, a := range attempts {
		if a.code == 0 && a.during {
			ok++
			if len(a.args) >= 4 && a.args[2] == "--stage" {
				checked++
			}
		}
	}
	return ok, checked
}
