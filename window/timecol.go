package window

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/codec"
)

// EpochUnit is the declared unit of an integer event-time column (epoch seconds, ms, µs, ns).
type EpochUnit uint8

const (
	// UnitNone means no unit was declared; integer columns are then refused.
	UnitNone EpochUnit = iota
	// UnitSeconds: seconds since the Unix epoch.
	UnitSeconds
	// UnitMillis: milliseconds since the Unix epoch.
	UnitMillis
	// UnitMicros: microseconds since the Unix epoch.
	UnitMicros
	// UnitNanos: nanoseconds since the Unix epoch (truncated to µs toward the past).
	UnitNanos
)

// ParseEpochUnit parses "s", "ms", "us" (or "µs") and "ns".
func ParseEpochUnit(s string) (EpochUnit, error) {
	switch strings.ToLower(s) {
	case "s", "sec", "seconds":
		return UnitSeconds, nil
	case "ms", "millis", "milliseconds":
		return UnitMillis, nil
	case "us", "µs", "micros", "microseconds":
		return UnitMicros, nil
	case "ns", "nanos", "nanoseconds":
		return UnitNanos, nil
	}
	return UnitNone, fmt.Errorf("epoch unit %q: want s, ms, us or ns", s)
}

// TimeOptions say how to read an event-time column that does not carry its own zone or unit.
type TimeOptions struct {
	// Unit is required for integer columns (epoch s/ms/µs/ns); ignored otherwise.
	Unit EpochUnit
	// Location interprets zone-less values: timestamps without a time zone, dates and RFC 3339
	// text without an offset (--tz). It is never the machine's zone; nil makes such columns an
	// error (timestamps, dates) or such values an error at Extract time (text). Wall-clock
	// readings that occur twice at a DST change take the earlier offset; readings that do not
	// exist are shifted forward by the length of the gap (java.time's ofLocal rule).
	Location *time.Location
}

// ErrZoneless is returned by Extract when a text event time has no UTC offset and no
// Location was given.
var ErrZoneless = errors.New("event time has no UTC offset")

// TimeExtractor reads event times, as µs since the epoch (UTC), from one column. Supported
// types: timestamp (any unit; with a zone the values are instants, without one they are wall
// clock in Options.Location), date32/date64 (local midnight in Location), signed and unsigned
// integers with a declared EpochUnit, and RFC 3339 text (string, large_string, string_view),
// spelled as CSV and JSON timestamps are (codec.ParseTimestampText): "2006-01-02T15:04:05.999999999Z07:00",
// 'T', 't' or ' ' separator, seconds and fraction optional, zone "Z", "±hh", "±hh:mm", "±hhmm"
// or "UTC", or none when Location is set; a date alone means midnight. A TimeExtractor keeps
// caches and is not safe for concurrent use.
type TimeExtractor struct {
	path codec.Path
	kind int
	mul  int64 // µs per unit (0: divide by 1000, nanoseconds)
	zone *zone // wall-clock conversion, nil for UTC
	loc  *time.Location
}

const (
	tkInstant = iota // int64-valued instants in a unit
	tkCivil          // int64-valued wall clock in a unit
	tkDate32
	tkDate64
	tkInt
	tkText
)

// NewTimeExtractor resolves path in s and checks that its type can carry an event time.
// Errors wrap ErrPath (missing field, unsupported type) or name the missing option
// (--time-unit for integers, --tz for zone-less timestamps and dates).
func NewTimeExtractor(s *arrow.Schema, path string, opt TimeOptions) (*TimeExtractor, error) {
	fp, err := codec.ResolvePath(s, path)
	if err != nil {
		return nil, fmt.Errorf("event time: %w", err)
	}
	x := &TimeExtractor{path: fp, loc: opt.Location, zone: newZone(opt.Location)}
	dt := fp.Field.Type
	needLoc := func() error {
		if opt.Location == nil {
			return fmt.Errorf("event time %q is %s without a time zone: give the zone to read it in (--tz, e.g. --tz UTC)", path, dt)
		}
		return nil
	}
	switch t := dt.(type) {
	case *arrow.TimestampType:
		x.kind, x.mul = tkInstant, unitMul(t.Unit)
		if t.TimeZone == "" {
			x.kind = tkCivil
			if err := needLoc(); err != nil {
				return nil, err
			}
		}
	case *arrow.Date32Type:
		x.kind = tkDate32
		if err := needLoc(); err != nil {
			return nil, err
		}
	case *arrow.Date64Type:
		x.kind = tkDate64
		if err := needLoc(); err != nil {
			return nil, err
		}
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type:
		x.kind = tkInt
		switch opt.Unit {
		case UnitSeconds:
			x.mul = usPerSecond
		case UnitMillis:
			x.mul = 1000
		case UnitMicros:
			x.mul = 1
		case UnitNanos:
			x.mul = 0
		default:
			return nil, fmt.Errorf("event time %q is %s: declare its epoch unit (--time-unit s|ms|us|ns)", path, dt)
		}
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		x.kind = tkText
	default:
		return nil, fmt.Errorf("%w: event time %q has type %s; want a timestamp, date, integer epoch or RFC 3339 text", ErrPath, path, dt)
	}
	return x, nil
}

func unitMul(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return usPerSecond
	case arrow.Millisecond:
		return 1000
	case arrow.Microsecond:
		return 1
	}
	return 0 // nanoseconds
}

func scale(v, mul int64) int64 {
	if mul == 0 {
		return codec.FloorDiv(v, 1000)
	}
	return v * mul
}

// Path returns the event-time column's dot path.
func (x *TimeExtractor) Path() string { return x.path.Name }

// Extract writes the event time of every row of rec into ts and whether it is usable into ok
// (false for nulls and unparseable text), reusing their capacity, and returns both. The only
// error is ErrZoneless (wrapped, naming the value) for zone-less text without a Location.
func (x *TimeExtractor) Extract(rec arrow.RecordBatch, ts []int64, ok []bool) ([]int64, []bool, error) {
	n := int(rec.NumRows())
	ts = grow(ts, n)
	ok = grow(ok, n)
	col := x.path.Column(rec)
	nulls := col.HasNulls()
	for i := range ok {
		ok[i] = !nulls || !col.IsNull(i)
	}
	switch x.kind {
	case tkInstant, tkCivil:
		vals := col.Arr.(*array.Timestamp).Values()
		for i, v := range vals {
			ts[i] = scale(int64(v), x.mul)
		}
		if x.kind == tkCivil && x.zone != nil {
			for i := range ts {
				if ok[i] {
					ts[i] = x.zone.civilToInstant(ts[i])
				}
			}
		}
	case tkDate32:
		for i, v := range col.Arr.(*array.Date32).Date32Values() {
			ts[i] = x.civil(int64(v) * usPerDay)
		}
	case tkDate64:
		for i, v := range col.Arr.(*array.Date64).Date64Values() {
			ts[i] = x.civil(int64(v) * 1000)
		}
	case tkInt:
		x.extractInt(col.Arr, ts)
	case tkText:
		for i := 0; i < n; i++ {
			if !ok[i] {
				continue
			}
			var s string
			switch a := col.Arr.(type) {
			case *array.String:
				s = a.Value(i)
			case *array.LargeString:
				s = a.Value(i)
			case *array.StringView:
				s = a.Value(i)
			}
			civil, off, hasOff, good := parseRFC3339(s)
			switch {
			case !good:
				ok[i] = false
			case hasOff:
				ts[i] = civil - off
			case x.loc == nil:
				return ts, ok, fmt.Errorf("%w: %q in column %q; give the zone to read it in (--tz)", ErrZoneless, s, x.path.Name)
			default:
				ts[i] = x.civil(civil)
			}
		}
	}
	return ts, ok, nil
}

func (x *TimeExtractor) civil(w int64) int64 {
	if x.zone == nil {
		return w
	}
	return x.zone.civilToInstant(w)
}

func (x *TimeExtractor) extractInt(a arrow.Array, ts []int64) {
	switch a := a.(type) {
	case *array.Int64:
		scaleInto(ts, a.Int64Values(), x.mul)
	case *array.Int32:
		scaleInto(ts, a.Int32Values(), x.mul)
	case *array.Int16:
		scaleInto(ts, a.Int16Values(), x.mul)
	case *array.Int8:
		scaleInto(ts, a.Int8Values(), x.mul)
	case *array.Uint64:
		scaleInto(ts, a.Uint64Values(), x.mul)
	case *array.Uint32:
		scaleInto(ts, a.Uint32Values(), x.mul)
	case *array.Uint16:
		scaleInto(ts, a.Uint16Values(), x.mul)
	case *array.Uint8:
		scaleInto(ts, a.Uint8Values(), x.mul)
	}
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

func scaleInto[T integer](dst []int64, src []T, mul int64) {
	switch mul {
	case 1:
		for i, v := range src {
			dst[i] = int64(v)
		}
	case 0:
		for i, v := range src {
			dst[i] = codec.FloorDiv(int64(v), 1000)
		}
	default:
		for i, v := range src {
			dst[i] = int64(v) * mul
		}
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// parseRFC3339 parses event-time text as codec.ParseTimestampText does (the spellings CSV and
// JSON timestamps accept) into the wall-clock reading (µs as if UTC) and the UTC offset (µs)
// when present. It does not allocate.
func parseRFC3339(s string) (civil, off int64, hasOff, ok bool) {
	return codec.ParseTimestampText(unsafeBytes(s))
}
