package stage

import (
	"context"
	"sync"
)

// The queues between a stage's goroutines (reader → operator, operator → writer) hold at most
// queueBatches messages and, beyond their first batch, at most queueBytes of batch data. A
// count alone let wide batches pile up: 8 batches of 64Ki rows of 128-byte records are 64 MB
// per queue, held twice over by the garbage collector's headroom, in every stage of a pipeline.
const (
	queueBatches = 8
	queueBytes   = 32 << 20
)

// byteBudget bounds the batch bytes in a queue: take waits until the queue holds less than
// queueBytes or nothing (so a single batch larger than the budget still passes).
type byteBudget struct {
	mu    sync.Mutex
	used  int64
	freed chan struct{} // signalled (capacity 1) when bytes are given back
}

func newByteBudget() *byteBudget { return &byteBudget{freed: make(chan struct{}, 1)} }

// take reserves n bytes, waiting for room; false when ctx or stop ended the wait first.
func (b *byteBudget) take(ctx context.Context, stop <-chan struct{}, n int64) bool {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= queueBytes {
			b.used += n
			b.mu.Unlock()
			return true
		}
		b.mu.Unlock()
		select {
		case <-b.freed:
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		}
	}
}

// give returns n bytes reserved by take.
func (b *byteBudget) give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	select {
	case b.freed <- struct{}{}:
	default:
	}
}
