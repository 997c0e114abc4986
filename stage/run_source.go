package stage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/state"
)

// RunSource runs src, writing its stream to o.Stdout: it replays the uncommitted epochs of
// the offsets WAL exactly, then reads new input, cutting epochs every o.EpochInterval (rows or
// not) and at the end of input, writing each epoch's end position to the WAL before its barrier. At the
// end of input it sends end=pause when checkpointing and end=final otherwise (o.End
// overrides). On the first signal it cuts the current epoch, sends end=pause and returns
// ErrInterrupted.
func RunSource(ctx context.Context, o SourceOptions, src Source) (err error) {
	o.defaults()
	if err := o.ResolveShard(); err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	if err := refuseTerminal(&o.Options); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := watchSignals(&o.Options, cancel)
	defer sig.stop()
	l := &sourceLoop{ctx: ctx, o: &o, env: newEnv(&o.Options), src: src, sig: sig}
	l.env.BatchRows, l.env.Linger = o.BatchRows, o.Linger
	if err := openCheckpoint(&o.Options, l.env, false); err != nil {
		return err
	}
	defer l.env.Dir.Close()
	if err := restoreEpoch(&o.Options, l.env, nil); err != nil {
		return err
	}
	committedPos, haveStart, replay, err := l.resumePoint()
	if err != nil {
		return err
	}
	schema, err := src.Open(ctx, l.env, committedPos)
	if err != nil {
		return err
	}
	defer src.Close()
	l.lastPos = src.Position()
	if l.env.Dir != nil && l.env.Committed == 0 && !haveStart {
		if err := l.env.Dir.WriteOffsets(0, l.lastPos); err != nil {
			return err
		}
	}
	l.w = startWriter(o.Stdout, outputSchema(schema, nil, l.env.Dir != nil, l.env), l.env.Mem, l.env.Shard.IsShard())
	defer func() {
		if cerr := l.closeOut(); err == nil && cerr != nil && cerr != errQuiet {
			err = fmt.Errorf("%s: write stdout: %w", o.Tool, cerr)
		}
		if err == errQuiet {
			err = nil
		}
	}()
	l.bind()
	prog := startProgress(&o.Options, l.env.Stats, l.w)
	defer prog.stop()

	if err := l.replay(replay); err != nil {
		return err
	}
	return l.run()
}

// sourceLoop is one run of RunSource: the source, the output and the epoch being cut.
type sourceLoop struct {
	ctx context.Context
	o   *SourceOptions
	env *Env
	src Source
	sig *signals
	w   *writer

	closed bool // the output stream is closed (closeOut)

	observer  CommitObserver // nil unless src observes commits and the stage has a checkpoint
	observed  uint64         // the newest commit told to observer
	lastCheck time.Time      // when commits were last looked for

	limiter  EpochLimiter      // nil unless src bounds its epochs
	progress PartitionProgress // nil unless src reports partition progress on barriers
	wmSrc    SourceWatermarker // nil unless src derives a watermark
	lastWM   time.Time         // the newest watermark sent

	next       uint64    // the epoch being read
	lastPos    Position  // the position at the last cut
	emitted    bool      // a barrier was sent in this run
	rows       int64     // rows of the current epoch (plus one for the end-of-time watermark)
	epochStart time.Time // when the current epoch began
}

// resumePoint reads, with a checkpoint, the position to open the source at (the committed
// epoch's end, or the resolved start of a run that committed nothing yet: haveStart) and the
// uncommitted epochs of the offsets WAL to replay.
func (l *sourceLoop) resumePoint() (committedPos Position, haveStart bool, replay []uint64, err error) {
	o, env := l.o, l.env
	if env.Dir == nil {
		return nil, false, nil, nil
	}
	if env.Committed > 0 {
		if committedPos, err = state.ReadOffsets(env.Dir.Path, env.Committed); err != nil {
			return nil, false, nil, fmt.Errorf("%s: offsets of committed epoch %d: %w", o.Tool, env.Committed, err)
		}
	} else if p, err := state.ReadOffsets(env.Dir.Path, 0); err == nil {
		// The resolved start of a run that committed nothing yet (see Source).
		committedPos, haveStart = p, true
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, false, nil, fmt.Errorf("%s: start position (offsets of epoch 0): %w", o.Tool, err)
	}
	eps, err := state.Epochs(env.Dir.Path, state.OffsetsDir)
	if err != nil {
		return nil, false, nil, err
	}
	for _, n := range eps {
		if n > env.Committed {
			replay = append(replay, n)
		}
	}
	return committedPos, haveStart, replay, nil
}

// bind looks up the optional interfaces of the source, once, after Open.
func (l *sourceLoop) bind() {
	if observer, ok := l.src.(CommitObserver); ok && l.env.Dir != nil {
		l.observer = observer
	}
	l.observed = l.env.Committed
	l.lastCheck = l.o.Now()
	l.limiter, _ = l.src.(EpochLimiter)
	l.progress, _ = l.src.(PartitionProgress)
	l.wmSrc, _ = l.src.(SourceWatermarker)
}

// closeOut closes the output stream, once.
func (l *sourceLoop) closeOut() error {
	if l.closed {
		return nil
	}
	l.closed = true
	return l.w.close(l.sig.aborted)
}

// checkCommits tells the observer about a newer commit of the sink.
func (l *sourceLoop) checkCommits() error {
	if l.observer == nil {
		return nil
	}
	l.lastCheck = l.o.Now()
	c, err := l.env.Dir.Committed()
	if err != nil || c <= l.observed {
		return err
	}
	pos, err := state.ReadOffsets(l.env.Dir.Path, c)
	if err != nil {
		return fmt.Errorf("%s: offsets of committed epoch %d: %w", l.o.Tool, c, err)
	}
	l.observed = c
	l.env.Stats.Committed.Store(c)
	return l.observer.Committed(l.ctx, c, pos)
}

// awaitLast waits (bounded) for the sink to commit the last epoch, after the output is closed.
func (l *sourceLoop) awaitLast(last uint64) error {
	if l.observer == nil || last == 0 || l.observer.CommitWait() <= 0 {
		return nil
	}
	if err := l.closeOut(); err == errQuiet {
		return nil // nobody downstream will commit
	} else if err != nil {
		return fmt.Errorf("%s: write stdout: %w", l.o.Tool, err)
	}
	deadline := time.Now().Add(l.observer.CommitWait())
	for {
		if err := l.checkCommits(); err != nil {
			return err
		}
		if l.observed >= last || !time.Now().Before(deadline) {
			if l.observed < last {
				l.o.Log.Info("the sink did not commit the last epoch in time", "epoch", last, "waited", l.observer.CommitWait())
			}
			return nil
		}
		select {
		case <-l.ctx.Done():
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sendWM forwards the source's watermark when it advanced (after a batch, or while idle).
func (l *sourceLoop) sendWM() error {
	if l.wmSrc != nil {
		if wm, ok := l.wmSrc.Watermark(); ok && wm.After(l.lastWM) {
			l.lastWM = wm
			l.env.Stats.SetWatermark(wm)
			c := codec.WatermarkControl(wm)
			return l.w.send(l.ctx, outItem{ctrl: &c})
		}
	}
	return nil
}

// send writes a batch of the source, then its watermark.
func (l *sourceLoop) send(rec arrow.RecordBatch) error {
	l.env.Stats.RecordsIn.Add(rec.NumRows())
	l.env.Stats.RecordsOut.Add(rec.NumRows())
	if err := l.w.send(l.ctx, outItem{rec: rec}); err != nil {
		return err
	}
	return l.sendWM()
}

// barrier ends epoch n: --max-bad-ratio, the offsets WAL (writeWAL: new input, not a
// replay), the barrier, the limiter's count, the observer and the checkpoint's garbage
// collection.
func (l *sourceLoop) barrier(n uint64, writeWAL bool) error {
	env := l.env
	if err := env.quality.epoch(&l.o.Options, env.Stats, n); err != nil {
		return err
	}
	if writeWAL && env.Dir != nil {
		if err := env.Dir.WriteOffsets(n, l.src.Position()); err != nil {
			return err
		}
	}
	c := codec.BarrierControl(n)
	if l.progress != nil {
		c.Offsets = l.progress.BarrierOffsets(n)
	}
	if err := l.w.send(l.ctx, outItem{ctrl: &c}); err != nil {
		return err
	}
	env.Stats.Epoch.Store(n)
	if l.limiter != nil {
		l.limiter.EpochCut()
	}
	if err := l.checkCommits(); err != nil {
		return err
	}
	if env.Dir != nil {
		return env.Dir.GC(Retain)
	}
	return nil
}

// replay reproduces the uncommitted epochs of the offsets WAL exactly: each reads up to its
// WAL position and ends with its barrier. It sets next to the first new epoch.
func (l *sourceLoop) replay(epochs []uint64) error {
	l.next = l.env.Committed + 1
	for _, n := range epochs {
		if n != l.next {
			return fmt.Errorf("%s: offsets WAL in %s has a gap: epoch %d follows %d", l.o.Tool, l.env.Dir.Path, n, l.next-1)
		}
		limit, err := state.ReadOffsets(l.env.Dir.Path, n)
		if err != nil {
			return err
		}
		l.o.Log.Info("replaying epoch from the offsets WAL", "epoch", n)
		for {
			rec, err := l.src.Read(l.ctx, limit)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if rec != nil {
				if err := l.send(rec); err != nil {
					return err
				}
			}
		}
		if err := l.barrier(n, false); err != nil {
			return err
		}
		l.next++
	}
	l.emitted = len(epochs) > 0
	return nil
}

// endKind is the end sent at the end of input: pause with a checkpoint, final without,
// unless --end says otherwise.
func (l *sourceLoop) endKind() codec.EndKind {
	kind := codec.Final
	if l.env.Dir != nil {
		kind = codec.Pause
	}
	switch l.o.End {
	case "final":
		kind = codec.Final
	case "pause":
		kind = codec.Pause
	}
	return kind
}

// cut ends the current epoch with a barrier (writing its WAL position first) and starts the
// next.
func (l *sourceLoop) cut() error {
	if err := l.barrier(l.next, true); err != nil {
		return err
	}
	l.lastPos = l.src.Position()
	l.next++
	l.emitted = true
	l.rows = 0
	l.epochStart = l.o.Now()
	return nil
}

// moved reports whether the position advanced without rows (e.g. past Kafka transaction
// markers), which is worth an epoch of its own at the end of the input.
func (l *sourceLoop) moved() bool { return !bytes.Equal(l.src.Position(), l.lastPos) }

// finish cuts the last epoch when it holds anything and sends the end control of kind, then
// waits for the sink's last commit (awaitLast).
func (l *sourceLoop) finish(kind codec.EndKind, interrupted bool) error {
	if kind == codec.Final {
		// The input is complete: as Flink's bounded sources do, send the end-of-time
		// watermark before the last barrier, so windows fire inside a committed epoch
		// (their output is then exactly-once and their state is cleared at that barrier;
		// a rerun finds nothing left to fire) rather than after it.
		c := codec.WatermarkControl(codec.EndOfTime)
		if err := l.w.send(l.ctx, outItem{ctrl: &c}); err != nil {
			return err
		}
		l.env.Stats.SetWatermark(codec.EndOfTime)
		l.rows++ // the watermark's effects need a barrier of their own
	}
	if l.rows > 0 || !l.emitted || l.moved() {
		if err := l.cut(); err != nil {
			return err
		}
	}
	c := codec.EndControl(kind)
	c.Interrupted = interrupted
	if err := l.w.send(l.ctx, outItem{ctrl: &c}); err != nil {
		return err
	}
	return l.awaitLast(l.next - 1)
}

// run reads new input until its end or an interrupt, cutting epochs on time, when the
// limiter says an epoch is full, and at the end.
func (l *sourceLoop) run() error {
	o := l.o
	endKind := l.endKind()
	l.rows = 0
	l.epochStart = o.Now()
	for {
		if l.sig.requested() {
			if err := l.finish(codec.Pause, true); err != nil && err != errQuiet {
				return err
			}
			return ErrInterrupted
		}
		rec, err := l.src.Read(l.ctx, nil)
		if err == io.EOF {
			return l.finish(endKind, false)
		}
		if err != nil {
			if l.ctx.Err() != nil {
				return ErrInterrupted
			}
			return err
		}
		if rec != nil {
			l.rows += rec.NumRows()
			if err := l.send(rec); err != nil {
				return err
			}
		} else if err := l.sendWM(); err != nil {
			return err
		}
		if l.limiter != nil && l.limiter.EpochFull() {
			if err := l.cut(); err != nil {
				return err
			}
		}
		// Epochs are cut on time whether or not rows arrived: an idle epoch costs one barrier
		// (and one offsets file, garbage-collected once committed), and it is what lets the
		// stages downstream commit what their timers emitted meanwhile (processing-time
		// sessions, idle-timeout watermarks, TTL expiry). Sinks commit nothing for it.
		if o.Now().Sub(l.epochStart) >= o.EpochInterval {
			if err := l.cut(); err != nil {
				return err
			}
		}
		if l.observer != nil && o.Now().Sub(l.lastCheck) >= time.Second {
			if err := l.checkCommits(); err != nil {
				return err
			}
		}
	}
}
