package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/peertest"
)

// viewStages are the stages of TestLiveView's pipeline, in order.
var viewStages = []string{"generate", "keyby", "dedup", "print"}

// TestLiveView runs a 4-stage pipeline in a tmux terminal and looks at the screen while it
// runs and after it ended (issue #23, stage/view.go): while it runs, every snapshot that shows
// the view shows it once and whole — a header, then one row per stage in pipeline order,
// each stage's name once, no other line starting with a stage's name (no status line of an
// upstream stage, nothing interleaved) — and a line another process writes meanwhile scrolls
// above it intact; after the end only the one-line summary is left, below the log line of an
// upstream stage. At 80×24 in colour, with NO_COLOR=1 (no escape sequence in the view) and
// 60 columns wide with TERM=screen (no line cut short of the view's rows, colour still on).
func TestLiveView(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		peertest.Missing(t, "tmux: "+err.Error())
	}
	bin := peertest.Binary(t)
	tests := []struct {
		name          string
		width, height int
		noColor       bool
	}{
		{"80x24", 80, 24, false},
		{"no-color", 80, 24, true},
		{"60-wide", 60, 24, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sock := fmt.Sprintf("streamkit-view-%d-%s", os.Getpid(), tt.name)
			tm := func(args ...string) (string, error) {
				out, err := exec.Command("tmux", append([]string{"-L", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
				return string(out), err
			}
			t.Cleanup(func() { tm("kill-server") })
			env := ""
			if tt.noColor {
				env = "export NO_COLOR=1; "
			}
			if tt.width == 60 {
				// As on CI: tmux's TERM without a tmux-256color terminfo, and CI set, which
				// termenv takes for "not a terminal".
				env = "export TERM=screen CI=1; "
			}
			// 16000 rows at 4000/s: about 4 s of live view. A foreign line reaches the
			// terminal at 1.5 s, when the view is up.
			// First a 3-row pipeline printing to the terminal: its table, then its summary only.
			script := env + fmt.Sprintf(`cd %q; B=%q; $B generate --rows 3 | $B print; (sleep 1.5; echo 'a line from another process' >&2) &
$B generate --rate 4000 --rows 16000 --gen 'value=uniform(0, 999)' --epoch-interval 1s | $B keyby value | $B dedup --key value | $B print > /dev/null
echo "EXIT=$?"; wait; sleep 600`, t.TempDir(), bin)
			if out, err := tm("new-session", "-d", "-x", fmt.Sprint(tt.width), "-y", fmt.Sprint(tt.height), "-s", "view", script); err != nil {
				t.Fatalf("tmux new-session: %v: %s", err, out)
			}
			capture := func(flags ...string) string {
				out, err := tm(append([]string{"capture-pane", "-p", "-t", "view"}, flags...)...)
				if err != nil {
					t.Fatalf("tmux capture-pane: %v: %s", err, out)
				}
				return out
			}
			views, final := 0, ""
			deadline := time.Now().Add(25 * time.Second)
			for time.Now().Before(deadline) {
				screen := capture()
				if strings.Contains(screen, "EXIT=") {
					final = screen
					break
				}
				if checkView(t, screen, tt.width) {
					views++
					styled := capture("-e")
					if hasSGR := strings.Contains(viewLines(styled), "\x1b["); hasSGR == tt.noColor && checkView(t, styled, 1<<20) {
						t.Errorf("NO_COLOR=%v but escape sequences in the view: %v:\n%q", tt.noColor, hasSGR, styled)
					}
				}
				time.Sleep(200 * time.Millisecond)
			}
			if final == "" {
				t.Fatalf("the pipeline did not end in 25 s; the screen:\n%s", capture())
			}
			if views < 3 {
				t.Errorf("the view with every stage was on screen in %d snapshots, want several", views)
			}
			checkFinal(t, final)
		})
	}
}

// viewLines is the part of screen from the view's header on.
func viewLines(screen string) string {
	if i := strings.Index(screen, "in/s"); i >= 0 {
		return screen[strings.LastIndexByte(screen[:i], '\n')+1:]
	}
	return ""
}

// checkView reports whether screen shows the view with every stage's row, and fails t when
// it shows a broken one.
func checkView(t *testing.T, screen string, width int) bool {
	t.Helper()
	lines := strings.Split(screen, "\n")
	header := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "stage ") && strings.Contains(l, "in/s") {
			if header >= 0 {
				t.Errorf("two view headers on screen:\n%s", screen)
				return false
			}
			header = i
		}
		if ansiWidth(l) > width {
			t.Errorf("line %d is %d wide, wider than the terminal's %d:\n%s", i, ansiWidth(l), width, screen)
		}
	}
	if header < 0 {
		return false
	}
	// Rows follow the header in pipeline order: a stage shows once its first report arrived,
	// the drawing stage (print) always, last.
	var names []string
	for _, l := range lines[header+1:] {
		f := strings.Fields(stripANSI(l))
		if len(f) == 0 || !isStage(f[0]) {
			break
		}
		names = append(names, f[0])
	}
	rows := len(names)
	if rows == 0 || names[rows-1] != "print" || !inOrder(names) {
		t.Errorf("view rows %v: want stages of %v, in order, once each, print last:\n%s", names, viewStages, screen)
	}
	for i, l := range lines {
		if i > header && i <= header+rows {
			if n := countStages(stripANSI(l)); n != 1 {
				t.Errorf("view row %q names %d stages, want 1:\n%s", l, n, screen)
			}
			continue
		}
		for _, s := range viewStages {
			if strings.HasPrefix(stripANSI(l), s+" ") && !smallSummary.MatchString(l) {
				t.Errorf("line %d starts with stage %s outside the view's rows (a stale or interleaved status line):\n%s", i, s, screen)
			}
		}
		if i > header+rows && strings.TrimSpace(l) != "" {
			t.Errorf("line %d below the view is not empty: %q\n%s", i, l, screen)
		}
	}
	return rows == len(viewStages)
}

// inOrder reports whether names are stages of viewStages in pipeline order, each once.
func inOrder(names []string) bool {
	j := 0
	for _, n := range names {
		for j < len(viewStages) && viewStages[j] != n {
			j++
		}
		if j == len(viewStages) {
			return false
		}
		j++
	}
	return true
}

// countStages counts the stage names in line.
func countStages(line string) int {
	n := 0
	for _, s := range viewStages {
		n += strings.Count(line, s)
	}
	return n
}

func isStage(s string) bool {
	for _, v := range viewStages {
		if s == v {
			return true
		}
	}
	return false
}

var sgr = regexp.MustCompile("\x1b\\[[0-9;:]*[A-Za-z]")

func stripANSI(s string) string { return sgr.ReplaceAllString(s, "") }

func ansiWidth(s string) int { return len([]rune(stripANSI(s))) }

// summaryLine is the view's last word, e.g. "generate 16.0K → keyby 16.0K → dedup 1000 →
// print 1000 rows in 4.1s".
// At 60 columns it is shorter: "generate 16.0K→keyby 16.0K→dedup 1000→print 1000 in 4.1s".
var summaryLine = regexp.MustCompile(`^generate 16\.0K ?→ ?keyby 16\.0K ?→ ?dedup ([0-9.]+[KMG]?) ?→ ?print ([0-9.]+[KMG]?)( rows)? in \S+$`)

// smallSummary is the summary of `generate --rows 3 | print`.
var smallSummary = regexp.MustCompile(`^generate 3 ?→ ?print 3( rows)? in \S+$`)

// checkFinal checks the screen after the pipelines ended: the 3-row pipeline's table, then
// its summary; the summary of the other once, after the line of the other process and dedup's
// log line; no row or header of a view left.
func checkFinal(t *testing.T, screen string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	summary, foreign, logLine, small, table := -1, -1, -1, -1, -1
	for i, l := range lines {
		switch {
		case smallSummary.MatchString(l):
			if small >= 0 {
				t.Errorf("two summaries of the 3-row pipeline:\n%s", screen)
			}
			small = i
			continue
		case strings.Contains(l, "2024-01-01T00:00:00.002Z"):
			table = i
		case summaryLine.MatchString(l):
			if summary >= 0 {
				t.Errorf("two summaries:\n%s", screen)
			}
			summary = i
			if m := summaryLine.FindStringSubmatch(l); m[1] != m[2] || m[1] == "0" {
				t.Errorf("summary %q: dedup passed %s rows, print printed %s; want the same, not 0", l, m[1], m[2])
			}
		case l == "a line from another process":
			foreign = i
		case strings.Contains(l, `msg="dedup done"`):
			logLine = i
		case strings.HasPrefix(l, "stage ") || strings.Contains(l, "9999-12-31"):
			t.Errorf("line %d is left of the view: %q\n%s", i, l, screen)
		}
		for _, s := range viewStages {
			if strings.HasPrefix(l, s+" ") && !summaryLine.MatchString(l) {
				t.Errorf("line %d is a stage's row left on screen: %q\n%s", i, l, screen)
			}
		}
	}
	if summary < 0 {
		t.Fatalf("no summary line after the end:\n%s", screen)
	}
	if table < 0 || small != table+2 || small > foreign {
		t.Errorf("want the 3-row table, its bottom line and then its summary, before the rest:\n%s", screen)
	}
	if foreign < 0 || foreign > summary {
		t.Errorf("the other process's line is missing, cut or below the summary:\n%s", screen)
	}
	if logLine < 0 || logLine > summary {
		t.Errorf("dedup's log line is missing or below the summary:\n%s", screen)
	}
	if summary+1 >= len(lines) || lines[summary+1] != "EXIT=0" {
		t.Errorf("want EXIT=0 right after the summary:\n%s", screen)
	}
}

// TestStatsThroughShards: on a terminal, the stats that generate sends downstream pass through
// `keyby --shards 2 -- dedup` once each (every shard forwards them; keyby passes one copy on),
// with the hop of the shard, and its final report among them. keyby's output goes to a file,
// read back here.
func TestStatsThroughShards(t *testing.T) {
	bin := peertest.Binary(t)
	_, tty := openPTY(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.arrow")
	cmd := exec.Command("sh", "-c", fmt.Sprintf(`%[1]q generate --rows 3000 --rate 2000 | %[1]q keyby value --shards 2 -- dedup --key value > %[2]q`, bin, out))
	cmd.Stderr = tty
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := codec.NewReader(f, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	seen := map[int64]bool{}
	final := false
	for {
		m, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Batch != nil {
			m.Batch.Release()
			continue
		}
		if m.Control.Kind != codec.Stats {
			continue
		}
		var w struct {
			Stage string `json:"stage"`
			T     int64  `json:"t"`
			Final bool   `json:"final"`
		}
		if err := json.Unmarshal([]byte(m.Control.Stats), &w); err != nil {
			t.Fatal(err)
		}
		if w.Stage != "generate" || m.Control.Hops != 1 {
			t.Errorf("stats of %q with %d hops, want generate's with 1 (the shard's)", w.Stage, m.Control.Hops)
		}
		if seen[w.T] {
			t.Errorf("generate's report of %d passed keyby twice", w.T)
		}
		seen[w.T] = true
		final = final || w.Final
	}
	if !final || len(seen) < 2 {
		t.Errorf("%d reports of generate, final among them: %v; want its periodic ones and its final one", len(seen), final)
	}
}
