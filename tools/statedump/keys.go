package statedump

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

// decodeKeys decodes the encoded keys of a state table (its _key column) into typed columns
// named by names (codec.KeyArrays), keeping the first parts parts (all when parts < 0). The
// caller releases the arrays.
func decodeKeys(mem memory.Allocator, bin *array.Binary, names []string, parts int) ([]arrow.Field, []arrow.Array, error) {
	keys := make([][]byte, bin.Len())
	for i := range keys {
		keys[i] = bin.Value(i)
	}
	fields, arrs, err := codec.KeyArrays(mem, keys, names)
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
