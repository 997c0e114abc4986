package codec

import "github.com/apache/arrow-go/v18/arrow"

// BatchBytes is the size in bytes of the buffers rec references, children's included: the
// memory rec holds (an upper bound for a slice, whose buffers are shared). 0 for nil.
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
	return n
}
