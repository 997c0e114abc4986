// Package textconv parses the textual values found in CSV and JSON records into Arrow's
// physical representations, without allocating on the common paths. It is shared by
// codec/jsonrow and codec/csvrow so both accept exactly the same spellings.
package textconv

import (
	"encoding/base64"
	"math"
	"math/big"
	"strconv"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// str views b as a string without copying; the result must not outlive b's contents.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// ParseInt parses an optionally signed base-10 integer ("-12", "+7") that fits in bits bits.
// No spaces, underscores, fractions or exponents.
func ParseInt(b []byte, bits int) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	i := 0
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		i = 1
		if len(b) == 1 {
			return 0, false
		}
	}
	if len(b)-i <= 18 {
		var v int64
		for ; i < len(b); i++ {
			c := b[i] - '0'
			if c > 9 {
				return 0, false
			}
			v = v*10 + int64(c)
		}
		if neg {
			v = -v
		}
		if bits < 64 && (v < -1<<(bits-1) || v > 1<<(bits-1)-1) {
			return 0, false
		}
		return v, true
	}
	v, err := strconv.ParseInt(str(b), 10, bits)
	if err != nil {
		return 0, false
	}
	return v, true
}

// ParseUint parses an unsigned base-10 integer that fits in bits bits.
func ParseUint(b []byte, bits int) (uint64, bool) {
	if len(b) > 0 && b[0] == '+' {
		b = b[1:]
	}
	if len(b) == 0 || b[0] < '0' || b[0] > '9' {
		return 0, false
	}
	v, err := strconv.ParseUint(str(b), 10, bits)
	if err != nil {
		return 0, false
	}
	return v, true
}

// ParseFloat parses a decimal or exponent floating-point number; also NaN, Inf, +Inf, -Inf,
// Infinity, +Infinity, -Infinity (case-insensitive, as strconv and Spark's allowNonNumericNumbers).
// Hexadecimal floats and underscores are rejected.
func ParseFloat(b []byte, bits int) (float64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c == '_' || c == 'x' || c == 'X' {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(str(b), bits)
	if err != nil {
		// strconv reports out-of-range with ±Inf; a number too large for the type does not fit.
		return 0, false
	}
	return v, true
}

// ParseBool accepts true/false in any case (Spark's CSV reading); JSON decoders use JSON literals.
func ParseBool(b []byte) (bool, bool) {
	switch len(b) {
	case 4:
		if (b[0]|0x20) == 't' && (b[1]|0x20) == 'r' && (b[2]|0x20) == 'u' && (b[3]|0x20) == 'e' {
			return true, true
		}
	case 5:
		if (b[0]|0x20) == 'f' && (b[1]|0x20) == 'a' && (b[2]|0x20) == 'l' && (b[3]|0x20) == 's' && (b[4]|0x20) == 'e' {
			return false, true
		}
	}
	return false, false
}

// DaysFromCivil returns the number of days from 1970-01-01 to y-m-d in the proleptic
// Gregorian calendar (Howard Hinnant's algorithm).
func DaysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func digits(b []byte, n int) (int, bool) {
	if len(b) < n {
		return 0, false
	}
	v := 0
	for i := 0; i < n; i++ {
		c := b[i] - '0'
		if c > 9 {
			return 0, false
		}
		v = v*10 + int(c)
	}
	return v, true
}

// maxYear bounds the years of expanded dates, so that every instant they name fits in int64
// microseconds (±292,277 years around 1970).
const maxYear = 290_000

// parseDate reads YYYY-MM-DD at the start of b, or an ISO 8601 expanded year: a sign and 4
// to 6 digits ("+10000-01-01", "-0001-12-31"; year 0 is 1 BC, as in java.time and Spark). n is
// the length of the date.
func parseDate(b []byte) (y, m, d, n int, ok bool) {
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		i = 1
	}
	j := i
	for j < len(b) && j-i < 7 && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	nd := j - i
	if nd < 4 || nd > 4 && i == 0 || nd > 6 {
		return 0, 0, 0, 0, false
	}
	y, _ = digits(b[i:], nd)
	if neg {
		y = -y
	}
	n = j + 6
	if len(b) < n || b[j] != '-' || b[j+3] != '-' || y > maxYear || y < -maxYear {
		return 0, 0, 0, 0, false
	}
	m, ok2 := digits(b[j+1:], 2)
	d, ok3 := digits(b[j+4:], 2)
	if !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, 0, 0, 0, false
	}
	return y, m, d, n, true
}

// ParseDate parses an ISO 8601 calendar date, YYYY-MM-DD (or an expanded year, ±YYYYY-MM-DD),
// into days since 1970-01-01.
func ParseDate(b []byte) (int32, bool) {
	y, m, d, n, ok := parseDate(b)
	if !ok || n != len(b) {
		return 0, false
	}
	days := DaysFromCivil(y, m, d)
	if days > math.MaxInt32 || days < math.MinInt32 {
		return 0, false
	}
	return int32(days), true
}

// ParseTimestamp parses an RFC 3339 / ISO 8601 timestamp (the spellings of ParseCivil) into
// microseconds since the Unix epoch; text without a zone is a wall-clock time in loc (see
// Instant). hasZone reports whether the text carried a zone (timestamp_ntz columns reject those).
func ParseTimestamp(b []byte, loc *time.Location) (micros int64, hasZone bool, ok bool) {
	civil, offset, hasZone, ok := ParseCivil(b)
	if !ok {
		return 0, false, false
	}
	return Instant(civil, offset, hasZone, loc), hasZone, true
}

// Instant returns the instant (µs since the Unix epoch) of a reading ParseCivil returned:
// civil − offset when the text had a zone, otherwise the wall-clock time civil in loc (nil
// means UTC) — never the machine's zone; across a DST gap or overlap Go's time.Date rules apply.
func Instant(civil, offset int64, hasZone bool, loc *time.Location) int64 {
	if hasZone || loc == nil || loc == time.UTC {
		return civil - offset
	}
	return wallIn(civil, loc)
}

func wallIn(civil int64, loc *time.Location) int64 {
	w := time.UnixMicro(civil).UTC()
	return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc).UnixMicro()
}

// ParseCivil parses an RFC 3339 / ISO 8601 timestamp into its wall-clock reading and zone,
// without allocating:
//
//	YYYY-MM-DD                         midnight (or an expanded year, ±YYYYY-MM-DD)
//	YYYY-MM-DD(T|t| )hh:mm[:ss[.f...]] with 1 to 9 fraction digits ('.' or ','; beyond µs truncated: ParseCivilNanos keeps them)
//	followed by an optional zone:      Z, z, ±hh, ±hh:mm, ±hhmm, or " UTC"/"UTC"
//
// civil is the reading in microseconds as if it were UTC; offset is the zone's offset east of
// UTC in microseconds (0 without a zone), so the instant is civil − offset. hasZone reports
// whether the text carried a zone; the caller reads zone-less text in a location of its choice.
func ParseCivil(b []byte) (civil, offset int64, hasZone bool, ok bool) {
	secs, nanos, off, hasZone, ok := parseCivil(b)
	return secs*1_000_000 + nanos/1000, off * 1_000_000, hasZone, ok
}

// ParseCivilNanos is ParseCivil in nanoseconds, keeping all nine fraction digits, for
// timestamp(ns) columns; ok is false when the reading does not fit int64 nanoseconds
// (years 1678 to 2261).
func ParseCivilNanos(b []byte) (civil, offset int64, hasZone bool, ok bool) {
	secs, nanos, off, hasZone, ok := parseCivil(b)
	if !ok || secs > math.MaxInt64/1_000_000_000-86400 || secs < math.MinInt64/1_000_000_000+86400 {
		return 0, 0, false, false
	}
	return secs*1e9 + nanos, off * 1e9, hasZone, true
}

// parseCivil parses what ParseCivil accepts into whole seconds of the reading, its fraction
// in nanoseconds and the zone's offset in seconds.
func parseCivil(b []byte) (secs, nanos, offset int64, hasZone bool, ok bool) {
	y, mo, d, i, ok := parseDate(b)
	if !ok {
		return 0, 0, 0, false, false
	}
	var h, mi, s, frac int
	if i < len(b) && (b[i] == 'T' || b[i] == 't' || b[i] == ' ') && i+1 < len(b) && b[i+1] >= '0' && b[i+1] <= '9' {
		i++
		var ok1, ok2 bool
		h, ok1 = digits(b[i:], 2)
		if !ok1 || i+2 >= len(b) || b[i+2] != ':' {
			return 0, 0, 0, false, false
		}
		mi, ok2 = digits(b[i+3:], 2)
		if !ok2 || h > 23 || mi > 59 {
			return 0, 0, 0, false, false
		}
		i += 5
		if i < len(b) && b[i] == ':' {
			var ok3 bool
			s, ok3 = digits(b[i+1:], 2)
			if !ok3 || s > 59 {
				return 0, 0, 0, false, false
			}
			i += 3
			if i < len(b) && (b[i] == '.' || b[i] == ',') {
				i++
				n := 0
				for i < len(b) && b[i] >= '0' && b[i] <= '9' {
					if n < 9 {
						frac = frac*10 + int(b[i]-'0')
					}
					n++
					i++
				}
				if n == 0 || n > 9 {
					return 0, 0, 0, false, false
				}
				for ; n < 9; n++ {
					frac *= 10
				}
			}
		}
	}
	off := 0 // seconds east of UTC
	switch rest := b[i:]; {
	case len(rest) == 0:
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
		hasZone = true
	case str(rest) == " UTC" || str(rest) == "UTC":
		hasZone = true
	case rest[0] == '+' || rest[0] == '-':
		hasZone = true
		oh, ok1 := digits(rest[1:], 2)
		if !ok1 || oh > 23 {
			return 0, 0, 0, false, false
		}
		om := 0
		switch tail := rest[3:]; {
		case len(tail) == 0:
		case len(tail) == 3 && tail[0] == ':':
			v, ok2 := digits(tail[1:], 2)
			if !ok2 || v > 59 {
				return 0, 0, 0, false, false
			}
			om = v
		case len(tail) == 2:
			v, ok2 := digits(tail, 2)
			if !ok2 || v > 59 {
				return 0, 0, 0, false, false
			}
			om = v
		default:
			return 0, 0, 0, false, false
		}
		off = oh*3600 + om*60
		if rest[0] == '-' {
			off = -off
		}
	default:
		return 0, 0, 0, false, false
	}
	secs = DaysFromCivil(y, mo, d)*86400 + int64(h*3600+mi*60+s)
	return secs, int64(frac), int64(off), hasZone, true
}

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// ParseDecimal128 parses a decimal number ("-12.345", "1e3", ".5") into a Decimal128 of the
// given precision and scale. Extra fraction digits are rounded half away from zero (Spark's
// HALF_UP); a value needing more than prec digits does not fit (ok false).
func ParseDecimal128(b []byte, prec, scale int32) (decimal128.Num, bool) {
	// Fast path: plain notation with at most 18 significant digits after scaling.
	neg := false
	i := 0
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		i++
	}
	var v int64
	nd, frac := 0, -1
	fast := true
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			if frac >= 0 {
				frac++
			}
			if v == 0 && c == '0' && frac < 0 {
				nd = max(nd, 1)
				continue
			}
			v = v*10 + int64(c-'0')
			nd++
			if nd > 18 {
				fast = false
			}
		case c == '.' && frac < 0:
			frac = 0
		default:
			fast = false
		}
		if !fast {
			break
		}
	}
	if fast && nd > 0 || fast && frac > 0 {
		if frac < 0 {
			frac = 0
		}
		if int(scale) >= frac && nd+int(scale)-frac <= 18 {
			v *= pow10[int(scale)-frac]
			if prec < 19 && v >= pow10[prec] {
				return decimal128.Num{}, false
			}
			if neg {
				v = -v
			}
			return decimal128.FromI64(v), true
		}
	}
	return parseDecimalBig(b, prec, scale)
}

var bigTen = big.NewInt(10)

func parseDecimalBig(b []byte, prec, scale int32) (decimal128.Num, bool) {
	s := str(b)
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	exp := 0
	for j := 0; j < len(s); j++ {
		if s[j] == 'e' || s[j] == 'E' {
			e, err := strconv.Atoi(s[j+1:])
			if err != nil || e > 1000 || e < -1000 {
				return decimal128.Num{}, false
			}
			exp = e
			s = s[:j]
			break
		}
	}
	var mant []byte
	seenDigit, dot := false, false
	for j := 0; j < len(s); j++ {
		c := s[j]
		switch {
		case c >= '0' && c <= '9':
			mant = append(mant, c)
			seenDigit = true
			if dot {
				exp--
			}
		case c == '.' && !dot:
			dot = true
		default:
			return decimal128.Num{}, false
		}
	}
	if !seenDigit {
		return decimal128.Num{}, false
	}
	m, _ := new(big.Int).SetString(string(mant), 10)
	// value = m * 10^exp; want round(value * 10^scale).
	shift := exp + int(scale)
	if shift >= 0 {
		m.Mul(m, new(big.Int).Exp(bigTen, big.NewInt(int64(shift)), nil))
	} else {
		d := new(big.Int).Exp(bigTen, big.NewInt(int64(-shift)), nil)
		q, r := new(big.Int).QuoRem(m, d, new(big.Int))
		// half-up: r*2 >= d
		if r.Mul(r, big.NewInt(2)).Cmp(d) >= 0 {
			q.Add(q, big.NewInt(1))
		}
		m = q
	}
	if m.BitLen() > 127 {
		return decimal128.Num{}, false
	}
	if neg {
		m.Neg(m)
	}
	n := decimal128.FromBigInt(m)
	if !n.FitsInPrecision(prec) {
		return decimal128.Num{}, false
	}
	return n, true
}

// DecodeBase64 decodes standard or URL-safe base64, padded or not (Spark's binary in JSON).
func DecodeBase64(dst, b []byte) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		n := enc.DecodedLen(len(b))
		if cap(dst) < n {
			dst = make([]byte, n)
		}
		dst = dst[:n]
		if m, err := enc.Decode(dst, b); err == nil {
			return dst[:m], true
		}
	}
	return dst[:0], false
}

// EpochToMicros converts an epoch number in unit (seconds, ms, µs or ns per arrow.TimeUnit
// order 0..3) to microseconds; a fraction of a microsecond is floored (−0.5 µs is the
// microsecond −1, before 1970, as for integer nanoseconds).
func EpochToMicros(v float64, unit int) (int64, bool) {
	var us float64
	switch unit {
	case 0:
		us = v * 1e6
	case 1:
		us = v * 1e3
	case 2:
		us = v
	case 3:
		us = v / 1e3
	}
	us = math.Floor(us)
	if math.IsNaN(us) || us >= math.MaxInt64 || us < math.MinInt64 {
		return 0, false
	}
	return int64(us), true
}

// EpochIntToMicros converts an integer epoch value in unit (0 s, 1 ms, 2 µs, 3 ns) to µs;
// nanoseconds are floored (−1 ns is the microsecond −1, 1969-12-31 23:59:59.999999).
func EpochIntToMicros(v int64, unit int) (int64, bool) {
	switch unit {
	case 0:
		if v > math.MaxInt64/1_000_000 || v < math.MinInt64/1_000_000 {
			return 0, false
		}
		return v * 1e6, true
	case 1:
		if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
			return 0, false
		}
		return v * 1e3, true
	case 2:
		return v, true
	}
	us := v / 1000
	if v%1000 < 0 {
		us--
	}
	return us, true
}

// FormatMicros renders µs since the epoch as RFC 3339 in UTC with 6 fraction digits.
func FormatMicros(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}
