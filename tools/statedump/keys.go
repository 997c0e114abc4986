package statedump

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

// keyChunkRows is how many keys decodeKeys hands to codec.KeyArrays at a time: the per-row
// Go values of a decode then stay few and short-lived, so a dump of millions of keys does not
// make the garbage collector scan millions of pointers.
const keyChunkRows = 1 << 16

// decodeKeys decodes the encoded keys of a state table (its _key column) into typed columns
// named by names (codec.KeyArrays: a part's type is that of its first non-null value; parts
// whose values disagree in type are text), keeping the first parts parts (all when parts < 0).
// The caller releases the arrays.
func decodeKeys(mem memory.Allocator, bin *array.Binary, names []string, parts int) ([]arrow.Field, []arrow.Array, error) {
	fields, arrs, err := decodeChunked(mem, bin, names)
	if err != nil {
		return nil, nil, err
	}
	if parts >= 0 && parts < len(arrs) {
		for _, a := range arrs[parts:] {
			a.Release()
		}
		fields, arrs = fields[:parts], arrs[:parts]
	}
	return fields, arrs, nil
}

// keysOf returns the keys of rows [from, to) of bin (views into its data, no copies).
func keysOf(bin *array.Binary, from, to int) [][]byte {
	keys := make([][]byte, to-from)
	for i := range keys {
		keys[i] = bin.Value(from + i)
	}
	return keys
}

// decodeChunked is codec.KeyArrays over every row of bin, decoded keyChunkRows rows at a time
// and concatenated. Where chunks disagree on a column's type (a part whose type differs
// between rows of different chunks, or keys of different widths), it decodes all rows at
// once, so the result is always KeyArrays' over the whole column.
func decodeChunked(mem memory.Allocator, bin *array.Binary, names []string) ([]arrow.Field, []arrow.Array, error) {
	n := bin.Len()
	if n <= keyChunkRows {
		return codec.KeyArrays(mem, keysOf(bin, 0, n), names)
	}
	var chunks [][]arrow.Array
	var fields []arrow.Field
	release := func() {
		for _, c := range chunks {
			for _, a := range c {
				a.Release()
			}
		}
	}
	defer release()
	var types []arrow.DataType // per column: the type of its first chunk with a non-null value
	whole := false
	for from := 0; from < n && !whole; from += keyChunkRows {
		f, a, err := codec.KeyArrays(mem, keysOf(bin, from, min(from+keyChunkRows, n)), names)
		if err != nil {
			return nil, nil, fmt.Errorf("%w (in rows %d…)", err, from)
		}
		chunks = append(chunks, a)
		if fields == nil {
			fields, types = f, make([]arrow.DataType, len(f))
		}
		if len(f) != len(fields) {
			whole = true
			break
		}
		for c, col := range a {
			if col.NullN() == col.Len() {
				continue // all null: takes any type
			}
			switch {
			case types[c] == nil:
				types[c] = f[c].Type
			case !arrow.TypeEqual(types[c], f[c].Type):
				whole = true
			}
		}
	}
	if whole {
		return codec.KeyArrays(mem, keysOf(bin, 0, n), names)
	}
	out := make([]arrow.Array, len(fields))
	for c := range fields {
		if types[c] == nil {
			types[c] = arrow.BinaryTypes.String // KeyArrays' type of an all-null part
		}
		fields[c].Type = types[c]
		parts := make([]arrow.Array, len(chunks))
		for i, ch := range chunks {
			if arrow.TypeEqual(ch[c].DataType(), types[c]) {
				parts[i] = ch[c]
				parts[i].Retain()
			} else {
				parts[i] = array.MakeArrayOfNull(mem, types[c], ch[c].Len())
			}
		}
		var err error
		out[c], err = array.Concatenate(parts, mem)
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			for _, a := range out[:c] {
				a.Release()
			}
			return nil, nil, err
		}
	}
	return fields, out, nil
}
