package codec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Constant is a --with COL=VALUE column (write-delta, backfill): the text value converted once
// to the column's type, kept as an array that is sliced to each batch's length (grown by
// doubling). Not safe for concurrent use.
type Constant struct {
	Name  string
	Value string
	Type  arrow.DataType
	owner string      // whose column the cast error names: "table's", "target's"
	arr   arrow.Array // len ≥ every batch seen so far; nil until first use
}

// NewConstant prepares a constant column of type typ (utf8, or the type the destination
// already has for the column, e.g. an integer or a date: the value is cast to it). owner names
// the destination in the error when the value does not convert ("table's", "target's").
func NewConstant(mem memory.Allocator, name, value string, typ arrow.DataType, owner string) (*Constant, error) {
	c := &Constant{Name: name, Value: value, Type: typ, owner: owner}
	probe, err := c.build(mem, 1)
	if err != nil {
		return nil, err
	}
	probe.Release()
	return c, nil
}

func (c *Constant) build(mem memory.Allocator, n int) (arrow.Array, error) {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	b.ReserveData(n * len(c.Value))
	for i := 0; i < n; i++ {
		b.Append(c.Value)
	}
	s := b.NewArray()
	if arrow.TypeEqual(c.Type, arrow.BinaryTypes.String) {
		return s, nil
	}
	defer s.Release()
	out, err := compute.CastArray(compute.WithAllocator(context.Background(), mem), s, compute.SafeCastOptions(c.Type))
	if err != nil {
		return nil, fmt.Errorf("--with %s=%s: cannot convert the value to the %s %s column: %v", c.Name, c.Value, c.owner, c.Type, err)
	}
	return out, nil
}

// Slice returns the constant as an array of n rows (a new reference the caller releases).
func (c *Constant) Slice(mem memory.Allocator, n int) (arrow.Array, error) {
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

// Release frees the cached array.
func (c *Constant) Release() {
	if c.arr != nil {
		c.arr.Release()
		c.arr = nil
	}
}
