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

// Retain is how many committed epochs each checkpoint directory keeps (older ones are
// garbage-collected after every barrier).
const Retain = 10

// openCheckpoint opens and locks the stage's checkpoint directory (if any); restoreEpoch then
// settles the epoch to restore.
func openCheckpoint(o *Options, env *Env, deferOptions bool) error {
	p := o.CheckpointDir()
	if p == "" {
		return nil
	}
	opts := o.checkpointOptions()
	if deferOptions {
		opts = nil
	}
	d, err := state.Open(p, o.Tool, o.StageName(), opts)
	if err != nil {
		return err
	}
	env.Dir = d
	return nil
}

// restoreEpoch sets env.Committed to the epoch every stage of the pipeline restores: the
// newest epoch committed in this stage's directory and in every upstream one. A sink writes
// commit markers downstream-first (its own directory, then upstream stages in reverse pipeline
// order), so a crash part-way leaves upstream stages behind, never ahead: taking the minimum
// makes every operator restore the epoch its source replays after. State of later epochs is
// discarded (recovery rewrites it).
func restoreEpoch(o *Options, env *Env, upstream []string) error {
	if env.Dir == nil {
		return nil
	}
	c, err := env.Dir.Committed()
	if err != nil {
		return err
	}
	for _, u := range upstream {
		uc, err := state.Committed(u)
		if err != nil {
			return fmt.Errorf("%s: upstream checkpoint: %w", o.Tool, err)
		}
		if uc < c {
			o.Log.Info("an upstream stage committed less than this one; restoring its epoch", "upstream", u, "epoch", uc, "own", c)
			c = uc
		}
	}
	if err := state.DiscardAfter(env.Dir.Path, c); err != nil {
		return err
	}
	env.Committed = c
	env.Stats.Committed.Store(c)
	if c > 0 {
		o.Log.Info("restoring from checkpoint", "dir", env.Dir.Path, "committed_epoch", c)
	}
	return nil
}

func newEnv(o *Options) *Env {
	return &Env{Mem: o.Mem, Now: o.Now, Stats: newStats(), Log: o.Log, quality: qualityCheck{max: o.MaxBadRatio}}
}

// outputSchema adds the stage's checkpoint directory to the upstream list of out, names the
// declared source partitions as this shard's (shardPartition), and marks it replayable as
// replayable says (an operator passes its input's mark on; a source's epochs are replayable
// when it keeps a checkpoint).
func outputSchema(out *arrow.Schema, upstream []string, replayable bool, env *Env) *arrow.Schema {
	info := codec.Info(out)
	info.Checkpoints = append([]string(nil), upstream...)
	if env.Dir != nil {
		info.Checkpoints = append(info.Checkpoints, env.Dir.Path)
	}
	if sh := ShardName(); sh != "" {
		for i, p := range info.Partitions {
			info.Partitions[i] = shardPartition(p, sh)
		}
	}
	info.Replayable = replayable
	return codec.WithInfo(out, info)
}

// shardPartition names source partition p as it leaves shard sh of keyby --shards: "p@sh".
// keyby interleaves its shards' output, so the rows of one source partition arrive in order
// per shard only; per-partition watermarks downstream are then kept per (partition, shard),
// as Flink keeps one per input channel.
func shardPartition(p, sh string) string { return p + "@" + sh }

// RunOperator runs op over the Arrow IPC stream on o.Stdin, writing its output to o.Stdout
// (DESIGN.md §2-3). It returns nil at the end of input or when the downstream reader goes away,
// ErrInterrupted after a signal, or the first error of reading, the operator or writing.
func RunOperator(ctx context.Context, o Options, op Operator) (err error) {
	o.defaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := watchSignals(&o, cancel)
	defer sig.stop()
	env := newEnv(&o)
	resolver, resolves := op.(StateResolver)
	if err := openCheckpoint(&o, env, resolves); err != nil {
		return err
	}
	defer env.Dir.Close()

	rd, err := codec.NewReader(o.Stdin, env.Mem)
	if err != nil {
		if errors.Is(err, codec.ErrNoStream) {
			return fmt.Errorf("%s: stdin: %w; pipe a streamkit source (read-files, read-kafka …) into it", o.Tool, err)
		}
		return fmt.Errorf("%s: stdin: %w", o.Tool, err)
	}
	in := rd.Schema()
	if err := restoreEpoch(&o, env, codec.Info(in).Checkpoints); err != nil {
		rd.Release()
		return err
	}
	if resolves && env.Dir != nil {
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
			return err
		}
	}
	out, err := op.Open(ctx, env, in)
	if err != nil {
		rd.Release()
		return err
	}
	defer op.Close()
	upstream := codec.Info(in).Checkpoints

	var w *writer
	if out != nil {
		replayable := codec.Info(in).Replayable
		if replayable && o.Stateful && env.Dir == nil {
			replayable = false
			o.Log.Warn("this stage keeps state across epochs but no checkpoint, so its output is not replayable: " +
				"a restart would lose or repeat what its state held, and a checkpointed sink behind it refuses the stream; " +
				"give it --checkpoint DIR (or export " + EnvCheckpoint + "=DIR for every stage)")
		}
		w = startWriter(o.Stdout, outputSchema(out, upstream, replayable, env), env.Mem)
		defer func() {
			if cerr := w.close(sig.aborted); err == nil && cerr != nil && cerr != errQuiet {
				err = fmt.Errorf("%s: write stdout: %w", o.Tool, cerr)
			}
		}()
	}
	prog := startProgress(o.Progress, o.StageName(), o.Stderr, env.Stats, o.ProgressInterval)
	defer prog.stop()

	shard := ShardName()
	emit := func(rec arrow.RecordBatch) error {
		if w == nil {
			rec.Release()
			return fmt.Errorf("%s: a sink emitted a batch", o.Tool)
		}
		if p, ok := codec.BatchPartition(rec); ok && shard != "" {
			rec = codec.WithPartition(rec, shardPartition(p, shard))
		}
		env.Stats.RecordsOut.Add(rec.NumRows())
		return w.send(ctx, outItem{rec: rec})
	}
	sendCtrl := func(c codec.Control) error {
		if w == nil {
			return nil
		}
		return w.send(ctx, outItem{ctrl: &c})
	}
	owner, ownsWM := op.(WatermarkOwner)
	var lastOut time.Time
	forwardOwned := func() error {
		if !ownsWM {
			return nil
		}
		if wm, ok := owner.OutputWatermark(); ok && wm.After(lastOut) {
			lastOut = wm
			return sendCtrl(codec.WatermarkControl(wm))
		}
		return nil
	}
	var durable <-chan struct{}
	var settle func(wait bool) error
	if as, ok := op.(AsyncSink); ok && env.sink {
		durable = as.Durable()
		settle = func(wait bool) error {
			n, err := as.Settle(ctx, wait)
			if err != nil {
				return err // names the sink and the epoch (AsyncSink)
			}
			if n > 0 {
				return commitEpoch(&o, env, upstream, n)
			}
			return nil
		}
	}
	var lastIn time.Time
	inq := startReader(ctx, rd)
	defer func() {
		// Stop the reader goroutine and free what it read ahead. It may be blocked reading an
		// idle upstream; wait a bounded time (the process exits anyway).
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
		case <-time.After(time.Second):
		}
	}()
	var tick <-chan time.Time
	ticker, ticks := op.(Ticker)
	if ticks {
		t := time.NewTicker(ticker.TickInterval())
		defer t.Stop()
		tick = t.C
	}
	for {
		var r readResult
		var ok bool
		select {
		case <-ctx.Done():
			return ErrInterrupted
		case <-tick:
			if err := ticker.Tick(ctx, o.Now(), emit); err != nil {
				return err
			}
			if err := forwardOwned(); err != nil && err != errQuiet {
				return err
			}
			continue
		case <-durable:
			if err := settle(false); err != nil {
				return err
			}
			continue
		case r, ok = <-inq.ch:
			inq.received(r)
		}
		if !ok {
			return ctx.Err()
		}
		if r.err != nil {
			return fmt.Errorf("%s: stdin: %w", o.Tool, r.err)
		}
		err := handle(ctx, &o, env, op, r.msg, emit, sendCtrl, upstream, &lastIn, forwardOwned, ownsWM, settle)
		if err == errEnd {
			if sig.requested() || r.msg.Control.Interrupted {
				return ErrInterrupted
			}
			return nil
		}
		if err != nil {
			if err == errQuiet || errors.Is(err, ErrStop) {
				o.Log.Debug("downstream closed; stopping")
				return nil
			}
			return err
		}
		if r.msg.Control != nil && r.msg.Control.Kind == codec.Barrier && sig.requested() {
			// Finished the epoch: stop here and tell downstream this is a pause.
			if settle != nil {
				if err := settle(true); err != nil {
					return err
				}
			}
			if err := op.End(ctx, codec.Pause, emit); err != nil {
				return err
			}
			end := codec.EndControl(codec.Pause)
			end.Interrupted = true
			if err := sendCtrl(end); err != nil && err != errQuiet {
				return err
			}
			return ErrInterrupted
		}
	}
}

var errEnd = errors.New("end of stream")

// checkEpoch refuses, in a stateful stage with a checkpoint, barriers that would corrupt its
// state: an epoch at or below the last one (an upstream that restarted its numbering, e.g. a
// source without a checkpoint run twice) and a gap after its restored epoch (the stage missed
// epochs: its checkpoint is new or was removed while the upstream kept theirs). Stateless
// stages accept any numbering (print is at-least-once anyway).
func checkEpoch(env *Env, n uint64) error {
	if !env.stateful || env.Dir == nil {
		return nil
	}
	last := env.lastEpoch
	if !env.seenBarrier {
		last = env.Committed
	}
	switch {
	case n <= last:
		return fmt.Errorf("epoch %d arrives after epoch %d: the upstream restarted its epoch numbering "+
			"(give every stage a checkpoint, e.g. export %s=DIR, so sources resume after the committed epoch)", n, last, EnvCheckpoint)
	case n != last+1:
		return fmt.Errorf("epoch %d arrives but the state in %s is at epoch %d: this stage missed epochs %d-%d "+
			"(its checkpoint is new or was removed while upstream stages kept theirs); restart the whole pipeline with fresh checkpoints",
			n, env.Dir.Path, last, last+1, n-1)
	}
	env.lastEpoch, env.seenBarrier = n, true
	return nil
}

func handle(ctx context.Context, o *Options, env *Env, op Operator, m codec.Message, emit Emit,
	sendCtrl func(codec.Control) error, upstream []string, lastIn *time.Time, forwardOwned func() error, ownsWM bool,
	settle func(wait bool) error) error {
	if m.Batch != nil {
		env.Stats.RecordsIn.Add(m.Batch.NumRows())
		env.Stats.BatchesIn.Add(1)
		err := op.Process(ctx, m.Batch, emit)
		m.Batch.Release()
		if err != nil {
			return err
		}
		return forwardOwned()
	}
	c := *m.Control
	switch c.Kind {
	case codec.Watermark:
		if !c.Watermark.After(*lastIn) {
			return nil // never backwards
		}
		*lastIn = c.Watermark
		env.Stats.SetWatermark(c.Watermark)
		if err := op.Watermark(ctx, c.Watermark, emit); err != nil {
			return err
		}
		if ownsWM {
			return forwardOwned()
		}
		return sendCtrl(c)
	case codec.Progress:
		if po, ok := op.(ProgressObserver); ok {
			po.ObserveProgress(c.Watermark)
			if ownsWM {
				return forwardOwned()
			}
		}
		return nil // keyby's message to its shard: not forwarded
	case codec.Barrier:
		if err := checkEpoch(env, c.Epoch); err != nil {
			return fmt.Errorf("%s: %w", o.Tool, err)
		}
		if err := env.quality.epoch(o, env.Stats, c.Epoch); err != nil {
			return err
		}
		if err := op.Barrier(ctx, c.Epoch, emit); err != nil {
			return fmt.Errorf("%s: epoch %d: %w", o.Tool, c.Epoch, err)
		}
		env.Stats.Epoch.Store(c.Epoch)
		if err := sendCtrl(c); err != nil {
			return err
		}
		switch {
		case settle != nil:
			if err := settle(false); err != nil {
				return err
			}
		case isSink(op, env):
			if err := commitEpoch(o, env, upstream, c.Epoch); err != nil {
				return err
			}
		}
		if env.Dir != nil {
			return env.Dir.GC(Retain)
		}
		return nil
	case codec.End:
		if settle != nil {
			if err := settle(true); err != nil {
				return err
			}
		}
		if err := op.End(ctx, c.End, emit); err != nil {
			return err
		}
		if err := sendCtrl(c); err != nil {
			return err
		}
		return errEnd
	}
	return nil
}

func isSink(_ Operator, env *Env) bool { return env.sink }

// commitEpoch writes commit markers for epoch n into the sink's own directory and every
// upstream stage's directory (DESIGN.md §3 step 3). A sink shard of keyby --shards records the
// epoch in its shard commit directory instead of upstream (EnvShardCommits).
func commitEpoch(o *Options, env *Env, upstream []string, n uint64) error {
	// Downstream first: the sink's own directory, then upstream stages in reverse pipeline
	// order (see restoreEpoch for why).
	var dirs []string
	if env.Dir != nil {
		dirs = append(dirs, env.Dir.Path)
	}
	shardDir := shardCommitDir()
	if shardDir != "" {
		dirs = append(dirs, shardDir)
	} else {
		dirs = append(dirs, Upstream(upstream)...)
	}
	if err := WriteCommits(dirs, n, o.Tool); err != nil {
		return fmt.Errorf("%s: commit epoch %d: %w", o.Tool, n, err)
	}
	if shardDir != "" {
		if err := state.TrimCommits(shardDir, Retain); err != nil {
			return fmt.Errorf("%s: %w", o.Tool, err)
		}
	}
	env.Stats.Committed.Store(n)
	return nil
}

// Upstream returns the checkpoint directories of a stream's upstream stages (codec.Info's
// Checkpoints, in pipeline order) in the order a sink writes their commit markers: reverse
// pipeline order, so that a crash part-way leaves the earlier stages behind, never ahead.
func Upstream(checkpoints []string) []string {
	out := make([]string, 0, len(checkpoints))
	for i := len(checkpoints) - 1; i >= 0; i-- {
		out = append(out, checkpoints[i])
	}
	return out
}

// WriteCommits writes the commit marker of epoch n (by tool) into each directory, in order.
func WriteCommits(dirs []string, n uint64, tool string) error {
	for _, d := range dirs {
		if err := state.WriteCommit(d, n, tool); err != nil {
			return err
		}
	}
	return nil
}

// RunSource runs src, writing its stream to o.Stdout: it replays the uncommitted epochs of
// the offsets WAL exactly, then reads new input, cutting epochs every o.EpochInterval (rows or
// not) and at the end of input, writing each epoch's end position to the WAL before its barrier. At the
// end of input it sends end=pause when checkpointing and end=final otherwise (o.End
// overrides). On the first signal it cuts the current epoch, sends end=pause and returns
// ErrInterrupted.
func RunSource(ctx context.Context, o SourceOptions, src Source) (err error) {
	o.defaults()
	if err := o.validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := watchSignals(&o.Options, cancel)
	defer sig.stop()
	env := newEnv(&o.Options)
	env.BatchRows, env.Linger = o.BatchRows, o.Linger
	if err := openCheckpoint(&o.Options, env, false); err != nil {
		return err
	}
	defer env.Dir.Close()
	if err := restoreEpoch(&o.Options, env, nil); err != nil {
		return err
	}
	var committedPos Position
	var replay []uint64
	haveStart := false
	if env.Dir != nil {
		if env.Committed > 0 {
			if committedPos, err = state.ReadOffsets(env.Dir.Path, env.Committed); err != nil {
				return fmt.Errorf("%s: offsets of committed epoch %d: %w", o.Tool, env.Committed, err)
			}
		} else if p, err := state.ReadOffsets(env.Dir.Path, 0); err == nil {
			// The resolved start of a run that committed nothing yet (see Source).
			committedPos, haveStart = p, true
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: start position (offsets of epoch 0): %w", o.Tool, err)
		}
		eps, err := state.Epochs(env.Dir.Path, state.OffsetsDir)
		if err != nil {
			return err
		}
		for _, n := range eps {
			if n > env.Committed {
				replay = append(replay, n)
			}
		}
	}
	schema, err := src.Open(ctx, env, committedPos)
	if err != nil {
		return err
	}
	defer src.Close()
	lastPos := src.Position()
	if env.Dir != nil && env.Committed == 0 && !haveStart {
		if err := env.Dir.WriteOffsets(0, lastPos); err != nil {
			return err
		}
	}
	w := startWriter(o.Stdout, outputSchema(schema, nil, env.Dir != nil, env), env.Mem)
	closed := false
	closeOut := func() error {
		if closed {
			return nil
		}
		closed = true
		return w.close(sig.aborted)
	}
	defer func() {
		if cerr := closeOut(); err == nil && cerr != nil && cerr != errQuiet {
			err = fmt.Errorf("%s: write stdout: %w", o.Tool, cerr)
		}
		if err == errQuiet {
			err = nil
		}
	}()
	observer, observes := src.(CommitObserver)
	observes = observes && env.Dir != nil
	var observed uint64 = env.Committed
	lastCheck := o.Now()
	// checkCommits tells the observer about a newer commit of the sink.
	checkCommits := func() error {
		if !observes {
			return nil
		}
		lastCheck = o.Now()
		c, err := env.Dir.Committed()
		if err != nil || c <= observed {
			return err
		}
		pos, err := state.ReadOffsets(env.Dir.Path, c)
		if err != nil {
			return fmt.Errorf("%s: offsets of committed epoch %d: %w", o.Tool, c, err)
		}
		observed = c
		env.Stats.Committed.Store(c)
		return observer.Committed(ctx, c, pos)
	}
	// awaitLast waits (bounded) for the sink to commit the last epoch, after the output is closed.
	awaitLast := func(last uint64) error {
		if !observes || last == 0 || observer.CommitWait() <= 0 {
			return nil
		}
		if err := closeOut(); err == errQuiet {
			return nil // nobody downstream will commit
		} else if err != nil {
			return fmt.Errorf("%s: write stdout: %w", o.Tool, err)
		}
		deadline := time.Now().Add(observer.CommitWait())
		for {
			if err := checkCommits(); err != nil {
				return err
			}
			if observed >= last || !time.Now().Before(deadline) {
				if observed < last {
					o.Log.Info("the sink did not commit the last epoch in time", "epoch", last, "waited", observer.CommitWait())
				}
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	limiter, limits := src.(EpochLimiter)
	prog := startProgress(o.Progress, o.StageName(), o.Stderr, env.Stats, o.ProgressInterval)
	defer prog.stop()

	wmSrc, hasWM := src.(SourceWatermarker)
	var lastWM time.Time
	// sendWM forwards the source's watermark when it advanced (after a batch, or while idle).
	sendWM := func() error {
		if hasWM {
			if wm, ok := wmSrc.Watermark(); ok && wm.After(lastWM) {
				lastWM = wm
				env.Stats.SetWatermark(wm)
				c := codec.WatermarkControl(wm)
				return w.send(ctx, outItem{ctrl: &c})
			}
		}
		return nil
	}
	send := func(rec arrow.RecordBatch) error {
		env.Stats.RecordsIn.Add(rec.NumRows())
		env.Stats.RecordsOut.Add(rec.NumRows())
		if err := w.send(ctx, outItem{rec: rec}); err != nil {
			return err
		}
		return sendWM()
	}
	barrier := func(n uint64, writeWAL bool) error {
		if err := env.quality.epoch(&o.Options, env.Stats, n); err != nil {
			return err
		}
		if writeWAL && env.Dir != nil {
			if err := env.Dir.WriteOffsets(n, src.Position()); err != nil {
				return err
			}
		}
		c := codec.BarrierControl(n)
		if err := w.send(ctx, outItem{ctrl: &c}); err != nil {
			return err
		}
		env.Stats.Epoch.Store(n)
		if limits {
			limiter.EpochCut()
		}
		if err := checkCommits(); err != nil {
			return err
		}
		if env.Dir != nil {
			return env.Dir.GC(Retain)
		}
		return nil
	}
	next := env.Committed + 1
	for _, n := range replay {
		if n != next {
			return fmt.Errorf("%s: offsets WAL in %s has a gap: epoch %d follows %d", o.Tool, env.Dir.Path, n, next-1)
		}
		limit, err := state.ReadOffsets(env.Dir.Path, n)
		if err != nil {
			return err
		}
		o.Log.Info("replaying epoch from the offsets WAL", "epoch", n)
		for {
			rec, err := src.Read(ctx, limit)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if rec != nil {
				if err := send(rec); err != nil {
					return err
				}
			}
		}
		if err := barrier(n, false); err != nil {
			return err
		}
		next++
	}

	endKind := codec.Final
	if env.Dir != nil {
		endKind = codec.Pause
	}
	switch o.End {
	case "final":
		endKind = codec.Final
	case "pause":
		endKind = codec.Pause
	}
	emitted := len(replay) > 0
	rows := int64(0)
	epochStart := o.Now()
	cut := func() error {
		if err := barrier(next, true); err != nil {
			return err
		}
		lastPos = src.Position()
		next++
		emitted = true
		rows = 0
		epochStart = o.Now()
		return nil
	}
	// moved reports whether the position advanced without rows (e.g. past Kafka transaction
	// markers), which is worth an epoch of its own at the end of the input.
	moved := func() bool { return !bytes.Equal(src.Position(), lastPos) }
	finish := func(kind codec.EndKind, interrupted bool) error {
		if kind == codec.Final {
			// The input is complete: as Flink's bounded sources do, send the end-of-time
			// watermark before the last barrier, so windows fire inside a committed epoch
			// (their output is then exactly-once and their state is cleared at that barrier;
			// a rerun finds nothing left to fire) rather than after it.
			c := codec.WatermarkControl(codec.EndOfTime)
			if err := w.send(ctx, outItem{ctrl: &c}); err != nil {
				return err
			}
			env.Stats.SetWatermark(codec.EndOfTime)
			rows++ // the watermark's effects need a barrier of their own
		}
		if rows > 0 || !emitted || moved() {
			if err := cut(); err != nil {
				return err
			}
		}
		c := codec.EndControl(kind)
		c.Interrupted = interrupted
		if err := w.send(ctx, outItem{ctrl: &c}); err != nil {
			return err
		}
		return awaitLast(next - 1)
	}
	for {
		if sig.requested() {
			if err := finish(codec.Pause, true); err != nil && err != errQuiet {
				return err
			}
			return ErrInterrupted
		}
		rec, err := src.Read(ctx, nil)
		if err == io.EOF {
			return finish(endKind, false)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ErrInterrupted
			}
			return err
		}
		if rec != nil {
			rows += rec.NumRows()
			if err := send(rec); err != nil {
				return err
			}
		} else if err := sendWM(); err != nil {
			return err
		}
		if limits && limiter.EpochFull() {
			if err := cut(); err != nil {
				return err
			}
		}
		// Epochs are cut on time whether or not rows arrived: an idle epoch costs one barrier
		// (and one offsets file, garbage-collected once committed), and it is what lets the
		// stages downstream commit what their timers emitted meanwhile (processing-time
		// sessions, idle-timeout watermarks, TTL expiry). Sinks commit nothing for it.
		if o.Now().Sub(epochStart) >= o.EpochInterval {
			if err := cut(); err != nil {
				return err
			}
		}
		if observes && o.Now().Sub(lastCheck) >= time.Second {
			if err := checkCommits(); err != nil {
				return err
			}
		}
	}
}
