package generate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/duration"
)

// kind is how a leaf column's values are generated before they are stored: int64 (integers,
// decimals as unscaled integers, timestamps and dates in the column's unit), float64, strings
// (string and binary), or booleans.
type kind int

const (
	kInt kind = iota
	kFloat
	kStr
	kBool
)

// domain describes how literals in a spec and generated numbers map onto a leaf's Arrow type.
type domain struct {
	kind kind
	typ  arrow.DataType
	// value parses a literal value (int; decimal → unscaled; time → column unit; date → days).
	value func(string) (int64, error)
	// delta parses a literal step or spread (int; decimal; duration → unit; days).
	delta func(string) (int64, error)
	// num and dnum parse a value / a spread as a float in the same units (normal's mean and
	// stddev).
	num, dnum func(string) (float64, error)
	// plain reports whether a plain number (zipf's rank) is a value of this column; unit scales
	// it (10^scale for decimals).
	plain bool
	unit  float64
	// temporal reports a time column (timestamp, date) or an integer taking epoch milliseconds
	// from timestamp(); fromMicros converts µs since the epoch into the column's values.
	temporal   bool
	fromMicros func(int64) int64
	// lo, hi bound the values of integer columns (the type's range).
	lo, hi int64
	binary bool // kStr: binary rather than UTF-8
}

func intRange(t arrow.DataType) (int64, int64) {
	switch t.ID() {
	case arrow.INT8:
		return math.MinInt8, math.MaxInt8
	case arrow.INT16:
		return math.MinInt16, math.MaxInt16
	case arrow.INT32:
		return math.MinInt32, math.MaxInt32
	case arrow.UINT8:
		return 0, math.MaxUint8
	case arrow.UINT16:
		return 0, math.MaxUint16
	case arrow.UINT32:
		return 0, math.MaxUint32
	case arrow.UINT64:
		return 0, math.MaxInt64
	}
	return math.MinInt64, math.MaxInt64
}

// newDomain returns the domain of a leaf type, or an error naming an unsupported type.
func newDomain(t arrow.DataType) (*domain, error) {
	d := &domain{typ: t, unit: 1, lo: math.MinInt64, hi: math.MaxInt64}
	pf := func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		d.kind, d.plain, d.temporal = kInt, true, true
		d.lo, d.hi = intRange(t)
		d.value = func(s string) (int64, error) {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				f, ferr := strconv.ParseFloat(s, 64)
				if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
					return 0, fmt.Errorf("%q is not an integer", s)
				}
				v = int64(f)
			}
			if v < d.lo || v > d.hi {
				return 0, fmt.Errorf("%s is out of range for %s", s, t)
			}
			return v, nil
		}
		d.delta = d.value
		d.num, d.dnum = pf, pf
		d.fromMicros = func(us int64) int64 { return codec.FloorDiv(us, 1000) } // epoch milliseconds
	case arrow.DECIMAL128:
		dt := t.(*arrow.Decimal128Type)
		// Values are generated as int64 unscaled numbers (at most 18 digits), stored as 128 bits.
		d.kind, d.plain = kInt, true
		d.unit = math.Pow10(int(dt.Scale))
		limit := math.Pow10(int(min(dt.Precision, 18)))
		d.num = func(s string) (float64, error) {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return 0, fmt.Errorf("%q is not a number", s)
			}
			return f * d.unit, nil
		}
		d.dnum = d.num
		d.value = func(s string) (int64, error) {
			f, err := d.num(s)
			if err != nil {
				return 0, err
			}
			if math.Abs(math.Round(f)) >= limit {
				return 0, fmt.Errorf("%s does not fit %s", s, t)
			}
			return int64(math.Round(f)), nil
		}
		d.delta = d.value
		if lim := int64(limit) - 1; lim > 0 {
			d.lo, d.hi = -lim, lim
		}
	case arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64:
		d.kind, d.temporal = kInt, true
		var per int64 // column units per µs (negative: µs per unit)
		switch t.ID() {
		case arrow.TIMESTAMP:
			switch t.(*arrow.TimestampType).Unit {
			case arrow.Second:
				per = -1_000_000
			case arrow.Millisecond:
				per = -1000
			case arrow.Microsecond:
				per = 1
			case arrow.Nanosecond:
				per = 1000
			}
		case arrow.DATE32:
			per = -86_400_000_000
		case arrow.DATE64:
			per = -1000
		}
		conv := func(us int64) int64 {
			if per > 0 {
				return us * per
			}
			return codec.FloorDiv(us, -per)
		}
		if t.ID() == arrow.DATE64 {
			conv = func(us int64) int64 { return codec.FloorDiv(us, 86_400_000_000) * 86_400_000 }
		}
		d.fromMicros = conv
		d.value = func(s string) (int64, error) {
			tm, err := parseTime(s)
			if err != nil {
				return 0, err
			}
			return conv(tm.UnixMicro()), nil
		}
		d.delta = func(s string) (int64, error) {
			dur, err := duration.Parse(s)
			if err != nil {
				return 0, err
			}
			if t.ID() == arrow.DATE32 {
				return int64(dur / (24 * time.Hour)), nil
			}
			if t.ID() == arrow.DATE64 {
				return dur.Milliseconds(), nil
			}
			if per > 0 {
				return dur.Microseconds() * per, nil
			}
			return dur.Microseconds() / -per, nil
		}
		d.num = func(s string) (float64, error) { v, err := d.value(s); return float64(v), err }
		d.dnum = func(s string) (float64, error) { v, err := d.delta(s); return float64(v), err }
	case arrow.FLOAT32, arrow.FLOAT64:
		d.kind, d.plain = kFloat, true
		d.num, d.dnum = pf, pf
	case arrow.STRING, arrow.LARGE_STRING:
		d.kind = kStr
	case arrow.BINARY, arrow.LARGE_BINARY:
		d.kind, d.binary = kStr, true
	case arrow.BOOL:
		d.kind = kBool
	default:
		return nil, fmt.Errorf("type %s is not supported by generate", t)
	}
	return d, nil
}

// parseTime reads RFC 3339 (a zone-less value is UTC, never the machine's zone), a date
// (2024-01-01) or integer epoch milliseconds.
func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC(), nil
		}
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time (want RFC 3339, a date like 2024-01-01, or epoch milliseconds)", s)
}

// ParseRate reads a rate: "1000" or "1000/s" rows per second, or per another unit: "5/ms",
// "300/min", "1/h" (also "/m" for minutes, "/us"). It returns rows per second.
func ParseRate(s string) (float64, error) {
	num, per, _ := strings.Cut(strings.TrimSpace(s), "/")
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || n <= 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, fmt.Errorf("rate %q: want a positive number of rows per second, e.g. 1000 or 1000/s or 5/ms", s)
	}
	switch strings.TrimSpace(per) {
	case "", "s", "sec", "second":
		return n, nil
	case "ms":
		return n * 1000, nil
	case "us", "µs":
		return n * 1e6, nil
	case "m", "min", "minute":
		return n / 60, nil
	case "h", "hour":
		return n / 3600, nil
	}
	return 0, fmt.Errorf("rate %q: unknown unit /%s (use /s, /ms, /us, /min or /h)", s, per)
}
