package stage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/streamkit/streamkit/codec"
)

// The live view of a pipeline (docs/protocol.md §2 "stats", README "Progress").
//
// All stages of a shell pipeline share one terminal on stderr. With --progress=auto (the
// default) and stderr a terminal, each stage takes one of two roles, decided once when its
// output starts (progressRoleOf):
//
//   - upstream: the stage writes its Arrow IPC stream into a pipe (or a socket), so another
//     process reads it, normally the next streamkit stage. It draws nothing and sends its
//     counters downstream in-band, as a stats control every --progress interval and once
//     more just before its end control. It forwards the stats controls it receives.
//   - drawer: every other stage — a sink (print, write-delta, write-kafka), or a stage whose
//     stdout is a file or /dev/null. It draws one view of every stage whose stats reached
//     it, itself last, and consumes the stats controls.
//
// The rule looks only at the stage's own stdout, so it needs no handshake (a pipe carries
// nothing upstream) and cannot elect two drawers in one pipeline: only the last stage of a
// chain of pipes is not writing into one. When the reader of the pipe is not a streamkit
// stage (`streamkit generate | python consume.py`) no view appears; --progress=json still
// reports every stage.
//
// On the terminal the view is a block of lines redrawn in place. Between frames the cursor
// rests at the start of the view's first line, which is blank. Every write to the terminal
// by a streamkit process on it (log lines of any stage, print's rows, the error message of
// main) goes through Console, which starts it by erasing from the cursor to the end of the
// screen: a line from another stage replaces the view, and the drawer draws the view again
// below it at its next frame; the drawer's own log lines and rows go through the view, which
// erases itself, writes them and redraws. Each of these is one write, which a terminal does
// not interleave with another process's write. A process that knows nothing of this (a
// foreign stage's logs) writes at the blank line, and its line scrolls above the next frame.
// The frame's lines are cut to the terminal's width, so none wraps and the cursor's way back
// up is exact. At the end the view is replaced by a one-line summary.
//
// Layout and colour come from lipgloss, the escape sequences from charmbracelet/x/ansi.
// bubbletea's renderer does not fit: it owns the terminal (input, raw mode, the alternate
// screen or its own line count) and repaints assuming nothing else writes to it, while here
// several processes share the terminal and none may read its input.

// progressRole is what a stage's progress reporter does.
type progressRole int

const (
	roleOff      progressRole = iota // nothing: --progress=off, or auto without a terminal
	roleJSON                         // --progress=json: a JSON line per interval on stderr
	roleUpstream                     // auto on a terminal, output into a pipe: stats in-band
	roleDrawer                       // auto on a terminal, last stage: draws the view
)

// progressRoleOf decides a stage's role (see the package comment above): mode is
// --progress, writesStream whether the stage writes an Arrow IPC stream to stdout, shard
// whether it runs as a child of keyby --shards (whose output keyby merges: it stays silent).
func progressRoleOf(mode string, stderr, stdout io.Writer, writesStream, shard bool) progressRole {
	switch {
	case mode == ProgressJSON:
		return roleJSON
	case mode != ProgressAuto || !isTerminal(stderr) || shard:
		return roleOff
	case writesStream && isPipe(stdout):
		return roleUpstream
	}
	return roleDrawer
}

// isPipe reports whether v (stdin or stdout) is a file that is a pipe (FIFO) or a socket:
// another process writes what the stage reads there, or reads what it writes.
func isPipe(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0
}

// wireStats is the payload of a stats control (codec.KeyStats): one stage's counters when it
// sent them. Counters are totals since the stage started; the drawer derives rates from two
// of them and their times.
type wireStats struct {
	Stage     string `json:"stage"`
	PID       int    `json:"pid"`
	Time      int64  `json:"t"` // µs since the Unix epoch, the sender's clock
	In        int64  `json:"in"`
	Out       int64  `json:"out"`
	Epoch     uint64 `json:"epoch,omitempty"`
	Watermark string `json:"wm,omitempty"`    // as on the wire; codec.EndOfTime at the end of input
	Lag       *int64 `json:"lag,omitempty"`   // records behind the source's end (Kafka)
	Keys      *int64 `json:"keys,omitempty"`  // keys held in state
	Bytes     *int64 `json:"bytes,omitempty"` // bytes of memory the state holds
	Late      int64  `json:"late,omitempty"`  // late rows set aside (window, dedup --ttl)
	Bad       int64  `json:"bad,omitempty"`   // bad records, rows without event time, rejected or dropped by expectations
	Rescued   int64  `json:"rescued,omitempty"`
	Quality   string `json:"quality,omitempty"` // expectation counters, short (DataQuality.ProgressText)
	Final     bool   `json:"final,omitempty"`   // the stage's last report
}

// wire returns the stage's counters now as a stats payload.
func wireOf(name string, st *Stats, now time.Time, final bool) wireStats {
	w := wireStats{Stage: name, PID: os.Getpid(), Time: now.UnixMicro(), In: st.RecordsIn.Load(), Out: st.RecordsOut.Load(),
		Epoch: st.Epoch.Load(), Final: final}
	if wm, ok := st.Watermark(); ok {
		w.Watermark = codec.FormatWatermark(wm)
	}
	if v := st.Lag.Load(); v >= 0 {
		w.Lag = &v
	}
	if v := st.StateKeys.Load(); v >= 0 {
		w.Keys = &v
	}
	if v := st.StateBytes.Load(); v >= 0 {
		w.Bytes = &v
	}
	w.Late = st.Rejected(LateRow) + st.Rejected(DroppedLateRow)
	w.Rescued = st.Rejected(RescuedRow)
	w.Bad = st.BadRecords.Load() - w.Late - w.Rescued
	if q := st.dataQuality(); q != nil {
		w.Quality = q.ProgressText()
	}
	return w
}

// statsControl encodes w as a stats control.
func statsControl(w wireStats) codec.Control {
	b, _ := json.Marshal(w)
	return codec.StatsControl(string(b))
}

// sparkWidth is how many rate samples a row's sparkline shows.
const sparkWidth = 10

// viewRow is one stage of the view.
type viewRow struct {
	hops    int // how many stages forwarded its stats; the drawer's own row is -1
	last    wireStats
	haveOld bool
	rateIn  float64 // rows/s between the last two reports
	rateOut float64
	spark   []float64 // the last sparkWidth input rates
}

// update takes the stage's report w, deriving the rates from the previous one.
func (r *viewRow) update(w wireStats) {
	if r.haveOld {
		if dt := float64(w.Time-r.last.Time) / 1e6; dt > 0 {
			r.rateIn = float64(w.In-r.last.In) / dt
			r.rateOut = float64(w.Out-r.last.Out) / dt
			if !w.Final {
				r.spark = append(r.spark, r.rateIn)
				if len(r.spark) > sparkWidth {
					r.spark = r.spark[1:]
				}
			}
		}
	}
	r.last, r.haveOld = w, true
}

// view is the drawer's state: the rows of the stages, what is on the terminal, and the
// terminal itself. Its methods are safe for concurrent use. A write to the terminal may block
// (a paused terminal): it holds wmu only, so the stage's take of a stats control, under mu,
// never waits for one.
type view struct {
	mu    sync.Mutex // rows
	rows  map[string]*viewRow
	start time.Time
	now   func() time.Time

	wmu   sync.Mutex // the terminal and the fields below; taken before mu
	out   io.Writer
	fd    int    // of out, for its width; -1 when unknown
	drawn int    // lines of the frame on screen; 0 = none
	frame string // the last frame, drawn again after a log line
	done  bool
	tail  []byte // console: a partial last line of print's rows, held until it ends

	head, name, dim, warn lipgloss.Style
}

// newView returns the view of a drawer writing to the terminal out.
func newView(out io.Writer, now func() time.Time) *view {
	v := &view{out: out, fd: -1, rows: map[string]*viewRow{}, start: now(), now: now}
	if f, ok := out.(*os.File); ok {
		v.fd = int(f.Fd())
	}
	r := ColorRenderer(out)
	v.head, v.name, v.dim, v.warn = r.NewStyle(), r.NewStyle(), r.NewStyle(), r.NewStyle()
	if os.Getenv("NO_COLOR") == "" {
		v.head = v.head.Faint(true)
		v.name = v.name.Bold(true).Foreground(lipgloss.Color("6"))
		v.dim = v.dim.Foreground(lipgloss.Color("8"))
		v.warn = v.warn.Foreground(lipgloss.Color("3"))
	}
	return v
}

// take records a stats control received from upstream.
func (v *view) take(c codec.Control) {
	var w wireStats
	if json.Unmarshal([]byte(c.Stats), &w) != nil || w.Stage == "" {
		return // a view reads the payload; a bad one is not worth failing the stream over
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.row(w.Stage+"\x00"+strconv.Itoa(w.PID), c.Hops).update(w)
}

// self records the drawer's own counters.
func (v *view) self(w wireStats) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.row("\x00self", -1).update(w)
}

func (v *view) row(key string, hops int) *viewRow {
	r := v.rows[key]
	if r == nil {
		r = &viewRow{}
		v.rows[key] = r
	}
	r.hops = hops
	return r
}

// ordered returns the rows in pipeline order: the most forwarded first, the drawer last.
func (v *view) ordered() []*viewRow {
	rows := make([]*viewRow, 0, len(v.rows))
	for _, r := range v.rows {
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].hops != rows[j].hops {
			return rows[i].hops > rows[j].hops
		}
		return rows[i].last.Stage < rows[j].last.Stage
	})
	return rows
}

// width is the terminal's width (80 when unknown).
func (v *view) width() int {
	if v.fd >= 0 {
		if w, _, err := term.GetSize(v.fd); err == nil && w > 0 {
			return w
		}
	}
	return 80
}

// height is the terminal's height (24 when unknown).
func (v *view) height() int {
	if v.fd >= 0 {
		if _, h, err := term.GetSize(v.fd); err == nil && h > 0 {
			return h
		}
	}
	return 24
}

// redraw draws the current frame in place of the one on screen.
func (v *view) redraw() {
	v.wmu.Lock()
	defer v.wmu.Unlock()
	if v.done {
		return
	}
	w, h := v.width(), v.height()
	v.mu.Lock()
	v.frame = v.render(v.now(), w, h)
	v.mu.Unlock()
	v.write(nil)
}

// write erases the frame, writes p (whole lines) and draws the frame again, in one write.
// Called with wmu held.
func (v *view) write(p []byte) {
	var b strings.Builder
	v.erase(&b)
	b.Write(p)
	b.WriteString(v.frame)
	v.drawn = strings.Count(v.frame, "\n") + 1
	if v.drawn > 1 {
		b.WriteString("\r" + ansi.CursorUp(v.drawn-1))
	}
	io.WriteString(v.out, b.String())
}

// erase writes to b what clears the drawn frame and leaves the cursor at its top. It erases
// the frame's lines one by one and the rest of the screen only from its last line: an
// erase-below from the top-left corner clears the whole screen, which tmux (scroll-on-clear,
// on by default) copies into the history, one old frame per redraw after a `clear`.
func (v *view) erase(b *strings.Builder) {
	b.WriteString("\r")
	for i := 0; i < v.drawn; i++ {
		if i > 0 {
			b.WriteString(ansi.CursorDown(1))
		}
		b.WriteString(ansi.EraseEntireLine)
	}
	b.WriteString(ansi.EraseScreenBelow)
	if v.drawn > 1 {
		b.WriteString(ansi.CursorUp(v.drawn - 1))
	}
}

// stop replaces the view by its one-line summary (after any held partial line).
func (v *view) stop() {
	v.wmu.Lock()
	defer v.wmu.Unlock()
	v.stopLocked()
}

// stopLocked is stop with wmu held.
func (v *view) stopLocked() {
	if v.done {
		return
	}
	v.done = true
	var b strings.Builder
	v.erase(&b)
	if len(v.tail) > 0 {
		b.Write(v.tail)
		b.WriteString("\n")
		v.tail = nil
	}
	w := v.width()
	v.mu.Lock()
	summary := v.summary(v.now(), w)
	v.mu.Unlock()
	b.WriteString(summary + "\n")
	io.WriteString(v.out, b.String())
}

// render lays out the frame for a terminal width columns wide and height lines high: a blank
// line, a header, a line per stage, no line wider than width-1: when the columns do not fit,
// the total rows out, the epoch, the sparkline and the Kafka lag are left out, in that order.
func (v *view) render(now time.Time, width, height int) string {
	rows := v.ordered()
	if max := height - 3; max > 0 && len(rows) > max {
		rows = rows[len(rows)-max:] // the last stages, the drawer's among them
	}
	cols := []string{"stage", "in/s", "out/s", "out", "epoch", "watermark", "lag", "state", "set aside", "rate"}
	right := []bool{false, true, true, true, true, false, true, true, false, false}
	cells := make([][]string, len(rows))
	used := make([]bool, len(cols))
	for i, r := range rows {
		w := r.last
		c := []string{w.Stage, human(r.rateIn), human(r.rateOut), human(float64(w.Out)), "", watermarkText(w.Watermark, now), "", "", "", spark(r.spark)}
		if w.Epoch > 0 {
			c[4] = strconv.FormatUint(w.Epoch, 10)
		}
		if w.Lag != nil {
			c[6] = human(float64(*w.Lag))
		}
		if w.Keys != nil {
			c[7] = human(float64(*w.Keys))
			if w.Bytes != nil {
				c[7] += " " + bytesText(*w.Bytes)
			}
		}
		var aside []string
		for _, x := range []struct {
			n    int64
			name string
		}{{w.Late, "late"}, {w.Bad, "bad"}, {w.Rescued, "rescued"}} {
			if x.n > 0 {
				aside = append(aside, x.name+" "+human(float64(x.n)))
			}
		}
		if w.Quality != "" {
			aside = append(aside, w.Quality)
		}
		c[8] = strings.Join(aside, " ")
		if w.Final {
			c[9] = "done"
		}
		for j, s := range c {
			used[j] = used[j] || s != ""
		}
		cells[i] = c
	}
	used[0], used[1], used[2], used[3] = true, true, true, true
	widths := make([]int, len(cols))
	for j := range cols {
		if !used[j] {
			continue
		}
		widths[j] = ansi.StringWidth(cols[j])
		for _, c := range cells {
			widths[j] = max(widths[j], ansi.StringWidth(c[j]))
		}
	}
	// Too wide for the terminal: leave out the columns that matter least, one at a time.
	total := func() int {
		n := 0
		for j := range cols {
			if used[j] {
				n += widths[j] + 2
			}
		}
		return n - 2
	}
	for _, j := range []int{3, 4, 9, 6} { // out, epoch, rate, lag
		if total() <= width-1 {
			break
		}
		used[j] = false
	}
	line := func(c []string, style func(j int) lipgloss.Style) string {
		var parts []string
		for j, s := range c {
			if !used[j] {
				continue
			}
			st := lipgloss.NewStyle().Width(widths[j])
			if right[j] {
				st = st.Align(lipgloss.Right)
			}
			parts = append(parts, style(j).Render(st.Render(s)))
		}
		return ansi.Truncate(strings.TrimRight(strings.Join(parts, "  "), " "), width-1, "…")
	}
	out := []string{"", line(cols, func(int) lipgloss.Style { return v.head })}
	for i, c := range cells {
		aside := rows[i].last.Late+rows[i].last.Bad+rows[i].last.Rescued > 0
		out = append(out, line(c, func(j int) lipgloss.Style {
			switch {
			case j == 0:
				return v.name
			case j == 9:
				return v.dim
			case j == 8 && aside:
				return v.warn
			}
			return lipgloss.Style{}
		}))
	}
	return strings.Join(out, "\n")
}

// summary is the line that replaces the view at the end: every stage's rows out, in pipeline
// order, what was set aside, and the time taken; in fewer words when it would be wider than
// width.
func (v *view) summary(now time.Time, width int) string {
	var parts []string
	var late, bad, rescued int64
	for _, r := range v.ordered() {
		parts = append(parts, fmt.Sprintf("%s %s", r.last.Stage, human(float64(r.last.Out))))
		late, bad, rescued = late+r.last.Late, bad+r.last.Bad, rescued+r.last.Rescued
	}
	var aside string
	for _, x := range []struct {
		n    int64
		name string
	}{{late, "late"}, {bad, "bad"}, {rescued, "rescued"}} {
		if x.n > 0 {
			aside += fmt.Sprintf(", %s %s", human(float64(x.n)), x.name)
		}
	}
	d := now.Sub(v.start)
	if d < 10*time.Second {
		d = d.Round(time.Millisecond)
	} else {
		d = d.Round(100 * time.Millisecond)
	}
	took := " in " + d.String()
	var s string
	for _, f := range []struct{ sep, rows string }{{" → ", " rows"}, {"→", " rows"}, {"→", ""}} {
		if s = strings.Join(parts, f.sep) + f.rows + aside + took; ansi.StringWidth(s) < width {
			break
		}
	}
	return ansi.Truncate(s, width-1, "…")
}

// watermarkText shows a watermark as its time of day (UTC) and its lag behind now; the end of
// time as "end".
func watermarkText(wm string, now time.Time) string {
	if wm == "" {
		return ""
	}
	t, err := time.Parse(time.RFC3339Nano, wm)
	if err != nil {
		return wm
	}
	if !t.Before(codec.EndOfTime) {
		return "end"
	}
	return t.UTC().Format("15:04:05") + " " + lagText(now.Sub(t))
}

// lagText is a watermark's lag d behind the clock in its largest unit, one decimal for
// seconds ("-1.2s", "-3m", "-2d"; "+1.0s" ahead of the clock).
func lagText(d time.Duration) string {
	neg := "-"
	if d < 0 {
		neg, d = "+", -d
	}
	var s string
	switch {
	case d < time.Minute:
		s = fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		s = fmt.Sprintf("%.0fm", d.Minutes())
	case d < 48*time.Hour:
		s = fmt.Sprintf("%.0fh", d.Hours())
	case d < 2*365*24*time.Hour:
		s = fmt.Sprintf("%.0fd", d.Hours()/24)
	default:
		s = fmt.Sprintf("%.0fy", d.Hours()/24/365)
	}
	return neg + s
}

// bytesText formats a byte count with a binary unit ("512B", "3.4MiB").
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// spark draws rates as a sparkline, scaled to their maximum.
func spark(rates []float64) string {
	const bars = "▁▂▃▄▅▆▇█"
	levels := []rune(bars)
	var top float64
	for _, r := range rates {
		top = max(top, r)
	}
	var b strings.Builder
	for _, r := range rates {
		i := 0
		if top > 0 {
			i = min(int(r/top*float64(len(levels)-1)+0.5), len(levels)-1)
		}
		b.WriteRune(levels[i])
	}
	return b.String()
}

// The console: every write of this process to the terminal (log lines, print's rows, main's
// error message) goes through it, so that it never lands inside a view (see the comment at
// the top of this file).
var console struct {
	mu   sync.Mutex
	view *view // the drawer's view while it is drawn, nil otherwise
}

// consoleWriter is the writer Console returns.
type consoleWriter struct {
	w    io.Writer
	rows bool // print's rows: only whole lines go into the view
}

// Console returns the writer through which this process writes text to w, its stderr or
// stdout: w itself unless w is a terminal and mode (--progress) is auto. On a terminal each
// write first erases from the cursor to the end of the screen, where an upstream stage's
// drawer keeps its view (the view is drawn again at its next frame), or, in the stage that
// draws the view, goes above the view. Each write should be whole lines (slog's handlers
// write one record at a time); tools that write rows (print) use ConsoleRows.
func Console(w io.Writer, mode string) io.Writer {
	if mode != ProgressAuto || !isTerminal(w) {
		return w
	}
	return &consoleWriter{w: w}
}

// ConsoleRows is Console for a stream of rows written in arbitrary pieces (print's buffered
// output on a terminal): a partial last line is held back until it is complete, so that the
// view is never drawn in the middle of a line.
func ConsoleRows(w io.Writer, mode string) io.Writer {
	if c, ok := Console(w, mode).(*consoleWriter); ok {
		c.rows = true
		return c
	}
	return w
}

func (c *consoleWriter) Write(p []byte) (int, error) {
	console.mu.Lock()
	v := console.view
	console.mu.Unlock()
	if v != nil && !sameFile(c.w, v.out) {
		v = nil // another terminal than the view's
	}
	if v == nil {
		if c.rows {
			return c.w.Write(p) // no view on this terminal: nothing to keep clear
		}
		return c.w.Write(append([]byte("\r"+ansi.EraseScreenBelow), p...))
	}
	return c.into(v, p)
}

// into writes p above the view v.
func (c *consoleWriter) into(v *view, p []byte) (int, error) {
	v.wmu.Lock()
	defer v.wmu.Unlock()
	if v.done {
		return c.w.Write(p)
	}
	n := len(p)
	if c.rows {
		buf := append(v.tail, p...)
		i := bytes.LastIndexByte(buf, '\n')
		v.tail = append([]byte(nil), buf[i+1:]...)
		if i >= 0 {
			v.write(buf[:i+1])
		}
		return n, nil
	}
	if n > 0 && p[n-1] != '\n' {
		p = append(p[:n:n], '\n')
	}
	v.write(p)
	return n, nil
}

// sameFile reports whether a and b are files of the same device or file (stdout and stderr
// on one terminal).
func sameFile(a, b io.Writer) bool {
	fa, ok1 := a.(*os.File)
	fb, ok2 := b.(*os.File)
	if !ok1 || !ok2 {
		return false
	}
	if fa == fb {
		return true
	}
	sa, err1 := fa.Stat()
	sb, err2 := fb.Stat()
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// StopView replaces the view this process draws, if any, by its summary line, as the end of
// the stage would: main calls it before it exits on a second interrupt, when the stage may
// still be blocked (on a full pipe) and would leave the last frame on the terminal, with the
// cursor parked at its top for the shell to write over. It never waits: when a write to the
// terminal is in flight (a paused terminal) it leaves the frame, and it gives up on a write of
// its own that has not finished within wait, so the exit is not held up.
func StopView(wait time.Duration) {
	console.mu.Lock()
	v := console.view
	console.mu.Unlock()
	if v == nil || !v.wmu.TryLock() {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer v.wmu.Unlock()
		v.stopLocked()
	}()
	select {
	case <-done:
	case <-time.After(wait):
	}
}

// setConsoleView makes writes through Console go above v (nil: straight to the terminal).
func setConsoleView(v *view) {
	console.mu.Lock()
	console.view = v
	console.mu.Unlock()
}
