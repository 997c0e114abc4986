package backfill

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/duration"
)

// extremum tracks the minimum or maximum of a column across batches. Timestamps are kept in
// µs since the epoch, dates in days, integers as int64 and floats as float64 (NaN ignored).
type extremum struct {
	max   bool
	kind  colKind
	ok    bool
	i     int64
	f     float64
	valid int64 // non-null values seen
}

type colKind int

const (
	kindUnsupported colKind = iota
	kindTimestamp           // µs since the epoch
	kindDate                // days since the epoch
	kindInt
	kindFloat
)

func kindOf(dt arrow.DataType) colKind {
	switch dt.ID() {
	case arrow.TIMESTAMP:
		return kindTimestamp
	case arrow.DATE32:
		return kindDate
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return kindInt
	case arrow.FLOAT32, arrow.FLOAT64:
		return kindFloat
	}
	return kindUnsupported
}

func (e *extremum) better(v int64) bool { return !e.ok || (e.max && v > e.i) || (!e.max && v < e.i) }
func (e *extremum) betterF(v float64) bool {
	return !e.ok || (e.max && v > e.f) || (!e.max && v < e.f)
}

// update folds the values of arr at the rows where keep is nil or true.
func (e *extremum) update(arr arrow.Array, keep []bool) {
	for i := 0; i < arr.Len(); i++ {
		if arr.IsNull(i) || (keep != nil && !keep[i]) {
			continue
		}
		var v int64
		switch a := arr.(type) {
		case *array.Timestamp:
			v = int64(a.Value(i))
			switch a.DataType().(*arrow.TimestampType).Unit {
			case arrow.Second:
				v *= 1e6
			case arrow.Millisecond:
				v *= 1e3
			case arrow.Nanosecond:
				v = codec.FloorDiv(v, 1e3)
			}
		case *array.Date32:
			v = int64(a.Value(i))
		case *array.Int8:
			v = int64(a.Value(i))
		case *array.Int16:
			v = int64(a.Value(i))
		case *array.Int32:
			v = int64(a.Value(i))
		case *array.Int64:
			v = a.Value(i)
		case *array.Float32, *array.Float64:
			var f float64
			if a32, ok := a.(*array.Float32); ok {
				f = float64(a32.Value(i))
			} else {
				f = a.(*array.Float64).Value(i)
			}
			if math.IsNaN(f) {
				continue
			}
			e.valid++
			if e.betterF(f) {
				e.f, e.ok = f, true
			}
			continue
		default:
			continue
		}
		e.valid++
		if e.better(v) {
			e.i, e.ok = v, true
		}
	}
}

// String renders the value for messages and the plan (RFC 3339 for timestamps).
func (e *extremum) String() string {
	if !e.ok {
		return ""
	}
	switch e.kind {
	case kindTimestamp:
		return time.UnixMicro(e.i).UTC().Format(time.RFC3339Nano)
	case kindDate:
		return time.Unix(e.i*86400, 0).UTC().Format("2006-01-02")
	case kindFloat:
		return strconv.FormatFloat(e.f, 'g', -1, 64)
	}
	return strconv.FormatInt(e.i, 10)
}

// overlapSpec is a parsed --min-overlap (and --overlap-deadline) for a column kind: durations
// for timestamps and dates (also "2d"), plain numbers for numeric columns.
type overlapSpec struct {
	kind   colKind
	dur    time.Duration
	num    float64
	source string
}

func parseOverlap(kind colKind, s string) (overlapSpec, error) {
	o := overlapSpec{kind: kind, source: s}
	switch kind {
	case kindTimestamp, kindDate:
		d, err := duration.Parse(s)
		if err != nil {
			return o, err
		}
		o.dur = d
	case kindInt, kindFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return o, fmt.Errorf("%q is not a number (the overlap column is numeric)", s)
		}
		o.num = f
	}
	return o, nil
}

// gap computes backfill max − live min in the column's units: a duration for time columns,
// a number otherwise.
func gap(kind colKind, bmax, lmin *extremum) (time.Duration, float64) {
	switch kind {
	case kindTimestamp:
		return time.Duration(bmax.i-lmin.i) * time.Microsecond, 0
	case kindDate:
		return time.Duration(bmax.i-lmin.i) * 24 * time.Hour, 0
	case kindFloat:
		return 0, bmax.f - lmin.f
	}
	return 0, float64(bmax.i - lmin.i)
}

// planOverlap is the overlap part of the plan (and of the exit-3 message).
type planOverlap struct {
	Column          string `json:"column"`
	BackfillMax     string `json:"backfill_max"`
	LiveMin         string `json:"live_min"`
	LiveRows        int64  `json:"live_rows"`
	Overlap         string `json:"overlap"`
	MinOverlap      string `json:"min_overlap"`
	FirstLiveCommit string `json:"first_live_commit,omitempty"`
	Deadline        string `json:"deadline,omitempty"`
	DeadlinePassed  bool   `json:"deadline_passed"`
	OK              bool   `json:"ok"`
	Reason          string `json:"reason"`
}
