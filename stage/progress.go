package stage

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/streamkit/streamkit/codec"
)

// Progress modes of --progress.
const (
	// ProgressAuto: on a terminal, the last stage of a pipeline draws one live view of every
	// stage and the others send it their counters in-band (view.go); nothing otherwise.
	ProgressAuto = "auto"
	ProgressJSON = "json" // one JSON object per line on stderr every interval and at the end
	ProgressOff  = "off"
)

// EnvProgress names the environment variable that sets the default of --progress (auto, json
// or off; tools/cli): `streamkit run --parallel` sets it to json for its members, whose
// progress lines it merges (stage/parallel). A --progress on the command line wins.
const EnvProgress = "STREAMKIT_PROGRESS"

// viewFrame is how often a drawer draws its view; the counters behind it change every
// --progress interval (default 1 s), but a line another stage wrote over the view is soon
// followed by the view again.
const viewFrame = 250 * time.Millisecond

// progress reports Stats on stderr until stop is called: JSON lines, the view of a drawer,
// or stats controls in-band (progressRole).
type progress struct {
	role     progressRole
	name     string
	w        io.Writer
	stats    *Stats
	interval time.Duration
	tick     *ticker
	start    time.Time
	lastIn   int64
	lastT    time.Time
	now      func() time.Time

	out   *writer // roleUpstream: the output stream the stats controls go into
	view  *view   // roleDrawer
	lastS time.Time
}

// isTerminal reports whether f (stdin, stdout or stderr) is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// startProgress starts the progress reports of stage o, whose counters are stats; out is its
// output stream, nil for a sink.
func startProgress(o *Options, stats *Stats, out *writer) *progress {
	role := progressRoleOf(o.Progress, o.Stderr, o.Stdout, out != nil, o.shard().IsShard())
	p := &progress{role: role, name: o.StageName(), w: o.Stderr, stats: stats, interval: o.ProgressInterval,
		start: time.Now(), lastT: time.Now(), now: time.Now}
	switch role {
	case roleOff:
		return p
	case roleJSON:
		p.tick = startTicker(p.interval, p.report)
	case roleUpstream:
		p.out = out
		out.finalStats = func() codec.Control { return statsControl(wireOf(p.name, stats, p.now(), true)) }
		p.tick = startTicker(p.interval, p.report)
	case roleDrawer:
		p.view = newView(o.Stderr, p.now)
		p.view.self(wireOf(p.name, stats, p.now(), false))
		p.lastS = p.now()
		setConsoleView(p.view)
		p.tick = startTicker(min(viewFrame, p.interval), p.report)
	}
	return p
}

// take handles a stats control from upstream; it returns true when the stage consumed it
// (it draws the view, or is a sink), false when the stage must forward it.
func (p *progress) take(c codec.Control, sink bool) bool {
	if p.view != nil {
		p.view.take(c)
		return true
	}
	return sink
}

func (p *progress) stop() {
	if p.role == roleOff {
		return
	}
	p.tick.stop()
	if p.view != nil {
		setConsoleView(nil)
	}
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

	qualityText string // DataQuality's status-line text, for the view (wireStats.Quality)
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
	switch p.role {
	case roleJSON:
		b, _ := json.Marshal(p.snapshot(final))
		fmt.Fprintf(p.w, "%s\n", b)
	case roleUpstream:
		if !final { // the final report goes with the end control (writer.finalStats)
			p.out.sendStats(statsControl(wireOf(p.name, p.stats, p.now(), false)))
		}
	case roleDrawer:
		if now := p.now(); final || now.Sub(p.lastS) >= p.interval {
			p.lastS = now
			p.view.self(wireOf(p.name, p.stats, now, final))
		}
		if final {
			p.view.stop()
			return
		}
		p.view.redraw()
	}
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

// Human formats n with a K/M/G suffix, as the live view writes counts and rates (1.23M,
// 45.6K); for views of other tools (run --parallel).
func Human(n float64) string { return human(n) }
