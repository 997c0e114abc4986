package delta

import (
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/golang/snappy"
)

// arrow-go compresses Snappy pages with klauspost/compress/snappy.Encode, which is
// s2.EncodeSnappyBetter: a longer search for matches than Snappy's own. On data that hardly
// compresses (unique ids, random payloads) that search was the largest cost of writing
// Parquet: 42% of write-delta's CPU in the W3 benchmark. Pages are encoded with
// github.com/golang/snappy, the Go port of the reference Snappy encoder (the algorithm of the
// snappy C++ library that Spark and delta-rs use): the same block format, read by any Snappy
// decoder. W3's 10M rows: 5.8 -> 3.5 s and 10.0 -> 6.2 CPU-s, files 3% larger than with
// "better" (1.195 against 1.159 GB); the flights data: the same size (15.9 MB for 3M rows).
// Decoding and the streaming API stay arrow-go's. compress.RegisterCodec is global: every
// Parquet file streamkit writes uses this encoder.
type snappyCodec struct {
	base interface {
		compress.ErrorCodec
		compress.StreamingCodec
	}
}

// Encode compresses src into dst's capacity when it is large enough. arrow-go hands in an
// empty slice with the capacity of CompressBound (bytes.Buffer.Grow, then Bytes), and
// snappy.Encode looks at the length: it would allocate, and zero, a new buffer for every page.
func (c snappyCodec) Encode(dst, src []byte) []byte {
	if n := snappy.MaxEncodedLen(len(src)); n > 0 && cap(dst) >= n {
		dst = dst[:n]
	}
	return snappy.Encode(dst, src)
}

func (c snappyCodec) EncodeLevel(dst, src []byte, _ int) []byte { return c.Encode(dst, src) }

func (c snappyCodec) CompressBound(n int64) int64 { return int64(snappy.MaxEncodedLen(int(n))) }

func (c snappyCodec) Decode(dst, src []byte) []byte { return c.base.Decode(dst, src) }

func (c snappyCodec) DecodeWithError(dst, src []byte) ([]byte, error) {
	return c.base.DecodeWithError(dst, src)
}

func init() {
	base, err := compress.GetCodec(compress.Codecs.Snappy)
	if err != nil {
		panic(err)
	}
	b, ok := base.(interface {
		compress.ErrorCodec
		compress.StreamingCodec
	})
	if !ok {
		panic("arrow-go's snappy codec lost its decoder or streaming API")
	}
	compress.RegisterCodec(compress.Codecs.Snappy, snappyCodec{base: b})
}
