package keyby

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/window"
)

// Sharded runs N copies of a downstream command as child processes, routes every row to child
// Hash64(key) mod N (codec.Hash64: XXH3-64 of the encoded key, stable across runs), and
// merges the children's outputs into one stream with aligned barriers (epoch n is forwarded
// once every child emitted it, Flink's aligned checkpoints) and the minimum watermark.
type Sharded struct {
	Key []string
	N   int
	// Cmd is the child command; a first word that names a streamkit tool runs this binary.
	Cmd []string
	// Tools are the streamkit subcommand names (to recognise Cmd[0]). A child that is a
	// streamkit tool and generates its watermark from event times (dedup --event-time)
	// declares its event-time column in its output schema (codec.SchemaShardEventTime): keyby
	// then sends every child, after each batch, the latest event time of all rows routed so
	// far (codec.Progress), so that each shard's watermark is the one a single process would
	// have, not that of its own rows only.
	Tools map[string]bool

	shardCommits string    // stage.EnvShardCommits of the children
	cutAt        time.Time // when keyby cut the children's input after a failure (zero: never)
}

// extractor returns the reader of the children's declared event times (e) from batches of
// schema in; nil when they declared none or it cannot be read (the child reports that itself).
func extractor(e codec.ShardEventTimeColumn, in *arrow.Schema) *window.TimeExtractor {
	if e.Column == "" {
		return nil
	}
	var opt window.TimeOptions
	var err error
	if e.Unit != "" {
		if opt.Unit, err = window.ParseEpochUnit(e.Unit); err != nil {
			return nil
		}
	}
	if e.TZ != "" {
		if opt.Location, err = time.LoadLocation(e.TZ); err != nil {
			return nil
		}
	}
	x, err := window.NewTimeExtractor(in, e.Column, opt)
	if err != nil {
		return nil
	}
	return x
}

// ShardGOGC is the GOGC that streamkit children of keyby --shards run with when the
// environment does not set one (the default is 100).
const ShardGOGC = 200

// childEnv is the environment of child i: environ with STREAMKIT_SHARD=i, the shard path,
// commit directory and routing (stage.EnvShard …) and, for a streamkit tool,
// STREAMKIT_SHARD_PROGRESS=1 and GOGC=ShardGOGC unless environ sets GOGC.
//
// GOMAXPROCS is left alone: one processor per shard (cores/N) saved ~1% of the shards' CPU
// spinning, but on a busy machine the kernel shares CPU per thread, and shards with fewer
// threads ran slower.
func (s *Sharded) childEnv(environ []string, i int) []string {
	// Progress an outer keyby sent this one is not its children's; a nested keyby names its
	// children after its own shard name (stage.EnvShardPath).
	var outer string
	env := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		switch k, v, _ := strings.Cut(kv, "="); k {
		case stage.EnvShard:
			if outer == "" {
				outer = v
			}
		case stage.EnvShardPath:
			outer = v
			return true
		case stage.EnvShardProgress:
			return true
		}
		return false
	})
	env = append(env, stage.EnvShard+"="+strconv.Itoa(i))
	if outer != "" {
		env = append(env, stage.EnvShardPath+"="+outer+"."+strconv.Itoa(i))
	}
	if s.shardCommits != "" {
		env = append(env, stage.EnvShardCommits+"="+s.shardCommits)
	}
	env = append(env, stage.EnvShardRoute+"="+stage.ShardRoute(s.N, RouteHash, s.Key))
	if !s.Tools[s.Cmd[0]] {
		return env
	}
	// keyby sends a streamkit child progress when its first schema declares an event time,
	// which it can learn only once the child runs.
	env = append(env, stage.EnvShardProgress+"=1")
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GOGC=") {
			return env
		}
	}
	// A shard holds 1/N of the batches of one process and its keyed state lives off the Go
	// heap: with the default heap goal, N shards collect about N times as often as one
	// process in all (measured with 2 dedup shards: 2.5% of their CPU; 1.6% with GOGC=200,
	// for 5% more resident memory; 0.9% with GOGC=400, for 13% more).
	return append(env, "GOGC="+strconv.Itoa(ShardGOGC))
}

// RouteHash names the routing function in keyby's metadata.json: a checkpoint whose shards
// were routed by another hash (before XXH3-64, FNV-1a) is refused rather than silently
// sending keys to shards that never saw them.
const RouteHash = "xxh3-64"

type child struct {
	i      int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	w      *codec.Writer
	resume chan struct{}
	exited chan struct{} // closed when the process has exited; state then holds its status
	state  *os.ProcessState
	order  uint64      // 1 for the first child to exit, 2 for the next...
	exitAt time.Time   // when keyby saw it exit
	killed atomic.Bool // killed by keyby itself (its exit status says nothing of its own)
}

type childMsg struct {
	i   int
	c   *codec.Control
	err error
	eof bool
}

// inputError is a failure to read keyby's own stdin (not a child's fault).
type inputError struct{ err error }

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

// writeError is a failure to write the merged stream (not a child's fault).
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// Run runs the sharded stage. Errors: a child's failure as *stage.ChildExitError with the
// child's exit code; a restart with another shard count as *state.IncompatibleError.
func (s *Sharded) Run(ctx context.Context, o stage.Options) (err error) {
	mem := o.Allocator()
	if err := o.ResolveShard(); err != nil {
		return err
	}
	// As a shard of an outer keyby, this keyby's key must contain the outer routing key, as
	// its children's keys must contain this one: else equal keys of the children would sit in
	// different outer shards.
	if err := o.Shard.CheckKey("keyby: KEY", s.Key); err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" {
		// The parent holds a few batches at a time but allocates every batch's parts: a
		// larger heap goal (a few MB more) saves ~15% of its CPU in collections.
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	// On a first signal keyby stops the shards together: it forwards the next barrier, then
	// end=pause, so every shard finishes the same epoch (the shards ignore signals themselves,
	// see stage.EnvShard); a second signal kills them.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	var dir *state.Dir
	if p := o.CheckpointDir(); p != "" {
		dir, err = state.Open(p, "keyby", o.StageName(), map[string]string{"key": strings.Join(s.Key, ","), "shards": strconv.Itoa(s.N), "hash": RouteHash})
		if err != nil {
			return err
		}
		defer dir.Close()
	}
	r := &shardRun{s: s, o: o, mem: mem}
	if r.rd, err = codec.NewReader(o.Stdin, mem); err != nil {
		return stage.InputError("keyby", o.Stdin, err)
	}
	defer r.rd.Release()
	// Batches are split and written before the next one is read: their buffers, and those of
	// the split parts, are recycled rather than allocated (and zeroed, and collected) anew.
	r.bufs = codec.NewRecycler(mem)
	defer r.bufs.Release()
	r.rd.SetBodyAllocator(r.bufs)
	childSchema, upstream, err := r.schemas(dir)
	if err != nil {
		return err
	}
	tmp, err := s.setShardCommits(dir)
	if err != nil {
		return err
	}
	if tmp != "" {
		defer os.RemoveAll(tmp)
	}
	prop, err := s.newPropagator(o, dir, upstream)
	if err != nil {
		return err
	}

	r.ctx, r.cancel = context.WithCancel(ctx)
	defer r.cancel()
	if err := r.startChildren(childSchema); err != nil {
		return err
	}
	defer func() {
		if perr := r.stopChildren(prop); err == nil && perr != nil {
			err = perr
		}
	}()
	propStop := make(chan struct{})
	defer close(propStop)
	go prop.run(propStop)

	r.startMerge()
	sigDone := make(chan struct{})
	defer close(sigDone)
	go r.watchSignals(sigs, sigDone)

	rerr := r.route()
	if rerr != nil {
		s.cutAt = time.Now() // from here on, shards fail because their input was cut
	}
	return r.finish(r.closeInputs(rerr))
}

// shardRun is the state that the steps of one (*Sharded).Run share: keyby's input, the
// children, and the merge running beside the routing.
type shardRun struct {
	s      *Sharded
	o      stage.Options
	mem    memory.Allocator
	ctx    context.Context // cancelled when Run gives up on the children
	cancel context.CancelFunc

	rd   *codec.Reader   // keyby's stdin
	bufs *codec.Recycler // the buffers of rd's batches and of their split parts
	in   *arrow.Schema   // rd's schema
	enc  *codec.KeyEncoder

	children        []*child
	interruptedFlag atomic.Bool // set by the first signal

	learn     chan codec.ShardEventTimeColumn // the children's event time, once
	merged    error                           // merge's result, once mergeDone is closed
	mergeDone chan struct{}
	mergeErr  chan error // merge's result
}

// schemas reads keyby's input schema and its key columns, and returns the schema the children
// read (keyby's key and checkpoint directory dir added to its stream info) and the checkpoint
// directories upstream of keyby. Errors: a key that the input cannot give (a usage error).
func (r *shardRun) schemas(dir *state.Dir) (childSchema *arrow.Schema, upstream []string, err error) {
	r.in = r.rd.Schema()
	if r.enc, err = codec.NewKeyEncoder(r.in, r.s.Key); err != nil {
		return nil, nil, stage.Usagef("keyby: %v", err)
	}
	info := codec.Info(r.in)
	upstream = info.Checkpoints
	info.Key = r.s.Key
	if dir != nil {
		info.Checkpoints = append(slices.Clone(info.Checkpoints), dir.Path)
	}
	// What a stream declares to a keyby is no child's own declaration.
	return codec.WithShardEventTime(codec.WithInfo(r.in, info), codec.ShardEventTimeColumn{}), upstream, nil
}

// setShardCommits sets where sink children record their commits (s.shardCommits): keyby marks
// upstream the epochs every shard committed (stage.EnvShardCommits). Without a checkpoint
// directory dir it is a new temporary directory, returned for the caller to remove.
func (s *Sharded) setShardCommits(dir *state.Dir) (tmp string, err error) {
	if dir != nil {
		s.shardCommits = state.Join(dir.Path, "shards")
		return "", nil
	}
	tmp, err = os.MkdirTemp("", "streamkit-keyby-")
	if err != nil {
		return "", fmt.Errorf("keyby: %w", err)
	}
	s.shardCommits = tmp
	return tmp, nil
}

// newPropagator returns the initialised propagator of the shards' commits to keyby's own
// checkpoint directory dir (if any), then to the directories upstream of keyby.
func (s *Sharded) newPropagator(o stage.Options, dir *state.Dir, upstream []string) (*commitPropagator, error) {
	var targets []string // where keyby writes the markers: its own directory, then upstream
	if dir != nil {
		targets = append(targets, dir.Path)
	}
	prop := &commitPropagator{dir: s.shardCommits, shards: s.N, targets: append(targets, stage.Upstream(upstream)...), log: cmp.Or(o.Log, slog.Default())}
	if err := prop.init(); err != nil {
		return nil, err
	}
	return prop, nil
}

// startChildren launches the children, which read schema, and writes it to each.
func (r *shardRun) startChildren(schema *arrow.Schema) error {
	children, err := r.s.start(r.o, schema, r.mem)
	if err != nil {
		return err
	}
	r.children = children
	for _, c := range children {
		// The children write their output schema as soon as they have read this one; keyby
		// learns their event time from it (learn). A child that is gone fails the first
		// write of route instead, which reports it.
		_ = c.w.WriteSchema()
	}
	return nil
}

// stopChildren kills the children still running, waits until every one has exited, then
// marks what all of them committed (prop).
func (r *shardRun) stopChildren(prop *commitPropagator) error {
	for _, c := range r.children {
		select {
		case <-c.exited:
		default:
			c.cmd.Process.Kill()
			<-c.exited
		}
	}
	// Every child is gone: mark what all of them committed.
	return prop.propagate()
}

// startMerge merges the children's outputs on stdout, in a goroutine. When merging fails (a
// child that does not speak the protocol, a reader that went away) the children are killed,
// so that routing, which may be blocked writing to a child, fails too instead of waiting
// forever.
func (r *shardRun) startMerge() {
	r.mergeErr = make(chan error, 1)
	r.mergeDone = make(chan struct{})
	r.learn = make(chan codec.ShardEventTimeColumn, 1)
	go func() {
		r.merged = r.s.merge(r.ctx, r.o, r.children, r.mem, r.learn)
		if r.merged != nil && !errors.Is(r.merged, stage.ErrInterrupted) {
			killAfterFailure(r.children)
		}
		close(r.mergeDone)
		r.mergeErr <- r.merged
	}()
}

// watchSignals handles the signals on sigs until done is closed: the first makes route end
// the children's streams after the next barrier, the second kills the children.
func (r *shardRun) watchSignals(sigs <-chan os.Signal, done <-chan struct{}) {
	n := 0
	for {
		select {
		case <-done:
			return
		case <-sigs:
		}
		n++
		r.interruptedFlag.Store(true)
		if n == 1 {
			if r.o.Log != nil {
				r.o.Log.Info("interrupt: the shards finish the current epoch, then stop (interrupt again to abort)")
			}
		} else {
			killAll(r.children)
			r.cancel()
		}
	}
}

// route reads keyby's input to its end (or end batch) and writes every row to its child,
// every control to all children and, when the children declared an event time, the latest
// event time routed so far after each batch (codec.Progress). Errors: keyby's own input
// failing as *inputError, else a failed write to a child.
func (r *shardRun) route() error {
	var hashes []uint64
	idx := make([][]int32, r.s.N)
	var ts []int64
	var tsOK []bool
	progress := int64(window.MinTime)
	var times *window.TimeExtractor
	learned := !r.s.Tools[r.s.Cmd[0]] // keyby sends progress to streamkit children only
	for {
		m, err := r.rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &inputError{fmt.Errorf("keyby: stdin: %w", err)}
		}
		if m.Control != nil {
			if done, err := r.forwardControl(*m.Control); err != nil || done {
				return err
			}
			continue
		}
		if !learned {
			// Before the first row: the children's first schemas say from which column
			// the progress that follows every batch is read.
			select {
			case e := <-r.learn:
				times = extractor(e, r.in)
			case <-r.ctx.Done():
				m.Batch.Release()
				return r.ctx.Err()
			}
			learned = true
		}
		err = r.s.routeBatch(r.ctx, r.mem, r.bufs, r.enc, m.Batch, r.children, idx, &hashes)
		if err == nil && times != nil {
			// The children's own errors name bad event times; here they only do not count.
			if ts, tsOK, err = times.Extract(m.Batch, ts, tsOK); err != nil {
				ts, tsOK, err = ts[:0], tsOK[:0], nil
			}
		}
		m.Batch.Release()
		if err != nil {
			return err
		}
		if times == nil {
			continue
		}
		if progress, err = r.sendProgress(progress, ts, tsOK); err != nil {
			return err
		}
	}
}

// forwardControl writes control c of keyby's input to every child; done tells that routing
// ends here: at the end batch, or at a barrier after a signal, where every shard is sent
// end=pause as a stage would end itself.
func (r *shardRun) forwardControl(c codec.Control) (done bool, err error) {
	for _, ch := range r.children {
		if err := ch.w.WriteControl(c); err != nil {
			return false, fmt.Errorf("keyby: shard %d: %w", ch.i, err)
		}
	}
	if c.Kind == codec.End {
		return true, nil
	}
	if c.Kind == codec.Barrier && r.interruptedFlag.Load() {
		// Interrupted: every shard ends after this barrier, as a stage would.
		end := codec.EndControl(codec.Pause)
		end.Interrupted = true
		for _, ch := range r.children {
			if err := ch.w.WriteControl(end); err != nil {
				return false, fmt.Errorf("keyby: shard %d: %w", ch.i, err)
			}
		}
		return true, nil
	}
	return false, nil
}

// sendProgress sends every child the latest of progress and of the valid event times ts
// (tsOK) of the batch just routed, if it is later than progress, and returns it.
func (r *shardRun) sendProgress(progress int64, ts []int64, tsOK []bool) (int64, error) {
	latest := progress
	for i, ok := range tsOK {
		if ok && ts[i] > latest {
			latest = ts[i]
		}
	}
	if latest > progress {
		progress = latest
		for _, c := range r.children {
			if err := c.w.WriteControl(codec.ProgressControl(time.UnixMicro(latest))); err != nil {
				return progress, fmt.Errorf("keyby: shard %d: %w", c.i, err)
			}
		}
	}
	return progress, nil
}

// closeInputs closes the children's input streams after routing ended with rerr, and returns
// rerr, or the failure to end a stream after a complete input.
func (r *shardRun) closeInputs(rerr error) error {
	for _, c := range r.children {
		// Only a complete input ends the children's streams with the end-of-stream marker.
		// After a failure (a dead child, a truncated input) their pipes are just closed: a
		// child must see a truncated stream and fail, not a clean end, which a stage takes
		// for a producer without end batch (end=final) and would commit the rows after the
		// last barrier as the next epoch, the very epoch a restart replays in full.
		if rerr == nil {
			// A child stops reading at the end batch and may already be gone: the marker
			// then meets a closed pipe, which is no failure.
			if cerr := c.w.Close(); cerr != nil && !isBrokenPipe(cerr) {
				rerr = fmt.Errorf("keyby: shard %d: %w", c.i, cerr)
			}
		}
		c.stdin.Close()
	}
	return rerr
}

// finish waits for the merge and the children after routing ended with rerr, and returns
// Run's result: the cause of a failure (childFailure), stage.ErrInterrupted after a signal,
// nil when the reader of keyby's stdout went away.
func (r *shardRun) finish(rerr error) error {
	var ie *inputError
	if errors.As(rerr, &ie) {
		// keyby's own input failed (e.g. truncated: the upstream process died); the shards
		// fail only because their input was cut in turn.
		r.cancel()
		killAll(r.children)
		return rerr
	}
	if rerr != nil {
		// A broken pipe to a child is the symptom of a failed merge or child: report that.
		select {
		case <-r.mergeDone:
			if r.merged != nil {
				rerr = r.merged
			}
		case <-time.After(5 * time.Second):
		}
		r.cancel()
		killAll(r.children)
		switch {
		case r.merged != nil && isBrokenPipe(r.merged):
			return nil // the reader of our stdout went away (e.g. | head): stop quietly
		case isBrokenPipe(rerr) && r.interruptedFlag.Load():
			return stage.ErrInterrupted
		}
		return r.s.childFailure(r.children, rerr)
	}
	interrupted := false
	merr := <-r.mergeErr
	if errors.Is(merr, stage.ErrInterrupted) {
		interrupted, merr = true, nil
	}
	if merr != nil && isBrokenPipe(merr) {
		return nil // the reader of our stdout went away (e.g. | head): stop quietly
	}
	if merr != nil {
		r.cancel()
		return r.s.childFailure(r.children, merr)
	}
	for _, c := range r.children {
		<-c.exited
		if !c.state.Success() && !((interrupted || r.interruptedFlag.Load()) && c.state.ExitCode() == stage.ExitInterrupted) {
			return r.s.childFailure(r.children, fmt.Errorf("keyby: shard %d: %s", c.i, c.state))
		}
	}
	if interrupted || r.interruptedFlag.Load() {
		return stage.ErrInterrupted
	}
	return nil
}

// killedByUs reports whether the child ended from our own SIGKILL (not a failure of its own).
func (c *child) killedByUs() bool {
	ws, ok := c.state.Sys().(syscall.WaitStatus)
	return c.killed.Load() && ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// killAfterFailure kills the children after a failed merge. The usual cause is a child that
// died (its output is cut short): it is given up to a second to be reaped first, so that its
// own exit status (e.g. 137 after kill -9) is reported, not taken for our kill.
func killAfterFailure(children []*child) {
	deadline := time.Now().Add(time.Second)
	for exited := false; !exited && time.Now().Before(deadline); {
		for _, c := range children {
			select {
			case <-c.exited:
				exited = true
			default:
			}
		}
		if !exited {
			time.Sleep(2 * time.Millisecond)
		}
	}
	killAll(children)
}

// killAll kills every child that is still running.
func killAll(children []*child) {
	for _, c := range children {
		select {
		case <-c.exited:
		default:
			c.killed.Store(true)
			c.cmd.Process.Kill()
		}
	}
}

// isBrokenPipe reports whether err is a write to a pipe whose reader is gone.
func isBrokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}

// start launches the children with STREAMKIT_SHARD=i and an IPC writer on each stdin.
func (s *Sharded) start(o stage.Options, schema *arrow.Schema, mem memory.Allocator) ([]*child, error) {
	argv := append([]string(nil), s.Cmd...)
	if s.Tools[argv[0]] {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		argv = append([]string{self}, argv...)
	}
	var out []*child
	exits := new(atomic.Uint64)
	for i := 0; i < s.N; i++ {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = s.childEnv(os.Environ(), i)
		cmd.SysProcAttr = childProcAttr()
		cmd.Stderr = o.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return out, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return out, err
		}
		if err := cmd.Start(); err != nil {
			return out, fmt.Errorf("keyby: start shard %d (%s): %w", i, argv[0], err)
		}
		for _, f := range []any{stdin, stdout} {
			if f, ok := f.(*os.File); ok {
				codec.TunePipe(f)
			}
		}
		c := &child{i: i, cmd: cmd, stdin: stdin, stdout: stdout, resume: make(chan struct{}, 1),
			exited: make(chan struct{}), w: codec.NewWriter(stdin, schema, mem)}
		// Process.Wait, not Cmd.Wait: Cmd.Wait would close stdout before we read it all.
		go func() {
			c.state, _ = cmd.Process.Wait()
			c.exitAt = time.Now()
			c.order = exits.Add(1)
			close(c.exited)
		}()
		out = append(out, c)
	}
	return out, nil
}

// routeBatch splits rec by shard and writes each part to its child; the parts' flat columns
// are allocated from bufs.
func (s *Sharded) routeBatch(ctx context.Context, mem, bufs memory.Allocator, enc *codec.KeyEncoder, rec arrow.RecordBatch,
	children []*child, idx [][]int32, hashes *[]uint64) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	*hashes = codec.HashRows(*hashes, enc.Columns(rec), n)
	shardRows(idx, *hashes, s.N)
	ctx = compute.WithAllocator(ctx, mem)
	for i, rows := range idx {
		if len(rows) == 0 {
			continue
		}
		if len(rows) == n {
			if err := children[i].w.Write(rec); err != nil {
				return fmt.Errorf("keyby: shard %d: %w", i, err)
			}
			continue
		}
		prec, err := takeRows(ctx, mem, bufs, rec, rows)
		if err != nil {
			return err
		}
		prec = codec.CarryMetadata(prec, rec) // the rows' source partition, if named
		err = children[i].w.Write(prec)
		prec.Release()
		if err != nil {
			return fmt.Errorf("keyby: shard %d: %w", i, err)
		}
	}
	return nil
}

// shardRows sets idx[i] to the rows r whose hash h[r] % n == i, ascending (n = len(idx)).
func shardRows(idx [][]int32, hashes []uint64, n int) {
	counts := make([]int, n)
	for i := range idx {
		if cap(idx[i]) < len(hashes) {
			idx[i] = make([]int32, len(hashes))
		}
		idx[i] = idx[i][:len(hashes)]
	}
	if n&(n-1) == 0 { // a power of two: h % n == h & (n-1), without a division per row
		mask := uint64(n - 1)
		for r, h := range hashes {
			sh := h & mask
			idx[sh][counts[sh]] = int32(r)
			counts[sh]++
		}
	} else {
		for r, h := range hashes {
			sh := h % uint64(n)
			idx[sh][counts[sh]] = int32(r)
			counts[sh]++
		}
	}
	for i := range idx {
		idx[i] = idx[i][:counts[i]]
	}
}

// merge reads every child's output and writes one stream: data as it comes, barrier n once
// all children sent it (a child that sent it waits until then), the minimum watermark, one end.
// Once the children's first schemas are read it sends learn their declared event time (none
// when they declare none, are no streamkit tool or failed).
func (s *Sharded) merge(ctx context.Context, o stage.Options, children []*child, mem memory.Allocator, learn chan<- codec.ShardEventTimeColumn) (err error) {
	readers, err := openOutputs(children, mem)
	defer func() {
		for _, r := range readers {
			if r != nil {
				r.Release()
			}
		}
	}()
	var declared codec.ShardEventTimeColumn
	if err == nil {
		declared, err = s.declaredEventTime(readers)
	}
	learn <- declared
	if err == nil && readers == nil && o.Shard.IsShard() {
		// Every child is a sink: as a shard, keyby says so at once, as a sink shard does.
		if f, ok := o.Stdout.(*os.File); ok {
			f.Close()
		}
	}
	if err != nil || readers == nil {
		return err // readers nil: every child is a sink, keyby writes nothing either
	}
	w, err := mergedWriter(o, readers, declared, mem)
	if err != nil {
		return err
	}

	// Data goes to stdout from each child's reader goroutine, under mu, as it comes; controls
	// go to the loop of align, which aligns them. A child that sent barrier n reads nothing
	// more until every child sent it, so no data of epoch n+1 precedes barrier n. Data batches
	// are passed on as the bytes of their IPC message when the children's streams allow it (no
	// dictionaries): no decoding and re-encoding in the parent (the next reader validates them);
	// large ones go from the child's pipe to stdout by splice(2), not through the parent.
	m := &merger{children: children, w: w, raw: true, msgs: make(chan childMsg, 16),
		barriers: map[uint64]int{}, wms: make([]time.Time, len(children)), endKind: codec.Final}
	for _, r := range readers {
		m.raw = m.raw && r.Forwardable()
	}
	var wg sync.WaitGroup
	ctx, stop := context.WithCancel(ctx)
	defer func() {
		// Unblock the per-child readers: a failed merge kills the children (a reader may be
		// blocked in Next on a child that is blocked writing to us).
		stop()
		if err != nil && !errors.Is(err, stage.ErrInterrupted) {
			killAfterFailure(children)
		}
		wg.Wait()
	}()
	for i, r := range readers {
		wg.Add(1)
		go func(i int, r *codec.Reader) {
			defer wg.Done()
			m.readChild(ctx, i, r)
		}(i, r)
	}
	if err := m.align(ctx); err != nil {
		return err
	}
	end := codec.EndControl(m.endKind)
	end.Interrupted = m.interrupted
	if err := w.WriteControl(end); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if m.interrupted {
		return stage.ErrInterrupted
	}
	return nil
}

// mergedWriter returns the writer of the merged stream on o.Stdout (its schema written at once
// when keyby is a shard itself). There is one schema: the children run the same command on
// the same input; their checkpoint lists and source partitions are united so the sink
// commits every child's directory. Errors: a child whose schema differs from the first's.
func mergedWriter(o stage.Options, readers []*codec.Reader, declared codec.ShardEventTimeColumn, mem memory.Allocator) (*codec.Writer, error) {
	first := readers[0].Schema()
	info := codec.Info(first)
	// So are their source partitions (each names them as its own: stage.shardPartition).
	seen, seenPart := map[string]bool{}, map[string]bool{}
	var dirs, parts []string
	for i, r := range readers {
		if !r.Schema().Equal(first) {
			return nil, fmt.Errorf("keyby: shard %d output schema differs from shard 0: %v vs %v", i, r.Schema(), first)
		}
		ri := codec.Info(r.Schema())
		dirs = appendNew(dirs, seen, ri.Checkpoints)
		parts = appendNew(parts, seenPart, ri.Partitions)
	}
	info.Checkpoints, info.Partitions = dirs, parts
	// The children's event time is keyby's own to declare when it is a shard itself (its
	// parent sends it progress, which it passes on); the outermost keyby drops it.
	out := codec.WithInfo(first, info)
	if !o.Shard.IsShard() {
		declared = codec.ShardEventTimeColumn{}
	}
	w := codec.NewWriter(o.Stdout, codec.WithShardEventTime(out, declared), mem)
	if o.Shard.IsShard() {
		if err := w.WriteSchema(); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// merger is the state merge shares between the children's reader goroutines (readChild),
// which write data to the merged stream as it comes, and the loop that aligns the children's
// controls (align).
type merger struct {
	children []*child
	w        *codec.Writer // the merged stream
	mu       sync.Mutex    // held by every write to w
	raw      bool          // data batches pass as the bytes of their IPC messages
	msgs     chan childMsg // the children's controls, failures and ends

	// align's state.
	barriers    map[uint64]int // epoch: the children that sent its barrier
	wms         []time.Time    // every child's last watermark
	lastWM      time.Time      // the last watermark written
	ended       int            // children that sent their end batch
	endKind     codec.EndKind  // pause if a child ended with pause, else final
	interrupted bool           // a child's end says it was interrupted
}

// write runs one write of the merged stream under mu; its failure is a *writeError.
func (m *merger) write(f func() error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := f(); err != nil {
		return &writeError{err}
	}
	return nil
}

// next reads the next control of the output r of a child, writing the data batches before it.
func (m *merger) next(r *codec.Reader) (*codec.Control, error) {
	for {
		if m.raw {
			c, err := r.ForwardNext(m.w, m.write)
			if err != nil || c != nil {
				return c, err
			}
			continue
		}
		msg, err := r.Next()
		if err != nil || msg.Control != nil {
			return msg.Control, err
		}
		err = m.write(func() error { return m.w.Write(msg.Batch) })
		msg.Batch.Release()
		if err != nil {
			return nil, err
		}
	}
}

// readChild passes on the output r of child i until it ends or fails, or ctx is done: its
// controls, failure and end go to msgs; after a barrier it waits until align resumes it.
func (m *merger) readChild(ctx context.Context, i int, r *codec.Reader) {
	for {
		c, err := m.next(r)
		if err == io.EOF {
			select {
			case m.msgs <- childMsg{i: i, eof: true}:
			case <-ctx.Done():
			}
			return
		}
		select {
		case m.msgs <- childMsg{i: i, c: c, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
		if c.Kind == codec.Barrier {
			select {
			case <-m.children[i].resume:
			case <-ctx.Done():
				return
			}
		}
	}
}

// align takes the children's controls from msgs until every output ended, writing barrier n
// once every child sent it (then resuming them) and the minimum watermark when it advances.
// Errors: a failed write of the merged stream, a child's failed output, a child whose output
// ended without an end batch.
func (m *merger) align(ctx context.Context) error {
	n := len(m.children)
	eofs := 0
	for eofs < n {
		var cm childMsg
		select {
		case cm = <-m.msgs:
		case <-ctx.Done():
			return ctx.Err()
		}
		if cm.eof {
			eofs++
			continue
		}
		var we *writeError
		if errors.As(cm.err, &we) {
			return we.err
		}
		if cm.err != nil {
			return fmt.Errorf("keyby: shard %d output: %w", cm.i, cm.err)
		}
		if err := m.control(cm.i, *cm.c); err != nil {
			return err
		}
	}
	if m.ended < n {
		return errors.New("keyby: a shard ended without an end-of-stream")
	}
	return nil
}

// control takes control c of child i: a barrier is written (and every child resumed) once
// every child sent it, a watermark once the minimum of the children's advances, an end is
// counted.
func (m *merger) control(i int, c codec.Control) error {
	writeControl := func(c codec.Control) error { return m.write(func() error { return m.w.WriteControl(c) }) }
	switch c.Kind {
	case codec.Barrier:
		m.barriers[c.Epoch]++
		if m.barriers[c.Epoch] == len(m.children) {
			delete(m.barriers, c.Epoch)
			if err := writeControl(c); err != nil {
				return err
			}
			for _, ch := range m.children {
				ch.resume <- struct{}{}
			}
		}
	case codec.Watermark:
		m.wms[i] = c.Watermark
		min := c.Watermark
		for _, t := range m.wms {
			if t.IsZero() {
				min = time.Time{}
				break
			}
			if t.Before(min) {
				min = t
			}
		}
		if !min.IsZero() && min.After(m.lastWM) {
			m.lastWM = min
			if err := writeControl(codec.WatermarkControl(min)); err != nil {
				return err
			}
		}
	case codec.Stats:
		if i == 0 { // every child forwards the upstream stages' stats: pass them on once
			return writeControl(c)
		}
	case codec.End:
		m.ended++
		if c.End == codec.Pause {
			m.endKind = codec.Pause
		}
		m.interrupted = m.interrupted || c.Interrupted
	}
	return nil
}

// declaredEventTime is the event-time column the children declare in their first schemas
// (codec.SchemaShardEventTime), none when they are no streamkit tool (keyby sends progress
// to those only) or write no stream. Children that declare different ones are an error.
func (s *Sharded) declaredEventTime(readers []*codec.Reader) (codec.ShardEventTimeColumn, error) {
	if !s.Tools[s.Cmd[0]] || readers == nil {
		return codec.ShardEventTimeColumn{}, nil
	}
	first, _ := codec.ShardEventTime(readers[0].Schema())
	for i, r := range readers[1:] {
		if e, _ := codec.ShardEventTime(r.Schema()); e != first {
			return codec.ShardEventTimeColumn{}, fmt.Errorf("keyby: shard %d declares event time %+v, shard 0 %+v", i+1, e, first)
		}
	}
	return first, nil
}

// openOutputs opens the children's output streams, all at once (a child may write its
// schema only when its input starts). A child whose stdout closes without an Arrow IPC stream
// is a sink (write-delta, write-kafka...): when every child is one, openOutputs returns no
// readers and no error, and keyby writes nothing on stdout either, like the sink alone (a
// downstream stage then reports that its input is empty). Some children streaming and others
// not is an error (the children run the same command; usually one of them failed early): it
// is reported as soon as both kinds are seen.
func openOutputs(children []*child, mem memory.Allocator) ([]*codec.Reader, error) {
	type opened struct {
		i   int
		r   *codec.Reader
		err error
	}
	res := make(chan opened, len(children))
	for i, c := range children {
		go func() {
			r, err := codec.NewReader(c.stdout, mem)
			res <- opened{i, r, err}
		}()
	}
	readers := make([]*codec.Reader, len(children))
	streamed, sink := -1, -1
	var failed error
	for k := range children {
		o := <-res
		switch {
		case errors.Is(o.err, codec.ErrNoStream):
			sink = o.i
		case o.err != nil:
			if failed == nil {
				failed = fmt.Errorf("keyby: shard %d output: %w", o.i, o.err)
			}
		default:
			readers[o.i], streamed = o.r, o.i
		}
		if failed == nil && streamed >= 0 && sink >= 0 {
			failed = fmt.Errorf("keyby: shard %d wrote no output stream but shard %d did: the children must all be sinks or all write a stream", sink, streamed)
		}
		if failed != nil {
			// Unblock the other openers: the children are killed (killAfterFailure), their
			// stdout closes.
			go func(n int) {
				for range n {
					if o := <-res; o.r != nil {
						o.r.Release()
					}
				}
			}(len(children) - k - 1)
			return readers, failed
		}
	}
	if sink >= 0 {
		return nil, nil
	}
	return readers, nil
}

// causeBefore tells whether failed child a is more likely the cause than failed child b: one
// that exited before keyby cut the shards' input (cutAt) before one that exited after (they
// fail because of the cut), then a death by a signal (not keyby's) before an exit code, then
// the first to be reaped.
func (s *Sharded) causeBefore(a, b *child) bool {
	if !s.cutAt.IsZero() {
		if ca, cb := a.exitAt.Before(s.cutAt), b.exitAt.Before(s.cutAt); ca != cb {
			return ca
		}
	}
	if sa, sb := signaled(a.state), signaled(b.state); sa != sb {
		return sa
	}
	return a.order < b.order
}

func signaled(ps *os.ProcessState) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// childFailure prefers a child's own failure (its exit code; its stderr went to ours) over
// the symptom seen by the parent (a broken pipe, a truncated output). It waits (up to 5 s)
// for every child to exit, then names the cause among those that failed (causeBefore): the
// others fail after it, when keyby cuts their input short.
func (s *Sharded) childFailure(children []*child, symptom error) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		running := 0
		var first *child
		for _, c := range children {
			select {
			case <-c.exited:
				if !c.state.Success() && !c.killedByUs() && (first == nil || s.causeBefore(c, first)) {
					first = c
				}
			default:
				running++
			}
		}
		if running > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if first != nil {
			code := first.state.ExitCode()
			if code < 0 { // killed by a signal
				code = 128 + int(first.state.Sys().(syscall.WaitStatus).Signal())
			}
			return &stage.ChildExitError{Code: code, Err: fmt.Errorf("keyby: shard %d (%s) failed: %s", first.i, s.Cmd[0], first.state)}
		}
		return symptom
	}
}

// commitPropagator writes the commit markers of sink children upstream: epoch n is marked in
// keyby's own checkpoint directory and its upstream stages' (targets, in that order) once
// every shard recorded it in dir/<i> (stage.EnvShardCommits). Markers only ever lag the
// shards' commits, so a restart replays to every shard the epochs it has not committed (a
// sink skips the ones it has, e.g. write-delta by the Delta txn).
type commitPropagator struct {
	dir     string
	shards  int
	targets []string
	log     *slog.Logger
	mu      sync.Mutex
	last    uint64 // the newest epoch marked (or found marked at the start)
}

// propagateEvery is how often keyby looks for epochs every sink shard committed.
const propagateEvery = 100 * time.Millisecond

// init creates the shards' commit directories (a bucket needs none) and takes the epoch all
// shards had committed before this run as marked already.
func (p *commitPropagator) init() error {
	for i := 0; i < p.shards && !state.IsURL(p.dir); i++ {
		if err := os.MkdirAll(filepath.Join(p.dir, strconv.Itoa(i), state.CommitsDir), 0o755); err != nil {
			return fmt.Errorf("keyby: %w", err)
		}
	}
	n, err := p.allCommitted()
	p.last = n
	return err
}

// allCommitted is the newest epoch every shard recorded, 0 when a shard recorded none.
func (p *commitPropagator) allCommitted() (uint64, error) {
	var low uint64
	for i := 0; i < p.shards; i++ {
		n, err := state.Committed(state.Join(p.dir, strconv.Itoa(i)))
		if err != nil {
			return 0, fmt.Errorf("keyby: shard %d commits: %w", i, err)
		}
		if i == 0 || n < low {
			low = n
		}
	}
	return low, nil
}

// propagate marks the newest epoch every shard committed, if it is new.
func (p *commitPropagator) propagate() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, err := p.allCommitted()
	if err != nil || n <= p.last {
		return err
	}
	if err := stage.WriteCommits(p.targets, n, "keyby"); err != nil {
		return fmt.Errorf("keyby: commit epoch %d: %w", n, err)
	}
	p.last = n
	return nil
}

// run propagates every propagateEvery until stop is closed.
func (p *commitPropagator) run(stop <-chan struct{}) {
	t := time.NewTicker(propagateEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := p.propagate(); err != nil && p.log != nil {
				p.log.Warn("could not mark the shards' commits upstream (retried)", "err", err)
			}
		}
	}
}

// appendNew appends the items of add not in seen to list, in order, and marks them seen.
func appendNew(list []string, seen map[string]bool, add []string) []string {
	for _, d := range add {
		if !seen[d] {
			seen[d] = true
			list = append(list, d)
		}
	}
	return list
}
