// Package duration parses the durations every streamkit flag and option takes: Go's
// time.ParseDuration syntax plus days and weeks, so `--ttl 1d`, `--size 1w` and
// `--retain 7d` are accepted wherever a duration is (issue #23, "the same parser everywhere").
package duration

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Day and Week are the lengths of the units d and w: 24 hours and 7 days, as in Spark's
// interval strings and Flink's Duration options (no calendar: a day is always 24 h).
const (
	Day  = 24 * time.Hour
	Week = 7 * Day
)

// Parse parses a duration: an optional sign, then one or more decimal numbers each followed
// by a unit, as time.ParseDuration ("300ms", "-1.5h", "2h45m"), where the units are ns, us
// (or µs), ms, s, m, h, d (24 h) and w (7 d), in any combination ("1d12h", "2w", "1.5d").
// "0" alone is zero. Errors name the input and show an example; a value beyond ±292 years
// (time.Duration's range) is an error.
func Parse(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	body, neg := in, false
	if b, ok := strings.CutPrefix(body, "-"); ok {
		body, neg = b, true
	} else {
		body = strings.TrimPrefix(body, "+")
	}
	if body == "0" {
		return 0, nil
	}
	if body == "" {
		return 0, syntaxErr(s)
	}
	var total float64 // nanoseconds; float so that "1.5d" works and overflow is detected
	rest := body      // the Go-syntax segments, parsed by time.ParseDuration
	var goPart strings.Builder
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, syntaxErr(s)
		}
		j := i
		for j < len(rest) && !(rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.') {
			j++
		}
		num, unit := rest[:i], rest[i:j]
		switch unit {
		case "d", "w":
			n, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return 0, syntaxErr(s)
			}
			u := Day
			if unit == "w" {
				u = Week
			}
			total += n * float64(u)
		default:
			goPart.WriteString(rest[:j])
		}
		rest = rest[j:]
	}
	if goPart.Len() > 0 {
		d, err := time.ParseDuration(goPart.String())
		if err != nil {
			return 0, syntaxErr(s)
		}
		total += float64(d)
	}
	if total >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is out of range (at most about 292 years)", s)
	}
	d := time.Duration(total)
	if neg {
		d = -d
	}
	return d, nil
}

func syntaxErr(s string) error {
	return fmt.Errorf("%q is not a duration (e.g. 250ms, 90s, 1h30m, 7d, 2w)", s)
}

// Value is a time.Duration as a flag value (pflag.Value) that Parse parses. Its String and
// Type are those of pflag's own duration flag ("5s", "duration"), so help texts read the same.
type Value time.Duration

// Set parses s with Parse.
func (v *Value) Set(s string) error {
	d, err := Parse(s)
	if err != nil {
		return err
	}
	*v = Value(d)
	return nil
}

// String prints the duration as time.Duration.String does ("1h30m0s", "0s").
func (v *Value) String() string { return time.Duration(*v).String() }

// Type is "duration", the type name pflag shows in help.
func (v *Value) Type() string { return "duration" }
