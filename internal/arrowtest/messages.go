package arrowtest

import (
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

// EachMessage decodes the streamkit stream r and calls each for every message in order (a
// data batch or a control), releasing a batch after each returns; it returns the stream's
// schema. A decoding error fails the test.
func EachMessage(t testing.TB, r io.Reader, each func(codec.Message)) *arrow.Schema {
	t.Helper()
	rd, err := codec.NewReader(r, memory.NewGoAllocator())
	if err != nil {
		t.Fatalf("decode stream: %v", err)
	}
	defer rd.Release()
	for {
		m, err := rd.Next()
		if err == io.EOF {
			return rd.Schema()
		}
		if err != nil {
			t.Fatalf("decode stream: %v", err)
		}
		each(m)
		if m.Batch != nil {
			m.Batch.Release()
		}
	}
}

// AssertFreed fails the test unless everything mem allocated is freed, waiting up to 2 s
// for it: after an error a stage frees the input it read ahead from another goroutine
// (stage.stopReader), which may finish just after the stage's Run returns.
func AssertFreed(t testing.TB, mem *memory.CheckedAllocator) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); mem.CurrentAlloc() != 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	mem.AssertSize(t, 0)
}
