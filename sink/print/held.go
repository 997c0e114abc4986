package print

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/stage"
)

// held are the rows that --tail or --sample may print at the end, rendered as text when they
// arrive (so no batch is kept alive): at most size of them, whatever the stream's length.
type held struct {
	size   int64
	sample bool
	rows   []heldRow // in slot order; len ≤ size
	seen   int64     // rows offered so far
	oldest int64     // Tail: the slot of the oldest row, once size are held
	done   bool      // printed: nothing more is held

	// Sample: reservoir sampling by Li's Algorithm L (ACM TOMS 20(4), 1994), which draws
	// random numbers only for the rows it takes, O(size·(1+log(seen/size))) of them.
	rng  *rand.Rand
	w    float64 // the algorithm's W
	next int64   // the index of the next row to take, once the reservoir is full
	full bool
}

// heldRow is one rendered row: its cells (table) or its line (JSON, CSV).
type heldRow struct {
	seq   int64 // its index in the stream
	line  []byte
	cells []string
}

// newHeld checks the options of --tail and --sample and returns nil when neither is given.
func newHeld(cfg Config) (*held, error) {
	switch {
	case cfg.Tail < 0:
		return nil, stage.Usagef("--tail must be ≥ 0, got %d", cfg.Tail)
	case cfg.Sample < 0:
		return nil, stage.Usagef("--sample must be ≥ 0, got %d", cfg.Sample)
	case cfg.Tail > 0 && cfg.Sample > 0:
		return nil, stage.Usagef("--tail and --sample: give one (the last rows, or a random sample of them all)")
	case cfg.Seeded && cfg.Sample == 0:
		return nil, stage.Usagef("--seed is the seed of --sample, which is not given")
	case cfg.Tail == 0 && cfg.Sample == 0:
		return nil, nil
	}
	flag, size := "--tail", cfg.Tail
	if cfg.Sample > 0 {
		flag, size = "--sample", cfg.Sample
	}
	switch {
	case cfg.ShowControl:
		return nil, stage.Usagef("%s prints its rows at the end of the stream, --show-control prints controls in stream order among the rows: give one", flag)
	case cfg.Limit > 0 && cfg.Limit <= size:
		return nil, stage.Usagef("%s %d: --limit %d reads no more rows than that, so every row is printed: drop %s", flag, size, cfg.Limit, flag)
	}
	h := &held{size: size, sample: cfg.Sample > 0}
	if h.sample {
		seed := cfg.Seed
		if !cfg.Seeded {
			seed = rand.Uint64()
		}
		h.rng = rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	}
	return h, nil
}

// add offers the first n rows of rec.
func (h *held) add(p *Printer, rec arrow.RecordBatch, n int64) {
	if p.schema == nil {
		p.schema = rec.Schema()
	}
	if h.done {
		return
	}
	base := h.seen
	h.seen += n
	if !h.sample {
		// Only the last size rows of the batch can be among the last size of the stream; each
		// takes the place of the oldest row held.
		for i := max(0, n-h.size); i < n; i++ {
			slot := int64(len(h.rows))
			if slot == h.size {
				slot, h.oldest = h.oldest, (h.oldest+1)%h.size
			}
			h.put(p, rec, slot, base+i, i)
		}
		return
	}
	i := int64(0)
	for ; i < n && int64(len(h.rows)) < h.size; i++ {
		h.put(p, rec, int64(len(h.rows)), base+i, i)
	}
	if !h.full && int64(len(h.rows)) == h.size {
		h.full = true
		h.w = math.Exp(math.Log(h.uniform()) / float64(h.size))
		h.next = base + i + h.gap()
	}
	for h.full && h.next < base+n {
		h.put(p, rec, h.rng.Int64N(h.size), h.next, h.next-base)
		h.w *= math.Exp(math.Log(h.uniform()) / float64(h.size))
		h.next += 1 + h.gap()
	}
}

// uniform is a random number in (0, 1).
func (h *held) uniform() float64 {
	for {
		if u := h.rng.Float64(); u > 0 {
			return u
		}
	}
}

// gap is the number of rows Algorithm L skips before the next one it takes.
func (h *held) gap() int64 {
	g := math.Floor(math.Log(h.uniform()) / math.Log1p(-h.w))
	if !(g < 1<<62) { // +Inf once w underflows, and NaN
		return 1 << 62
	}
	return int64(g)
}

// put renders row i of rec, the stream's row seq, into slot.
func (h *held) put(p *Printer, rec arrow.RecordBatch, slot, seq, i int64) {
	if slot == int64(len(h.rows)) {
		h.rows = append(h.rows, heldRow{})
	}
	row := &h.rows[slot]
	row.seq = seq
	switch p.cfg.Format {
	case FormatJSON:
		row.line = p.jsonLine(row.line[:0], rec.Schema(), rec.Columns(), int(i))
	case FormatCSV:
		row.line = p.csvLine(row.line[:0], rec.Columns(), int(i))
	default:
		row.cells = p.tableRow(rec.Columns(), int(i))
	}
}

// showHeld prints the held rows in stream order, once, and flushes.
func (p *Printer) showHeld() error {
	h := p.hold
	if h == nil || h.done {
		return nil
	}
	rows := h.rows
	h.rows, h.done = nil, true
	if len(rows) == 0 {
		return nil // as for every row: an empty stream prints nothing, not even a header
	}
	slices.SortFunc(rows, func(a, b heldRow) int { return cmp.Compare(a.seq, b.seq) })
	var err error
	switch p.cfg.Format {
	case FormatTable:
		cells := make([][]string, len(rows))
		for i := range rows {
			cells[i] = rows[i].cells
		}
		err = p.renderTable(p.schema, cells)
	case FormatCSV:
		if _, err = p.out.Write(p.csvHeader(nil, p.schema)); err != nil {
			return err
		}
		fallthrough
	default:
		for i := 0; i < len(rows) && err == nil; i++ {
			_, err = p.out.Write(rows[i].line)
		}
	}
	if err != nil {
		return err
	}
	return p.flush()
}
