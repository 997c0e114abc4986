package codec

import (
	"bytes"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// seedStream returns a valid stream with data, every control kind and an end.
func seedStream(f *testing.F) []byte {
	mem := memory.NewGoAllocator()
	s := testSchema()
	var buf bytes.Buffer
	w := NewWriter(&buf, s, mem)
	rec := testBatch(mem, s, 4)
	defer rec.Release()
	w.Write(rec)
	w.WriteControl(WatermarkControl(time.Unix(1700000000, 0)))
	w.WriteControl(BarrierControl(1))
	w.WriteControl(EndControl(Final))
	w.Close()
	return buf.Bytes()
}

// FuzzReader feeds arbitrary bytes (seeded with valid, truncated and altered streams) to the
// stream reader: it must return messages or errors, never panic or leak.
func FuzzReader(f *testing.F) {
	good := seedStream(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(good[:len(good)-8])
	bad := bytes.Clone(good)
	bad[len(bad)/3] ^= 0xff
	f.Add(bad)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		r, err := NewReader(bytes.NewReader(data), mem)
		if err != nil {
			mem.AssertSize(t, 0)
			return
		}
		for i := 0; i < 1000; i++ {
			m, err := r.Next()
			if m.Batch != nil {
				m.Batch.Release()
			}
			if err != nil {
				break
			}
		}
		r.Release()
	})
}
