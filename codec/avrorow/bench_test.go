package avrorow

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/linkedin/goavro/v2"
)

// BenchmarkDecode measures one record of the 12-field v1 schema (nested record, array, map,
// unions, enum, decimal, timestamps) per op: plain with the writer schema, and Confluent wire
// format resolved into v2.
func BenchmarkDecode(b *testing.B) {
	t := &testing.T{}
	body := encode(t, v1, native("PAID", goavro.Union("string", "hi")))
	for _, c := range []struct {
		name   string
		reader string
		in     []byte
		lookup Lookup
	}{
		{"plain", v1, body, nil},
		{"wire-resolved", v2, wire(1, body), func(uint32) (string, error) { return v1, nil }},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := ParseSchema(c.reader)
			if err != nil {
				b.Fatal(err)
			}
			d := NewDecoder(s, c.lookup)
			d.Open(memory.NewGoAllocator())
			b.SetBytes(int64(len(c.in)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if why := d.Append(c.in); why != "" {
					b.Fatal(why)
				}
				if i%4096 == 4095 {
					d.NewArray().Release()
				}
			}
			d.Release()
		})
	}
}
