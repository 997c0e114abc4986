package stage

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"golang.org/x/term"

	"github.com/streamkit/streamkit/codec"
)

// Progress modes of --progress.
const (
	ProgressAuto = "auto" // a status line when stderr is a terminal, nothing otherwise
	ProgressJSON = "json" // one JSON object per line on stderr every interval and at the end
	ProgressOff  = "off"
)

// progress reports Stats on stderr until stop is called.
type progress struct {
	mode     string
	name     string
	w        io.Writer
	stats    *Stats
	interval time.Duration
	tick     *ticker
	start    time.Time
	lastIn   int64
	lastT    time.Time
	styles   lipgloss.Style
	label    lipgloss.Style
}

// isTerminal reports whether f (stdin, stdout or stderr) is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func startProgress(mode, name string, w io.Writer, stats *Stats, interval time.Duration) *progress {
	if mode == ProgressAuto {
		if !isTerminal(w) {
			mode = ProgressOff
		}
	}
	p := &progress{mode: mode, name: name, w: w, stats: stats, interval: interval,
		start: time.Now(), lastT: time.Now()}
	if mode == ProgressOff {
		return p
	}
	color := os.Getenv("NO_COLOR") == ""
	p.styles = lipgloss.NewStyle()
	p.label = lipgloss.NewStyle()
	if color {
		p.label = p.label.Bold(true).Foreground(lipgloss.Color("6"))
		p.styles = p.styles.Foreground(lipgloss.Color("8"))
	}
	p.tick = startTicker(interval, p.report)
	return p
}

func (p *progress) stop() {
	if p.mode == ProgressOff {
		return
	}
	p.tick.stop()
}

// Snapshot is one progress report; --progress=json prints it as a JSON line.
type Snapshot struct {
	Time       time.Time `json:"time"`
	Stage      string    `json:"stage"`
	RecordsIn  int64     `json:"records_in"`
	RecordsOut int64     `json:"records_out"`
	RateIn     float64   `json:"rate_in"` // records/s since the previous report
	Epoch      uint64    `json:"epoch"`
	Committed  uint64    `json:"committed"`
	Watermark  string    `json:"watermark,omitempty"`
	Lag        *int64    `json:"lag,omitempty"`
	StateKeys  *int64    `json:"state_keys,omitempty"`
	Partitions *int64    `json:"partitions,omitempty"` // held by a consumer-group member
	BadRecords int64     `json:"bad_records"`
	// FilesPruned: data files the source skipped by their statistics (Stats.FilesPruned).
	FilesPruned *int64 `json:"files_pruned,omitempty"`
	// DataQuality is a stage's expectation counters (Stats.SetDataQuality), absent otherwise.
	DataQuality any  `json:"data_quality,omitempty"`
	Final       bool `json:"final,omitempty"`

	qualityText string // DataQuality's status-line text
}

func (p *progress) snapshot(final bool) Snapshot {
	now := time.Now()
	in := p.stats.RecordsIn.Load()
	dt := now.Sub(p.lastT).Seconds()
	rate := 0.0
	if final {
		dt = now.Sub(p.start).Seconds()
		if dt > 0 {
			rate = float64(in) / dt
		}
	} else if dt > 0 {
		rate = float64(in-p.lastIn) / dt
	}
	p.lastIn, p.lastT = in, now
	s := Snapshot{Time: now.UTC(), Stage: p.name, RecordsIn: in, RecordsOut: p.stats.RecordsOut.Load(), RateIn: rate,
		Epoch: p.stats.Epoch.Load(), Committed: p.stats.Committed.Load(), BadRecords: p.stats.BadRecords.Load(), Final: final}
	if wm, ok := p.stats.Watermark(); ok {
		s.Watermark = codec.FormatWatermark(wm)
	}
	if v := p.stats.Lag.Load(); v >= 0 {
		s.Lag = &v
	}
	if v := p.stats.StateKeys.Load(); v >= 0 {
		s.StateKeys = &v
	}
	if q := p.stats.dataQuality(); q != nil {
		s.DataQuality = q.ProgressJSON()
		s.qualityText = q.ProgressText()
	}
	if v := p.stats.Partitions.Load(); v >= 0 {
		s.Partitions = &v
	}
	if v := p.stats.FilesPruned.Load(); v >= 0 {
		s.FilesPruned = &v
	}
	return s
}

func (p *progress) report(final bool) {
	s := p.snapshot(final)
	if p.mode == ProgressJSON {
		b, _ := json.Marshal(s)
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	parts := []string{
		p.label.Render(s.Stage),
		fmt.Sprintf("in %s (%s/s)", human(float64(s.RecordsIn)), human(s.RateIn)),
		fmt.Sprintf("out %s", human(float64(s.RecordsOut))),
		fmt.Sprintf("epoch %d", s.Epoch),
	}
	if s.Watermark != "" {
		parts = append(parts, "wm "+s.Watermark)
	}
	if s.Partitions != nil {
		parts = append(parts, fmt.Sprintf("partitions %d", *s.Partitions))
	}
	if s.Lag != nil {
		parts = append(parts, "lag "+human(float64(*s.Lag)))
	}
	if s.StateKeys != nil {
		parts = append(parts, "keys "+human(float64(*s.StateKeys)))
	}
	if s.BadRecords > 0 {
		parts = append(parts, fmt.Sprintf("bad %d", s.BadRecords))
	}
	if s.qualityText != "" {
		parts = append(parts, s.qualityText)
	}
	line := strings.Join(parts, p.styles.Render(" │ "))
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s%s", line, end)
}

// human formats n with a K/M/G suffix.
func human(n float64) string { return humanUnit(n, "K") }

// humanUnit formats n with a kilo/M/G suffix, kilo being how thousands are written ("K", "k").
func humanUnit(n float64, kilo string) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fG", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", n/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.1f%s", n/1e3, kilo)
	}
	return fmt.Sprintf("%.0f", n)
}
