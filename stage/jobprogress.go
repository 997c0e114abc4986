package stage

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/lipgloss"
)

// JobProgress reports the progress of a bounded job that reads rows, writes some and skips
// duplicates (backfill), on stderr: on a terminal a bar (rows read of the total when known,
// else a running count) redrawn every 200 ms; with --progress json one JSON object per second
// ({"phase", "rows_read", "rows_written", "duplicates_skipped", "total_rows", "rows_per_s",
// "elapsed_s", "final"}); otherwise nothing. The counters may be added to from any goroutine.
type JobProgress struct {
	Read, Written, Skipped atomic.Int64

	w     io.Writer
	name  string
	mode  string // bar, json or off
	total int64
	phase atomic.Value
	start time.Time
	bar   lipgloss.Style
	tick  *ticker
}

// StartJobProgress starts reporting the job name (the first word of the bar) on w. mode is
// --progress: auto or "" (a bar when w is a terminal, else nothing), json or off. total is the
// number of rows the job will read, ≤ 0 when unknown. The phase starts as "reading".
func StartJobProgress(w io.Writer, mode, name string, total int64) *JobProgress {
	if mode == "" || mode == ProgressAuto {
		mode = ProgressOff
		if isTerminal(w) {
			mode = "bar"
		}
	}
	p := &JobProgress{w: w, name: name, mode: mode, total: total, start: time.Now()}
	p.phase.Store("reading")
	if os.Getenv("NO_COLOR") == "" {
		p.bar = ColorRenderer(w).NewStyle().Foreground(lipgloss.Color("6"))
	}
	if mode == ProgressOff {
		return p
	}
	every := 200 * time.Millisecond
	if mode == ProgressJSON {
		every = time.Second
	}
	p.tick = startTicker(every, p.draw)
	return p
}

// SetPhase names what the job does now ("loading target keys", "committing").
func (p *JobProgress) SetPhase(s string) { p.phase.Store(s) }

// Stop ends the reports with a final one (a no-op when off, or when stopped before).
func (p *JobProgress) Stop() {
	if p.tick != nil {
		p.tick.stop()
		p.tick = nil
	}
}

func (p *JobProgress) draw(final bool) {
	read, written, skipped := p.Read.Load(), p.Written.Load(), p.Skipped.Load()
	el := time.Since(p.start)
	rate := float64(read) / max(el.Seconds(), 1e-9)
	switch p.mode {
	case ProgressJSON:
		b, _ := json.Marshal(map[string]any{"phase": p.phase.Load(), "rows_read": read, "rows_written": written,
			"duplicates_skipped": skipped, "total_rows": p.total, "rows_per_s": int64(rate), "elapsed_s": el.Seconds(), "final": final})
		fmt.Fprintf(p.w, "%s\n", b)
	case "bar":
		const width = 30
		var bar string
		if p.total > 0 {
			frac := min(float64(read)/float64(p.total), 1)
			n := int(frac * width)
			bar = fmt.Sprintf("[%s%s] %3.0f%% ", p.bar.Render(strings.Repeat("█", n)), strings.Repeat("░", width-n), 100*frac)
		}
		h := func(n int64) string { return humanUnit(float64(n), "k") }
		line := fmt.Sprintf("\r%s%s %s: %s rows read, %s written, %s duplicates, %s rows/s  ", bar, p.name, p.phase.Load(),
			h(read), h(written), h(skipped), h(int64(rate)))
		if final {
			line += "\n"
		}
		fmt.Fprint(p.w, line)
	}
}

// ticker calls draw(false) every interval on its own goroutine until stop, which then calls
// draw(true) once: the report loop of every progress reporter.
type ticker struct {
	done chan struct{}
	wg   sync.WaitGroup
	draw func(final bool)
}

func startTicker(every time.Duration, draw func(final bool)) *ticker {
	t := &ticker{done: make(chan struct{}), draw: draw}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-t.done:
				return
			case <-tk.C:
				draw(false)
			}
		}
	}()
	return t
}

// stop ends the loop and draws the final report.
func (t *ticker) stop() {
	close(t.done)
	t.wg.Wait()
	t.draw(true)
}
