package backfill

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// constant is a --with COL=VALUE column: the value converted once to the column's type (the
// target column's type when the target has it, else string — as write-delta --with), kept as
// an array sliced to each batch's length.
type constant struct {
	name  string
	value string
	typ   arrow.DataType
	arr   arrow.Array // len ≥ every batch seen so far; nil until first use
}

func newConstant(mem memory.Allocator, name, value string, typ arrow.DataType) (*constant, error) {
	c := &constant{name: name, value: value, typ: typ}
	probe, err := c.build(mem, 1)
	if err != nil {
		return nil, err
	}
	probe.Release()
	return c, nil
}

func (c *constant) build(mem memory.Allocator, n int) (arrow.Array, error) {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	b.ReserveData(n * len(c.value))
	for i := 0; i < n; i++ {
		b.Append(c.value)
	}
	s := b.NewArray()
	if arrow.TypeEqual(c.typ, arrow.BinaryTypes.String) {
		return s, nil
	}
	defer s.Release()
	out, err := compute.CastArray(compute.WithAllocator(context.Background(), mem), s, compute.SafeCastOptions(c.typ))
	if err != nil {
		return nil, fmt.Errorf("--with %s=%s: cannot convert the value to the target's %s column: %v", c.name, c.value, c.typ, err)
	}
	return out, nil
}

// slice returns the constant as an array of n rows (a new reference).
func (c *constant) slice(mem memory.Allocator, n int) (arrow.Array, error) {
	if c.arr == nil || c.arr.Len() < n {
		size := max(n, 1024)
		if c.arr != nil {
			size = max(n, 2*c.arr.Len())
			c.arr.Release()
			c.arr = nil
		}
		a, err := c.build(mem, size)
		if err != nil {
			return nil, err
		}
		c.arr = a
	}
	return array.NewSlice(c.arr, 0, int64(n)), nil
}

func (c *constant) release() {
	if c.arr != nil {
		c.arr.Release()
		c.arr = nil
	}
}
