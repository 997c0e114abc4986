package codec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// BatchBytes is the size in bytes of the buffers rec references, children's and dictionaries'
// included: the memory rec holds (an upper bound for a slice, or for batches that share one
// dictionary, whose buffers are counted in each). 0 for nil.
func BatchBytes(rec arrow.RecordBatch) int64 {
	if rec == nil {
		return 0
	}
	var n int64
	for _, c := range rec.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	if dict := d.Dictionary(); dict != nil {
		if ad, ok := dict.(*array.Data); !ok || ad != nil {
			n += dataBytes(dict)
		}
	}
	return n
}
