package stage

import (
	"fmt"
	"strconv"
	"strings"
)

// RejectKind names why a stage set a record aside instead of passing it on as it came (see
// Stats.Reject). Every kind is counted per epoch: when most of an epoch's records were set
// aside the stage warns once at its barrier, and past --max-bad-ratio it fails before the
// epoch commits.
type RejectKind int

// The kinds of rejected records.
const (
	// BadRecord: an input record a source could not parse at all (read-files' --bad-records-output);
	// it is not a row of the output, so it adds to the epoch's records besides the rows.
	BadRecord RejectKind = iota
	// RescuedRow: a row whose unparsed fields or bytes went to _rescued_data (still a row of
	// the output, with null fields).
	RescuedRow
	// LateRow: window, a row later than the allowed lateness (--late-output).
	LateRow
	// BadTimeRow: window, a row without a usable event time (--late-output).
	BadTimeRow
	// DroppedLateRow: dedup --ttl, a row older than the watermark (--dropped-output).
	DroppedLateRow
	// RejectedRow: a sink could not write the row.
	RejectedRow
	// ExpectDroppedRow: expect, a row that violated an --expect-or-drop expectation
	// (--dropped-output).
	ExpectDroppedRow
	numRejectKinds
)

var rejectNames = [numRejectKinds]string{"bad_records", "rescued_rows", "late_rows", "bad_time_rows", "dropped_late_rows", "rejected_rows", "expectation_dropped_rows"}

// String is the kind's name in messages and logs ("late_rows").
func (k RejectKind) String() string { return rejectNames[k] }

// Reject counts n records of kind k set aside in the current epoch; they count as bad records
// in the status line too. Safe for concurrent use.
func (s *Stats) Reject(k RejectKind, n int64) {
	if n <= 0 {
		return
	}
	s.rejects[k].Add(n)
	s.BadRecords.Add(n)
}

// Rejected returns the records of kind k set aside since the stage started.
func (s *Stats) Rejected(k RejectKind) int64 { return s.rejects[k].Load() }

// warnRatio is the share of an epoch's records set aside above which a stage warns: "most".
const warnRatio = 0.5

// Ratio is the value of --max-bad-ratio: a share in [0, 1], or off (the zero value).
type Ratio struct {
	v  float64
	on bool
}

// Set parses a ratio in [0, 1] (pflag.Value).
func (r *Ratio) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(v >= 0 && v <= 1) {
		return fmt.Errorf("want a ratio between 0 and 1 (e.g. 0.1), got %q", s)
	}
	r.v, r.on = v, true
	return nil
}

// String is the ratio as given, "" when off (pflag.Value).
func (r *Ratio) String() string {
	if !r.on {
		return ""
	}
	return strconv.FormatFloat(r.v, 'g', -1, 64)
}

// Type is the placeholder in --help (pflag.Value).
func (r *Ratio) Type() string { return "ratio" }

// Max returns the ratio and whether it is set.
func (r Ratio) Max() (float64, bool) { return r.v, r.on }

// qualityCheck compares, at every barrier, the records a stage set aside in the epoch with
// the records it took in (Stats.RecordsIn, plus BadRecord records a source could not make
// rows of). It keeps the counters as of the previous barrier.
type qualityCheck struct {
	max     Ratio
	in      int64
	rejects [numRejectKinds]int64
}

// epoch checks epoch n: it warns once when most of its records were set aside, and returns an
// error (exit 1) naming the stage, the epoch, the counts and the ratio when their share
// exceeds --max-bad-ratio. Called before the epoch is made durable, so a failing epoch
// commits nothing.
func (q *qualityCheck) epoch(o *Options, s *Stats, n uint64) error {
	in := s.RecordsIn.Load()
	total := in - q.in
	q.in = in
	var bad int64
	var parts []string
	for k := range numRejectKinds {
		v := s.rejects[k].Load()
		d := v - q.rejects[k]
		q.rejects[k] = v
		if d == 0 {
			continue
		}
		if k == BadRecord {
			total += d
		}
		bad += d
		parts = append(parts, fmt.Sprintf("%s %d", k, d))
	}
	if bad == 0 || total <= 0 {
		return nil
	}
	ratio := float64(bad) / float64(total)
	what := strings.Join(parts, ", ")
	if max, on := q.max.Max(); on && ratio > max {
		return fmt.Errorf("%s: epoch %d: %d of %d records set aside (%s), ratio %.4g > --max-bad-ratio %g; "+
			"failing before the epoch commits (nothing of epoch %d is written downstream); see the side outputs for the records",
			o.StageName(), n, bad, total, what, ratio, max, n)
	}
	if ratio > warnRatio {
		o.Log.Warn(fmt.Sprintf("most records of epoch %d were set aside: %d of %d (%s); check the input, the event times or the watermark (--max-bad-ratio R fails the run instead)", n, bad, total, what),
			"epoch", n, "set_aside", bad, "records", total, "ratio", ratio)
	}
	return nil
}
