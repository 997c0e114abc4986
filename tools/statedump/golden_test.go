package statedump

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/textdiff"
)

var update = flag.Bool("update", false, "rewrite the golden stdout files of testdata/cli/state-dump/<case>/")

// goldenDir is testdata/cli/state-dump of the repository.
func goldenDir(t *testing.T) string {
	return filepath.Join(peertest.Root(t), "testdata", "cli", "state-dump")
}

// scriptedRun runs testdata/cli/state-dump/pipeline in a fresh directory (with env added, e.g.
// END=final) and returns the directory and the wall-clock interval of the run.
func scriptedRun(t *testing.T, dir string, env ...string) (from, to time.Time) {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(goldenDir(t), "pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	from = time.Now()
	cmd := exec.Command("sh", "-c", string(script))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "STREAMKIT_CHECKPOINT=ckpt", "NO_COLOR=1",
		"PATH="+filepath.Dir(peertest.Binary(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripted run: %v\n%s", err, out)
	}
	return from, time.Now()
}

// inDir runs the streamkit binary with args in dir and returns stdout, stderr and the exit code.
func inDir(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(peertest.Binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

var wallTime = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z`)

// normalize replaces the wall-clock times written during the run (file times, creation times;
// not the 2024 event times of the data) by 2000-01-01 00:00:00 in the same layout, and the
// run's directory by $TMP.
func normalize(s, dir string, from, to time.Time) string {
	s = strings.ReplaceAll(s, dir, "$TMP")
	return wallTime.ReplaceAllStringFunc(s, func(m string) string {
		t, err := time.Parse(time.RFC3339Nano, strings.Replace(m, " ", "T", 1))
		if err != nil || t.Before(from.Add(-time.Minute)) || t.After(to.Add(time.Minute)) {
			return m
		}
		if strings.Contains(m, " ") {
			return "2000-01-01 00:00:00Z"
		}
		return "2000-01-01T00:00:00Z"
	})
}

// TestGolden runs the CLI golden cases of state-dump after the scripted run of
// testdata/cli/state-dump/pipeline: each directory testdata/cli/state-dump/<case>/ holds
//
//	args    the streamkit command line after "streamkit", split on white space, run in the
//	        scripted run's directory (the checkpoint root is ckpt)
//	stdout  the expected output with wall-clock times and the directory normalised (rewritten
//	        with -update)
//
// Every case must exit 0. Event times (2024) and sizes are deterministic and compared as is.
func TestGolden(t *testing.T) {
	dir := t.TempDir()
	from, _ := scriptedRun(t, dir)
	cases, err := filepath.Glob(filepath.Join(goldenDir(t), "*", "args"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden cases under %s: %v", goldenDir(t), err)
	}
	for _, c := range cases {
		cdir := filepath.Dir(c)
		t.Run(filepath.Base(cdir), func(t *testing.T) {
			b, err := os.ReadFile(c)
			if err != nil {
				t.Fatal(err)
			}
			args := strings.Fields(string(b))
			if len(args) == 0 || args[0] != "state-dump" {
				t.Fatalf("%s: got %q, want a state-dump command line", c, args)
			}
			stdout, stderr, code := inDir(t, dir, args...)
			if code != 0 {
				t.Fatalf("streamkit %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
			}
			got := normalize(stdout, dir, from, time.Now())
			golden := filepath.Join(cdir, "stdout")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("streamkit %s: stdout differs from %s (-update rewrites it)\n%s", strings.Join(args, " "), golden, textdiff.Lines(got, string(want)))
			}
		})
	}
}

// jsonDump runs state-dump with --format json in dir and decodes the rows.
func jsonDump(t *testing.T, dir string, args ...string) []map[string]any {
	t.Helper()
	out, stderr, code := inDir(t, dir, append(append([]string{"state-dump"}, args...), "--format", "json")...)
	if code != 0 {
		t.Fatalf("state-dump %v: exit %d: %s", args, code, stderr)
	}
	return decodeLines(t, out)
}

// TestDumpPredictsRestartedStages checks that the dumped state is what the stages hold, by
// restarting them after the scripted run:
//
//   - dedup: a probe of ids 1…400 at the stage's watermark (so nothing expires) passes exactly
//     the ids the dump does not list;
//   - window: ending the input with end=final emits exactly the dumped windows with
//     fired=false, with the dumped count and total, and none of the fired ones (kept only for
//     late rows, which this input has none of).
func TestDumpPredictsRestartedStages(t *testing.T) {
	dir := t.TempDir()
	scriptedRun(t, dir)
	bin := peertest.Binary(t)

	// dedup
	dumped := map[string]bool{}
	for _, r := range jsonDump(t, dir, "ckpt", "--stage", "dedup") {
		dumped[fmt.Sprint(r["id"])] = true
	}
	if len(dumped) < 100 {
		t.Fatalf("only %d dedup keys dumped", len(dumped))
	}
	out, _, _ := inDir(t, dir, "state-dump", "ckpt/dedup", "--format", "json")
	var sum struct {
		Epochs []struct {
			Epoch uint64          `json:"epoch"`
			Extra json.RawMessage `json:"extra"`
		} `json:"epochs"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	wm, ok := watermarkUS(sum.Epochs[len(sum.Epochs)-1].Extra)
	if !ok {
		t.Fatalf("no dedup watermark in %s", out)
	}
	at := time.UnixMicro(wm).UTC().Format(time.RFC3339Nano)
	// The probe: ids 1…400 at the watermark, as data batches only (a restarted stateful stage
	// refuses an input whose epoch numbering starts again at 1).
	gen := exec.Command(bin, "--progress=off", "generate", "--schema", "id bigint, user string, amount bigint, ts timestamp",
		"--gen", "id=sequence(1)", "--gen", "ts=constant("+at+")", "--rows", "400")
	gen.Env = append(os.Environ(), "STREAMKIT_CHECKPOINT=")
	genOut, err := gen.Output()
	if err != nil {
		t.Fatalf("generate the probe: %v", err)
	}
	probeIn := dataOnly(t, genOut)
	probe := exec.Command("sh", "-c", fmt.Sprintf(`%[1]q --progress=off dedup --checkpoint ckpt/dedup --key id --event-time ts --ttl 3m | %[1]q --progress=off print --format json`, bin))
	probe.Dir = dir
	probe.Env = append(os.Environ(), "STREAMKIT_CHECKPOINT=")
	probe.Stdin = bytes.NewReader(probeIn)
	var perr bytes.Buffer
	probe.Stderr = &perr
	raw, err := probe.Output()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, perr.String())
	}
	passed := map[string]bool{}
	for _, r := range decodeLines(t, string(raw)) {
		passed[fmt.Sprint(r["id"])] = true
	}
	for id := 1; id <= 400; id++ {
		k := strconv.Itoa(id)
		if dumped[k] == passed[k] {
			t.Errorf("id %s: in the dump %v, passed by the restarted dedup %v", k, dumped[k], passed[k])
		}
	}

	// window
	type win struct{ user, start, end, count, total string }
	var open, fired []win
	for _, r := range jsonDump(t, dir, "ckpt", "--stage", "window") {
		w := win{fmt.Sprint(r["user"]), fmt.Sprint(r["window_start"]), fmt.Sprint(r["window_end"]), fmt.Sprint(r["count"]), fmt.Sprint(r["total"])}
		if r["fired"] == true {
			fired = append(fired, w)
		} else {
			open = append(open, w)
		}
	}
	if len(open) == 0 || len(fired) == 0 {
		t.Fatalf("the scripted run should leave open and fired windows: open %v, fired %v", open, fired)
	}
	scriptedRun(t, dir, "END=final")
	b, err := os.ReadFile(filepath.Join(dir, "out.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	var emitted []win
	for _, r := range decodeLines(t, string(b)) {
		if r["emit"] != "on_time" {
			t.Errorf("end=final emitted %v", r)
		}
		emitted = append(emitted, win{fmt.Sprint(r["user"]), fmt.Sprint(r["window_start"]), fmt.Sprint(r["window_end"]), fmt.Sprint(r["count"]), fmt.Sprint(r["total"])})
	}
	sortWins := func(ws []win) {
		sort.Slice(ws, func(i, j int) bool { return fmt.Sprint(ws[i]) < fmt.Sprint(ws[j]) })
	}
	sortWins(open)
	sortWins(emitted)
	if fmt.Sprint(open) != fmt.Sprint(emitted) {
		t.Fatalf("end=final emitted\n  %v\nthe dump's open windows are\n  %v", emitted, open)
	}
}

// dataOnly rewrites a streamkit stream as its schema and data batches, then end=pause.
func dataOnly(t *testing.T, stream []byte) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	r, err := codec.NewReader(bytes.NewReader(stream), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var out bytes.Buffer
	w := codec.NewWriter(&out, r.Schema(), mem)
	for {
		m, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Batch != nil {
			err := w.Write(m.Batch)
			m.Batch.Release()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.WriteControl(codec.EndControl(codec.Pause)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
