package backfill

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
	"golang.org/x/term"
)

// progressBar reports a backfill's progress on stderr: on a terminal a bar (rows read of the
// total when the source's statistics give it, else a running count) redrawn every 200 ms;
// with --progress json one JSON object per second; otherwise nothing.
type progressBar struct {
	w       io.Writer
	mode    string
	total   int64
	read    atomic.Int64
	written atomic.Int64
	skipped atomic.Int64
	phase   atomic.Value
	start   time.Time
	done    chan struct{}
	wg      sync.WaitGroup
	bar     lipgloss.Style
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func startProgress(w io.Writer, mode string, total int64) *progressBar {
	if mode == "" || mode == "auto" {
		mode = "off"
		if isTerminal(w) {
			mode = "bar"
		}
	}
	p := &progressBar{w: w, mode: mode, total: total, start: time.Now(), done: make(chan struct{})}
	p.phase.Store("reading")
	if os.Getenv("NO_COLOR") == "" {
		p.bar = lipgloss.NewStyle().Foreground(lipgloss.Color("6"))
	}
	if mode == "off" {
		return p
	}
	every := 200 * time.Millisecond
	if mode == "json" {
		every = time.Second
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				p.draw(false)
			}
		}
	}()
	return p
}

func (p *progressBar) setPhase(s string) { p.phase.Store(s) }

func (p *progressBar) draw(final bool) {
	read, written, skipped := p.read.Load(), p.written.Load(), p.skipped.Load()
	el := time.Since(p.start)
	rate := float64(read) / max(el.Seconds(), 1e-9)
	switch p.mode {
	case "json":
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
		line := fmt.Sprintf("\r%sbackfill %s: %s rows read, %s written, %s duplicates, %s rows/s  ", bar, p.phase.Load(),
			human(read), human(written), human(skipped), human(int64(rate)))
		if final {
			line += "\n"
		}
		fmt.Fprint(p.w, line)
	}
}

func (p *progressBar) stop() {
	if p.mode == "off" {
		return
	}
	close(p.done)
	p.wg.Wait()
	p.draw(true)
}

func human(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fG", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
