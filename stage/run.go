package stage

import (
	"fmt"

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
	return &Env{Mem: o.Mem, Now: o.Now, Stats: newStats(), Log: o.Log, Shard: o.shard(), quality: qualityCheck{max: o.MaxBadRatio}}
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
	if sh := env.Shard.Name(); sh != "" {
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

// checkEpoch refuses, in a stateful stage with a checkpoint, barriers that would corrupt its
// state: an epoch at or below the last one (an upstream that restarted its numbering, e.g. a
// source without a checkpoint run twice) and a gap after its restored epoch (the stage missed
// epochs: its checkpoint is new or was removed while the upstream kept theirs). Stateless
// stages accept any numbering (print is at-least-once anyway).
//
// Any stage whose checkpoint lease on a bucket is lost fails here, before it writes or
// commits the epoch (state.Dir.Held).
func checkEpoch(env *Env, n uint64) error {
	if err := env.Dir.Held(); err != nil {
		return err
	}
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

// commitEpoch writes commit markers for epoch n into the sink's own directory and every
// upstream stage's directory (DESIGN.md §3 step 3). A sink shard of keyby --shards records the
// epoch in its shard commit directory instead of upstream (EnvShardCommits).
func commitEpoch(o *Options, env *Env, upstream []string, n uint64) error {
	// A sink that lost its checkpoint's lease must not commit: another process owns it now.
	if err := env.Dir.Held(); err != nil {
		return fmt.Errorf("%s: commit epoch %d: %w", o.Tool, n, err)
	}
	// Downstream first: the sink's own directory, then upstream stages in reverse pipeline
	// order (see restoreEpoch for why).
	var dirs []string
	if env.Dir != nil {
		dirs = append(dirs, env.Dir.Path)
	}
	shardDir := env.Shard.commitDir()
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

// refuseStatefulGroup refuses a stateful operator (dedup, window) behind a consumer-group
// source (codec.SchemaGroup): its state would have to move with the partitions between
// members, which is not supported yet; the message points to static members (read-kafka
// --member I/N), the fallback (docs/protocol.md §13).
func refuseStatefulGroup(tool string, env *Env, in *arrow.Schema) error {
	if !env.stateful {
		return nil
	}
	g, ok, _ := codec.Group(in)
	if !ok {
		return nil
	}
	return Usagef("%s: its input comes from consumer group %s, whose partitions move between members, "+
		"and %s's state would have to move with them, which is not supported yet: run N static members instead, "+
		"read-kafka --member I/N (or --assign) with a checkpoint of its own per member, e.g. "+
		"STREAMKIT_CHECKPOINT=s3://BUCKET/ckpt/member-I, so any machine can run member I (docs/protocol.md §13)", tool, g.Group, tool)
}
