package expr

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// RowPos names the source position of row i of the batch being evaluated, e.g. "in.csv:12"
// or "orders/3@1042" (codec/rowpos names them); runtime errors print it. nil prints the row index.
type RowPos func(i int) string

// TypeError is a type-checking failure, raised by Compile before any row is read. It names
// the offending column or function and the types involved, with a caret under the position.
type TypeError struct {
	Src string
	At  int
	Msg string
}

func (e *TypeError) Error() string { return e.Msg + "\n" + caret(e.Src, e.At) }

// RuntimeError is an ANSI evaluation error of one row. Class is Spark's error class:
// DIVIDE_BY_ZERO, ARITHMETIC_OVERFLOW, CAST_INVALID_INPUT, CAST_OVERFLOW,
// NUMERIC_VALUE_OUT_OF_RANGE or INVALID_ARGUMENT.
type RuntimeError struct {
	Class string
	Msg   string // what failed, e.g. "integer overflow in a + b"
	Row   int    // the row's index in its batch
	Pos   string // the row's source position (RowPos), or "row N"
	Expr  string // the whole expression's text
}

func (e *RuntimeError) Error() string {
	return fmt.Sprintf("[%s] %s at %s (in %s)", e.Class, e.Msg, e.Pos, e.Expr)
}

// Options configures compilation.
type Options struct {
	// Mem allocates the arrays of Arrow compute kernels; nil means memory.DefaultAllocator.
	Mem memory.Allocator
	// Now is the processing-time clock read once per Eval for current_timestamp(); nil means
	// time.Now.
	Now func() time.Time
}

// Program is a compiled expression over one input schema: Eval evaluates it over a whole
// record batch. A Program is not safe for concurrent use.
type Program struct {
	src    string
	root   node
	schema *arrow.Schema
	opts   Options
}

// Compile parses src and type-checks it against schema. Errors are *SyntaxError or
// *TypeError.
func Compile(src string, schema *arrow.Schema, opts Options) (*Program, error) {
	n, err := Parse(src)
	if err != nil {
		return nil, err
	}
	return compileNode(src, n, schema, opts)
}

// CompilePredicate is Compile for a filter condition: the expression must be boolean.
func CompilePredicate(src string, schema *arrow.Schema, opts Options) (*Program, error) {
	p, err := Compile(src, schema, opts)
	if err != nil {
		return nil, err
	}
	if t := p.root.Type(); t.Kind != KBool && t.Kind != KNull {
		return nil, &TypeError{Src: src, At: 0, Msg: fmt.Sprintf("a filter condition must be boolean, but %q is %s", src, t)}
	}
	return p, nil
}

func compileNode(src string, n Node, schema *arrow.Schema, opts Options) (*Program, error) {
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &checker{src: src, schema: schema}
	root, err := c.check(n)
	if err != nil {
		return nil, err
	}
	return &Program{src: src, root: root, schema: schema, opts: opts}, nil
}

// Type is the Spark type of the expression's result.
func (p *Program) Type() Type { return p.root.Type() }

// String returns the expression's source text.
func (p *Program) String() string { return p.src }

// Eval evaluates the expression over every row of rec (which must have the schema Compile
// saw) and returns an array of rec.NumRows() values of Type().Arrow(); the caller releases
// it. The first row that fails under ANSI rules gives a *RuntimeError naming it by pos.
func (p *Program) Eval(ctx context.Context, rec arrow.RecordBatch, pos RowPos) (arrow.Array, error) {
	c := &evalCtx{ctx: compute.WithAllocator(ctx, p.opts.Mem), mem: p.opts.Mem, rec: rec, n: int(rec.NumRows()),
		pos: pos, src: p.src, now: p.opts.Now().UnixMicro()}
	return c.arr(p.root, nil)
}

// Filter evaluates a boolean program over rec and returns the rows where it is true (NULL
// and false drop the row), filtering column by column with compute.FilterArray.
func (p *Program) Filter(ctx context.Context, rec arrow.RecordBatch, pos RowPos) (arrow.RecordBatch, error) {
	mask, err := p.Eval(ctx, rec, pos)
	if err != nil {
		return nil, err
	}
	defer mask.Release()
	return FilterBatch(compute.WithAllocator(ctx, p.opts.Mem), rec, mask)
}

// FilterBatch keeps the rows of rec where mask (a boolean array of rec's length) is true
// (null drops the row), column by column: the runs of kept rows are found once, then copied
// from each column's buffers (fixed-width, boolean and string/binary columns, into one new
// allocation from ctx's allocator, compute.GetAllocator) or, for other types, through
// compute.FilterArray. A mask that keeps every row returns rec itself, retained; one that
// keeps none a zero-row slice of it.
func FilterBatch(ctx context.Context, rec arrow.RecordBatch, mask arrow.Array) (arrow.RecordBatch, error) {
	return FilterBatchInto(ctx, rec, mask, compute.GetAllocator(ctx))
}

// FilterBatchInto is FilterBatch with the buffer of the copied columns allocated from bufs
// (the compute.FilterArray fallback still allocates from ctx's allocator). FilterBatch
// writes every byte of that buffer the output batch exposes (values, offsets, bitmaps), so
// bufs need not zero its memory: a codec.Recycler lets a filter stage reuse the buffers of
// the batches it wrote instead of allocating (zeroing, collecting) one per batch.
func FilterBatchInto(ctx context.Context, rec arrow.RecordBatch, mask arrow.Array, bufs memory.Allocator) (arrow.RecordBatch, error) {
	bm, ok := mask.(*array.Boolean)
	if !ok {
		if mask.NullN() == mask.Len() { // the predicate NULL (void)
			return rec.NewSlice(0, 0), nil
		}
		return nil, fmt.Errorf("expr: a filter mask must be boolean, not %s", mask.DataType())
	}
	s := selectMask(bm)
	switch {
	case s.kept == int(rec.NumRows()):
		rec.Retain()
		return rec, nil
	case s.kept == 0:
		return rec.NewSlice(0, 0), nil
	}
	cols, err := filterColumns(ctx, bufs, rec, mask, &s)
	if err != nil {
		return nil, err
	}
	out := arrowRecord(rec.Schema(), cols, int64(s.kept))
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// evalCtx is the state of one Eval call.
type evalCtx struct {
	ctx context.Context
	mem memory.Allocator
	rec arrow.RecordBatch
	n   int
	pos RowPos
	src string
	now int64 // current_timestamp, µs since the epoch
}

// fail builds the RuntimeError of row i.
func (c *evalCtx) fail(class string, i int, format string, args ...any) error {
	where := fmt.Sprintf("row %d", i)
	if c.pos != nil {
		where = c.pos(i)
	}
	return &RuntimeError{Class: class, Msg: fmt.Sprintf(format, args...), Row: i, Pos: where, Expr: c.src}
}

// arr evaluates n to a full-length array (constants are broadcast).
func (c *evalCtx) arr(n node, active []bool) (arrow.Array, error) {
	if k, ok := n.(*constNode); ok {
		return scalar.MakeArrayFromScalar(k.sc, c.n, c.mem)
	}
	return n.eval(c, active)
}

// arr2 evaluates the two operands a and b of a node as arr does; on an error nothing is left
// to release.
func (c *evalCtx) arr2(a, b node, active []bool) (x, y arrow.Array, err error) {
	if x, err = c.arr(a, active); err != nil {
		return nil, nil, err
	}
	if y, err = c.arr(b, active); err != nil {
		x.Release()
		return nil, nil, err
	}
	return x, y, nil
}

// datum evaluates n to a kernel argument: constants stay scalars.
func (c *evalCtx) datum(n node, active []bool) (compute.Datum, error) {
	if k, ok := n.(*constNode); ok {
		return compute.NewDatum(k.sc), nil
	}
	a, err := n.eval(c, active)
	if err != nil {
		return nil, err
	}
	d := compute.NewDatum(a)
	a.Release()
	return d, nil
}

// call runs an Arrow compute function over evaluated arguments and returns its array.
func (c *evalCtx) call(fn string, opts compute.FunctionOptions, args ...compute.Datum) (arrow.Array, error) {
	out, err := compute.CallFunction(c.ctx, fn, opts, args...)
	if err != nil {
		return nil, err
	}
	defer out.Release()
	switch d := out.(type) {
	case *compute.ArrayDatum:
		return d.MakeArray(), nil
	case *compute.ScalarDatum:
		return scalar.MakeArrayFromScalar(d.Value, c.n, c.mem)
	}
	return nil, fmt.Errorf("expr: %s returned %s", fn, out.Kind())
}

func releaseAll(ds ...compute.Datum) {
	for _, d := range ds {
		if d != nil {
			d.Release()
		}
	}
}

// node is a type-checked expression that evaluates over a batch. active, when not nil,
// marks the rows whose errors count: the rows a CASE branch or the right side of AND/OR is
// evaluated for (Spark evaluates those lazily, so an error in a branch not taken is none).
type node interface {
	Type() Type
	eval(c *evalCtx, active []bool) (arrow.Array, error)
}

// constNode is a literal or a folded constant.
type constNode struct {
	t  Type
	sc scalar.Scalar
}

func (k *constNode) Type() Type { return k.t }
func (k *constNode) eval(c *evalCtx, _ []bool) (arrow.Array, error) {
	return scalar.MakeArrayFromScalar(k.sc, c.n, c.mem)
}
func (k *constNode) isNull() bool { return !k.sc.IsValid() }

// nullConst is NULL of type t.
func nullConst(t Type) *constNode { return &constNode{t: t, sc: scalar.MakeNullScalar(t.Arrow())} }
