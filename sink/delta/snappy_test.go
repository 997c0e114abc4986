package delta

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	ksnappy "github.com/klauspost/compress/snappy"
)

// TestSnappyCodec: the registered Snappy codec encodes with the reference encoder, and what
// it writes decodes with arrow-go's and klauspost's Snappy decoders, for incompressible,
// repetitive and empty pages; the bound covers every encoding.
func TestSnappyCodec(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Snappy)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(snappyCodec); !ok {
		t.Fatalf("registered snappy codec is %T, want snappyCodec", c)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 1<<20)
	for i := range random {
		random[i] = byte(rng.IntN(256))
	}
	for name, page := range map[string][]byte{
		"random":  random,
		"repeats": bytes.Repeat([]byte("streamkit-row-0123456789;"), 40000),
		"empty":   nil,
	} {
		enc := c.Encode(make([]byte, c.CompressBound(int64(len(page)))), page)
		if int64(len(enc)) > c.CompressBound(int64(len(page))) {
			t.Errorf("%s: %d encoded bytes exceed the bound %d", name, len(enc), c.CompressBound(int64(len(page))))
		}
		got, err := compress.Decode(c, nil, enc)
		if err != nil || !bytes.Equal(got, page) {
			t.Errorf("%s: arrow-go decodes %d bytes (%v), want the %d bytes written", name, len(got), err, len(page))
		}
		got, err = ksnappy.Decode(nil, enc)
		if err != nil || !bytes.Equal(got, page) {
			t.Errorf("%s: klauspost decodes %d bytes (%v), want the %d bytes written", name, len(got), err, len(page))
		}
		if name == "repeats" && len(enc) > len(page)/10 {
			t.Errorf("repeats: %d of %d bytes, want compression", len(enc), len(page))
		}
	}
	// arrow-go passes an empty slice with enough capacity (bytes.Buffer.Grow, then Bytes): the
	// page is encoded into it, without a new buffer per page.
	dst := make([]byte, 0, c.CompressBound(int64(len(random))))
	if n := testing.AllocsPerRun(10, func() { c.Encode(dst, random) }); n != 0 {
		t.Errorf("Encode into a slice with capacity for the page allocates %.0f times per call, want 0", n)
	}
}
