package stage

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec"
)

// RequireReplayable is the check of a sink that skips the epochs it already made durable
// (write-delta with a checkpoint skips epochs up to the table's txn version; write-kafka with
// --transactional-id aborts epochs up to the one Kafka holds). Skipping is right only for a
// replay: when the stream's epochs are replayable (codec.SchemaReplayable, set by a source that
// keeps a checkpoint and passed on by every stage that restores its state: Options.Stateful), epoch n of a later run carries the rows of
// epoch n of an earlier one. Otherwise the source numbers its epochs from 1 on every run and
// the skipped epochs are new rows thrown away. The sink calls it at its first barrier from
// Barrier (a stream without barriers, a foreign producer's, is committed as one final epoch
// numbered after the committed ones, which is never skipped): it returns nil for a replayable
// stream and otherwise a usage error that says how to run the pipeline correctly
// (alternative: how to run the sink so that it skips nothing, e.g. "run write-delta without
// --checkpoint"). The stage loop prefixes the tool and the epoch.
func RequireReplayable(tool string, in *arrow.Schema, alternative string) error {
	if codec.Info(in).Replayable {
		return nil
	}
	return Usagef("the input's epochs are not replayable (its schema lacks %s=true): its source, or a stateful stage before this one "+
		"(dedup, window), keeps no checkpoint, so a later run numbers its epochs from 1 again or has lost the state behind them, and %s skips the epochs it has already committed: "+
		"the rows of a later run would be thrown away. Give the source a checkpoint (read-kafka, read-files, read-delta and generate "+
		"replay their epochs with --checkpoint DIR, and so do dedup and window with theirs; export %s=DIR gives every stage one), or %s",
		codec.SchemaReplayable, tool, EnvCheckpoint, alternative)
}
