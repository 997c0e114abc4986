package generate

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/stage"
)

// DefaultDuplicatesWithin is how far back a duplicate reaches by default (rows).
const DefaultDuplicatesWithin = 10_000

// Options configure a Generator.
type Options struct {
	// Schema is the output schema (nested structs and lists allowed; maps are not).
	Schema *arrow.Schema
	// Gens are the --gen options ("PATH=SPEC"), see ParseSpec; columns without one get their
	// type's default generator.
	Gens []string
	// Seed makes the data: row i's values are a pure function of (Seed, column path, i).
	Seed uint64
	// Duplicates is the probability that a row (other than row 0) is an exact copy of an
	// earlier row, chosen uniformly among the previous DuplicatesWithin rows
	// (default DefaultDuplicatesWithin).
	Duplicates       float64
	DuplicatesWithin int64
	// Rate is --rate in rows per second (0: not live). Live, timestamp() without a start starts
	// at the run's start time ("now", kept in the WAL position) and advances at Rate.
	Rate float64
}

// Generator makes Arrow batches of synthetic rows. Any range of rows can be made at any time
// (Batch is random access). Not safe for concurrent use (it reuses scratch buffers).
type Generator struct {
	schema  *arrow.Schema
	seed    uint64
	live    bool
	rate    float64
	nowGens []*int64
	cols    []node

	dupThr            uint64
	dupSalt, dupSalt2 uint64
	within            uint64
	src               []uint64
}

// New validates o and builds the generator. Errors are usage errors naming the column and
// the --gen option.
func New(o Options) (*Generator, error) {
	if o.Schema == nil || len(o.Schema.Fields()) == 0 {
		return nil, stage.Usagef("generate: a schema with at least one column is needed (--schema or --preset)")
	}
	if o.Duplicates < 0 || o.Duplicates >= 1 || math.IsNaN(o.Duplicates) {
		return nil, stage.Usagef("generate: --duplicates must be a fraction in [0, 1), got %v", o.Duplicates)
	}
	if o.DuplicatesWithin == 0 {
		o.DuplicatesWithin = DefaultDuplicatesWithin
	}
	if o.DuplicatesWithin < 0 {
		return nil, stage.Usagef("generate: --duplicates-within must be ≥ 1 rows, got %d", o.DuplicatesWithin)
	}
	g := &Generator{schema: o.Schema, seed: o.Seed, live: o.Rate > 0, rate: o.Rate,
		dupThr: threshold(o.Duplicates), dupSalt: pathSalt(o.Seed, "\x00duplicates"), within: uint64(o.DuplicatesWithin)}
	g.dupSalt2 = sub(g.dupSalt, 1)
	specs := map[string]*Spec{}
	for _, text := range o.Gens {
		sp, err := ParseSpec(text)
		if err != nil {
			return nil, err
		}
		if prev, dup := specs[sp.Path]; dup {
			return nil, specErr(text, fmt.Sprintf("column %s already has --gen '%s'", sp.Path, prev.Text))
		}
		specs[sp.Path] = &sp
	}
	used := map[string]bool{}
	for _, f := range o.Schema.Fields() {
		n, err := g.node(f, f.Name, specs, used)
		if err != nil {
			return nil, err
		}
		g.cols = append(g.cols, n)
	}
	var unknown []string
	for p := range specs {
		if !used[p] {
			unknown = append(unknown, p)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		sp := specs[unknown[0]]
		return nil, specErr(sp.Text, fmt.Sprintf("no column %s in the schema (columns: %s; a list's elements are COLUMN.element)", sp.Path, strings.Join(paths(o.Schema), ", ")))
	}
	return g, nil
}

func paths(s *arrow.Schema) []string {
	var out []string
	var walk func(prefix string, f arrow.Field)
	walk = func(p string, f arrow.Field) {
		out = append(out, p)
		switch t := f.Type.(type) {
		case *arrow.StructType:
			for _, c := range t.Fields() {
				walk(p+"."+c.Name, c)
			}
		case *arrow.ListType:
			walk(p+".element", t.ElemField())
		}
	}
	for _, f := range s.Fields() {
		walk(f.Name, f)
	}
	return out
}

// Schema is the output schema.
func (g *Generator) Schema() *arrow.Schema { return g.schema }

// UsesNow reports whether some timestamp starts at "now" (see SetNow).
func (g *Generator) UsesNow() bool { return len(g.nowGens) > 0 }

// SetNow fixes "now" (µs since the epoch) for the timestamps that start at now. A source sets
// it once per checkpointed run and keeps it in its position, so replays see the same times.
func (g *Generator) SetNow(us int64) {
	for _, p := range g.nowGens {
		*p = us
	}
}

// SourceRow is the row whose values row i carries: i itself, or for a duplicate the earlier
// row it copies (followed through duplicates of duplicates).
func (g *Generator) SourceRow(i int64) int64 { return int64(g.source(uint64(i))) }

func (g *Generator) source(i uint64) uint64 {
	for g.dupThr > 0 && i > 0 && rnd(g.dupSalt, i) < g.dupThr {
		i -= 1 + below(rnd(g.dupSalt2, i), min(i, g.within))
	}
	return i
}

// Batch makes rows [first, first+n) as one record batch allocated from mem.
func (g *Generator) Batch(mem memory.Allocator, first int64, n int) (arrow.RecordBatch, error) {
	g.src = grow(g.src, n)
	for k := range g.src {
		g.src[k] = g.source(uint64(first) + uint64(k))
	}
	cols := make([]arrow.Array, 0, len(g.cols))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, c := range g.cols {
		d, err := c.build(mem, g.src, g.src)
		if err != nil {
			return nil, err
		}
		cols = append(cols, array.MakeFromData(d))
		d.Release()
	}
	return array.NewRecordBatch(g.schema, cols, int64(n)), nil
}

// node makes one column (or nested field) for values with the given ordinals and keys.
type node interface {
	build(mem memory.Allocator, ord, key []uint64) (arrow.ArrayData, error)
}

// nulls decides which values are null: rnd(salt, key) < thr.
type nulls struct {
	thr, salt uint64
	valid     []bool
}

// mask fills n.valid for keys and returns the validity bitmap (nil without nulls) and count.
func (n *nulls) mask(mem memory.Allocator, key []uint64) (*memory.Buffer, int) {
	if n.thr == 0 {
		return nil, 0
	}
	n.valid = grow(n.valid, len(key))
	cnt := 0
	for k, x := range key {
		v := rnd(n.salt, x) >= n.thr
		n.valid[k] = v
		if !v {
			cnt++
		}
	}
	if cnt == 0 {
		return nil, 0
	}
	return packBits(mem, n.valid), cnt
}

func packBits(mem memory.Allocator, v []bool) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize((len(v) + 7) / 8)
	b := buf.Bytes()
	for i := range b {
		b[i] = 0
	}
	for k, x := range v {
		if x {
			b[k>>3] |= 1 << (k & 7)
		}
	}
	return buf
}

func (g *Generator) node(f arrow.Field, path string, specs map[string]*Spec, used map[string]bool) (node, error) {
	sp := specs[path]
	if sp != nil {
		used[path] = true
	} else {
		sp = &Spec{Path: path}
	}
	salt := pathSalt(g.seed, path)
	nl := nulls{salt: sub(salt, 0x6e756c6c)}
	if sp.Nulls > 0 {
		if !f.Nullable {
			return nil, specErr(sp.Text, fmt.Sprintf("column %s is NOT NULL; nulls= needs a nullable column", path))
		}
		nl.thr = threshold(sp.Nulls)
	}
	switch t := f.Type.(type) {
	case *arrow.StructType:
		if sp.Name != "" {
			return nil, specErr(sp.Text, fmt.Sprintf("%s is a struct; give generators for its fields (%s.FIELD=…); only nulls= applies to the struct itself", path, path))
		}
		s := &structNode{typ: t, nulls: nl}
		for _, c := range t.Fields() {
			n, err := g.node(c, path+"."+c.Name, specs, used)
			if err != nil {
				return nil, err
			}
			s.children = append(s.children, n)
		}
		return s, nil
	case *arrow.ListType:
		l := &listNode{typ: t, nulls: nl, lenSalt: sub(salt, 0x6c656e), lo: 0, n: 4}
		switch sp.Name {
		case "":
		case "list":
			lo, hi, err := listArgs(sp)
			if err != nil {
				return nil, err
			}
			l.lo, l.n = lo, uint64(hi-lo)+1
		default:
			return nil, specErr(sp.Text, fmt.Sprintf("%s is a list; its spec is list(min, max) for the length, and %s.element=… for the elements", path, path))
		}
		el, err := g.node(t.ElemField(), path+".element", specs, used)
		if err != nil {
			return nil, err
		}
		l.elem = el
		return l, nil
	case *arrow.MapType:
		return nil, specErr(orText(sp), fmt.Sprintf("column %s: map columns are not supported by generate; use a list of structs", path))
	}
	d, err := newDomain(f.Type)
	if err != nil {
		return nil, specErr(orText(sp), fmt.Sprintf("column %s: %v", path, err))
	}
	e := &genEnv{spec: *sp, d: d, salt: salt, gen: g, typeS: schema.TypeString(f.Type)}
	gen, err := makeGen(e)
	if err != nil {
		return nil, err
	}
	l := &leaf{typ: f.Type, d: d, nulls: nl}
	switch d.kind {
	case kInt:
		l.ig = gen.(intGen)
	case kFloat:
		l.fg = gen.(floatGen)
	case kStr:
		l.sg = gen.(strGen)
	case kBool:
		l.bg = gen.(boolGen)
	}
	return l, nil
}

func orText(sp *Spec) string {
	if sp.Text != "" {
		return sp.Text
	}
	return sp.Path + "=(default)"
}

func listArgs(sp *Spec) (int, int, error) {
	var lo, hi int
	var err error
	switch len(sp.Args) {
	case 1:
		_, err = fmt.Sscan(sp.Args[0].Text, &lo)
		hi = lo
	case 2:
		_, err = fmt.Sscan(sp.Args[0].Text, &lo)
		if err == nil {
			_, err = fmt.Sscan(sp.Args[1].Text, &hi)
		}
	default:
		err = fmt.Errorf("arguments")
	}
	if err != nil || lo < 0 || hi < lo || hi > 1_000_000 {
		return 0, 0, specErr(sp.Text, "list takes a length n or (min, max) with 0 ≤ min ≤ max ≤ 1000000")
	}
	return lo, hi, nil
}

// ---- struct and list nodes ----

type structNode struct {
	typ      *arrow.StructType
	nulls    nulls
	children []node
}

func (s *structNode) build(mem memory.Allocator, ord, key []uint64) (arrow.ArrayData, error) {
	valid, nn := s.nulls.mask(mem, key)
	if valid != nil {
		defer valid.Release()
	}
	kids := make([]arrow.ArrayData, 0, len(s.children))
	defer func() {
		for _, k := range kids {
			k.Release()
		}
	}()
	for _, c := range s.children {
		d, err := c.build(mem, ord, key)
		if err != nil {
			return nil, err
		}
		kids = append(kids, d)
	}
	return array.NewData(s.typ, len(key), []*memory.Buffer{valid}, kids, nn, 0), nil
}

type listNode struct {
	typ     *arrow.ListType
	nulls   nulls
	lenSalt uint64
	lo      int
	n       uint64
	elem    node
	eord    []uint64
	ekey    []uint64
}

func (l *listNode) build(mem memory.Allocator, ord, key []uint64) (arrow.ArrayData, error) {
	valid, nn := l.nulls.mask(mem, key)
	if valid != nil {
		defer valid.Release()
	}
	offs := memory.NewResizableBuffer(mem)
	defer offs.Release()
	offs.Resize(4 * (len(key) + 1))
	o := arrow.Int32Traits.CastFromBytes(offs.Bytes())
	l.eord, l.ekey = l.eord[:0], l.ekey[:0]
	o[0] = 0
	for k, x := range key {
		cnt := 0
		if nn == 0 || l.nulls.valid[k] {
			cnt = l.lo
			if l.n > 1 {
				cnt += int(below(rnd(l.lenSalt, x), l.n))
			}
		}
		for j := 0; j < cnt; j++ {
			l.eord = append(l.eord, uint64(j))
			l.ekey = append(l.ekey, elemKey(x, j))
		}
		if len(l.eord) > math.MaxInt32 {
			return nil, fmt.Errorf("generate: a batch holds more than 2^31 list elements; lower --batch-rows")
		}
		o[k+1] = int32(len(l.eord))
	}
	child, err := l.elem.build(mem, l.eord, l.ekey)
	if err != nil {
		return nil, err
	}
	defer child.Release()
	return array.NewData(l.typ, len(key), []*memory.Buffer{valid, offs}, []arrow.ArrayData{child}, nn, 0), nil
}

// ---- leaves ----

type leaf struct {
	typ   arrow.DataType
	d     *domain
	nulls nulls
	ig    intGen
	fg    floatGen
	sg    strGen
	bg    boolGen

	ints   []int64
	floats []float64
	bools  []bool
	sb     strBuf
	cord   []uint64
	ckey   []uint64
}

func (l *leaf) build(mem memory.Allocator, ord, key []uint64) (arrow.ArrayData, error) {
	n := len(key)
	valid, nn := l.nulls.mask(mem, key)
	if valid != nil {
		defer valid.Release()
	}
	isNull := func(k int) bool { return nn > 0 && !l.nulls.valid[k] }
	vals := memory.NewResizableBuffer(mem)
	defer func() { vals.Release() }() // vals is replaced for booleans
	switch l.d.kind {
	case kInt:
		width := l.typ.(arrow.FixedWidthDataType).BitWidth()
		var dst []int64
		if width == 64 {
			vals.Resize(8 * n)
			dst = arrow.Int64Traits.CastFromBytes(vals.Bytes())
		} else {
			l.ints = grow(l.ints, n)
			dst = l.ints
			vals.Resize(width / 8 * n)
		}
		l.ig.ints(dst, ord, key)
		if nn > 0 {
			for k := range dst {
				if isNull(k) {
					dst[k] = 0
				}
			}
		}
		switch width {
		case 8:
			b := vals.Bytes()
			for k, v := range dst {
				b[k] = byte(v)
			}
		case 16:
			b := arrow.Int16Traits.CastFromBytes(vals.Bytes())
			for k, v := range dst {
				b[k] = int16(v)
			}
		case 32:
			b := arrow.Int32Traits.CastFromBytes(vals.Bytes())
			for k, v := range dst {
				b[k] = int32(v)
			}
		case 128:
			b := arrow.Uint64Traits.CastFromBytes(vals.Bytes())
			for k, v := range dst {
				b[2*k], b[2*k+1] = uint64(v), uint64(v>>63)
			}
		}
	case kFloat:
		var dst []float64
		if l.typ.ID() == arrow.FLOAT64 {
			vals.Resize(8 * n)
			dst = arrow.Float64Traits.CastFromBytes(vals.Bytes())
		} else {
			l.floats = grow(l.floats, n)
			dst = l.floats
			vals.Resize(4 * n)
		}
		l.fg.floats(dst, ord, key)
		if nn > 0 {
			for k := range dst {
				if isNull(k) {
					dst[k] = 0
				}
			}
		}
		if l.typ.ID() == arrow.FLOAT32 {
			b := arrow.Float32Traits.CastFromBytes(vals.Bytes())
			for k, v := range dst {
				b[k] = float32(v)
			}
		}
	case kBool:
		l.bools = grow(l.bools, n)
		l.bg.bools(l.bools, ord, key)
		if nn > 0 {
			for k := range l.bools {
				if isNull(k) {
					l.bools[k] = false
				}
			}
		}
		vals.Release()
		vals = packBits(mem, l.bools)
	case kStr:
		return l.buildStrings(mem, ord, key, valid, nn)
	}
	return array.NewData(l.typ, n, []*memory.Buffer{valid, vals}, nil, nn, 0), nil
}

func (l *leaf) buildStrings(mem memory.Allocator, ord, key []uint64, valid *memory.Buffer, nn int) (arrow.ArrayData, error) {
	n := len(key)
	l.sb.data = l.sb.data[:0]
	l.sb.offs = append(l.sb.offs[:0], 0)
	if nn > 0 {
		l.cord, l.ckey = l.cord[:0], l.ckey[:0]
		for k := range key {
			if l.nulls.valid[k] {
				l.cord = append(l.cord, ord[k])
				l.ckey = append(l.ckey, key[k])
			}
		}
		l.sg.strs(&l.sb, l.cord, l.ckey)
	} else {
		l.sg.strs(&l.sb, ord, key)
	}
	if len(l.sb.data) > math.MaxInt32 {
		return nil, fmt.Errorf("generate: a batch holds more than 2 GiB of strings; lower --batch-rows")
	}
	large := l.typ.ID() == arrow.LARGE_STRING || l.typ.ID() == arrow.LARGE_BINARY
	offs := memory.NewResizableBuffer(mem)
	defer offs.Release()
	if large {
		offs.Resize(8 * (n + 1))
		o := arrow.Int64Traits.CastFromBytes(offs.Bytes())
		j := 0
		o[0] = 0
		for k := 0; k < n; k++ {
			if nn == 0 || l.nulls.valid[k] {
				j++
			}
			o[k+1] = int64(l.sb.offs[j])
		}
	} else {
		offs.Resize(4 * (n + 1))
		o := arrow.Int32Traits.CastFromBytes(offs.Bytes())
		if nn == 0 {
			copy(o, l.sb.offs)
		} else {
			j := 0
			o[0] = 0
			for k := 0; k < n; k++ {
				if l.nulls.valid[k] {
					j++
				}
				o[k+1] = l.sb.offs[j]
			}
		}
	}
	data := memory.NewResizableBuffer(mem)
	defer data.Release()
	data.Resize(len(l.sb.data))
	copy(data.Bytes(), l.sb.data)
	return array.NewData(l.typ, n, []*memory.Buffer{valid, offs, data}, nil, nn, 0), nil
}
