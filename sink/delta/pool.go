package delta

import (
	"reflect"
	"runtime"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
)

// DefaultLaneThreshold is how much Arrow data an epoch carries before its batches are spread
// over parallel writers (StreamConfig.Writers).
const DefaultLaneThreshold = 8 << 20

// DefaultWriters is the default number of parallel Parquet writers: the CPUs available, at
// most 4.
func DefaultWriters() int { return max(1, min(runtime.GOMAXPROCS(0), 4)) }

// WriterPool writes rows into data files on parallel lanes: an epoch of write-delta, or all
// of a backfill. Parquet encoding is CPU-bound, so once more than a threshold of data was
// written, batches are spread over up to n lanes, each a DataWriter with its own files,
// encoding in its own goroutine. Up to the threshold everything stays in one lane (one file
// per partition); with threshold 0 every batch after the first may go to another lane. Row
// order across files is not kept (a Delta table has none). A WriterPool is used by one
// goroutine.
type WriterPool struct {
	newWriter func() (*DataWriter, error)
	n         int
	threshold int64
	lanes     []*lane
	next      int
	bytes     int64
	failed    error
}

type lane struct {
	dw   *DataWriter
	in   chan arrow.RecordBatch
	done chan struct{}
	mu   sync.Mutex
	err  error // the first write error; the lane then drops the batches it receives
}

func (l *lane) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// NewWriterPool returns a pool of up to n lanes (at least 1) that starts spreading batches
// once threshold bytes of Arrow data were written; newWriter makes each lane's DataWriter.
func NewWriterPool(n int, threshold int64, newWriter func() (*DataWriter, error)) *WriterPool {
	return &WriterPool{newWriter: newWriter, n: max(1, n), threshold: threshold}
}

func (e *WriterPool) startLane() error {
	dw, err := e.newWriter()
	if err != nil {
		return err
	}
	l := &lane{dw: dw, in: make(chan arrow.RecordBatch, 2), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for rec := range l.in {
			if l.failure() == nil {
				if err := l.dw.Write(rec); err != nil {
					l.mu.Lock()
					l.err = err
					l.mu.Unlock()
				}
			}
			rec.Release()
		}
	}()
	e.lanes = append(e.lanes, l)
	return nil
}

// Write queues rec (borrowed) for a lane. An error of an earlier write is returned here or by
// Close.
func (e *WriterPool) Write(rec arrow.RecordBatch) error {
	if e.failed != nil {
		return e.failed
	}
	for _, l := range e.lanes {
		if err := l.failure(); err != nil {
			e.failed = err
			return err
		}
	}
	size := codec.BatchBytes(rec)
	if len(e.lanes) == 0 || (e.bytes >= e.threshold && len(e.lanes) < e.n) {
		if err := e.startLane(); err != nil {
			e.failed = err
			return err
		}
	}
	e.bytes += size
	rec.Retain()
	if e.bytes <= e.threshold {
		e.lanes[0].in <- rec
		return nil
	}
	// Round-robin, but a lane busy encoding a row group (its queue full) is passed over for
	// one that can take the batch now: otherwise the lanes take turns instead of encoding at
	// the same time.
	for k := range e.lanes {
		l := e.lanes[(e.next+k)%len(e.lanes)]
		select {
		case l.in <- rec:
			e.next += k + 1
			return nil
		default:
		}
	}
	cases := make([]reflect.SelectCase, len(e.lanes))
	for i, l := range e.lanes {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectSend, Chan: reflect.ValueOf(l.in), Send: reflect.ValueOf(rec)}
	}
	chosen, _, _ := reflect.Select(cases)
	e.next = chosen + 1
	return nil
}

// stop closes the lane's queue, waits until its goroutine has written what was queued and
// returns its first write error.
func (l *lane) stop() error {
	if l.in != nil {
		close(l.in)
		<-l.done
		l.in = nil
	}
	return l.failure()
}

// drain stops every lane's goroutine and returns the first write error.
func (e *WriterPool) drain() error {
	var first error
	for _, l := range e.lanes {
		if err := l.stop(); err != nil && first == nil {
			first = err
		}
	}
	if first == nil {
		first = e.failed
	}
	return first
}

// Bytes is the Arrow data written so far (codec.BatchBytes).
func (e *WriterPool) Bytes() int64 { return e.bytes }

// Close finishes every lane and returns the add actions of all data files (in lane order).
// Each lane stops and closes its writer (encoding its files' last row groups) on its own
// goroutine: a lane still encoding a full row group must not hold back another lane's last
// one (stopping them in turn left a core idle at the end of every epoch).
func (e *WriterPool) Close() ([]delta.Add, error) {
	adds := make([][]delta.Add, len(e.lanes))
	errs := make([]error, len(e.lanes))
	var wg sync.WaitGroup
	for i, l := range e.lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = l.stop(); errs[i] == nil {
				adds[i], errs[i] = l.dw.Close()
			}
		}()
	}
	wg.Wait()
	if e.failed != nil {
		return nil, e.failed
	}
	var all []delta.Add
	for i := range e.lanes {
		if errs[i] != nil {
			return nil, errs[i]
		}
		all = append(all, adds[i]...)
	}
	return all, nil
}

// Abort stops the lanes and deletes every data file they wrote; it returns how many files
// were deleted.
func (e *WriterPool) Abort() (int, error) {
	e.drain()
	var first error
	files := 0
	for _, l := range e.lanes {
		files += len(l.dw.Files())
		if err := l.dw.Abort(); err != nil && first == nil {
			first = err
		}
	}
	return files, first
}
