package expr

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// from_unixtime, unix_timestamp and to_unix_timestamp, with Spark's datetime patterns (the
// letters of Java's DateTimeFormatter that Spark 3+ accepts) formatted and parsed here.

// defaultTimeFormat is the pattern of from_unixtime and unix_timestamp without one.
const defaultTimeFormat = "yyyy-MM-dd HH:mm:ss"

// dtField is one element of a datetime pattern: a run of one pattern letter, or literal text.
type dtField struct {
	letter byte // 0: lit
	count  int
	lit    string
}

// dtPattern is a compiled Spark datetime pattern.
type dtPattern struct {
	src    string
	fields []dtField
	era    bool // the pattern has G: y is the year of the era
}

var (
	monthShort = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
	monthLong  = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	dayShort   = []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	dayLong    = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	quarterTh  = []string{"1st", "2nd", "3rd", "4th"}
)

// dtMaxCount is the longest run Spark accepts of each pattern letter this package knows
// (0: any length); forParse marks the letters unix_timestamp can parse.
var dtLetters = map[byte]struct {
	max      int
	forParse bool
}{
	'G': {3, false}, 'y': {0, true}, 'M': {4, true}, 'L': {4, true}, 'd': {2, true}, 'D': {3, false},
	'Q': {4, false}, 'q': {4, false}, 'E': {4, false}, 'a': {1, true}, 'h': {2, true}, 'H': {2, true},
	'k': {2, false}, 'K': {2, false}, 'm': {2, true}, 's': {2, true}, 'S': {9, true},
	'z': {3, false}, 'V': {2, false}, 'O': {1, false}, 'X': {3, false}, 'x': {3, false}, 'Z': {3, false},
}

// compileDatetime parses a Spark datetime pattern; parse restricts it to the letters the
// parser of this package reads (y M L d H h m s S a).
func compileDatetime(p string, parse bool) (*dtPattern, error) {
	out := &dtPattern{src: p}
	for i := 0; i < len(p); {
		ch := p[i]
		switch {
		case ch == '\'':
			if i+1 < len(p) && p[i+1] == '\'' {
				out.fields = append(out.fields, dtField{lit: "'"})
				i += 2
				continue
			}
			var lit strings.Builder
			j := i + 1
			for {
				if j >= len(p) {
					return nil, fmt.Errorf("datetime pattern %s has an unterminated quote", quoteValue(p))
				}
				if p[j] == '\'' {
					if j+1 < len(p) && p[j+1] == '\'' {
						lit.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				lit.WriteByte(p[j])
				j++
			}
			out.fields = append(out.fields, dtField{lit: lit.String()})
			i = j + 1
		case ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z':
			j := i
			for j < len(p) && p[j] == ch {
				j++
			}
			spec, ok := dtLetters[ch]
			if !ok || spec.max > 0 && j-i > spec.max {
				return nil, fmt.Errorf("datetime pattern %s: %q is not a pattern Spark accepts (INVALID_DATETIME_PATTERN)", quoteValue(p), p[i:j])
			}
			if parse && !spec.forParse {
				return nil, fmt.Errorf("datetime pattern %s: %q cannot be parsed here (the letters y M d H h m s S a can)", quoteValue(p), p[i:j])
			}
			if ch == 'G' {
				out.era = true
			}
			out.fields = append(out.fields, dtField{letter: ch, count: j - i})
			i = j
		case ch == '#' || ch == '{' || ch == '}':
			return nil, fmt.Errorf("datetime pattern %s: %q is reserved", quoteValue(p), string(ch))
		case ch == '[' || ch == ']':
			if parse {
				return nil, fmt.Errorf("datetime pattern %s: optional sections cannot be parsed here", quoteValue(p))
			}
			i++ // formatting prints an optional section's fields
		default:
			out.fields = append(out.fields, dtField{lit: string(ch)})
			i++
		}
	}
	return out, nil
}

func appendPadded(b []byte, v int64, width int) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	s := strconv.FormatInt(v, 10)
	for k := len(s); k < width; k++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// format appends the timestamp us (µs since the epoch, UTC) as the pattern prints it.
func (p *dtPattern) format(b []byte, us int64) []byte {
	days := floorDiv(us, usPerDay)
	tod := us - days*usPerDay
	y, m, d := civilFromDays(days)
	hour := tod / 3600e6
	for _, f := range p.fields {
		n := f.count
		switch f.letter {
		case 0:
			b = append(b, f.lit...)
		case 'y':
			yv := int64(y)
			if p.era && yv <= 0 {
				yv = 1 - yv
			}
			switch {
			case n == 2:
				r := yv % 100
				if r < 0 {
					r = -r
				}
				b = appendPadded(b, r, 2)
			case n >= 4 && yv >= 0 && len(strconv.FormatInt(yv, 10)) > n: // SignStyle.EXCEEDS_PAD
				b = append(b, '+')
				b = appendPadded(b, yv, n)
			default:
				b = appendPadded(b, yv, n)
			}
		case 'G':
			if y <= 0 {
				b = append(b, "BC"...)
			} else {
				b = append(b, "AD"...)
			}
		case 'M', 'L':
			switch n {
			case 3:
				b = append(b, monthShort[m-1]...)
			case 4:
				b = append(b, monthLong[m-1]...)
			default:
				b = appendPadded(b, int64(m), n)
			}
		case 'd':
			b = appendPadded(b, int64(d), n)
		case 'D':
			b = appendPadded(b, days-daysFromCivil(y, 1, 1)+1, n)
		case 'Q', 'q':
			q := (m-1)/3 + 1
			switch n {
			case 3:
				b = append(b, 'Q', byte('0'+q))
			case 4:
				b = append(b, quarterTh[q-1]+" quarter"...)
			default:
				b = appendPadded(b, int64(q), n)
			}
		case 'E':
			dow := ((days % 7) + 7 + 4) % 7 // 1970-01-01 was a Thursday; 0 = Sunday
			if n == 4 {
				b = append(b, dayLong[dow]...)
			} else {
				b = append(b, dayShort[dow]...)
			}
		case 'a':
			if hour < 12 {
				b = append(b, "AM"...)
			} else {
				b = append(b, "PM"...)
			}
		case 'H':
			b = appendPadded(b, hour, n)
		case 'h':
			b = appendPadded(b, (hour+11)%12+1, n)
		case 'K':
			b = appendPadded(b, hour%12, n)
		case 'k':
			b = appendPadded(b, (hour+23)%24+1, n)
		case 'm':
			b = appendPadded(b, tod/60e6%60, n)
		case 's':
			b = appendPadded(b, tod/1e6%60, n)
		case 'S':
			nanos := strconv.FormatInt(1e9+tod%1e6*1000, 10)[1:]
			b = append(b, nanos[:n]...)
		case 'z', 'V':
			b = append(b, "UTC"...)
		case 'O':
			b = append(b, "GMT"...)
		case 'X':
			b = append(b, 'Z')
		case 'x':
			b = append(b, []string{"", "+00", "+0000", "+00:00"}[n]...)
		case 'Z':
			b = append(b, "+0000"...)
		}
	}
	return b
}

// digits reads between lo and hi ASCII digits at s[at:]; ok is false for fewer than lo.
func digits(s string, at, lo, hi int) (v int64, end int, ok bool) {
	end = at
	for end < len(s) && end-at < hi && s[end] >= '0' && s[end] <= '9' {
		v = v*10 + int64(s[end]-'0')
		end++
	}
	return v, end, end-at >= lo
}

// matchName reads one of names (case-insensitively, as Spark's parser) at s[at:].
func matchName(s string, at int, names []string) (int, int, bool) {
	for k, n := range names {
		if len(s)-at >= len(n) && strings.EqualFold(s[at:at+len(n)], n) {
			return k, at + len(n), true
		}
	}
	return 0, at, false
}

// parse reads s in the pattern (strictly: every field as wide as the pattern says, the
// whole text consumed, the date valid) and returns µs since the epoch, UTC; fields the
// pattern lacks default to 1970-01-01 00:00:00.
func (p *dtPattern) parse(s string) (int64, bool) {
	year, month, day := int64(1970), int64(1), int64(1)
	var hour, minute, sec, frac int64
	pm, hasAmPm, clock12 := false, false, false
	at := 0
	for _, f := range p.fields {
		var ok bool
		var v int64
		n := f.count
		switch f.letter {
		case 0:
			if !strings.HasPrefix(s[at:], f.lit) {
				return 0, false
			}
			at += len(f.lit)
			continue
		case 'y':
			neg := false
			signed := at < len(s) && (s[at] == '+' || s[at] == '-') && n >= 4
			if signed {
				neg = s[at] == '-'
				at++
			}
			switch {
			case n == 2:
				v, at, ok = digits(s, at, 2, 2)
				v += 2000
			case n >= 4 && !signed:
				v, at, ok = digits(s, at, n, n)
			default:
				v, at, ok = digits(s, at, n, 19)
			}
			if neg {
				v = -v
			}
			year = v
		case 'M', 'L':
			switch n {
			case 3, 4:
				names := monthShort
				if n == 4 {
					names = monthLong
				}
				var k int
				k, at, ok = matchName(s, at, names)
				v = int64(k + 1)
			default:
				v, at, ok = digits(s, at, n, 2)
			}
			month = v
		case 'd':
			day, at, ok = digits(s, at, n, 2)
		case 'H':
			hour, at, ok = digits(s, at, n, 2)
		case 'h':
			hour, at, ok = digits(s, at, n, 2)
			clock12 = true
			ok = ok && hour >= 1 && hour <= 12
		case 'm':
			minute, at, ok = digits(s, at, n, 2)
		case 's':
			sec, at, ok = digits(s, at, n, 2)
		case 'S':
			start := at
			frac, at, ok = digits(s, at, 1, n)
			for k := at - start; k < 6; k++ {
				frac *= 10
			}
			for k := at - start; k > 6; k-- {
				frac /= 10
			}
		case 'a':
			var k int
			k, at, ok = matchName(s, at, []string{"AM", "PM"})
			pm, hasAmPm = k == 1, true
		}
		if !ok {
			return 0, false
		}
	}
	if at != len(s) {
		return 0, false
	}
	if clock12 || hasAmPm {
		hour %= 12
		if pm {
			hour += 12
		}
	}
	if month < 1 || month > 12 || day < 1 || day > int64(daysIn(int(year), int(month))) || hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	days := daysFromCivil(int(year), int(month), int(day))
	return days*usPerDay + ((hour*60+minute)*60+sec)*1e6 + frac, true
}

// dtArg is the datetime pattern argument of a function: a constant compiled with the
// expression (a malformed one is a TypeError), or a column whose values are compiled per
// distinct value (INVALID_DATETIME_PATTERN when malformed).
type dtArg struct {
	fn    string
	parse bool
	konst *dtPattern
	null  bool // the constant pattern is NULL
	cache patternCache[*dtPattern]
}

// patternArg type-checks pattern argument i (absent: the default pattern); col is the
// pattern column to evaluate, nil for a constant.
func (c *checker) patternArg(call *Call, args []node, i int, parse bool) (d *dtArg, col node, err error) {
	d = &dtArg{fn: call.Name, parse: parse}
	src := defaultTimeFormat
	if i < len(args) {
		if src, col, d.null, err = c.patternText(call, args, i); err != nil || col != nil || d.null {
			return d, col, err
		}
	}
	if d.konst, err = compileDatetime(src, parse); err != nil {
		return nil, nil, c.errf(call.Args[min(i, len(call.Args)-1)].Pos(), "%s: %v", call.Name, err)
	}
	return d, nil, nil
}

// at is the pattern of row i (fmts: the pattern column, nil for a constant); nil for a
// NULL pattern or one that does not compile in a row whose errors do not count.
func (d *dtArg) at(c *evalCtx, active []bool, fmts arrow.Array, i int) (*dtPattern, error) {
	if d.konst != nil {
		return d.konst, nil
	}
	if fmts.IsNull(i) {
		return nil, nil
	}
	p, err := d.cache.get(fmts.(*array.String).Value(i), func(src string) (*dtPattern, error) { return compileDatetime(src, d.parse) })
	if err != nil {
		if !activeAt(active, i) {
			return nil, nil
		}
		return nil, c.fail("INVALID_DATETIME_PATTERN", i, "%s: %v", d.fn, err)
	}
	return p, nil
}

// withCol appends the pattern column (when there is one) to a function's arguments.
func withCol(args []node, col node) []node {
	if col != nil {
		return append(args, col)
	}
	return args
}

// colAt is in[k], or nil past its end (a constant pattern is no argument).
func colAt(in []arrow.Array, k int) arrow.Array {
	if k < len(in) {
		return in[k]
	}
	return nil
}

// nowSecsNode is unix_timestamp(): the processing time in seconds, read once per Eval (not
// a funcNode, which constant folding would evaluate at compile time).
type nowSecsNode struct{}

func (nowSecsNode) Type() Type { return TBigInt }
func (nowSecsNode) eval(c *evalCtx, _ []bool) (arrow.Array, error) {
	return scalar.MakeArrayFromScalar(scalar.NewInt64Scalar(c.now/1e6), c.n, c.mem)
}

func init() {
	register("from_unixtime", 1, 2, "from_unixtime(secs[, fmt]) → string", "seconds since the epoch printed in the datetime pattern fmt (default 'yyyy-MM-dd HH:mm:ss'), in UTC", true, func(c *checker, call *Call, args []node) (node, error) {
		t := args[0].Type()
		if !t.numeric() && t.Kind != KString && t.Kind != KNull {
			return nil, c.argErr(call, 0, t, "a number of seconds")
		}
		d, col, err := c.patternArg(call, args, 1, false)
		if err != nil || d.null {
			return nullConst(TString), err
		}
		x := coerce(args[0], TBigInt) // Spark's implicit cast: a double truncates, a bad string fails
		return &funcNode{fn: registry["from_unixtime"], t: TString, args: withCol([]node{x}, col), impl: func(c *evalCtx, active []bool, in []arrow.Array) (arrow.Array, error) {
			secs := i64s(in[0])
			out := newStrOut(c.n, c.n*len(defaultTimeFormat))
			for i := range secs {
				if isNull(in[0], i) {
					out.appendNull()
					continue
				}
				p, err := d.at(c, active, colAt(in, 1), i)
				if err != nil {
					return nil, err
				}
				if p == nil {
					out.appendNull()
					continue
				}
				out.data = p.format(out.data, secs[i]*1e6) // Spark multiplies without an overflow check
				out.offs = append(out.offs, int32(len(out.data)))
			}
			return out.array(), nil
		}}, nil
	})

	for _, name := range []string{"unix_timestamp", "to_unix_timestamp"} {
		lo, sig := 1, name+"(x[, fmt]) → bigint"
		if name == "unix_timestamp" {
			lo, sig = 0, name+"([x[, fmt]]) → bigint"
		}
		register(name, lo, 2, sig, "seconds since the epoch of a timestamp or date, or of a string parsed in the datetime pattern fmt (default 'yyyy-MM-dd HH:mm:ss'), in UTC; ANSI: text that does not match fails (CANNOT_PARSE_TIMESTAMP); unix_timestamp() is the processing time", true, func(c *checker, call *Call, args []node) (node, error) {
			if len(args) == 0 {
				return nowSecsNode{}, nil
			}
			t := args[0].Type()
			switch t.Kind {
			case KDate, KTimestamp:
				x := coerce(args[0], TTimestamp)
				return &funcNode{fn: registry[name], t: TBigInt, args: []node{x}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
					us := i64s(in[0])
					out := newOut[int64](c.n)
					for i := range us {
						if isNull(in[0], i) {
							out.setNull(i)
							continue
						}
						out.vals[i] = us[i] / 1e6 // Java's division: toward zero
					}
					return out.array(TBigInt), nil
				}}, nil
			case KString, KNull:
			default:
				return nil, c.argErr(call, 0, t, "a string, date or timestamp")
			}
			d, col, err := c.patternArg(call, args, 1, true)
			if err != nil || d.null {
				return nullConst(TBigInt), err
			}
			x := coerce(args[0], TString)
			return &funcNode{fn: registry[name], t: TBigInt, args: withCol([]node{x}, col), impl: func(c *evalCtx, active []bool, in []arrow.Array) (arrow.Array, error) {
				out, err := parseTimestamps(c, active, in[0].(*array.String), func(i int, v string) (int64, error) {
					p, err := d.at(c, active, colAt(in, 1), i)
					if err != nil || p == nil {
						return 0, cmp.Or(err, errNullRow)
					}
					us, ok := p.parse(v)
					if !ok {
						return 0, fmt.Errorf("%s: text %s does not match the datetime pattern %s", name, quoteValue(v), quoteValue(p.src))
					}
					return us, nil
				})
				if err != nil {
					return nil, err
				}
				for i := range out.vals {
					out.vals[i] /= 1e6
				}
				return out.array(TBigInt), nil
			}}, nil
		})
	}
}

// errNullRow is what a parse function of parseTimestamps returns for a row that is NULL.
var errNullRow = errors.New("NULL row")

// parseTimestamps parses every non-NULL string of s to µs since the epoch with parse, which
// returns errNullRow for a row that is NULL (its pattern is), a *RuntimeError to fail with,
// or another error when the text does not parse: CANNOT_PARSE_TIMESTAMP with that message,
// for the first such row among those whose errors count.
func parseTimestamps(c *evalCtx, active []bool, s *array.String, parse func(i int, v string) (int64, error)) (*outBuf[int64], error) {
	out := newOut[int64](c.n)
	for i := range out.vals {
		if s.IsNull(i) {
			out.setNull(i)
			continue
		}
		us, err := parse(i, s.Value(i))
		var rt *RuntimeError
		switch {
		case err == nil:
			out.vals[i] = us
		case errors.As(err, &rt):
			return nil, err
		case err == errNullRow || !activeAt(active, i):
			out.setNull(i)
		default:
			return nil, c.fail("CANNOT_PARSE_TIMESTAMP", i, "%v", err)
		}
	}
	return out, nil
}
