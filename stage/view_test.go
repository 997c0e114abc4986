package stage

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/streamkit/streamkit/codec"
)

// controls reads the stream in and returns its controls, in order.
func controls(t *testing.T, in []byte) []codec.Control {
	t.Helper()
	rd, err := codec.NewReader(bytes.NewReader(in), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	var out []codec.Control
	for {
		m, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Batch != nil {
			m.Batch.Release()
			continue
		}
		out = append(out, *m.Control)
	}
}

// TestStatsForwarded: a stage that does not draw the view forwards a stats control with one
// hop more and its payload unchanged, in stream order; the end comes last.
func TestStatsForwarded(t *testing.T) {
	var in bytes.Buffer
	w := codec.NewWriter(&in, intSchema, memory.DefaultAllocator)
	st := codec.StatsControl(`{"stage":"generate","pid":1,"t":1,"in":5,"out":5}`)
	st.Hops = 2
	for _, c := range []codec.Control{st, codec.BarrierControl(1), codec.EndControl(codec.Final)} {
		if err := w.WriteControl(c); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	var out bytes.Buffer
	o := Options{Tool: "pass", Stdin: &in, Stdout: &out, Stderr: io.Discard, Progress: ProgressAuto, NoSignals: true, Shard: &ShardEnv{}}
	if err := RunOperator(context.Background(), o, &passOp{}); err != nil {
		t.Fatal(err)
	}
	got := controls(t, out.Bytes())
	if len(got) != 3 || got[0].Kind != codec.Stats || got[0].Hops != 3 || got[0].Stats != st.Stats ||
		got[1].Kind != codec.Barrier || got[2].Kind != codec.End {
		t.Fatalf("controls out: %v; want the stats (hops 3, same payload), the barrier, the end", got)
	}
}

// TestFinalStatsBeforeEnd: the writer of an upstream stage sends its last stats right before
// the end control, and nothing after it (a report the ticker queues late is dropped).
func TestFinalStatsBeforeEnd(t *testing.T) {
	var out bytes.Buffer
	w := startWriter(&out, intSchema, memory.DefaultAllocator, false)
	st := newStats()
	st.RecordsIn.Add(7)
	st.RecordsOut.Add(7)
	w.finalStats = func() codec.Control { return statsControl(wireOf("gen", st, time.UnixMicro(9), true)) }
	ctx := context.Background()
	end := codec.EndControl(codec.Final)
	if err := w.send(ctx, outItem{ctrl: &end}); err != nil {
		t.Fatal(err)
	}
	w.sendStats(statsControl(wireOf("gen", st, time.UnixMicro(10), false)))
	if err := w.close(nil); err != nil {
		t.Fatal(err)
	}
	w.sendStats(statsControl(wireOf("gen", st, time.UnixMicro(11), false))) // after close: no panic, nothing
	got := controls(t, out.Bytes())
	if len(got) != 2 || got[0].Kind != codec.Stats || got[1].Kind != codec.End {
		t.Fatalf("controls out: %v; want the final stats, then the end", got)
	}
	var ws wireStats
	if err := json.Unmarshal([]byte(got[0].Stats), &ws); err != nil || !ws.Final || ws.In != 7 || ws.Stage != "gen" || ws.Time != 9 {
		t.Fatalf("final stats %q (%v)", got[0].Stats, err)
	}
}

func statsOf(t *testing.T, w wireStats, hops int) codec.Control {
	t.Helper()
	c := statsControl(w)
	c.Hops = hops
	return c
}

// TestViewFrame: the view shows the stages in pipeline order, the drawer last, with rates
// from two reports, the end of time as "end", state keys and bytes, what was set aside and a
// sparkline; no line is wider than the terminal less one column; the summary names every
// stage's rows out.
func TestViewFrame(t *testing.T) {
	now := time.Date(2024, 3, 10, 12, 0, 10, 0, time.UTC)
	var out bytes.Buffer
	v := newView(&out, func() time.Time { return now })
	v.start = now.Add(-4 * time.Second)
	keys, size := int64(1200), int64(3<<20)
	t0 := now.Add(-2 * time.Second).UnixMicro()
	for i, in := range []int64{1000, 3000, 7000} {
		ts := t0 + int64(i)*1e6
		v.take(statsOf(t, wireStats{Stage: "generate", PID: 1, Time: ts, In: in, Out: in, Epoch: 2, Watermark: codec.FormatWatermark(codec.EndOfTime)}, 2))
		v.take(statsOf(t, wireStats{Stage: "dedup", PID: 2, Time: ts, In: in, Out: in / 10, Keys: &keys, Bytes: &size, Late: 3,
			Watermark: codec.FormatWatermark(now.Add(-90 * time.Second))}, 1))
	}
	v.take(codec.StatsControl("not json")) // ignored
	v.self(wireStats{Stage: "print", Time: t0, In: 100, Out: 100})
	v.self(wireStats{Stage: "print", Time: t0 + 2e6, In: 500, Out: 500})
	for _, width := range []int{80, 60} {
		frame := v.render(now, width, 24)
		lines := strings.Split(frame, "\n")
		if len(lines) != 5 || lines[0] != "" || !strings.HasPrefix(lines[1], "stage") {
			t.Fatalf("width %d: frame\n%s", width, frame)
		}
		for i, name := range []string{"generate", "dedup", "print"} {
			if f := strings.Fields(ansi.Strip(lines[2+i])); len(f) == 0 || f[0] != name {
				t.Errorf("width %d: row %d is %q, want stage %s", width, i, lines[2+i], name)
			}
		}
		for _, l := range lines {
			if w := ansi.StringWidth(l); w > width-1 {
				t.Errorf("width %d: line %q is %d wide", width, l, w)
			}
		}
		if width == 80 {
			for _, want := range []string{"4000", "400", "end", "11:58:40 -2m", "1200 3.0MiB", "late 3", "▅█", "200"} {
				if !strings.Contains(frame, want) {
					t.Errorf("frame lacks %q:\n%s", want, frame)
				}
			}
			if strings.Contains(frame, "9999") {
				t.Errorf("the end of time shows as a date:\n%s", frame)
			}
		}
	}
	if got, want := v.summary(now, 80), "generate 7000 → dedup 700 → print 500 rows, 3 late in 4s"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if got := v.summary(now, 40); ansi.StringWidth(got) > 39 || !strings.HasPrefix(got, "generate 7000→dedup 700→print 500") {
		t.Errorf("summary at 40 columns: %q", got)
	}
}

// TestConsoleAboveView: with a view on screen, a log line erases the frame, is written, and
// the frame follows, in one write; print's rows go in whole lines only; at the end the view
// gives way to its summary and what was held back.
func TestConsoleAboveView(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(100, 0)
	v := newView(&out, func() time.Time { return now })
	v.self(wireStats{Stage: "print", Time: now.UnixMicro()})
	v.redraw()
	frame := v.frame
	if !strings.HasPrefix(out.String(), "\r"+ansi.EraseScreenBelow+frame+"\r"+ansi.CursorUp(2)) {
		t.Fatalf("frame written as %q", out.String())
	}
	out.Reset()
	log := &consoleWriter{w: &out}
	rows := &consoleWriter{w: &out, rows: true}
	write := func(c *consoleWriter, p string) { c.into(v, []byte(p)) }
	write(log, "time=x msg=hello\n")
	if got, want := out.String(), erased3+"time=x msg=hello\n"+frame+"\r"+ansi.CursorUp(2); got != want {
		t.Errorf("log line written as %q, want %q", got, want)
	}
	out.Reset()
	write(rows, "row 1\nrow")
	if got := out.String(); !strings.Contains(got, "row 1\n"+frame) || strings.Contains(got, "row"+frame) {
		t.Errorf("rows written as %q: want the whole line, the partial one held", got)
	}
	out.Reset()
	v.stop()
	if got := out.String(); !strings.HasPrefix(got, erased3+"row\nprint 0 rows in 0s\n") {
		t.Errorf("at the end: %q, want the held row then the summary", got)
	}
	// Without a view, a log line on a terminal starts by erasing whatever view another stage
	// draws below the cursor.
	out.Reset()
	log.Write([]byte("time=y\n"))
	if got := out.String(); got != "\r"+ansi.EraseScreenBelow+"time=y\n" {
		t.Errorf("log line without a view: %q", got)
	}
	out.Reset()
	rows.Write([]byte("a"))
	if got := out.String(); got != "a" {
		t.Errorf("rows without a view: %q, want them as they are", got)
	}
}

// TestProgressRole: JSON and off are what they say; auto without a terminal, or as a shard,
// is off; the drawer/upstream choice on a terminal is covered by TestLiveView (tmux).
func TestProgressRole(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, tt := range []struct {
		mode  string
		shard bool
		want  progressRole
	}{
		{ProgressJSON, false, roleJSON},
		{ProgressOff, false, roleOff},
		{ProgressAuto, false, roleOff}, // stderr is a pipe here
		{ProgressAuto, true, roleOff},
	} {
		if got := progressRoleOf(tt.mode, w, w, true, tt.shard); got != tt.want {
			t.Errorf("%s shard=%v: role %d, want %d", tt.mode, tt.shard, got, tt.want)
		}
	}
	if !isPipe(w) || isPipe(&bytes.Buffer{}) {
		t.Error("isPipe")
	}
}

// TestWatermarkText: a watermark shows as its time of day and lag; the end of time as "end".
func TestWatermarkText(t *testing.T) {
	now := time.Date(2024, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		wm   time.Time
		want string
	}{
		{codec.EndOfTime, "end"},
		{now.Add(-1500 * time.Millisecond), "11:59:58 -1.5s"},
		{now.Add(-3 * time.Hour), "09:00:00 -3h"},
		{now.Add(-30 * 24 * time.Hour), "12:00:00 -30d"},
		{now.Add(2 * time.Second), "12:00:02 +2.0s"},
	} {
		if got := watermarkText(codec.FormatWatermark(tt.wm), now); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.wm, got, tt.want)
		}
	}
}

// blockingWriter is a terminal whose writes never finish (a paused terminal).
type blockingWriter struct{ release chan struct{} }

func (b blockingWriter) Write(p []byte) (int, error) { <-b.release; return len(p), nil }

// TestStopView: on a second interrupt main replaces the view by its summary even though the
// stage never got to stop it, and it never waits on the terminal: not while another write
// holds it, not on a write of its own that blocks.
func TestStopView(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(100, 0)
	v := newView(&out, func() time.Time { return now })
	v.self(wireStats{Stage: "print", Time: now.UnixMicro()})
	v.redraw()
	setConsoleView(v)
	defer setConsoleView(nil)
	out.Reset()
	StopView(time.Second)
	if got, want := out.String(), erased3+"print 0 rows in 0s\n"; got != want || !v.done {
		t.Errorf("after StopView: %q (done %v), want %q", got, v.done, want)
	}
	StopView(time.Second) // stopped already: nothing more
	if got := out.String(); strings.Count(got, "rows in") != 1 {
		t.Errorf("a second StopView wrote again: %q", got)
	}

	busy := newView(&out, func() time.Time { return now })
	setConsoleView(busy)
	busy.wmu.Lock() // a write in flight
	start := time.Now()
	StopView(time.Minute)
	busy.wmu.Unlock()
	if busy.done || time.Since(start) > 5*time.Second {
		t.Errorf("StopView with the terminal busy: done %v after %v; want it to leave at once", busy.done, time.Since(start))
	}

	bw := blockingWriter{release: make(chan struct{})}
	defer close(bw.release)
	paused := newView(bw, func() time.Time { return now })
	setConsoleView(paused)
	start = time.Now()
	StopView(50 * time.Millisecond)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("StopView on a paused terminal took %v", d)
	}
}

// TestPauseForwardsFinalStats: a stage that pauses at the barrier of an interrupt first
// forwards the stats its upstream sent after that barrier (the upstream's last counters), so
// the view's summary does not show an upstream stage's report of a second before.
func TestPauseForwardsFinalStats(t *testing.T) {
	var in bytes.Buffer
	w := codec.NewWriter(&in, intSchema, memory.DefaultAllocator)
	last := codec.StatsControl(`{"stage":"generate","pid":1,"t":2,"in":9,"out":9,"final":true}`)
	end := codec.EndControl(codec.Pause)
	end.Interrupted = true
	for _, c := range []codec.Control{codec.StatsControl(`{"stage":"generate","pid":1,"t":1,"in":5,"out":5}`), codec.BarrierControl(1), last, end} {
		if err := w.WriteControl(c); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	interrupt := make(chan struct{}, 1)
	interrupt <- struct{}{}
	var out bytes.Buffer
	o := Options{Tool: "pass", Stdin: &in, Stdout: &out, Stderr: io.Discard, Progress: ProgressAuto, NoSignals: true, Interrupt: interrupt, Shard: &ShardEnv{}}
	if err := RunOperator(context.Background(), o, &passOp{}); err != ErrInterrupted {
		t.Fatalf("RunOperator: %v, want ErrInterrupted", err)
	}
	got := controls(t, out.Bytes())
	var kinds []string
	for _, c := range got {
		kinds = append(kinds, c.Kind.String())
	}
	if len(got) != 4 || got[2].Kind != codec.Stats || got[2].Stats != last.Stats || got[3].Kind != codec.End {
		t.Fatalf("controls out: %v; want the first stats, the barrier, the upstream's final stats, the end", kinds)
	}
}

// erased3 is what clears a drawn 3-line frame from its top (view.erase): each line, then the
// screen below its last line, then back to the top.
var erased3 = "\r" + ansi.EraseEntireLine + ansi.CursorDown(1) + ansi.EraseEntireLine + ansi.CursorDown(1) +
	ansi.EraseEntireLine + ansi.EraseScreenBelow + ansi.CursorUp(2)

// TestColorProfile: TERM=screen (tmux without a 256-colour terminfo) still gets the 16
// colours the view uses; NO_COLOR and TERM=dumb get none (CI's TestLiveView failure).
func TestColorProfile(t *testing.T) {
	for _, tt := range []struct {
		term, noColor string
		want          termenv.Profile
	}{
		{"screen", "", termenv.ANSI},
		{"xterm-256color", "", termenv.ANSI256},
		{"screen", "1", termenv.Ascii},
		{"dumb", "", termenv.Ascii},
		{"", "", termenv.Ascii},
	} {
		t.Setenv("TERM", tt.term)
		t.Setenv("NO_COLOR", tt.noColor)
		detected := termenv.Ascii
		if tt.term == "xterm-256color" {
			detected = termenv.ANSI256
		}
		if got := ColorProfile(detected); got != tt.want {
			t.Errorf("TERM=%q NO_COLOR=%q: profile %v, want %v", tt.term, tt.noColor, got, tt.want)
		}
	}
}
