package window

import (
	"time"
)

// WatermarkOptions configure a Watermarks tracker (DESIGN.md §4).
type WatermarkOptions struct {
	// Generate derives the watermark from event times (bounded out-of-orderness, Flink's
	// WatermarkStrategy.forBoundedOutOfOrderness): max event time seen − Delay. When false only
	// upstream watermarks (control batches) move the watermark.
	Generate bool
	// Delay is the out-of-orderness bound (--watermark-delay); 0 means events arrive in order.
	Delay time.Duration
	// IdleTimeout marks a partition idle after it has been silent this long (processing time,
	// --idle-timeout), so it no longer holds the watermark back (Flink withIdleness). 0: never.
	IdleTimeout time.Duration
}

// Watermarks tracks the watermark of one stage: per partition (source partition or input),
// max event time − delay; the minimum over active partitions (when every partition is idle,
// the maximum, as Flink's StatusWatermarkValve does); merged with upstream watermark control
// messages by taking the later of both. The watermark never moves backwards. Times are µs since
// the epoch; MinTime means "no watermark yet". The clock is injected: methods that depend on
// processing time take now. Not safe for concurrent use.
type Watermarks struct {
	opt      WatermarkOptions
	delay    int64
	parts    []wmPart
	upstream int64
	cur      int64
}

type wmPart struct {
	known bool
	max   int64 // max event time, MinTime before any
	last  time.Time
	idle  bool
}

// NewWatermarks returns a tracker with no partitions and no watermark.
func NewWatermarks(opt WatermarkOptions) *Watermarks {
	return &Watermarks{opt: opt, delay: durUS(opt.Delay), upstream: MinTime, cur: MinTime}
}

// Current returns the watermark (µs), MinTime before there is one.
func (w *Watermarks) Current() int64 { return w.cur }

func (w *Watermarks) part(p int) *wmPart {
	if p >= len(w.parts) {
		w.parts = append(w.parts, make([]wmPart, p+1-len(w.parts))...)
	}
	pp := &w.parts[p]
	if !pp.known {
		*pp = wmPart{known: true, max: MinTime}
	}
	return pp
}

// Register declares partition p (≥ 0) at processing time now. A registered partition without
// data holds the watermark back until it produces a record or goes idle. Registering never
// moves the watermark (a partition more can only lower the minimum): after a Restore, the
// partitions registered one by one must not advance it on the way.
func (w *Watermarks) Register(p int, now time.Time) {
	w.part(p).last = now
}

// Active records that partition p delivered input at processing time now (call once per
// batch); an idle partition becomes active again.
func (w *Watermarks) Active(p int, now time.Time) {
	pp := w.part(p)
	pp.last = now
	if pp.idle {
		pp.idle = false
		w.recompute()
	}
}

// Observe records one event time ts (µs) of partition p and advances the watermark if it
// can. It is O(1) with one partition and O(partitions) otherwise, when ts is a new maximum.
func (w *Watermarks) Observe(p int, ts int64) {
	if !w.opt.Generate {
		return
	}
	var pp *wmPart
	if p < len(w.parts) && w.parts[p].known {
		pp = &w.parts[p]
	} else {
		pp = w.part(p)
	}
	if ts <= pp.max && !pp.idle {
		return
	}
	if ts > pp.max {
		pp.max = ts
	}
	pp.idle = false
	if len(w.parts) == 1 {
		w.advance(sub(ts, w.delay))
		return
	}
	w.recompute()
}

// Upstream merges a watermark received from upstream (a control batch): the watermark becomes
// the later of both. Earlier upstream watermarks are ignored.
func (w *Watermarks) Upstream(wm int64) {
	if wm > w.upstream {
		w.upstream = wm
	}
	w.advance(wm)
}

// Tick re-evaluates idleness at processing time now: a partition silent for IdleTimeout or
// longer stops holding the watermark back.
func (w *Watermarks) Tick(now time.Time) {
	if w.opt.IdleTimeout <= 0 {
		return
	}
	changed := false
	for i := range w.parts {
		p := &w.parts[i]
		if p.known && !p.idle && now.Sub(p.last) >= w.opt.IdleTimeout {
			p.idle, changed = true, true
		}
	}
	if changed {
		w.recompute()
	}
}

// Idle reports whether partition p is currently idle.
func (w *Watermarks) Idle(p int) bool { return p < len(w.parts) && w.parts[p].idle }

func (w *Watermarks) recompute() {
	if !w.opt.Generate {
		return
	}
	minActive, maxAll, any, active := MaxTime, MinTime, false, false
	for _, p := range w.parts {
		if !p.known {
			continue
		}
		v := sub(p.max, w.delay)
		any = true
		maxAll = max(maxAll, v)
		if !p.idle {
			active = true
			minActive = min(minActive, v)
		}
	}
	switch {
	case active:
		w.advance(minActive)
	case any:
		w.advance(maxAll)
	}
}

func (w *Watermarks) advance(v int64) {
	if v > w.cur {
		w.cur = v
	}
}

// sub returns a − b, saturating at MinTime.
func sub(a, b int64) int64 {
	if a == MinTime || a-b > a {
		return MinTime
	}
	return a - b
}

// addSat returns a + b (b ≥ 0), saturating at MaxTime.
func addSat(a, b int64) int64 {
	if a > MaxTime-b {
		return MaxTime
	}
	return a + b
}

// WatermarkState is the checkpointed part of a Watermarks tracker (JSON-friendly).
type WatermarkState struct {
	Current  int64   `json:"current"`       // the watermark, µs (MinTime: none)
	Upstream int64   `json:"upstream"`      // the latest upstream watermark, µs
	Max      []int64 `json:"max,omitempty"` // per partition, MinTime for unknown ones
}

// State returns the tracker's checkpoint state.
func (w *Watermarks) State() WatermarkState {
	st := WatermarkState{Current: w.cur, Upstream: w.upstream}
	for _, p := range w.parts {
		if p.known {
			st.Max = append(st.Max, p.max)
		} else {
			st.Max = append(st.Max, MinTime)
		}
	}
	return st
}

// Restore replaces the tracker's state with st; restored partitions count as active since now.
func (w *Watermarks) Restore(st WatermarkState, now time.Time) {
	w.cur, w.upstream = st.Current, st.Upstream
	w.parts = w.parts[:0]
	for i, m := range st.Max {
		if m != MinTime {
			p := w.part(i)
			p.max, p.last = m, now
		}
	}
}
