package window

import (
	"errors"
	"fmt"
	"time"

	"github.com/streamkit/streamkit/codec"
)

// Window is the half-open event-time interval [Start, End), in µs since the epoch (UTC).
type Window struct {
	Start, End int64 // µs since the epoch, UTC; Start < End
}

// String renders w as "[start, end)" in RFC 3339 UTC.
func (w Window) String() string {
	return "[" + TimeOf(w.Start).Format(time.RFC3339Nano) + ", " + TimeOf(w.End).Format(time.RFC3339Nano) + ")"
}

// Kind is the kind of a window assigner.
type Kind uint8

const (
	// Tumbling windows: fixed size, no overlap (Flink TumblingEventTimeWindows).
	Tumbling Kind = iota + 1
	// Sliding windows: fixed size, a new window every slide (Flink SlidingEventTimeWindows).
	Sliding
	// Session windows: per key, closed after a gap of inactivity (Flink EventTimeSessionWindows).
	Session
	// Count windows: every slide records per key, over the last size records (Flink countWindow).
	Count
	// Global windows: one window per key, fired only at the final end of input or by early
	// firings (Flink GlobalWindows).
	Global
)

// String returns the command-line name of k.
func (k Kind) String() string {
	switch k {
	case Tumbling:
		return "tumbling"
	case Sliding:
		return "sliding"
	case Session:
		return "session"
	case Count:
		return "count"
	case Global:
		return "global"
	}
	return "unknown"
}

// Assigner assigns records to windows. Build one with NewTumbling, NewSliding, NewSession,
// NewCount or NewGlobal. Time-based windows align to the Unix epoch in UTC, shifted by an
// offset; with a location they align to its wall clock instead (DESIGN.md §4): a boundary is
// the first instant at which the local clock reads offset + k·size (k·slide for sliding). So
// day windows start at local midnight and last 23 or 25 hours across DST changes
// (America/Los_Angeles, 2021-03-14 is 23 h), and hour windows in Asia/Kolkata start at :30 UTC.
// Results never depend on the machine's time zone. An Assigner caches zone lookups and is not
// safe for concurrent use.
type Assigner struct {
	kind                Kind
	size, slide, offset int64 // µs; offset normalised to [0, slide)
	gap                 int64 // µs, sessions
	countSize, countStp int64 // records, count windows
	loc                 *time.Location
	zone                *zone // nil: UTC arithmetic

	// calendar cache: the last pane [lo, hi) in which the assigned windows do not change.
	cacheLo, cacheHi int64
	cacheWins        []Window
}

// Errors returned by the assigner constructors.
var (
	// ErrWindowSpec reports an invalid window size, slide, offset, gap or count.
	ErrWindowSpec = errors.New("invalid window spec")
)

func specErr(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrWindowSpec}, a...)...)
}

// NewTumbling returns tumbling windows of the given size (> 0, whole microseconds). offset
// shifts the alignment (Flink's TumblingEventTimeWindows.of(size, offset)); it is taken modulo
// size, so a negative offset works too. loc, when not nil or UTC, aligns windows to that
// zone's wall clock (see Assigner). Errors wrap ErrWindowSpec.
func NewTumbling(size, offset time.Duration, loc *time.Location) (*Assigner, error) {
	if size < time.Microsecond {
		return nil, specErr("tumbling size %v must be at least 1µs", size)
	}
	s := durUS(size)
	return &Assigner{kind: Tumbling, size: s, slide: s, offset: codec.FloorMod(durUS(offset), s), loc: loc, zone: newZone(loc)}, nil
}

// NewSliding returns sliding (hopping) windows of the given size, a new one every slide
// (0 < slide ≤ size; Flink also allows slide > size, which would silently drop records between
// windows, so it is refused here). offset is taken modulo slide. loc as for NewTumbling.
// Each record belongs to ⌈size/slide⌉ windows (fewer near DST changes with loc).
// Errors wrap ErrWindowSpec.
func NewSliding(size, slide, offset time.Duration, loc *time.Location) (*Assigner, error) {
	if size < time.Microsecond || slide < time.Microsecond {
		return nil, specErr("sliding size %v and slide %v must be at least 1µs", size, slide)
	}
	if slide > size {
		return nil, specErr("sliding slide %v is larger than size %v: records between windows would be lost", slide, size)
	}
	sl := durUS(slide)
	return &Assigner{kind: Sliding, size: durUS(size), slide: sl, offset: codec.FloorMod(durUS(offset), sl), loc: loc, zone: newZone(loc)}, nil
}

// NewSession returns session windows with the given inactivity gap (> 0): a record at t opens
// [t, t+gap) and sessions of one key that overlap or touch are merged (Flink
// EventTimeSessionWindows.withGap and TimeWindow.intersects). In processing time a session
// window is a heartbeat monitor: it fires once a key has been silent for gap.
func NewSession(gap time.Duration) (*Assigner, error) {
	if gap < time.Microsecond {
		return nil, specErr("session gap %v must be at least 1µs", gap)
	}
	return &Assigner{kind: Session, gap: durUS(gap)}, nil
}

// NewCount returns count windows (Flink countWindow(size, slide)): per key, every slide
// records (1 ≤ slide ≤ size) emit the aggregate of the last size records (fewer at the start
// of a key). slide = size gives tumbling count windows. Window bounds in the output are the
// smallest and largest event time in the window (end = largest + 1µs).
func NewCount(size, slide int64) (*Assigner, error) {
	if size < 1 || slide < 1 || slide > size {
		return nil, specErr("count size %d and slide %d: want 1 ≤ slide ≤ size", size, slide)
	}
	return &Assigner{kind: Count, countSize: size, countStp: slide}, nil
}

// NewGlobal returns the global window: one window per key that fires only at the final end of
// input and on early firings (--emit update). Output bounds are the smallest and largest event
// time seen (end = largest + 1µs).
func NewGlobal() *Assigner { return &Assigner{kind: Global} }

// NewGlobalEvery returns the global window with a count trigger: besides the final firing,
// each key's window fires (emit = early, cumulative, nothing evicted) every n records of that
// key (Flink GlobalWindows with CountTrigger.of(n) as a FIRE trigger). Errors: n < 1.
func NewGlobalEvery(n int64) (*Assigner, error) {
	if n < 1 {
		return nil, specErr("global trigger every:%d: want n ≥ 1", n)
	}
	return &Assigner{kind: Global, countStp: n}, nil
}

// Kind returns the kind of windows a assigns.
func (a *Assigner) Kind() Kind { return a.kind }

// Merging reports whether windows of a merge (sessions).
func (a *Assigner) Merging() bool { return a.kind == Session }

// TimeBased reports whether a assigns by event time (tumbling, sliding, session), so that
// watermarks fire its windows.
func (a *Assigner) TimeBased() bool { return a.kind <= Session }

// String describes a in a stable form, suitable for checkpoint metadata, e.g.
// "sliding size=10m0s slide=1m0s offset=0s tz=Europe/Paris".
func (a *Assigner) String() string {
	d := func(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
	tz := "UTC"
	if a.zone != nil {
		tz = a.loc.String()
	}
	switch a.kind {
	case Tumbling:
		return fmt.Sprintf("tumbling size=%v offset=%v tz=%s", d(a.size), d(a.offset), tz)
	case Sliding:
		return fmt.Sprintf("sliding size=%v slide=%v offset=%v tz=%s", d(a.size), d(a.slide), d(a.offset), tz)
	case Session:
		return fmt.Sprintf("session gap=%v", d(a.gap))
	case Count:
		return fmt.Sprintf("count size=%d slide=%d", a.countSize, a.countStp)
	case Global:
		if a.countStp > 0 {
			return fmt.Sprintf("global every=%d", a.countStp)
		}
		return "global"
	}
	return "unknown"
}

// Assign appends to dst the windows that contain event time ts (µs) in ascending order of
// start and returns the extended slice. Tumbling gives one window, sliding up to ⌈size/slide⌉,
// session the proto-session [ts, ts+gap) (merging is the caller's business). Count and global
// windows are not assigned by time; Assign returns dst unchanged for them.
func (a *Assigner) Assign(ts int64, dst []Window) []Window {
	switch a.kind {
	case Tumbling:
		if a.zone == nil {
			s := ts - codec.FloorMod(ts-a.offset, a.size)
			return append(dst, Window{s, s + a.size})
		}
	case Sliding:
		if a.zone == nil {
			last := ts - codec.FloorMod(ts-a.offset, a.slide)
			first := last
			for first-a.slide+a.size > ts {
				first -= a.slide
			}
			for s := first; s <= last; s += a.slide {
				dst = append(dst, Window{s, s + a.size})
			}
			return dst
		}
	case Session:
		return append(dst, Window{ts, ts + a.gap})
	default:
		return dst
	}
	if ts >= a.cacheLo && ts < a.cacheHi {
		return append(dst, a.cacheWins...)
	}
	return a.assignCalendar(ts, dst)
}

// assignCalendar assigns tumbling or sliding windows aligned to the wall clock of a.zone.
func (a *Assigner) assignCalendar(ts int64, dst []Window) []Window {
	z := a.zone
	zs, ze, off := z.period(ts)
	w := ts + off
	n0 := len(dst)
	// Fast path: every boundary involved lies well inside the period of ts, so the wall clock
	// is a fixed shift of UTC there.
	last := w - codec.FloorMod(w-a.offset, a.slide)
	first := last
	for first-a.slide+a.size > w {
		first -= a.slide
	}
	if safe(first, zs, ze, off) && safe(last+a.size, zs, ze, off) { // all boundaries lie between
		for s := first; s <= last; s += a.slide {
			dst = append(dst, Window{s - off, s + a.size - off})
		}
		lo := last - off
		if prevEnd := first - a.slide + a.size - off; prevEnd > lo {
			lo = prevEnd
		}
		hi := last + a.slide - off
		if e := first + a.size - off; e < hi {
			hi = e
		}
		a.setCache(lo, hi, dst[n0:])
		return dst
	}
	// Slow path around DST transitions: boundaries B(W) = first instant reading ≥ W.
	b := z.firstAtOrAfter
	k := codec.FloorDiv(w-a.offset, a.slide)
	at := func(k int64) int64 { return k*a.slide + a.offset }
	for i := 0; i < 1<<16 && b(at(k+1)) <= ts; i++ {
		k++ // after a fall-back the clock reads less than at the window start
	}
	kmin := k
	for b(at(kmin-1)+a.size) > ts {
		kmin--
	}
	for j := kmin; j <= k; j++ {
		s, e := b(at(j)), b(at(j)+a.size)
		if s <= ts && ts < e {
			dst = append(dst, Window{s, e})
		}
	}
	lo := b(at(k))
	if pe := b(at(kmin-1) + a.size); pe > lo {
		lo = pe
	}
	hi := b(at(k + 1))
	if e := b(at(kmin) + a.size); e < hi {
		hi = e
	}
	a.setCache(lo, hi, dst[n0:])
	return dst
}

func (a *Assigner) setCache(lo, hi int64, wins []Window) {
	a.cacheLo, a.cacheHi = lo, hi
	a.cacheWins = append(a.cacheWins[:0], wins...)
}
