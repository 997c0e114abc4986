package expr

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// The regular-expression functions: regexp_extract, regexp_replace, regexp_substr,
// regexp_count and regexp_like / regexp / rlike. Patterns are Go RE2 syntax (as RLIKE; see
// the package doc for what differs from Java's). A constant pattern is compiled once, when
// the expression is compiled, and a malformed one is a TypeError naming it; a pattern
// column is compiled per distinct value (INVALID_PARAMETER_VALUE.PATTERN when malformed).

// rxPattern is the pattern argument of a regexp function.
type rxPattern struct {
	fn    string
	konst *regexp.Regexp // the constant pattern; nil: a column
	cache patternCache[*regexp.Regexp]
	// for a constant pattern: its literal prefix (every match starts with it) and whether
	// the pattern is that literal only
	prefix   string
	literal  bool
	simple   *simpleRx // the constant pattern's backtracking-free matcher, when it has one
	caps     []int     // simple's result buffer
	nullRows bool      // the constant pattern is NULL
	empties  map[*regexp.Regexp][]int
}

// emptyMatch is the match of re at 0 in the empty string when Java's find would report an
// empty match wherever a non-empty one ends and regexp's would not (re matches the empty
// string and has no ^ $ \b \B, which would make it depend on the position); else nil.
func (p *rxPattern) emptyMatch(re *regexp.Regexp) []int {
	if m, ok := p.empties[re]; ok {
		return m
	}
	var m []int
	if tree, err := syntax.Parse(re.String(), syntax.Perl); err == nil && !hasAssertion(tree) {
		m = re.FindStringSubmatchIndex("")
	}
	if p.empties == nil {
		p.empties = map[*regexp.Regexp][]int{}
	}
	if len(p.empties) < 256 {
		p.empties[re] = m
	}
	return m
}

func hasAssertion(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	for _, sub := range re.Sub {
		if hasAssertion(sub) {
			return true
		}
	}
	return false
}

// javaMatches is every match of re in s in the order Java's Matcher.find reports them:
// regexp's, plus the empty match Java finds where a non-empty one ends (regexp skips it:
// regexp_replace('baaac', 'a*', '-') is '-b--c-' in Spark); empty is emptyMatch(re).
func javaMatches(re *regexp.Regexp, s string, empty []int) [][]int {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	if empty == nil {
		return ms
	}
	var out [][]int
	for k, m := range ms {
		out = append(out, m)
		if m[1] > m[0] && (k+1 == len(ms) || ms[k+1][0] != m[1]) {
			e := make([]int, len(empty))
			for j, v := range empty {
				e[j] = v
				if v >= 0 {
					e[j] = v + m[1]
				}
			}
			out = append(out, e)
		}
	}
	return out
}

// rxArg type-checks pattern argument i: a constant is compiled now; otherwise the returned
// node (the pattern as a string) is to be evaluated per batch.
func (c *checker) rxArg(call *Call, args []node, i int) (*rxPattern, node, error) {
	p := &rxPattern{fn: call.Name}
	src, col, null, err := c.patternText(call, args, i)
	if err != nil || col != nil {
		return p, col, err
	}
	if null {
		p.nullRows = true
		return p, nil, nil
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, nil, c.errf(call.Args[i].Pos(), "%s: the regular expression %s is invalid: %v", call.Name, quoteValue(src), err)
	}
	p.konst = re
	p.prefix, p.literal = re.LiteralPrefix()
	if !p.literal { // a literal is found faster by strings.Index than by any scan
		p.simple = compileSimple(src)
	}
	if p.simple != nil {
		p.caps = make([]int, 2*(re.NumSubexp()+1))
	}
	return p, nil, nil
}

// at is the compiled pattern of row i (pats: the pattern column, nil for a constant).
func (p *rxPattern) at(c *evalCtx, active []bool, pats *array.String, i int) (*regexp.Regexp, error) {
	if p.konst != nil {
		return p.konst, nil
	}
	s := pats.Value(i)
	re, err := p.cache.get(s, regexp.Compile)
	if err != nil {
		if !activeAt(active, i) {
			return nil, nil
		}
		return nil, c.fail("INVALID_PARAMETER_VALUE.PATTERN", i, "%s: the regular expression %s is invalid: %v", p.fn, quoteValue(s), err)
	}
	return re, nil
}

// patternCache holds what was compiled from the values of a pattern column, once per
// distinct value (up to 256 of them).
type patternCache[T any] map[string]T

func (m *patternCache[T]) get(src string, compile func(string) (T, error)) (T, error) {
	if v, ok := (*m)[src]; ok {
		return v, nil
	}
	v, err := compile(src)
	if err != nil {
		return v, err
	}
	if *m == nil {
		*m = patternCache[T]{}
	}
	if len(*m) < 256 {
		(*m)[src] = v
	}
	return v, nil
}

// patternText type-checks pattern argument i of a function (a string): the constant's text,
// or the column to evaluate (col), or a constant NULL (null).
func (c *checker) patternText(call *Call, args []node, i int) (src string, col node, null bool, err error) {
	a, err := c.strArg(call, args, i)
	if err != nil {
		return "", nil, false, err
	}
	k, ok := a.(*constNode)
	switch {
	case !ok:
		return "", a, false, nil
	case k.isNull():
		return "", nil, true, nil
	}
	return k.sc.(*scalar.String).String(), nil, false, nil
}

// submatch finds the leftmost match in s, as re.FindStringSubmatchIndex: for a constant
// pattern with the simple matcher (the result is valid until the next call), else skipping
// the regexp engine where the literal prefix (or the whole pattern, when it is a literal)
// shows there is no match.
func (p *rxPattern) submatch(re *regexp.Regexp, s string) []int {
	if re == p.konst && p.simple != nil {
		return p.simple.find(s, p.caps)
	}
	if re == p.konst && p.prefix != "" {
		at := strings.Index(s, p.prefix)
		if at < 0 {
			return nil
		}
		if p.literal {
			return []int{at, at + len(p.prefix)}
		}
	}
	return re.FindStringSubmatchIndex(s)
}

// rxFunc builds the node of a regexp function: str and the pattern first, then rest (already
// type-checked); eval gets the string column, the pattern column (nil when constant) and
// the rest's columns.
func rxFunc(name string, t Type, str node, p *rxPattern, pat node, rest []node,
	eval func(c *evalCtx, active []bool, s *array.String, pats *array.String, rest []arrow.Array) (arrow.Array, error)) node {
	if p.nullRows {
		return nullConst(t)
	}
	args := []node{str}
	if pat != nil {
		args = append(args, pat)
	}
	args = append(args, rest...)
	return &funcNode{fn: registry[name], t: t, args: args, impl: func(c *evalCtx, active []bool, in []arrow.Array) (arrow.Array, error) {
		var pats *array.String
		k := 1
		if pat != nil {
			pats, k = in[1].(*array.String), 2
		}
		return eval(c, active, in[0].(*array.String), pats, in[k:])
	}}
}

// nullIn reports whether row i is NULL in any of the columns (nil ones are constants).
func nullIn(i int, cols ...arrow.Array) bool {
	for _, a := range cols {
		if a != nil && a.NullN() > 0 && a.IsNull(i) {
			return true
		}
	}
	return false
}

func orNil(s *array.String) arrow.Array {
	if s == nil {
		return nil
	}
	return s
}

func init() {
	for _, name := range []string{"regexp_like", "regexp", "rlike"} {
		register(name, 2, 2, name+"(str, regexp) → boolean", "whether the regular expression matches somewhere in str (as str RLIKE regexp)", true, func(c *checker, call *Call, args []node) (node, error) {
			x, err := c.strArg(call, args, 0)
			if err != nil {
				return nil, err
			}
			if _, _, err := c.rxArg(call, args, 1); err != nil {
				return nil, err
			}
			pat, err := c.strArg(call, args, 1)
			if err != nil {
				return nil, err
			}
			return &likeNode{x: x, pat: pat, regex: true}, nil
		})
	}

	register("regexp_extract", 2, 3, "regexp_extract(str, regexp[, idx]) → string", "group idx (default 1; 0: the whole match) of the first match, '' when none matches or the group took no part; INVALID_PARAMETER_VALUE.REGEX_GROUP_INDEX when a match has fewer groups than idx", true, func(c *checker, call *Call, args []node) (node, error) {
		x, p, pat, err := c.rxCall(call, args)
		if err != nil {
			return nil, err
		}
		var idx node = &constNode{t: TInt, sc: scalar.NewInt32Scalar(1)}
		if len(args) == 3 {
			if idx, err = c.intArg(call, args, 2); err != nil {
				return nil, err
			}
		}
		return rxFunc("regexp_extract", TString, x, p, pat, []node{idx}, func(c *evalCtx, active []bool, s, pats *array.String, rest []arrow.Array) (arrow.Array, error) {
			idxs := i32s(rest[0])
			out := newStrOut(c.n, len(s.ValueBytes()))
			err := p.eachRow(c, active, s, pats, rest, func(int) { out.appendNull() }, func(i int, re *regexp.Regexp, v string) error {
				m := p.submatch(re, v)
				if m == nil {
					out.append("")
					return nil
				}
				g := int(idxs[i])
				if groups := len(m)/2 - 1; g < 0 || g > groups {
					if activeAt(active, i) {
						return c.fail("INVALID_PARAMETER_VALUE.REGEX_GROUP_INDEX", i, "regexp_extract: expects group index between 0 and %d, but got %d", groups, g)
					}
					out.appendNull()
					return nil
				}
				if m[2*g] < 0 {
					out.append("")
					return nil
				}
				out.append(v[m[2*g]:m[2*g+1]])
				return nil
			})
			if err != nil {
				return nil, err
			}
			return out.array(), nil
		}), nil
	})

	register("regexp_substr", 2, 2, "regexp_substr(str, regexp) → string", "the first match of the regular expression, NULL when none", true, func(c *checker, call *Call, args []node) (node, error) {
		x, p, pat, err := c.rxCall(call, args)
		if err != nil {
			return nil, err
		}
		return rxFunc("regexp_substr", TString, x, p, pat, nil, func(c *evalCtx, active []bool, s, pats *array.String, _ []arrow.Array) (arrow.Array, error) {
			out := newStrOut(c.n, len(s.ValueBytes()))
			err := p.eachRow(c, active, s, pats, nil, func(int) { out.appendNull() }, func(i int, re *regexp.Regexp, v string) error {
				if m := p.submatch(re, v); m != nil {
					out.append(v[m[0]:m[1]])
				} else {
					out.appendNull()
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			return out.array(), nil
		}), nil
	})

	register("regexp_count", 2, 2, "regexp_count(str, regexp) → int", "the number of non-overlapping matches", true, func(c *checker, call *Call, args []node) (node, error) {
		x, p, pat, err := c.rxCall(call, args)
		if err != nil {
			return nil, err
		}
		return rxFunc("regexp_count", TInt, x, p, pat, nil, func(c *evalCtx, active []bool, s, pats *array.String, _ []arrow.Array) (arrow.Array, error) {
			out := newOut[int32](c.n)
			err := p.eachRow(c, active, s, pats, nil, out.setNull, func(i int, re *regexp.Regexp, v string) error {
				out.vals[i] = int32(len(javaMatches(re, v, p.emptyMatch(re))))
				return nil
			})
			if err != nil {
				return nil, err
			}
			return out.array(TInt), nil
		}), nil
	})

	register("regexp_replace", 3, 4, "regexp_replace(str, regexp, rep[, pos]) → string", "every match from character pos on (default 1, a constant ≥ 1) replaced by rep, in which $n and ${name} insert a group and \\ escapes the next character (Java's replacement syntax); INVALID_REGEXP_REPLACE for a reference to a missing group", true, func(c *checker, call *Call, args []node) (node, error) {
		x, p, pat, err := c.rxCall(call, args)
		if err != nil {
			return nil, err
		}
		rep, err := c.strArg(call, args, 2)
		if err != nil {
			return nil, err
		}
		pos := 1
		if len(args) == 4 {
			k, ok := args[3].(*constNode)
			if !ok || !args[3].Type().integral() || !k.sc.IsValid() {
				return nil, c.argErr(call, 3, args[3].Type(), "a constant int")
			}
			v := intValue(k.sc)
			if v < 1 || v > 1<<31-1 {
				return nil, c.errf(call.Args[3].Pos(), "regexp_replace: the position must be between 1 and 2147483647, but is %d", v)
			}
			pos = int(v)
		}
		var konstRep *javaReplacement
		if k, ok := rep.(*constNode); ok && !k.isNull() && p.konst != nil {
			konstRep = parseJavaReplacement(k.sc.(*scalar.String).String(), p.konst)
		}
		return rxFunc("regexp_replace", TString, x, p, pat, []node{rep}, func(c *evalCtx, active []bool, s, pats *array.String, rest []arrow.Array) (arrow.Array, error) {
			reps := rest[0].(*array.String)
			out := newStrOut(c.n, len(s.ValueBytes()))
			var buf []byte
			err := p.eachRow(c, active, s, pats, rest, func(int) { out.appendNull() }, func(i int, re *regexp.Regexp, v string) error {
				r := konstRep
				if r == nil {
					r = parseJavaReplacement(reps.Value(i), re)
				}
				var bad error
				buf, bad = replaceFrom(buf[:0], re, v, pos, r, p.emptyMatch(re))
				if bad != nil {
					if activeAt(active, i) {
						return c.fail("INVALID_REGEXP_REPLACE", i, "could not perform regexp_replace for source = %s, pattern = %s, replacement = %s and position = %d: %v",
							quoteValue(v), quoteValue(re.String()), quoteValue(reps.Value(i)), pos, bad)
					}
					out.appendNull()
					return nil
				}
				out.appendBytes(buf)
				return nil
			})
			if err != nil {
				return nil, err
			}
			return out.array(), nil
		}), nil
	})
}

// rxCall type-checks the string and pattern arguments of a regexp function.
func (c *checker) rxCall(call *Call, args []node) (node, *rxPattern, node, error) {
	x, err := c.strArg(call, args, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	p, pat, err := c.rxArg(call, args, 1)
	return x, p, pat, err
}

// eachRow calls row for every row of s with its compiled pattern, and null for the rows
// where s, the pattern or one of extra is NULL (or whose pattern does not compile in a row
// whose errors do not count).
func (p *rxPattern) eachRow(c *evalCtx, active []bool, s, pats *array.String, extra []arrow.Array, null func(i int), row func(i int, re *regexp.Regexp, v string) error) error {
	cols := append([]arrow.Array{s, orNil(pats)}, extra...)
	nulls := false
	for _, a := range cols {
		nulls = nulls || a != nil && a.NullN() > 0
	}
	for i := 0; i < c.n; i++ {
		if nulls && nullIn(i, cols...) {
			null(i)
			continue
		}
		re, err := p.at(c, active, pats, i)
		if err != nil {
			return err
		}
		if re == nil {
			null(i)
			continue
		}
		if err := row(i, re, s.Value(i)); err != nil {
			return err
		}
	}
	return nil
}

// intValue is the value of an integral scalar.
func intValue(sc scalar.Scalar) int64 {
	switch s := sc.(type) {
	case *scalar.Int32:
		return int64(s.Value)
	case *scalar.Int64:
		return s.Value
	}
	return 0
}

// javaReplacement is a replacement string in java.util.regex.Matcher's syntax, split into
// literal text and group references for one pattern; err is the failure Java raises when
// the replacement is applied (a reference to a group the pattern lacks, a lone $ or a
// trailing backslash), which Spark reports only for a row that has a match.
type javaReplacement struct {
	parts []replPart
	err   error
}

type replPart struct {
	lit   string
	group int // -1: lit
}

func parseJavaReplacement(rep string, re *regexp.Regexp) *javaReplacement {
	r := &javaReplacement{}
	groups := re.NumSubexp()
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			r.parts = append(r.parts, replPart{lit: lit.String(), group: -1})
			lit.Reset()
		}
	}
	for k := 0; k < len(rep); k++ {
		ch := rep[k]
		switch ch {
		case '\\':
			k++
			if k >= len(rep) {
				r.err = fmt.Errorf("character to be escaped is missing")
				return r
			}
			_, size := utf8.DecodeRuneInString(rep[k:])
			lit.WriteString(rep[k : k+size])
			k += size - 1
		case '$':
			k++
			if k >= len(rep) {
				r.err = fmt.Errorf("illegal group reference: group index is missing")
				return r
			}
			g := -1
			if rep[k] == '{' {
				end := strings.IndexByte(rep[k:], '}')
				if end < 0 {
					r.err = fmt.Errorf("named capturing group is missing trailing '}'")
					return r
				}
				name := rep[k+1 : k+end]
				g = re.SubexpIndex(name)
				if g < 0 {
					r.err = fmt.Errorf("no group with name {%s}", name)
					return r
				}
				k += end
			} else {
				if rep[k] < '0' || rep[k] > '9' {
					r.err = fmt.Errorf("illegal group reference")
					return r
				}
				g = int(rep[k] - '0')
				if g > groups {
					r.err = fmt.Errorf("no group %d", g)
					return r
				}
				// further digits while the number still names a group (Java's rule)
				for k+1 < len(rep) && rep[k+1] >= '0' && rep[k+1] <= '9' {
					ng := g*10 + int(rep[k+1]-'0')
					if ng > groups {
						break
					}
					g = ng
					k++
				}
			}
			flush()
			r.parts = append(r.parts, replPart{group: g})
		default:
			lit.WriteByte(ch)
		}
	}
	flush()
	return r
}

// replaceFrom appends s with every match at or after character pos (1-based; Java counts
// UTF-16 units, this counts code points) replaced, as Spark's RegExpReplace does: the
// search runs on the rest of the string (so ^ matches at pos), and a pos past the end leaves
// s as it is.
func replaceFrom(dst []byte, re *regexp.Regexp, s string, pos int, r *javaReplacement, empty []int) ([]byte, error) {
	start := 0
	for n := 1; n < pos && start < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[start:])
		start += size
	}
	if pos > 1 && start >= len(s) {
		return append(dst, s...), nil
	}
	dst = append(dst, s[:start]...)
	rest := s[start:]
	ms := javaMatches(re, rest, empty)
	if len(ms) > 0 && r.err != nil {
		return dst, r.err
	}
	last := 0
	for _, m := range ms {
		dst = append(dst, rest[last:m[0]]...)
		for _, part := range r.parts {
			if part.group < 0 {
				dst = append(dst, part.lit...)
			} else if m[2*part.group] >= 0 {
				dst = append(dst, rest[m[2*part.group]:m[2*part.group+1]]...)
			}
		}
		last = m[1]
	}
	return append(dst, rest[last:]...), nil
}

// constRegex checks a constant RLIKE pattern when the expression is compiled: a malformed
// one is a TypeError naming it.
func (c *checker) constRegex(regex bool, src Node, pat node) error {
	k, ok := pat.(*constNode)
	if !regex || !ok || k.isNull() || pat.Type().Kind != KString {
		return nil
	}
	if _, err := regexp.Compile(k.sc.(*scalar.String).String()); err != nil {
		return c.errf(src.Pos(), "RLIKE: the regular expression %s is invalid: %v", quoteValue(k.sc.(*scalar.String).String()), err)
	}
	return nil
}
