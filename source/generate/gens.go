package generate

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/internal/duration"
	"github.com/streamkit/streamkit/stage"
)

// The fillers produce the values of one leaf for a run of rows: ord[k] is the ordinal of
// value k (the row index, or the position inside its list) and key[k] its random key (the row
// index, or a hash of the row and position). Sequences and timestamps follow ord; every random
// choice is rnd(salt, key).
type (
	intGen interface {
		ints(dst []int64, ord, key []uint64)
	}
	floatGen interface {
		floats(dst []float64, ord, key []uint64)
	}
	strGen interface {
		strs(out *strBuf, ord, key []uint64)
	}
	boolGen interface {
		bools(dst []bool, ord, key []uint64)
	}
)

// strBuf collects strings: data holds the bytes, offs the end offset of each string (appended
// by the filler; the caller starts offs with the start offset). Fillers append to local copies
// of both slices and store them back once (no write barrier per value).
type strBuf struct {
	data []byte
	offs []int32
}

// DefaultStart is where timestamp() starts when no start is given and the source is bounded.
var DefaultStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// specErr is a usage error quoting the --gen option (and so naming the column).
func specErr(text, msg string) error {
	return stage.Usagef("generate: --gen '%s': %s", text, msg)
}

// genEnv is what a generator constructor sees.
type genEnv struct {
	spec  Spec
	d     *domain
	salt  uint64
	gen   *Generator
	typeS string // the column type, for messages
}

func (e *genEnv) errf(format string, args ...any) error {
	text := e.spec.Text
	if text == "" {
		text = e.spec.Path + "=" + e.spec.Name
	}
	return specErr(text, fmt.Sprintf(format, args...))
}

func (e *genEnv) nargs(min, max int, usage string) error {
	if n := len(e.spec.Args); n < min || n > max {
		return e.errf("%s takes %s, got %d argument(s)", e.spec.Name, usage, n)
	}
	return nil
}

func (e *genEnv) arg(i int, def string) string {
	if i < len(e.spec.Args) {
		return e.spec.Args[i].Text
	}
	return def
}

// generators lists the generator names with their usage, for help and error messages.
var generators = []struct{ name, usage string }{
	{"sequence", "sequence[(start[, step])]"},
	{"uniform", "uniform(min, max)"},
	{"normal", "normal(mean, stddev)"},
	{"zipf", "zipf(s[, v[, imax]])"},
	{"choice", "choice(a[:weight], b[:weight], …)"},
	{"constant", "constant(value)"},
	{"words", "words[(n)] or words(min, max)"},
	{"names", "names"},
	{"uuid", "uuid"},
	{"timestamp", "timestamp[(start[, rate[, jitter]])]"},
	{"list", "list(min, max) or list(n) (list columns)"},
	{"nexmark", "nexmark(auction|bidder|price|channel|url|date_time|extra)"},
}

func generatorNames() string {
	var names []string
	for _, g := range generators {
		names = append(names, g.name)
	}
	return strings.Join(names, ", ")
}

// makeGen builds the filler of a leaf for e.spec (Name "" = the type's default). The result
// implements the interface of e.d.kind.
func makeGen(e *genEnv) (any, error) {
	d := e.d
	switch e.spec.Name {
	case "":
		return defaultGen(e)
	case "sequence", "seq":
		if err := e.nargs(0, 2, "(start[, step])"); err != nil {
			return nil, err
		}
		return numeric(e, func() (any, error) {
			def := "0"
			if e.d.temporal && !e.d.plain {
				def = DefaultStart.Format(time.RFC3339)
			}
			start, err := e.d.value(e.arg(0, def))
			if err != nil {
				return nil, e.errf("start: %v", err)
			}
			step, err := e.d.delta(e.arg(1, defaultStep(e.d)))
			if err != nil {
				return nil, e.errf("step: %v", err)
			}
			return &seqInt{start, step}, nil
		}, func() (any, error) {
			start, err1 := strconv.ParseFloat(e.arg(0, "0"), 64)
			step, err2 := strconv.ParseFloat(e.arg(1, "1"), 64)
			if err1 != nil || err2 != nil {
				return nil, e.errf("sequence takes numbers (start, step)")
			}
			return &seqFloat{start, step}, nil
		})
	case "uniform":
		if err := e.nargs(2, 2, "(min, max)"); err != nil {
			return nil, err
		}
		return numeric(e, func() (any, error) {
			lo, err := e.d.value(e.arg(0, ""))
			if err != nil {
				return nil, e.errf("min: %v", err)
			}
			hi, err := e.d.value(e.arg(1, ""))
			if err != nil {
				return nil, e.errf("max: %v", err)
			}
			if hi < lo {
				return nil, e.errf("max %s is less than min %s", e.arg(1, ""), e.arg(0, ""))
			}
			return &uniformInt{salt: e.salt, lo: lo, n: uint64(hi-lo) + 1}, nil
		}, func() (any, error) {
			lo, err1 := strconv.ParseFloat(e.arg(0, ""), 64)
			hi, err2 := strconv.ParseFloat(e.arg(1, ""), 64)
			if err1 != nil || err2 != nil {
				return nil, e.errf("uniform takes numbers (min, max)")
			}
			if hi < lo {
				return nil, e.errf("max %s is less than min %s", e.arg(1, ""), e.arg(0, ""))
			}
			return &uniformFloat{salt: e.salt, lo: lo, span: hi - lo}, nil
		})
	case "normal", "gaussian":
		if err := e.nargs(2, 2, "(mean, stddev)"); err != nil {
			return nil, err
		}
		if d.kind == kBool {
			return nil, e.errf("normal does not apply to a %s column", e.typeS)
		}
		num, dnum := d.num, d.dnum
		if d.kind == kStr {
			num = func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
			dnum = num
		}
		mean, err := num(e.arg(0, ""))
		if err != nil {
			return nil, e.errf("mean: %v", err)
		}
		sd, err := dnum(e.arg(1, ""))
		if err != nil || sd < 0 {
			return nil, e.errf("stddev: want a number ≥ 0, got %q", e.arg(1, ""))
		}
		return fromFloat(e, &normalGen{salt: e.salt, mean: mean, sd: sd})
	case "zipf":
		if err := e.nargs(1, 3, "(s[, v[, imax]]) with s > 1, v ≥ 1"); err != nil {
			return nil, err
		}
		s, err1 := strconv.ParseFloat(e.arg(0, ""), 64)
		v, err2 := strconv.ParseFloat(e.arg(1, "1"), 64)
		imax, err3 := strconv.ParseUint(e.arg(2, "1000000"), 10, 63)
		if err1 != nil || err2 != nil || err3 != nil || !(s > 1) || !(v >= 1) {
			return nil, e.errf("zipf takes (s, v, imax) with s > 1, v ≥ 1 and an integer imax ≥ 0, e.g. zipf(1.1, 1, 1000)")
		}
		if !d.plain && d.kind == kInt {
			return nil, e.errf("zipf does not apply to a %s column", e.typeS)
		}
		if d.kind == kInt && d.unit == 1 && int64(imax) > d.hi {
			return nil, e.errf("imax %d is out of range for %s", imax, e.typeS)
		}
		return fromInt(e, newZipf(e.salt, s, v, imax), d.unit)
	case "choice", "oneof":
		if len(e.spec.Args) == 0 {
			return nil, e.errf("choice takes at least one value, e.g. choice(web:6, mobile:3, api:1)")
		}
		return makeChoice(e)
	case "constant", "const":
		if err := e.nargs(1, 1, "(value)"); err != nil {
			return nil, err
		}
		a := e.spec.Args[0]
		e.spec.Args = []Arg{{Text: a.Text, Quoted: true}}
		return makeChoice(e)
	case "words", "lorem":
		if err := e.nargs(0, 2, "(n) or (min, max)"); err != nil {
			return nil, err
		}
		lo, err1 := strconv.Atoi(e.arg(0, "1"))
		hi, err2 := strconv.Atoi(e.arg(1, e.arg(0, "3")))
		if err1 != nil || err2 != nil || lo < 0 || hi < lo || hi > 10000 {
			return nil, e.errf("words takes a word count n or (min, max) with 0 ≤ min ≤ max ≤ 10000")
		}
		if d.kind != kStr {
			return nil, e.errf("words applies to string columns, not %s", e.typeS)
		}
		return &wordsGen{salt: e.salt, lo: lo, n: uint64(hi-lo) + 1}, nil
	case "names", "name":
		if err := e.nargs(0, 0, "no arguments"); err != nil {
			return nil, err
		}
		if d.kind != kStr {
			return nil, e.errf("names applies to string columns, not %s", e.typeS)
		}
		return &namesGen{salt: e.salt}, nil
	case "uuid":
		if err := e.nargs(0, 0, "no arguments"); err != nil {
			return nil, err
		}
		if d.kind != kStr {
			return nil, e.errf("uuid applies to string (text form) and binary (16 bytes) columns, not %s", e.typeS)
		}
		return &uuidGen{salt: e.salt, raw: d.binary}, nil
	case "timestamp", "ts":
		return makeTimestamp(e)
	case "nexmark":
		return makeNexmark(e)
	case "list":
		return nil, e.errf("list(min, max) applies to list columns, not %s", e.typeS)
	}
	return nil, e.errf("unknown generator %q; generators: %s", e.spec.Name, generatorNames())
}

func defaultStep(d *domain) string {
	if d.temporal && !d.plain {
		if d.typ.ID() == arrow.DATE32 {
			return "1d"
		}
		return "1s"
	}
	return "1"
}

// numeric builds a numeric generator: in integer form for integer-like columns and for string
// columns whose arguments are integers, in float form otherwise.
func numeric(e *genEnv, asInt, asFloat func() (any, error)) (any, error) {
	switch e.d.kind {
	case kInt:
		g, err := asInt()
		if err != nil {
			return nil, err
		}
		return g, nil
	case kFloat:
		g, err := asFloat()
		if err != nil {
			return nil, err
		}
		return g, nil
	case kStr:
		allInts := true
		for _, a := range e.spec.Args {
			if _, err := strconv.ParseInt(a.Text, 10, 64); err != nil {
				allInts = false
			}
		}
		if allInts {
			sd := *e.d
			sd.value = func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
			sd.delta = sd.value
			saved := e.d
			e.d = &sd
			g, err := asInt()
			e.d = saved
			if err != nil {
				return nil, err
			}
			return &strFromInt{g: g.(intGen)}, nil
		}
		g, err := asFloat()
		if err != nil {
			return nil, err
		}
		return &strFromFloat{g: g.(floatGen)}, nil
	}
	return nil, e.errf("%s does not apply to a %s column", e.spec.Name, e.typeS)
}

// fromFloat adapts a float generator to the leaf's kind.
func fromFloat(e *genEnv, g floatGen) (any, error) {
	switch e.d.kind {
	case kFloat:
		return g, nil
	case kInt:
		return &intFromFloat{g: g, lo: e.d.lo, hi: e.d.hi}, nil
	case kStr:
		return &strFromFloat{g: g}, nil
	}
	return nil, e.errf("%s does not apply to a %s column", e.spec.Name, e.typeS)
}

// fromInt adapts an integer generator of plain numbers to the leaf's kind (scaled by unit
// for decimals).
func fromInt(e *genEnv, g intGen, unit float64) (any, error) {
	switch e.d.kind {
	case kInt:
		if unit != 1 {
			return &scaleInt{g: g, by: int64(unit)}, nil
		}
		return g, nil
	case kFloat:
		return &floatFromInt{g: g}, nil
	case kStr:
		return &strFromInt{g: g}, nil
	}
	return nil, e.errf("%s does not apply to a %s column", e.spec.Name, e.typeS)
}

func defaultGen(e *genEnv) (any, error) {
	d := e.d
	switch d.kind {
	case kInt:
		if d.temporal && !d.plain {
			if d.typ.ID() == arrow.DATE32 || d.typ.ID() == arrow.DATE64 {
				lo, _ := d.value("2024-01-01")
				hi, _ := d.value("2024-12-31")
				step, _ := d.delta("1d")
				return &scaleInt{g: &uniformInt{salt: e.salt, lo: lo / max(step, 1), n: uint64((hi-lo)/max(step, 1)) + 1}, by: max(step, 1)}, nil
			}
			return makeTimestamp(e)
		}
		hi := int64(1000 * d.unit)
		if d.hi < 1000 {
			hi = 100
		}
		hi = min(hi, d.hi)
		return &uniformInt{salt: e.salt, lo: 0, n: uint64(hi) + 1}, nil
	case kFloat:
		return &uniformFloat{salt: e.salt, lo: 0, span: 1}, nil
	case kStr:
		if d.binary {
			return &uuidGen{salt: e.salt, raw: true}, nil
		}
		return &wordsGen{salt: e.salt, lo: 1, n: 3}, nil
	case kBool:
		return &coinGen{salt: e.salt}, nil
	}
	return nil, e.errf("no default generator")
}

// ---- sequences, uniform, normal ----

type seqInt struct{ start, step int64 }

func (g *seqInt) ints(dst []int64, ord, _ []uint64) {
	for k, o := range ord {
		dst[k] = g.start + int64(o)*g.step
	}
}

type seqFloat struct{ start, step float64 }

func (g *seqFloat) floats(dst []float64, ord, _ []uint64) {
	for k, o := range ord {
		dst[k] = g.start + float64(o)*g.step
	}
}

type uniformInt struct {
	salt uint64
	lo   int64
	n    uint64 // hi-lo+1; 0 means the whole 64-bit range
}

func (g *uniformInt) ints(dst []int64, _, key []uint64) {
	if g.n == 0 {
		for k, x := range key {
			dst[k] = int64(rnd(g.salt, x))
		}
		return
	}
	for k, x := range key {
		dst[k] = g.lo + int64(below(rnd(g.salt, x), g.n))
	}
}

type uniformFloat struct {
	salt     uint64
	lo, span float64
}

func (g *uniformFloat) floats(dst []float64, _, key []uint64) {
	for k, x := range key {
		dst[k] = g.lo + g.span*unit(rnd(g.salt, x))
	}
}

type normalGen struct {
	salt     uint64
	mean, sd float64
}

func (g *normalGen) floats(dst []float64, _, key []uint64) {
	for k, x := range key {
		dst[k] = g.mean + g.sd*invNorm(open01(rnd(g.salt, x)))
	}
}

type coinGen struct{ salt uint64 }

func (g *coinGen) bools(dst []bool, _, key []uint64) {
	for k, x := range key {
		dst[k] = rnd(g.salt, x)>>63 == 1
	}
}

// ---- adapters ----

type intFromFloat struct {
	g      floatGen
	tmp    []float64
	lo, hi int64
}

func (a *intFromFloat) ints(dst []int64, ord, key []uint64) {
	a.tmp = grow(a.tmp, len(dst))
	a.g.floats(a.tmp, ord, key)
	lo, hi := float64(a.lo), float64(a.hi)
	for k, f := range a.tmp {
		f = math.Round(f)
		switch {
		case f <= lo:
			dst[k] = a.lo
		case f >= hi:
			dst[k] = a.hi
		default:
			dst[k] = int64(f)
		}
	}
}

type floatFromInt struct {
	g   intGen
	tmp []int64
}

func (a *floatFromInt) floats(dst []float64, ord, key []uint64) {
	a.tmp = grow(a.tmp, len(dst))
	a.g.ints(a.tmp, ord, key)
	for k, v := range a.tmp {
		dst[k] = float64(v)
	}
}

type scaleInt struct {
	g  intGen
	by int64
}

func (a *scaleInt) ints(dst []int64, ord, key []uint64) {
	a.g.ints(dst, ord, key)
	for k := range dst {
		dst[k] *= a.by
	}
}

type strFromInt struct {
	g   intGen
	tmp []int64
}

func (a *strFromInt) strs(out *strBuf, ord, key []uint64) {
	a.tmp = grow(a.tmp, len(ord))
	a.g.ints(a.tmp, ord, key)
	d, offs := out.data, out.offs
	for _, v := range a.tmp {
		d = strconv.AppendInt(d, v, 10)
		offs = append(offs, int32(len(d)))
	}
	out.data, out.offs = d, offs
}

type strFromFloat struct {
	g   floatGen
	tmp []float64
}

func (a *strFromFloat) strs(out *strBuf, ord, key []uint64) {
	a.tmp = grow(a.tmp, len(ord))
	a.g.floats(a.tmp, ord, key)
	d, offs := out.data, out.offs
	for _, v := range a.tmp {
		d = strconv.AppendFloat(d, v, 'g', -1, 64)
		offs = append(offs, int32(len(d)))
	}
	out.data, out.offs = d, offs
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// ---- choice and constant ----

// alias is Vose's alias table: an index drawn in O(1) with arbitrary weights. pick uses the
// high 64 bits of r·n as the slot and the low 64 bits as the coin.
type alias struct {
	n     uint64
	thr   []uint64 // keep the slot when the coin is below thr
	other []uint32
}

func newAlias(w []float64) *alias {
	n := len(w)
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	uniform := true
	for _, x := range w {
		if x != w[0] {
			uniform = false
		}
	}
	a := &alias{n: uint64(n)}
	if uniform {
		return a
	}
	p := make([]float64, n)
	var small, large []int
	for i, x := range w {
		p[i] = x * float64(n) / sum
		if p[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	a.thr = make([]uint64, n)
	a.other = make([]uint32, n)
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.thr[s] = threshold(p[s])
		a.other[s] = uint32(l)
		p[l] -= 1 - p[s]
		if p[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range append(small, large...) {
		a.thr[i] = math.MaxUint64
		a.other[i] = uint32(i)
	}
	return a
}

func (a *alias) pick(r uint64) uint64 {
	hi, lo := bits.Mul64(r, a.n)
	if a.thr == nil || lo < a.thr[hi] {
		return hi
	}
	return uint64(a.other[hi])
}

type choiceInt struct {
	salt uint64
	a    *alias
	vals []int64
}

func (g *choiceInt) ints(dst []int64, _, key []uint64) {
	if len(g.vals) == 1 {
		for k := range dst {
			dst[k] = g.vals[0]
		}
		return
	}
	for k, x := range key {
		dst[k] = g.vals[g.a.pick(rnd(g.salt, x))]
	}
}

type choiceFloat struct {
	salt uint64
	a    *alias
	vals []float64
}

func (g *choiceFloat) floats(dst []float64, _, key []uint64) {
	for k, x := range key {
		dst[k] = g.vals[g.a.pick(rnd(g.salt, x))]
	}
}

type choiceStr struct {
	salt uint64
	a    *alias
	vals [][]byte
	// short: every value fits 16 bytes; pad holds them zero-padded, written with one 16-byte
	// store each (the next value overwrites the padding).
	short bool
	pad   [][16]byte
}

func newChoiceStr(salt uint64, a *alias, vals [][]byte) *choiceStr {
	g := &choiceStr{salt: salt, a: a, vals: vals, short: true}
	for _, v := range vals {
		if len(v) > 16 {
			g.short = false
		}
		var p [16]byte
		copy(p[:], v)
		g.pad = append(g.pad, p)
	}
	return g
}

func (g *choiceStr) strs(out *strBuf, _, key []uint64) {
	d, offs := out.data, out.offs
	if g.short {
		pos := len(d)
		d = slices.Grow(d, 16*len(key)+16)[:pos+16*len(key)+16]
		for _, x := range key {
			i := uint64(0)
			if len(g.vals) > 1 {
				i = g.a.pick(rnd(g.salt, x))
			}
			*(*[16]byte)(d[pos : pos+16]) = g.pad[i]
			pos += len(g.vals[i])
			offs = append(offs, int32(pos))
		}
		out.data, out.offs = d[:pos], offs
		return
	}
	for _, x := range key {
		d = append(d, g.vals[g.a.pick(rnd(g.salt, x))]...)
		offs = append(offs, int32(len(d)))
	}
	out.data, out.offs = d, offs
}

type choiceBool struct {
	salt uint64
	a    *alias
	vals []bool
}

func (g *choiceBool) bools(dst []bool, _, key []uint64) {
	for k, x := range key {
		dst[k] = g.vals[g.a.pick(rnd(g.salt, x))]
	}
}

// splitWeight splits a choice argument into value and weight: 'quoted':w, or (with bare) v:w
// where w is a number. Quote values that contain ':'; on time columns a bare value is never
// split (12:30 is a time), so weights need a quoted value there.
func splitWeight(a Arg, bare bool) (string, float64, bool, error) {
	w := a.Weight
	v := a.Text
	if !a.Quoted && bare {
		if i := strings.LastIndexByte(v, ':'); i >= 0 {
			if _, err := strconv.ParseFloat(strings.TrimSpace(v[i+1:]), 64); err == nil {
				v, w = strings.TrimSpace(v[:i]), strings.TrimSpace(v[i+1:])
			}
		}
	}
	if w == "" {
		return v, 1, false, nil
	}
	f, err := strconv.ParseFloat(w, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return v, 0, true, fmt.Errorf("weight %q of %q is not a number ≥ 0", w, v)
	}
	return v, f, true, nil
}

func makeChoice(e *genEnv) (any, error) {
	var texts []string
	var weights []float64
	sum := 0.0
	for _, a := range e.spec.Args {
		v, w, _, err := splitWeight(a, !(e.d.temporal && !e.d.plain))
		if err != nil {
			return nil, e.errf("%v", err)
		}
		texts = append(texts, v)
		weights = append(weights, w)
		sum += w
	}
	if !(sum > 0) {
		return nil, e.errf("the weights add up to 0")
	}
	al := newAlias(weights)
	d := e.d
	switch d.kind {
	case kInt:
		g := &choiceInt{salt: e.salt, a: al}
		for _, t := range texts {
			v, err := d.value(t)
			if err != nil {
				return nil, e.errf("%v", err)
			}
			g.vals = append(g.vals, v)
		}
		return g, nil
	case kFloat:
		g := &choiceFloat{salt: e.salt, a: al}
		for _, t := range texts {
			v, err := strconv.ParseFloat(t, 64)
			if err != nil {
				return nil, e.errf("%q is not a number", t)
			}
			g.vals = append(g.vals, v)
		}
		return g, nil
	case kStr:
		var vals [][]byte
		for _, t := range texts {
			vals = append(vals, []byte(t))
		}
		return newChoiceStr(e.salt, al, vals), nil
	case kBool:
		g := &choiceBool{salt: e.salt, a: al}
		for _, t := range texts {
			v, err := strconv.ParseBool(t)
			if err != nil {
				return nil, e.errf("%q is not a boolean (true or false)", t)
			}
			g.vals = append(g.vals, v)
		}
		return g, nil
	}
	return nil, e.errf("choice does not apply to a %s column", e.typeS)
}

// ---- words, names, uuid ----

type wordsGen struct {
	salt uint64
	lo   int
	n    uint64
}

func (g *wordsGen) strs(out *strBuf, _, key []uint64) {
	d, offs := out.data, out.offs
	for _, x := range key {
		state := rnd(g.salt, x)
		cnt := g.lo
		if g.n > 1 {
			cnt += int(below(state, g.n))
		}
		var r uint64
		bitsLeft := 0
		for w := 0; w < cnt; w++ {
			if bitsLeft < 8 { // 8 words per random number
				state += golden
				r = mix(state)
				bitsLeft = 64
			}
			if w > 0 {
				d = append(d, ' ')
			}
			d = append(d, wordList[r&0xff]...)
			r >>= 8
			bitsLeft -= 8
		}
		offs = append(offs, int32(len(d)))
	}
	out.data, out.offs = d, offs
}

type namesGen struct{ salt uint64 }

func (g *namesGen) strs(out *strBuf, _, key []uint64) {
	nf, nl := uint64(len(firstNames)), uint64(len(lastNames))
	d, offs := out.data, out.offs
	for _, x := range key {
		r := rnd(g.salt, x)
		d = append(d, firstNames[(r&0xffffffff)*nf>>32]...)
		d = append(d, ' ')
		d = append(d, lastNames[(r>>32)*nl>>32]...)
		offs = append(offs, int32(len(d)))
	}
	out.data, out.offs = d, offs
}

type uuidGen struct {
	salt uint64
	raw  bool
}

const hexDigits = "0123456789abcdef"

func (g *uuidGen) strs(out *strBuf, _, key []uint64) {
	s2 := sub(g.salt, 1)
	d, offs := out.data, out.offs
	var b [16]byte
	for _, x := range key {
		binary.BigEndian.PutUint64(b[:8], rnd(g.salt, x))
		binary.BigEndian.PutUint64(b[8:], rnd(s2, x))
		b[6] = b[6]&0x0f | 0x40 // version 4 (RFC 9562)
		b[8] = b[8]&0x3f | 0x80 // variant 10
		if g.raw {
			d = append(d, b[:]...)
		} else {
			var t [36]byte
			j := 0
			for i, v := range b {
				if i == 4 || i == 6 || i == 8 || i == 10 {
					t[j] = '-'
					j++
				}
				t[j], t[j+1] = hexDigits[v>>4], hexDigits[v&15]
				j += 2
			}
			d = append(d, t[:]...)
		}
		offs = append(offs, int32(len(d)))
	}
	out.data, out.offs = d, offs
}

// ---- timestamps ----

// tsGen produces start + ord/rate (µs since the epoch), minus a uniform jitter in
// [0, jitter] when jitter > 0, converted to the column's unit.
type tsGen struct {
	salt     uint64
	start    int64 // µs
	now      bool  // start is resolved by the source (the run's start time, kept in its WAL)
	perSec   uint64
	step     int64   // µs per row when perSec divides 1,000,000
	usPerRow float64 // when the rate is not an integer
	jitter   uint64  // µs
	conv     func(int64) int64
}

func (g *tsGen) micros(o, x uint64) int64 {
	var off int64
	if g.step > 0 {
		off = int64(o) * g.step
	} else if g.perSec > 0 {
		off = int64(o/g.perSec)*1_000_000 + int64((o%g.perSec)*1_000_000/g.perSec)
	} else {
		off = int64(float64(o) * g.usPerRow)
	}
	v := g.start + off
	if g.jitter > 0 {
		v -= int64(below(rnd(g.salt, x), g.jitter+1))
	}
	return v
}

func (g *tsGen) ints(dst []int64, ord, key []uint64) {
	for k, o := range ord {
		dst[k] = g.conv(g.micros(o, key[k]))
	}
}

func (g *tsGen) strs(out *strBuf, ord, key []uint64) {
	d, offs := out.data, out.offs
	for k, o := range ord {
		d = time.UnixMicro(g.micros(o, key[k])).UTC().AppendFormat(d, "2006-01-02T15:04:05.000000Z")
		offs = append(offs, int32(len(d)))
	}
	out.data, out.offs = d, offs
}

func makeTimestamp(e *genEnv) (any, error) {
	if err := e.nargs(0, 3, "(start[, rate[, jitter]])"); err != nil {
		return nil, err
	}
	d := e.d
	if !(d.kind == kInt && d.temporal) && d.kind != kStr {
		return nil, e.errf("timestamp applies to timestamp, date, integer (epoch ms) and string (RFC 3339) columns, not %s", e.typeS)
	}
	g, err := makeTimestampArgs(e, e.arg(0, ""), e.arg(1, ""), e.arg(2, ""))
	if err != nil {
		return nil, err
	}
	if d.kind == kStr {
		return tsStr{g}, nil
	}
	return g, nil
}

// makeTimestampArgs builds a tsGen: start "" is now when live, else DefaultStart; rate ""
// is --rate when live, else 1000/s; jitter "" is none.
func makeTimestampArgs(e *genEnv, startS, rateS, jitterS string) (*tsGen, error) {
	g := &tsGen{salt: e.salt, conv: e.d.fromMicros}
	switch {
	case startS == "now":
		g.now = true
	case startS == "" && e.gen.live:
		g.now = true
	case startS == "":
		g.start = DefaultStart.UnixMicro()
	default:
		t, err := parseTime(startS)
		if err != nil {
			return nil, e.errf("start: %v (or now)", err)
		}
		g.start = t.UnixMicro()
	}
	if g.now {
		e.gen.nowGens = append(e.gen.nowGens, &g.start)
	}
	rate := 1000.0
	if e.gen.live && e.gen.rate > 0 {
		rate = e.gen.rate
	}
	if rateS != "" {
		var err error
		if rate, err = ParseRate(rateS); err != nil {
			return nil, e.errf("%v", err)
		}
	}
	if rate == math.Trunc(rate) && rate >= 1 && rate < 1<<40 {
		g.perSec = uint64(rate)
		if 1_000_000%g.perSec == 0 {
			g.step = int64(1_000_000 / g.perSec)
		}
	} else {
		g.usPerRow = 1e6 / rate
	}
	if jitterS != "" {
		dur, err := duration.Parse(jitterS)
		if err != nil || dur < 0 {
			return nil, e.errf("jitter: want a duration ≥ 0 such as 500ms or 5s, got %q", jitterS)
		}
		g.jitter = uint64(dur.Microseconds())
	}
	return g, nil
}

// tsStr exposes only the string form of a tsGen (a *tsGen is also an intGen).
type tsStr struct{ g *tsGen }

func (t tsStr) strs(out *strBuf, ord, key []uint64) { t.g.strs(out, ord, key) }
