package window

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TakeRows returns a new batch with the given rows of rec (ascending indices), e.g. the
// Rejected rows for the side output. Runs of consecutive rows are copied as slices. The
// caller releases the result; rec is borrowed.
func TakeRows(mem memory.Allocator, rec arrow.RecordBatch, rows []int32) (arrow.RecordBatch, error) {
	var runs [][2]int64
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && rows[j] == rows[j-1]+1 {
			j++
		}
		runs = append(runs, [2]int64{int64(rows[i]), int64(rows[j-1]) + 1})
		i = j
	}
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for c := range cols {
		if len(runs) == 0 {
			cols[c] = array.MakeArrayOfNull(mem, rec.Column(c).DataType(), 0)
			continue
		}
		parts := make([]arrow.Array, len(runs))
		for i, r := range runs {
			parts[i] = array.NewSlice(rec.Column(c), r[0], r[1])
		}
		var err error
		cols[c], err = array.Concatenate(parts, mem)
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			return nil, fmt.Errorf("take rows of column %q: %w", rec.Schema().Field(c).Name, err)
		}
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(len(rows))), nil
}
