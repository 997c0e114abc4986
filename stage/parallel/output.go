package parallel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/streamkit/streamkit/stage"
)

// snapshot is the part of a stage's --progress=json line (stage.Snapshot) that run merges.
type snapshot struct {
	Time       time.Time `json:"time"`
	Stage      string    `json:"stage"`
	RecordsIn  *int64    `json:"records_in"`
	RecordsOut int64     `json:"records_out"`
	RateIn     float64   `json:"rate_in"`
	Epoch      uint64    `json:"epoch"`
	Committed  uint64    `json:"committed"`
	Lag        *int64    `json:"lag"`
	Partitions *int64    `json:"partitions"`
	Final      bool      `json:"final"`
}

// parseSnapshot recognises a stage's progress line: a JSON object with "stage" and
// "records_in" (a JSON log line has neither).
func parseSnapshot(b []byte) (snapshot, bool) {
	var s snapshot
	if !bytes.HasPrefix(b, []byte("{")) || !bytes.Contains(b, []byte(`"records_in":`)) {
		return s, false
	}
	if json.Unmarshal(b, &s) != nil || s.Stage == "" || s.RecordsIn == nil {
		return s, false
	}
	return s, true
}

// withMember returns the JSON object line b with "member":i as its first field.
func withMember(b []byte, i int) []byte {
	out := fmt.Appendf(nil, `{"member":%d`, i)
	rest := bytes.TrimSpace(b[1:])
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	out = append(out, rest...)
	return append(out, '\n')
}

// viewFrame is how often the terminal view is redrawn; the members report every second.
const viewFrame = 250 * time.Millisecond

// output writes the merged stderr of the members: with --progress=json their progress lines
// (with "member"), on a terminal (auto) a live view with the log lines above it, otherwise
// the log lines alone. Log lines are prefixed with "[member i] ", or get a "member" field
// when they are JSON objects.
type output struct {
	mu    sync.Mutex
	w     io.Writer
	mode  string // json, view, lines
	s     *supervisor
	drawn int // lines of the view on the terminal now
	tick  *time.Ticker
	done  chan struct{}
	wg    sync.WaitGroup
}

func newOutput(w io.Writer, progress string, s *supervisor) *output {
	o := &output{w: w, s: s, mode: "lines"}
	switch {
	case progress == stage.ProgressJSON:
		o.mode = "json"
	case progress == stage.ProgressAuto && terminalWidth(w) > 0:
		o.mode = "view"
	}
	return o
}

// terminalWidth is w's width when it is a terminal, else 0.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	wd, _, err := term.GetSize(int(f.Fd()))
	if err != nil || wd <= 0 {
		return 80
	}
	return wd
}

// startView starts redrawing the view (terminal only).
func (o *output) startView() {
	if o.mode != "view" {
		return
	}
	o.tick = time.NewTicker(viewFrame)
	o.done = make(chan struct{})
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for {
			select {
			case <-o.done:
				return
			case <-o.tick.C:
				o.mu.Lock()
				o.redraw()
				o.mu.Unlock()
			}
		}
	}()
}

// progress forwards a member's progress line (--progress=json).
func (o *output) progress(m *member, b []byte) {
	if o.mode != "json" {
		return
	}
	o.write(withMember(b, m.i))
}

// log forwards one of a member's log lines.
func (o *output) log(m *member, b []byte) {
	var line []byte
	if o.mode == "json" && bytes.HasPrefix(b, []byte("{")) && json.Valid(b) {
		line = withMember(b, m.i)
	} else {
		line = fmt.Appendf(nil, "[member %d] %s\n", m.i, b)
	}
	o.write(line)
}

// memberExit reports a member's end: a JSON line with --progress=json.
func (o *output) memberExit(m *member) {
	if o.mode != "json" {
		return
	}
	b, _ := json.Marshal(map[string]any{"time": time.Now().UTC(), "member": m.i, "event": "exit", "exit_code": m.code,
		"elapsed_s": m.elapsed.Seconds()})
	o.write(append(b, '\n'))
}

// write writes one line, above the view when there is one.
func (o *output) write(line []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mode == "view" && o.drawn > 0 {
		o.w.Write(append([]byte("\r"+ansi.EraseScreenBelow), line...))
		o.drawn = 0
		o.redraw()
		return
	}
	o.w.Write(line)
}

// redraw draws the view in place. Between frames the cursor rests at the start of the view's
// first line, so a frame (or a log line) starts by erasing everything below it; a line that
// run's own logger writes (stage.Console erases below the cursor too) pushes the view down,
// and the next frame is drawn below it. o.mu held.
func (o *output) redraw() {
	width := terminalWidth(o.w)
	lines := o.s.viewLines()
	var b strings.Builder
	b.WriteString("\r" + ansi.EraseScreenBelow)
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(ansi.Truncate(l, width-1, "…"))
	}
	b.WriteString("\r")
	if len(lines) > 1 {
		b.WriteString(ansi.CursorUp(len(lines) - 1))
	}
	io.WriteString(o.w, b.String())
	o.drawn = len(lines)
}

// close ends the view and writes the summary line (on a terminal, in place of the view; else
// through run's log).
func (o *output) close(summary string) {
	if o.tick != nil {
		o.tick.Stop()
		close(o.done)
		o.wg.Wait()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch o.mode {
	case "view":
		fmt.Fprintf(o.w, "\r%s%s\n", ansi.EraseScreenBelow, summary)
		o.drawn = 0
	case "lines":
		o.s.cfg.Log.Info(summary)
	}
}

// viewLines are the view's lines: a header, one line per member, and the totals per stage.
func (s *supervisor) viewLines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	running := 0
	for _, m := range s.members {
		if !m.exited {
			running++
		}
	}
	lines := []string{fmt.Sprintf("run --parallel %d · %d running · %s", s.cfg.N, running, time.Since(s.began).Truncate(time.Second))}
	for _, m := range s.members {
		l := fmt.Sprintf("member %d", m.i)
		for _, st := range m.stages {
			l += " · " + stageText(st.snap, !m.exited)
		}
		if m.exited {
			l += fmt.Sprintf(" · exit %d", m.code)
		}
		lines = append(lines, l)
	}
	if t := s.totals(); len(t) > 0 {
		l := "total"
		for _, st := range t {
			l += " · " + stageText(st, true)
		}
		lines = append(lines, l)
	}
	return lines
}

// stageText is one stage's figures: records in, the rate (while running), lag, partitions
// and the newest committed (else completed) epoch.
func stageText(s snapshot, running bool) string {
	var in int64
	if s.RecordsIn != nil {
		in = *s.RecordsIn
	}
	t := s.Stage + " " + stage.Human(float64(in))
	if running && s.RateIn > 0 {
		t += " " + stage.Human(s.RateIn) + "/s"
	}
	if s.Lag != nil {
		t += " lag " + stage.Human(float64(*s.Lag))
	}
	if s.Partitions != nil {
		t += fmt.Sprintf(" %dp", *s.Partitions)
	}
	switch {
	case s.Committed > 0:
		t += fmt.Sprintf(" committed %d", s.Committed)
	case s.Epoch > 0:
		t += fmt.Sprintf(" epoch %d", s.Epoch)
	}
	return t
}

// totals sums the members' latest figures per stage name (in the order of the first member's
// stages): records, rates of running members, lag and partitions. s.mu held.
func (s *supervisor) totals() []snapshot {
	var out []snapshot
	idx := map[string]int{}
	for _, m := range s.members {
		for _, st := range m.stages {
			k, ok := idx[st.name]
			if !ok {
				k = len(out)
				idx[st.name] = k
				zero := int64(0)
				out = append(out, snapshot{Stage: st.name, RecordsIn: &zero})
			}
			t := &out[k]
			*t.RecordsIn += deref(st.snap.RecordsIn)
			if !m.exited {
				t.RateIn += st.snap.RateIn
			}
			if st.snap.Lag != nil && !m.exited {
				t.Lag = addPtr(t.Lag, *st.snap.Lag)
			}
			if st.snap.Partitions != nil && !m.exited {
				t.Partitions = addPtr(t.Partitions, *st.snap.Partitions)
			}
		}
	}
	return out
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func addPtr(p *int64, v int64) *int64 {
	n := deref(p) + v
	return &n
}

// summary is the line that ends a run: how the members exited, how long it took, and the
// records of each stage in all.
func (s *supervisor) summary() string {
	s.mu.Lock()
	codes := make([]string, 0, len(s.members))
	for _, m := range s.members {
		if m.exited {
			codes = append(codes, fmt.Sprint(m.code))
		} else {
			codes = append(codes, "-")
		}
	}
	for i := len(codes); i < s.cfg.N; i++ {
		codes = append(codes, "-") // not started: an earlier member failed to start
	}
	s.mu.Unlock()
	l := fmt.Sprintf("run: %d members, exit codes %s, %s", s.cfg.N, strings.Join(codes, " "), time.Since(s.began).Round(100*time.Millisecond))
	s.mu.Lock()
	t := s.totals()
	s.mu.Unlock()
	for _, st := range t {
		l += fmt.Sprintf("; %s %d records", st.Stage, deref(st.RecordsIn))
	}
	return l
}
