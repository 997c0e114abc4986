package window

import (
	"math"
	"time"
)

// Time bounds and units, in microseconds since the Unix epoch (UTC).
const (
	// MinTime is "no time yet": the watermark before any input.
	MinTime int64 = math.MinInt64
	// MaxTime is the end of time: the watermark after a final end of input.
	MaxTime int64 = math.MaxInt64

	usPerSecond int64 = 1_000_000
	usPerHour   int64 = 3600 * usPerSecond
	usPerDay    int64 = 24 * usPerHour
	// zoneMargin bounds how far a UTC offset or a DST shift can move local time (the real
	// range is −12h…+14h); wall-clock arithmetic is only trusted this far from a transition.
	zoneMargin int64 = 26 * usPerHour
)

// Micros converts t to microseconds since the Unix epoch (UTC), truncating toward the past.
func Micros(t time.Time) int64 {
	return t.Unix()*usPerSecond + int64(t.Nanosecond())/1000
}

// TimeOf converts microseconds since the Unix epoch to a time.Time in UTC.
func TimeOf(us int64) time.Time { return time.UnixMicro(us).UTC() }

func durUS(d time.Duration) int64 { return int64(d / time.Microsecond) }

// zone maps between instants and wall-clock ("civil") time of one location. Civil time is
// represented as the microseconds a UTC clock would show for the same reading, so
// civil = instant + offset. Lookups are cached per zone period (the span between two
// transitions), so the common case is two comparisons.
type zone struct {
	loc        *time.Location
	ok         bool
	zs, ze     int64 // cached period [zs, ze) in instants
	off        int64 // its UTC offset in µs
	lastCivil  int64 // cache for civilToInstant
	lastResult int64
	lastOK     bool
}

// newZone returns nil for UTC (and nil), so callers use plain arithmetic.
func newZone(loc *time.Location) *zone {
	if loc == nil || loc == time.UTC || loc.String() == "UTC" {
		return nil
	}
	return &zone{loc: loc}
}

// lookup returns the zone period containing instant t, uncached.
func (z *zone) lookup(t int64) (zs, ze, off int64) {
	tt := time.UnixMicro(t).In(z.loc)
	_, offSec := tt.Zone()
	s, e := tt.ZoneBounds()
	zs, ze = MinTime, MaxTime
	if !s.IsZero() {
		zs = s.UnixMicro()
	}
	if !e.IsZero() {
		ze = e.UnixMicro()
	}
	return zs, ze, int64(offSec) * usPerSecond
}

// period is lookup with a one-entry cache.
func (z *zone) period(t int64) (zs, ze, off int64) {
	if z.ok && t >= z.zs && t < z.ze {
		return z.zs, z.ze, z.off
	}
	z.zs, z.ze, z.off = z.lookup(t)
	z.ok = true
	return z.zs, z.ze, z.off
}

// safe reports whether civil time w maps to w−off without ambiguity, given the period
// [zs, ze) with offset off: the instant lies in the period, far enough from its start that no
// earlier period can show the same or a later reading.
func safe(w, zs, ze, off int64) bool {
	c := w - off
	return c < ze && (zs == MinTime || c-zs >= zoneMargin)
}

// firstAtOrAfter returns the earliest instant at which the wall clock reads ≥ w. It is
// monotone in w: in a spring-forward gap it returns the transition instant; in a fall-back
// overlap it returns the first occurrence. Calendar window boundaries are defined with it.
func (z *zone) firstAtOrAfter(w int64) int64 {
	if zs, ze, off := z.period(w - z.off); safe(w, zs, ze, off) {
		return w - off
	}
	s := w - zoneMargin
	_, ze, off := z.lookup(s)
	for i := 0; i < 16; i++ {
		c := w - off
		if c < s {
			return s // w falls in a gap: the first instant after it
		}
		if c < ze {
			return c
		}
		s = ze
		_, ze, off = z.lookup(s)
	}
	return w - off
}

// civilToInstant converts a zone-less wall-clock reading to an instant like java.time's
// ZonedDateTime.ofLocal: in an overlap the earlier offset wins (first occurrence); in a gap the
// reading is shifted forward by the length of the gap (02:30 on a spring-forward night in
// America/Los_Angeles becomes 03:30 PDT).
func (z *zone) civilToInstant(w int64) int64 {
	if z.lastOK && w == z.lastCivil {
		return z.lastResult
	}
	var r int64
	if zs, ze, off := z.period(w - z.off); safe(w, zs, ze, off) {
		r = w - off
	} else {
		s := w - zoneMargin
		_, ze, off := z.lookup(s)
		prev := off
		r = w - off
		for i := 0; i < 16; i++ {
			c := w - off
			if c < s {
				r = w - prev
				break
			}
			if c < ze {
				r = c
				break
			}
			s, prev = ze, off
			_, ze, off = z.lookup(s)
		}
		z.period(r)
	}
	z.lastCivil, z.lastResult, z.lastOK = w, r, true
	return r
}
