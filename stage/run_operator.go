package stage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec"
)

// RunOperator runs op over the Arrow IPC stream on o.Stdin, writing its output to o.Stdout
// (DESIGN.md §2-3). It returns nil at the end of input or when the downstream reader goes away,
// ErrInterrupted after a signal, or the first error of reading, the operator or writing.
func RunOperator(ctx context.Context, o Options, op Operator) (err error) {
	o.defaults()
	if err := o.ResolveShard(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := watchSignals(&o, cancel)
	defer sig.stop()
	l := &operatorLoop{ctx: ctx, o: &o, env: newEnv(&o), op: op, sig: sig}
	resolver, resolves := op.(StateResolver)
	if err := openCheckpoint(&o, l.env, resolves); err != nil {
		return err
	}
	defer l.env.Dir.Close()

	defer l.releaseBodies() // after the writer and the reader are done (defers run last first)
	if isTerminal(o.Stdin) {
		o.Log.Warn("waiting for an Arrow IPC stream on stdin, which is a terminal: pipe a streamkit source into this stage, e.g. streamkit read-files data.csv | streamkit " + o.Tool)
	}
	rd, err := l.restore(resolver)
	if err != nil {
		return err
	}
	in := rd.Schema()
	out, err := op.Open(ctx, l.env, in)
	if err != nil {
		rd.Release()
		return err
	}
	defer op.Close()
	if err := refuseStatefulGroup(o.Tool, l.env, in); err != nil {
		rd.Release()
		return err
	}
	l.upstream = codec.Info(in).Checkpoints

	if out != nil {
		if err := refuseTerminal(&o); err != nil {
			rd.Release()
			return err
		}
		l.startOutput(in, out)
		defer func() {
			if cerr := l.w.close(sig.aborted); err == nil && cerr != nil && cerr != errQuiet {
				err = fmt.Errorf("%s: write stdout: %w", o.Tool, cerr)
			}
		}()
	} else if l.env.Shard.IsShard() {
		closeSinkShardStdout(o.Stdout)
	}
	l.prog = startProgress(&o, l.env.Stats, l.w)
	defer l.prog.stop()

	l.bind()
	inq := startReader(ctx, rd)
	defer stopReader(cancel, inq, rd, sig.aborted)
	return l.run(inq)
}

// operatorLoop is one run of RunOperator: the stage's state between messages. Its methods run
// on the stage goroutine, one message at a time, in stream order.
type operatorLoop struct {
	ctx      context.Context
	o        *Options
	env      *Env
	op       Operator
	sig      *signals
	w        *writer  // the output stream; nil for a sink
	upstream []string // the input's checkpoint directories, in pipeline order
	shard    string   // Env.Shard.Name(), "" outside keyby --shards

	emit Emit // l.emitBatch, bound once so that passing it allocates nothing per batch

	owner   WatermarkOwner  // nil unless op computes its own output watermark
	async   AsyncSink       // nil unless op is a sink committing in the background
	durable <-chan struct{} // async.Durable(), called once
	ticker  Ticker          // nil unless op acts on processing time

	lastIn  time.Time // the newest input watermark
	lastOut time.Time // the newest watermark forwarded for owner

	bodies *codec.Recycler // the input batches' buffers with Options.RecycleInput, else nil

	prog    *progress
	written OutputCounter // nil unless op is a sink that counts the rows it wrote
}

// releaseBodies gives the recycled input buffers back to Env.Mem.
func (l *operatorLoop) releaseBodies() {
	if l.bodies != nil {
		l.bodies.Release()
	}
}

// restore reads the input's schema, settles the epoch to restore (restoreEpoch) and, for a
// StateResolver, checks the state-shaping options against the checkpoint's. On error the
// reader is released.
func (l *operatorLoop) restore(resolver StateResolver) (*codec.Reader, error) {
	o, env := l.o, l.env
	rd, err := codec.NewReader(o.Stdin, env.Mem)
	if err != nil {
		err = InputError(o.Tool, o.Stdin, err)
		if err == ErrEmptyPipe {
			o.Log.Debug(err.Error()) // main prints nothing for it
		}
		return nil, err
	}
	if o.RecycleInput {
		l.bodies = codec.NewRecycler(env.Mem)
		rd.SetBodyAllocator(l.bodies)
	}
	in := rd.Schema()
	if err := restoreEpoch(o, env, codec.Info(in).Checkpoints); err != nil {
		rd.Release()
		return nil, err
	}
	if resolver != nil && env.Dir != nil {
		opts, err := resolver.ResolveState(in)
		if err == nil {
			if opts == nil {
				opts = map[string]string{}
			}
			for k, v := range o.checkpointOptions() {
				opts[k] = v
			}
			err = env.Dir.CheckOptions(opts)
		}
		if err != nil {
			rd.Release()
			return nil, err
		}
	}
	return rd, nil
}

// startOutput starts the writer of the output stream of schema out, passing the input's
// replayable mark on unless the stage keeps state without a checkpoint.
func (l *operatorLoop) startOutput(in, out *arrow.Schema) {
	o, env := l.o, l.env
	replayable := codec.Info(in).Replayable
	if replayable && o.Stateful && env.Dir == nil {
		replayable = false
		o.Log.Warn("this stage keeps state across epochs but no checkpoint, so its output is not replayable: " +
			"a restart would lose or repeat what its state held, and a checkpointed sink behind it refuses the stream; " +
			"give it --checkpoint DIR (or export " + EnvCheckpoint + "=DIR for every stage)")
	}
	l.w = startWriter(o.Stdout, outputSchema(out, l.upstream, replayable, env), env.Mem, env.Shard.IsShard())
}

// bind looks up the optional interfaces of the operator, once, after Open.
func (l *operatorLoop) bind() {
	l.shard = l.env.Shard.Name()
	l.emit = l.emitBatch
	l.owner, _ = l.op.(WatermarkOwner)
	if as, ok := l.op.(AsyncSink); ok && l.env.sink {
		l.async = as
		l.durable = as.Durable()
	}
	l.ticker, _ = l.op.(Ticker)
	if l.w == nil {
		l.written, _ = l.op.(OutputCounter)
	}
}

// stopReader stops the reader goroutine and frees what it read ahead. It may be blocked
// reading an idle upstream; it waits a bounded time (the process exits anyway), and after that
// the reader is freed whenever it ends, so that a stage run in-process (tests) leaks nothing.
// After an abort (a second Ctrl-C) it does not wait at all: the process is to end at once.
func stopReader(cancel context.CancelFunc, inq *inbox, rd *codec.Reader, aborted <-chan struct{}) {
	cancel()
	go func() {
		for r := range inq.ch {
			inq.received(r)
			if r.msg.Batch != nil {
				r.msg.Batch.Release()
			}
		}
	}()
	select {
	case <-inq.done:
		rd.Release()
	case <-aborted:
		go func() {
			<-inq.done
			rd.Release()
		}()
	case <-time.After(time.Second):
		go func() {
			<-inq.done
			rd.Release()
		}()
	}
}

// run handles the messages of inq, ticks and background commits until the end of the
// stream, an error, or an interrupt at a barrier.
func (l *operatorLoop) run(inq *inbox) error {
	var tick <-chan time.Time
	if l.ticker != nil {
		t := time.NewTicker(l.ticker.TickInterval())
		defer t.Stop()
		tick = t.C
	}
	for {
		var r readResult
		var ok bool
		select {
		case <-l.ctx.Done():
			return ErrInterrupted
		case <-tick:
			if err := l.tick(); err != nil {
				return err
			}
			continue
		case <-l.durable:
			if err := l.settle(false); err != nil {
				return err
			}
			continue
		case r, ok = <-inq.ch:
			inq.received(r)
		}
		if !ok {
			return l.ctx.Err()
		}
		if r.err != nil {
			return fmt.Errorf("%s: stdin: %w", l.o.Tool, r.err)
		}
		err := l.handle(r.msg)
		if err == errEnd {
			if l.sig.requested() || r.msg.Control.Interrupted {
				return ErrInterrupted
			}
			return nil
		}
		if err != nil {
			if err == errQuiet || errors.Is(err, ErrStop) {
				l.o.Log.Debug("downstream closed; stopping")
				return nil
			}
			return err
		}
		if r.msg.Control != nil && r.msg.Control.Kind == codec.Barrier && l.sig.requested() {
			return l.pause(inq)
		}
	}
}

// pauseDrain is how long a stage that pauses on an interrupt waits for what its upstream
// sends after the barrier: the Ctrl-C reached every stage, so that is the upstream's last
// stats and its end, at once.
const pauseDrain = 500 * time.Millisecond

// drainStats handles the stats controls that follow the barrier a stage pauses at, until the
// upstream's end, anything else (a data batch: the upstream was not interrupted and goes on),
// an error, an abort or pauseDrain: the upstream stages paused at the same barrier and sent
// their final counters after it (writer.finalStats), and without them the view's summary
// showed each stage's counters of its last periodic report, a second apart (generate 5831 →
// keyby 4022 → print 6857).
func (l *operatorLoop) drainStats(inq *inbox) {
	deadline := time.NewTimer(pauseDrain)
	defer deadline.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-deadline.C:
			return
		case r, ok := <-inq.ch:
			if !ok {
				return
			}
			inq.received(r)
			if r.err != nil || r.msg.Control == nil || r.msg.Control.Kind != codec.Stats {
				if r.msg.Batch != nil {
					r.msg.Batch.Release()
				}
				return
			}
			if err := l.handle(r.msg); err != nil {
				return
			}
		}
	}
}

// tick calls the Ticker with the clock's reading and forwards the watermark it produced.
func (l *operatorLoop) tick() error {
	if err := l.ticker.Tick(l.ctx, l.o.Now(), l.emit); err != nil {
		return err
	}
	if err := l.forwardOwned(); err != nil && err != errQuiet {
		return err
	}
	return nil
}

// pause ends the stage after the barrier that finished the epoch of an interrupt: it tells
// the operator and downstream this is a pause and returns ErrInterrupted. First it takes the
// stats controls upstream stages send after that barrier (drainStats), so that their last
// counters reach the view and its summary.
func (l *operatorLoop) pause(inq *inbox) error {
	l.drainStats(inq)
	if err := l.settle(true); err != nil {
		return err
	}
	if err := l.op.End(l.ctx, codec.Pause, l.emit); err != nil {
		return err
	}
	end := codec.EndControl(codec.Pause)
	end.Interrupted = true
	if err := l.sendCtrl(end); err != nil && err != errQuiet {
		return err
	}
	return ErrInterrupted
}

// emitBatch is the operator's Emit: it sends rec downstream, naming its source partition as
// this shard's.
func (l *operatorLoop) emitBatch(rec arrow.RecordBatch) error {
	if l.w == nil {
		rec.Release()
		return fmt.Errorf("%s: a sink emitted a batch", l.o.Tool)
	}
	if p, ok := codec.BatchPartition(rec); ok && l.shard != "" {
		rec = codec.WithPartition(rec, shardPartition(p, l.shard))
	}
	l.env.Stats.RecordsOut.Add(rec.NumRows())
	return l.w.send(l.ctx, outItem{rec: rec})
}

// sendCtrl sends c downstream; a sink sends nothing.
func (l *operatorLoop) sendCtrl(c codec.Control) error {
	if l.w == nil {
		return nil
	}
	return l.w.send(l.ctx, outItem{ctrl: &c})
}

// forwardOwned forwards the output watermark of a WatermarkOwner when it advanced.
func (l *operatorLoop) forwardOwned() error {
	if l.owner == nil {
		return nil
	}
	if wm, ok := l.owner.OutputWatermark(); ok && wm.After(l.lastOut) {
		l.lastOut = wm
		return l.sendCtrl(codec.WatermarkControl(wm))
	}
	return nil
}

// settle completes an AsyncSink's finished commits (waiting for the one in flight when wait)
// and writes the commit markers of the newest durable epoch; without one it does nothing.
func (l *operatorLoop) settle(wait bool) error {
	if l.async == nil {
		return nil
	}
	n, err := l.async.Settle(l.ctx, wait)
	if err != nil {
		return err // names the sink and the epoch (AsyncSink)
	}
	if n > 0 {
		return commitEpoch(l.o, l.env, l.upstream, n)
	}
	return nil
}

var errEnd = errors.New("end of stream")

// handle passes one message to the operator; it returns errEnd after an end control.
func (l *operatorLoop) handle(m codec.Message) error {
	if m.Batch != nil {
		return l.data(m.Batch)
	}
	c := *m.Control
	switch c.Kind {
	case codec.Watermark:
		return l.watermark(c)
	case codec.Progress:
		return l.progress(c)
	case codec.Barrier:
		return l.barrier(c)
	case codec.End:
		return l.end(c)
	case codec.Stats:
		if l.prog.take(c, l.w == nil) {
			return nil
		}
		c.Hops++
		return l.sendCtrl(c)
	}
	return nil
}

// data passes a batch to the operator and releases it.
func (l *operatorLoop) data(rec arrow.RecordBatch) error {
	l.env.Stats.RecordsIn.Add(rec.NumRows())
	l.env.Stats.BatchesIn.Add(1)
	n := rec.NumRows()
	err := l.op.Process(l.ctx, rec, l.emit)
	rec.Release()
	if l.w == nil { // a sink's rows out are the rows it wrote
		if l.written != nil {
			l.env.Stats.RecordsOut.Store(l.written.RowsWritten())
		} else if err == nil {
			l.env.Stats.RecordsOut.Add(n)
		}
	}
	if err != nil {
		return err
	}
	return l.forwardOwned()
}

// watermark passes an advancing input watermark to the operator and forwards it (or the
// operator's own).
func (l *operatorLoop) watermark(c codec.Control) error {
	if !c.Watermark.After(l.lastIn) {
		return nil // never backwards
	}
	l.lastIn = c.Watermark
	l.env.Stats.SetWatermark(c.Watermark)
	if err := l.op.Watermark(l.ctx, c.Watermark, l.emit); err != nil {
		return err
	}
	if l.owner != nil {
		return l.forwardOwned()
	}
	return l.sendCtrl(c)
}

// progress passes keyby's progress control to a ProgressObserver; it is never forwarded.
func (l *operatorLoop) progress(c codec.Control) error {
	if po, ok := l.op.(ProgressObserver); ok {
		po.ObserveProgress(c.Watermark)
		if l.owner != nil {
			return l.forwardOwned()
		}
	}
	return nil // keyby's message to its shard: not forwarded
}

// barrier ends an epoch: the epoch check and --max-bad-ratio, the operator's Barrier, the
// forwarded barrier, then a sink's commit markers and the checkpoint's garbage collection.
func (l *operatorLoop) barrier(c codec.Control) error {
	o, env := l.o, l.env
	if err := checkEpoch(env, c.Epoch); err != nil {
		return fmt.Errorf("%s: %w", o.Tool, err)
	}
	if err := env.quality.epoch(o, env.Stats, c.Epoch); err != nil {
		return err
	}
	env.BarrierOffsets = c.Offsets
	err := l.op.Barrier(l.ctx, c.Epoch, l.emit)
	env.BarrierOffsets = ""
	if err != nil {
		return fmt.Errorf("%s: epoch %d: %w", o.Tool, c.Epoch, err)
	}
	env.Stats.Epoch.Store(c.Epoch)
	if err := l.sendCtrl(c); err != nil {
		return err
	}
	switch {
	case l.async != nil:
		if err := l.settle(false); err != nil {
			return err
		}
	case env.sink:
		if err := commitEpoch(o, env, l.upstream, c.Epoch); err != nil {
			return err
		}
	}
	if env.Dir != nil {
		return env.Dir.GC(Retain)
	}
	return nil
}

// end passes the end of the stream to the operator (after a sink's last commit) and
// forwards it; it returns errEnd.
func (l *operatorLoop) end(c codec.Control) error {
	if err := l.settle(true); err != nil {
		return err
	}
	if err := l.op.End(l.ctx, c.End, l.emit); err != nil {
		return err
	}
	if err := l.sendCtrl(c); err != nil {
		return err
	}
	return errEnd
}
