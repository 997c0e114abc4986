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

// isBrokenPipe reports whether err says the reader of our stdout went away.
func isBrokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}

// outItem is one message for the writer goroutine.
type outItem struct {
	rec  arrow.RecordBatch
	ctrl *codec.Control
}

// writer writes the output stream from its own goroutine, so encoding and the pipe overlap
// with the operator's work. The IPC end-of-stream marker is written only after an end
// control: a stage that fails or is aborted leaves its output without the marker, so the
// downstream stage reports a truncated stream instead of taking it for end=final.
type writer struct {
	ch   chan outItem
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
	done chan struct{}
}

func startWriter(w io.Writer, s *arrow.Schema, mem memory.Allocator) *writer {
	wr := &writer{ch: make(chan outItem, 8), done: make(chan struct{})}
	cw := codec.NewWriter(w, s, mem)
	wr.wg.Add(1)
	go func() {
		defer wr.wg.Done()
		var err error
		ended := false
		for it := range wr.ch {
			if err == nil {
				if it.rec != nil {
					err = cw.Write(it.rec)
				} else {
					err = cw.WriteControl(*it.ctrl)
					ended = it.ctrl.Kind == codec.End
				}
				if err != nil {
					wr.setErr(err)
				}
			}
			if it.rec != nil {
				it.rec.Release()
			}
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
	select {
	case w.ch <- it:
		return nil
	case <-w.done:
		if it.rec != nil {
			it.rec.Release()
		}
		return w.getErr()
	case <-ctx.Done():
		if it.rec != nil {
			it.rec.Release()
		}
		return ErrInterrupted
	}
}

// close flushes and ends the stream; it returns the first write error. After an abort (ctx
// done: a second Ctrl-C) it does not wait for a write blocked on a full pipe: the process is
// about to exit, and waiting would make the abort hang until the reader drains.
func (w *writer) close(aborted <-chan struct{}) error {
	close(w.ch)
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		return w.getErr()
	case <-aborted:
		return ErrInterrupted
	}
}

// readResult is one message from the reader goroutine.
type readResult struct {
	msg codec.Message
	err error
}

// startReader reads rd from its own goroutine until an end, an error or ctx is done; done is
// closed when the goroutine has returned.
func startReader(ctx context.Context, rd *codec.Reader) (<-chan readResult, <-chan struct{}) {
	ch := make(chan readResult, 8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for {
			m, err := rd.Next()
			if err == io.EOF {
				return
			}
			select {
			case ch <- readResult{m, err}:
			case <-ctx.Done():
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
	return ch, done
}

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
	case os.Getenv(EnvShard) != "":
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
