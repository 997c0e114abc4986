package print

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/stage"
)

var seqSchema = arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}}, nil)

// feed passes rows 0..total-1 of column i to p in batches of batch rows, then settles (the
// end of the stream) and closes p; it returns Process's first error.
func feed(t *testing.T, p *Printer, total, batch int) error {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	p.Start(seqSchema)
	var perr error
	for start := 0; start < total && perr == nil; start += batch {
		b := array.NewInt64Builder(mem)
		for i := start; i < min(total, start+batch); i++ {
			b.Append(int64(i))
		}
		col := b.NewArray()
		rec := array.NewRecordBatch(seqSchema, []arrow.Array{col}, int64(col.Len()))
		col.Release()
		b.Release()
		perr = p.Process(context.Background(), rec, nil)
		rec.Release()
	}
	if perr == nil {
		if _, err := p.Settle(context.Background(), true); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return perr
}

func csvOf(rows ...int) string {
	var b strings.Builder
	b.WriteString("i\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%d\n", r)
	}
	return b.String()
}

func TestTail(t *testing.T) {
	for _, c := range []struct {
		tail         int64
		total, batch int
		want         string
	}{
		{3, 10, 4, csvOf(7, 8, 9)},
		{3, 10, 1, csvOf(7, 8, 9)},
		{3, 10, 100, csvOf(7, 8, 9)},
		{5, 3, 2, csvOf(0, 1, 2)},
		{1, 1, 1, csvOf(0)},
		{4, 0, 1, ""},
	} {
		var out bytes.Buffer
		p, err := New(Config{Format: FormatCSV, Tail: c.tail}, &out)
		if err != nil {
			t.Fatal(err)
		}
		if err := feed(t, p, c.total, c.batch); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != c.want {
			t.Errorf("--tail %d of %d rows in batches of %d: got %q, want %q", c.tail, c.total, c.batch, got, c.want)
		}
	}
}

// TestTailWithLimit: --limit bounds the rows read; the tail of those is printed at once, and
// the stage stops (ErrStop).
func TestTailWithLimit(t *testing.T) {
	var out bytes.Buffer
	p, err := New(Config{Format: FormatJSON, Tail: 2, Limit: 7}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if err := feed(t, p, 100, 3); !errors.Is(err, stage.ErrStop) {
		t.Fatalf("Process = %v, want ErrStop at the limit", err)
	}
	if got, want := out.String(), "{\"i\":5}\n{\"i\":6}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestSampleSeed: a seeded sample is the same for the same seed, whatever the batch cuts,
// holds the asked number of distinct rows in stream order, and differs for another seed.
func TestSampleSeed(t *testing.T) {
	run := func(seed uint64, batch int) string {
		var out bytes.Buffer
		p, err := New(Config{Format: FormatCSV, Sample: 10, Seed: seed, Seeded: true}, &out)
		if err != nil {
			t.Fatal(err)
		}
		if err := feed(t, p, 10000, batch); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	a := run(42, 1000)
	if b := run(42, 1000); a != b {
		t.Errorf("same seed, two samples:\n%s\n%s", a, b)
	}
	if c := run(43, 1000); a == c {
		t.Errorf("seeds 42 and 43 drew the same sample:\n%s", a)
	}
	lines := strings.Split(strings.TrimSuffix(a, "\n"), "\n")
	if len(lines) != 11 || lines[0] != "i" {
		t.Fatalf("want a header and 10 rows, got:\n%s", a)
	}
	prev := -1
	for _, l := range lines[1:] {
		var v int
		fmt.Sscan(l, &v)
		if v <= prev || v >= 10000 {
			t.Errorf("rows not distinct, in stream order and in range:\n%s", a)
			break
		}
		prev = v
	}
	// Fewer rows than the sample: all of them.
	var out bytes.Buffer
	p, _ := New(Config{Format: FormatCSV, Sample: 10, Seed: 1, Seeded: true}, &out)
	if err := feed(t, p, 4, 3); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), csvOf(0, 1, 2, 3); got != want {
		t.Errorf("sample of 10 from 4 rows: got %q, want %q", got, want)
	}
}

// TestSampleUniform: over many seeds, every row of the stream is in a sample of k from n with
// probability k/n (a chi-square test on the counts per row, at a 1e-6 false-alarm level), and
// so is each position in small batches and large ones.
func TestSampleUniform(t *testing.T) {
	const n, k, trials = 50, 5, 1500
	for _, batch := range []int{1, 7, 50} {
		counts := make([]int, n)
		for s := 0; s < trials; s++ {
			var out bytes.Buffer
			p, _ := New(Config{Format: FormatCSV, Sample: k, Seed: uint64(s), Seeded: true}, &out)
			if err := feed(t, p, n, batch); err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")[1:] {
				var v int
				fmt.Sscan(l, &v)
				counts[v]++
			}
		}
		expect := float64(trials*k) / n
		chi := 0.0
		for _, c := range counts {
			chi += (float64(c) - expect) * (float64(c) - expect) / expect
		}
		// 49 degrees of freedom: P(χ² > 110) < 1e-6.
		if chi > 110 || math.IsNaN(chi) {
			t.Errorf("batches of %d: χ² = %.1f over %d rows, counts %v", batch, chi, n, counts)
		}
	}
}

// TestHeldCommitsAtTheEnd: with --tail, Settle reports no epoch before the end, then the
// newest barrier once the rows are printed; without, every barrier's epoch at once.
func TestHeldCommitsAtTheEnd(t *testing.T) {
	ctx := context.Background()
	for _, tail := range []int64{0, 2} {
		var out bytes.Buffer
		p, err := New(Config{Format: FormatCSV, Tail: tail}, &out)
		if err != nil {
			t.Fatal(err)
		}
		p.Start(seqSchema)
		mem := memory.NewGoAllocator()
		for epoch := uint64(1); epoch <= 3; epoch++ {
			b := array.NewInt64Builder(mem)
			b.AppendValues([]int64{int64(epoch) * 10, int64(epoch)*10 + 1}, nil)
			col := b.NewArray()
			rec := array.NewRecordBatch(seqSchema, []arrow.Array{col}, 2)
			if err := p.Process(ctx, rec, nil); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			col.Release()
			b.Release()
			if err := p.Barrier(ctx, epoch, nil); err != nil {
				t.Fatal(err)
			}
			n, err := p.Settle(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			want := epoch
			if tail > 0 {
				want = 0
				if out.Len() != 0 {
					t.Errorf("--tail printed before the end: %q", out.String())
				}
			}
			if n != want {
				t.Errorf("tail %d, epoch %d: Settle = %d, want %d", tail, epoch, n, want)
			}
		}
		n, err := p.Settle(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[int64]uint64{0: 0, 2: 3}[tail]; n != want {
			t.Errorf("tail %d: the end's Settle = %d, want %d", tail, n, want)
		}
		if want := map[int64]string{0: csvOf(10, 11, 20, 21, 30, 31), 2: csvOf(30, 31)}[tail]; out.String() != want {
			t.Errorf("tail %d: printed %q, want %q", tail, out.String(), want)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if tail > 0 && out.String() != csvOf(30, 31) {
			t.Errorf("Close printed the tail again: %q", out.String())
		}
	}
}

func TestHeldTable(t *testing.T) {
	var out bytes.Buffer
	p, _ := New(Config{Tail: 2}, &out)
	if err := feed(t, p, 5, 2); err != nil {
		t.Fatal(err)
	}
	want := "┌───┐\n│ i │\n├───┤\n│ 3 │\n│ 4 │\n└───┘\n"
	if got := out.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
