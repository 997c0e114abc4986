package stage

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

// errQuiet ends a stage without an error: the downstream reader went away (EPIPE).
var errQuiet = errors.New("downstream closed")

// refuseTerminal is the usage error of a stage whose stdout, where it would write its binary
// Arrow IPC stream, is a terminal (as gzip refuses to write compressed data there).
func refuseTerminal(o *Options) error {
	if !isTerminal(o.Stdout) {
		return nil
	}
	return Usagef("%s writes a binary Arrow IPC stream, and stdout is a terminal: pipe it into a reader, e.g. streamkit %s … | streamkit print", o.Tool, o.Tool)
}

// isBrokenPipe reports whether err says the reader of our stdout went away.
func isBrokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}

// outItem is one message for the writer goroutine.
type outItem struct {
	rec   arrow.RecordBatch
	ctrl  *codec.Control
	bytes int64 // taken from the writer's budget
}

// writer writes the output stream from its own goroutine, so encoding and the pipe overlap
// with the operator's work. The IPC end-of-stream marker is written only after an end
// control: a stage that fails or is aborted leaves its output without the marker, so the
// downstream stage reports a truncated stream instead of taking it for end=final.
type writer struct {
	ch   chan outItem
	mem  *byteBudget
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
	done chan struct{}

	// finalStats, when set (before the first send), returns the stage's last stats control,
	// written just before the end control.
	finalStats func() codec.Control
	statsMu    sync.Mutex // sendStats against close
	closed     bool       // ch is closed
}

// startWriter starts the writer of stream schema s on w; with schemaFirst (a shard of keyby
// --shards) it writes the schema at once, not with the first batch.
func startWriter(w io.Writer, s *arrow.Schema, mem memory.Allocator, schemaFirst bool) *writer {
	wr := &writer{ch: make(chan outItem, queueBatches), mem: newByteBudget(), done: make(chan struct{})}
	cw := codec.NewWriter(w, s, mem)
	wr.wg.Add(1)
	go func() {
		defer wr.wg.Done()
		var err error
		if schemaFirst { // a shard tells keyby its output schema at once (closeSinkShardStdout)
			if err = cw.WriteSchema(); err != nil {
				wr.setErr(err)
			}
		}
		ended := false
		for it := range wr.ch {
			if err == nil {
				switch {
				case it.rec != nil:
					err = cw.Write(it.rec)
				case ended: // a stats control the ticker sent after the end: the end is the last batch
				default:
					if it.ctrl.Kind == codec.End && wr.finalStats != nil {
						err = cw.WriteControl(wr.finalStats())
					}
					if err == nil {
						err = cw.WriteControl(*it.ctrl)
					}
					ended = it.ctrl.Kind == codec.End
				}
				if err != nil {
					wr.setErr(err)
				}
			}
			if it.rec != nil {
				it.rec.Release()
			}
			wr.mem.give(it.bytes)
		}
		if err == nil && ended {
			if err = cw.Close(); err != nil {
				wr.setErr(err)
			}
		}
	}()
	return wr
}

func (w *writer) setErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		if isBrokenPipe(err) {
			err = errQuiet
		}
		w.err = err
		close(w.done)
	}
}

func (w *writer) getErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// send queues rec (taking over the caller's reference) or a control.
func (w *writer) send(ctx context.Context, it outItem) error {
	if err := w.getErr(); err != nil {
		if it.rec != nil {
			it.rec.Release()
		}
		return err
	}
	it.bytes = codec.BatchBytes(it.rec)
	if w.mem.take(ctx, w.done, it.bytes) {
		select {
		case w.ch <- it:
			return nil
		case <-w.done:
		case <-ctx.Done():
		}
		w.mem.give(it.bytes)
	}
	if it.rec != nil {
		it.rec.Release()
	}
	if err := w.getErr(); err != nil {
		return err
	}
	return ErrInterrupted
}

// sendStats queues stats control c unless the queue is full or closed: it never waits, so
// a stage's progress reports add no back-pressure (a report dropped is followed by the next).
func (w *writer) sendStats(c codec.Control) {
	w.statsMu.Lock()
	defer w.statsMu.Unlock()
	if w.closed || w.getErr() != nil {
		return
	}
	select {
	case w.ch <- outItem{ctrl: &c}:
	default:
	}
}

// close flushes and ends the stream; it returns the first write error. After an abort (ctx
// done: a second Ctrl-C) it does not wait for a write blocked on a full pipe: the process is
// about to exit, and waiting would make the abort hang until the reader drains.
func (w *writer) close(aborted <-chan struct{}) error {
	w.statsMu.Lock()
	w.closed = true
	close(w.ch)
	w.statsMu.Unlock()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		return w.getErr()
	case <-aborted:
		return ErrInterrupted
	}
}

// readResult is one message from the reader goroutine; the receiver gives bytes back to the
// reader's budget (received).
type readResult struct {
	msg   codec.Message
	err   error
	bytes int64
}

// inbox is the queue of messages a stage's reader goroutine has read ahead.
type inbox struct {
	ch   chan readResult
	mem  *byteBudget
	done chan struct{} // closed when the reader goroutine has returned
}

// received gives r's bytes back to the read-ahead budget once the stage took r off the queue.
func (in *inbox) received(r readResult) { in.mem.give(r.bytes) }

// startReader reads rd from its own goroutine until an end, an error or ctx is done, at most
// queueBatches messages and queueBytes of batches ahead of the stage.
func startReader(ctx context.Context, rd *codec.Reader) *inbox {
	in := &inbox{ch: make(chan readResult, queueBatches), mem: newByteBudget(), done: make(chan struct{})}
	go func() {
		defer close(in.done)
		defer close(in.ch)
		for {
			m, err := rd.Next()
			if err == io.EOF {
				return
			}
			r := readResult{msg: m, err: err, bytes: codec.BatchBytes(m.Batch)}
			sent := false
			if in.mem.take(ctx, nil, r.bytes) {
				select {
				case in.ch <- r:
					sent = true
				case <-ctx.Done():
				}
			}
			if !sent {
				if m.Batch != nil {
					m.Batch.Release()
				}
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return in
}

// AbortHook, when set (by main, before any stage runs), is called on a stage's second
// SIGINT/SIGTERM, after the stage's context is cancelled. A stage then returns
// ErrInterrupted as soon as it notices, but a read or write blocked in the kernel (stdin
// before the upstream sent its schema, a full pipe) does not notice: main uses the hook to
// end the process shortly after in any case, with exit code 130.
var AbortHook func()

// signals turns the first SIGINT/SIGTERM into a "finish the epoch and stop" request and the
// second into an abort (ctx cancellation).
type signals struct {
	first   chan struct{}
	aborted chan struct{} // closed on the second signal
	stopCh  chan struct{}
	once    sync.Once
	osch    chan os.Signal
}

func watchSignals(o *Options, abort context.CancelFunc) *signals {
	s := &signals{first: make(chan struct{}), aborted: make(chan struct{}), stopCh: make(chan struct{})}
	switch {
	case o.NoSignals:
	case o.shard().IsShard():
		// A shard of keyby --shards: keyby stops its shards together, at one barrier (it
		// sends them that barrier and then end=pause), and kills them on a second signal.
		// A Ctrl-C reaching the shards too (same process group) would make each stop at its
		// own next barrier instead.
		signal.Ignore(os.Interrupt, syscall.SIGTERM)
	default:
		s.osch = make(chan os.Signal, 2)
		signal.Notify(s.osch, os.Interrupt, syscall.SIGTERM)
	}
	go func() {
		n := 0
		for {
			select {
			case <-s.stopCh:
				return
			case <-s.osch:
			case <-o.Interrupt:
			}
			n++
			if n == 1 {
				o.Log.Info("interrupt: finishing the current epoch, then stopping (interrupt again to abort)")
				close(s.first)
			} else {
				o.Log.Warn("second interrupt: aborting")
				close(s.aborted)
				abort()
				if h := AbortHook; h != nil {
					h()
				}
				return
			}
		}
	}()
	return s
}

func (s *signals) stop() {
	s.once.Do(func() {
		close(s.stopCh)
		if s.osch != nil {
			signal.Stop(s.osch)
		}
	})
}

func (s *signals) requested() bool {
	select {
	case <-s.first:
		return true
	default:
		return false
	}
}
