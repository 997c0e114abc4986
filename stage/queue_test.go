package stage

import (
	"context"
	"testing"
	"time"
)

// TestByteBudget: a queue takes batches until it holds queueBytes, then waits for bytes to be
// given back; a batch larger than the budget passes when the queue is empty; a cancelled
// context or a closed stop channel ends the wait.
func TestByteBudget(t *testing.T) {
	ctx := context.Background()
	b := newByteBudget()
	if !b.take(ctx, nil, queueBytes+1) {
		t.Fatal("an oversized batch into an empty queue must pass")
	}
	got := make(chan bool, 1)
	go func() { got <- b.take(ctx, nil, 1) }()
	select {
	case <-got:
		t.Fatal("take passed while the queue is over its budget")
	case <-time.After(50 * time.Millisecond):
	}
	b.give(queueBytes + 1)
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("take failed after bytes were given back")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("take still waits after bytes were given back")
	}
	if !b.take(ctx, nil, queueBytes-1) {
		t.Fatal("a batch that fits must pass")
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { got <- b.take(cctx, nil, 2) }()
	cancel()
	if ok := <-got; ok {
		t.Fatal("take passed after its context was cancelled")
	}
	stop := make(chan struct{})
	go func() { got <- b.take(ctx, stop, 2) }()
	close(stop)
	if ok := <-got; ok {
		t.Fatal("take passed after stop was closed")
	}
}
