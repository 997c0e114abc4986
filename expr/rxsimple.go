package expr

import (
	"regexp/syntax"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// simpleRx matches the patterns that need no backtracking faster than regexp (whose
// submatch search also allocates its result per call): a sequence of single-character
// items (a literal, a class, '.') each repeated a fixed or greedy number of times, capture
// groups around runs of them, and optional ^ and $ (\A, \z) at the ends. A greedy item must
// be the last one or be followed by an item that needs at least one character from a class
// disjoint from its own: then taking as many characters as the item can is the only way the
// match can go on, so a left-to-right scan finds the match regexp finds (leftmost-first),
// with the same groups. Other patterns (alternation, lazy or nested repeats, \b, (?m), …)
// are left to regexp.
type simpleRx struct {
	items      []rxItem
	begin, end bool // anchored at the start / end of the text
	groups     int
	firstByte  int  // the first item's only character when it is one ASCII byte and needed; else -1
	minLen     int  // the fewest characters a match takes
	skipRun    bool // the first item is unbounded: a failed start can skip its run
}

type rxItem struct {
	group    int // > 0: a group boundary (open when start); 0: a character item
	start    bool
	cls      rxClass
	min, max int // repetitions; max -1: unbounded
}

// rxClass is a set of runes: an ASCII bitmap and sorted ranges for the rest.
type rxClass struct {
	ascii  [2]uint64
	ranges []rune // pairs lo, hi (inclusive) of runes ≥ 0x80
}

func (c *rxClass) has(r rune) bool {
	if r < 0x80 {
		return c.ascii[r>>6]&(1<<(r&63)) != 0
	}
	if len(c.ranges) > 16 { // \pL and the like: binary search over the pairs
		k := sort.Search(len(c.ranges)/2, func(k int) bool { return c.ranges[2*k+1] >= r })
		return k < len(c.ranges)/2 && c.ranges[2*k] <= r
	}
	for k := 0; k < len(c.ranges); k += 2 {
		if r < c.ranges[k] {
			return false
		}
		if r <= c.ranges[k+1] {
			return true
		}
	}
	return false
}

func classOf(ranges []rune) rxClass {
	var c rxClass
	for k := 0; k+1 < len(ranges); k += 2 {
		lo, hi := ranges[k], ranges[k+1]
		for r := lo; r <= hi && r < 0x80; r++ {
			c.ascii[r>>6] |= 1 << (r & 63)
		}
		if hi >= 0x80 {
			c.ranges = append(c.ranges, max(lo, 0x80), hi)
		}
	}
	return c
}

// disjoint reports whether no rune is in both classes (exactly for ASCII, by range overlap
// for the rest).
func (c *rxClass) disjoint(d *rxClass) bool {
	if c.ascii[0]&d.ascii[0] != 0 || c.ascii[1]&d.ascii[1] != 0 {
		return false
	}
	for i := 0; i < len(c.ranges); i += 2 {
		for j := 0; j < len(d.ranges); j += 2 {
			if c.ranges[i] <= d.ranges[j+1] && d.ranges[j] <= c.ranges[i+1] {
				return false
			}
		}
	}
	return true
}

// compileSimple returns the simple matcher of pattern p, or nil when p is not one.
func compileSimple(p string) *simpleRx {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil
	}
	m := &simpleRx{firstByte: -1}
	if !m.add(re, true) {
		return nil
	}
	// anchors only at the ends
	var chars []int
	for k, it := range m.items {
		if it.group == 0 {
			chars = append(chars, k)
		}
	}
	for n, k := range chars {
		it := m.items[k]
		m.minLen += it.min
		if it.min == it.max {
			continue
		}
		if n+1 == len(chars) {
			continue
		}
		next := m.items[chars[n+1]]
		if next.min < 1 || !it.cls.disjoint(&next.cls) {
			return nil
		}
	}
	if len(chars) > 0 {
		first := m.items[chars[0]]
		m.skipRun = first.max < 0
		if first.min > 0 && len(first.cls.ranges) == 0 && !m.begin {
			only := -1
			for r := 0; r < 128; r++ {
				if first.cls.has(rune(r)) {
					if only >= 0 {
						only = -2
						break
					}
					only = r
				}
			}
			if only >= 0 {
				m.firstByte = only
			}
		}
	}
	return m
}

// add appends the items of re; top marks the outermost concatenation (where the anchors may
// stand).
func (m *simpleRx) add(re *syntax.Regexp, top bool) bool {
	switch re.Op {
	case syntax.OpConcat:
		for k, sub := range re.Sub {
			switch {
			case sub.Op == syntax.OpBeginText && top && k == 0:
				m.begin = true
			case sub.Op == syntax.OpEndText && top && k == len(re.Sub)-1:
				m.end = true
			case !m.add(sub, false):
				return false
			}
		}
		return true
	case syntax.OpCapture:
		m.groups++
		g := m.groups
		if g != re.Cap {
			return false
		}
		m.items = append(m.items, rxItem{group: g, start: true})
		if !m.add(re.Sub[0], false) {
			return false
		}
		m.items = append(m.items, rxItem{group: g})
		return true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			m.items = append(m.items, rxItem{cls: literalClass(r, re.Flags&syntax.FoldCase != 0), min: 1, max: 1})
		}
		return true
	case syntax.OpEmptyMatch:
		return true
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		if re.Flags&syntax.NonGreedy != 0 {
			return false
		}
		cls, ok := singleClass(re.Sub[0])
		if !ok {
			return false
		}
		lo, hi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
		}
		m.items = append(m.items, rxItem{cls: cls, min: lo, max: hi})
		return true
	}
	if cls, ok := singleClass(re); ok {
		m.items = append(m.items, rxItem{cls: cls, min: 1, max: 1})
		return true
	}
	return false
}

// singleClass is the class of a one-character expression.
func singleClass(re *syntax.Regexp) (rxClass, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 1 {
			return literalClass(re.Rune[0], re.Flags&syntax.FoldCase != 0), true
		}
	case syntax.OpCharClass:
		return classOf(re.Rune), true
	case syntax.OpAnyChar:
		return classOf([]rune{0, unicode.MaxRune}), true
	case syntax.OpAnyCharNotNL:
		return classOf([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune}), true
	}
	return rxClass{}, false
}

func literalClass(r rune, fold bool) rxClass {
	rs := []rune{r}
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			rs = append(rs, f)
		}
	}
	var ranges []rune
	for _, x := range sortRunes(rs) {
		ranges = append(ranges, x, x)
	}
	return classOf(ranges)
}

func sortRunes(rs []rune) []rune {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j] < rs[j-1]; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
	return rs
}

// find returns the leftmost match of s as regexp's FindStringSubmatchIndex does, written
// into caps (2·(groups+1) ints), or nil.
func (m *simpleRx) find(s string, caps []int) []int {
	caps = caps[:2*(m.groups+1)]
	for p := 0; p <= len(s); {
		if m.firstByte >= 0 {
			k := strings.IndexByte(s[p:], byte(m.firstByte))
			if k < 0 {
				return nil
			}
			p += k
		}
		if len(s)-p < m.minLen {
			return nil
		}
		runEnd, ok := m.matchAt(s, p, caps)
		if ok {
			return caps
		}
		if m.begin || p == len(s) {
			return nil
		}
		// starting inside the first item's run (unbounded) ends that run where this start
		// did and fails the same way
		if m.skipRun && runEnd > p {
			p = runEnd
			continue
		}
		if s[p] < utf8.RuneSelf {
			p++
		} else {
			_, size := utf8.DecodeRuneInString(s[p:])
			p += size
		}
	}
	return nil
}

// matchAt matches at p; runEnd is where the first character item's run ended.
func (m *simpleRx) matchAt(s string, p int, caps []int) (runEnd int, ok bool) {
	runEnd = -1
	for k := range caps {
		caps[k] = -1
	}
	caps[0] = p
	for k := range m.items {
		it := &m.items[k]
		if it.group > 0 {
			if it.start {
				caps[2*it.group] = p
			} else {
				caps[2*it.group+1] = p
			}
			continue
		}
		n := 0
		for (it.max < 0 || n < it.max) && p < len(s) {
			r, size := rune(s[p]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(s[p:])
			}
			if !it.cls.has(r) {
				break
			}
			p += size
			n++
		}
		if runEnd < 0 {
			runEnd = p
		}
		if n < it.min {
			return runEnd, false
		}
	}
	if m.end && p != len(s) {
		return runEnd, false
	}
	caps[1] = p
	return runEnd, true
}
