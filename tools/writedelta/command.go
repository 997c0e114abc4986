package writedelta

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/sink/delta"

	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/tools/cli"
)

// Command returns the cobra command of `streamkit write-delta`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit write-delta`: its usage, help, flags and examples (docs/cli/write-delta.md).
func CommandSpec() cli.Spec {
	var cfg delta.StreamConfig
	var props, with []string
	var target string
	var unsafeSingleWriter bool
	o := stage.Options{Tool: Tool}
	return cli.Spec{
		Use:   "write-delta TABLE",
		Short: "Write an Arrow IPC stream into a Delta Lake table, exactly once",
		Long: `write-delta appends the Arrow IPC stream on stdin to the Delta Lake table TABLE (a local
directory, a file:// URI, or a bucket URL: s3://BUCKET/PATH, gs://BUCKET/PATH,
az://CONTAINER/PATH or abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH, with the cloud
SDKs' usual credentials and AWS_ENDPOINT_URL for an S3-compatible server), which Spark
(delta-spark), delta-rs and DuckDB read. The table is created from the stream's schema at the
first commit, even when no rows arrive. On a bucket, commits are put-if-absent writes; a store
that cannot do them is refused unless --unsafe-single-writer.

Exactly-once: every epoch of the stream with rows becomes one Delta commit with its Parquet
data files and a txn action {appId = flow id, version = epoch}; epochs without rows (an idle
source still cuts one every --epoch-interval) make no Delta commit, except the first, which
creates the table; their progress is kept in the checkpoint directory. The flow id is --flow, or generated once and kept in the checkpoint
directory (write-delta.json). After a restart, replayed epochs whose number is at most the
table's txn version for the flow are skipped without writing a data file, so each input row
lands in the table once. Without --checkpoint or $STREAMKIT_CHECKPOINT each run commits under a
new flow id and a restart cannot be exactly-once (a warning says so).

Skipping is right only for replays, so with a checkpoint write-delta requires a replayable
input: one whose source keeps a checkpoint (read-kafka, read-files, read-delta, generate with
--checkpoint or $STREAMKIT_CHECKPOINT) and so numbers its epochs on from the committed one; its
schema says streamkit.replayable=true, passed on by every stage in between (dedup and window
pass it on only with a checkpoint of their own: without one a restart loses their state). A source without a
checkpoint numbers its epochs from 1 on every run, and the second run's rows would be skipped
as "already committed": such an input is refused at its first barrier (exit 2). Give the
source a checkpoint, or run write-delta without one. A stream without barriers (a foreign
producer) is committed as one final epoch after the committed ones, so it is accepted.

Several write-delta processes with different flows may append to one table at the same time
(append flows): commits are put-if-absent and lost races are retried without rewriting data.
A concurrent change of the table's schema, properties or protocol stops the writer with an
error; restarting it replays the epoch. Only one writer may run per flow: a lock file in
TABLE/_streamkit/flows names the holder, and binds the flow to its checkpoint directory (another
checkpoint for the flow is refused unless --flow-takeover). Classic Parquet checkpoints are
written every delta.checkpointInterval (10) commits, and then log files older than
delta.logRetentionDuration (30 days) that precede a checkpoint are deleted, as Spark does.

--partition-by value.region partitions by a struct field: it is copied into a top-level
column named region (value_region when region is taken). --table-property values are checked
as Delta checks them; unknown delta.* keys are refused unless --allow-arbitrary-properties.

Rows after the last barrier: with end=final (e.g. a foreign producer that sends a plain IPC
stream without barriers) they are committed as a final epoch; with end=pause they are an error.

Types: timestamps are stored in microseconds (finer digits are an error unless
--truncate-timestamps), zone-less timestamps as timestamp_ntz, unsigned integers widened,
dictionaries decoded; Float16, time, duration, interval, union and null columns are refused.

--mode overwrite: every epoch that has rows replaces the table's contents with its rows in one
commit (remove actions for all live files), as Spark's complete output mode; meant for runs
that deliver one epoch, e.g. exporting a state snapshot.`,
		Examples: []string{
			"# Exactly-once ingestion of Kafka records into a partitioned table (every stage checkpointed)\nexport STREAMKIT_CHECKPOINT=./ckpt\nstreamkit read-kafka -b 127.0.0.1:9092 -t orders --value-format json --value-schema orders.json | streamkit write-delta ./lake/orders --partition-by value.region",
			"# Append a second flow to the same table, tagging its rows\nstreamkit read-files 'backfill/*.parquet' --checkpoint ./ckpt/backfill-files | streamkit write-delta ./lake/orders --flow backfill-2024 --with record_source=backfill --checkpoint ./ckpt/backfill",
			"# Export the dedup stage's keyed state (an Arrow stream), replacing the table's contents\nstreamkit state-dump ./ckpt --stage dedup --format arrow | streamkit write-delta file:///data/dedup_state --mode overwrite --compression zstd",
			"# A foreign producer (plain Arrow IPC, no barriers) writes one commit\npython3 make_arrow.py | streamkit write-delta ./lake/events --merge-schema --table-property delta.checkpointInterval=20",
		},
		Args: cli.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) error {
			cli.Fill(&o, cmd)
			store, err := cli.OpenStore(cmd.Context(), args[0], unsafeSingleWriter)
			if err != nil {
				return cli.TableError(Tool, err)
			}
			root := store.Location()
			cfg.Table, cfg.Store = root, store
			if len(props) > 0 {
				cfg.Properties = map[string]string{}
				for _, p := range props {
					k, v, err := parseKV("--table-property", p)
					if err != nil {
						return err
					}
					cfg.Properties[k] = v
				}
			}
			for _, s := range with {
				k, v, err := parseKV("--with", s)
				if err != nil {
					return err
				}
				cfg.With = append(cfg.With, delta.Constant{Name: k, Value: v})
			}
			if target != "" {
				if cfg.TargetFileSize, err = cli.ParsePositiveSize(target); err != nil {
					return stage.Usagef("write-delta: --target-file-size: %v", err)
				}
			}
			cfg.PropertySize = cli.ParsePositiveSize
			w, err := delta.NewStreamWriter(cfg)
			if err != nil {
				return err
			}
			o.StateOptions = map[string]string{"table": root}
			return stage.RunOperator(cmd.Context(), o, w)
		},
		Flags: func(f *pflag.FlagSet) {
			f.StringVar(&cfg.Flow, "flow", "", "flow id: the txn appId of this writer's commits (default: generated once and kept in the checkpoint)")
			f.StringVar(&cfg.Mode, "mode", delta.ModeAppend, "append, or overwrite: each epoch with rows replaces the table's contents")
			cli.Choices(f, "mode", "append", "overwrite")
			f.StringSliceVar(&cfg.PartitionBy, "partition-by", nil, "partition columns of a new table, comma-separated (Hive-style directories)")
			f.BoolVar(&cfg.MergeSchema, "merge-schema", false, "add input columns the table lacks and relax NOT NULL columns (default: refuse with a schema diff)")
			f.StringArrayVar(&props, "table-property", nil, "table property KEY=VALUE (repeatable), e.g. delta.checkpointInterval=20")
			f.StringVar(&cfg.Compression, "compression", "snappy", "Parquet compression: snappy or zstd")
			cli.Choices(f, "compression", "snappy", "zstd")
			f.StringArrayVar(&with, "with", nil, "add a constant column COL=VALUE to every row (repeatable), e.g. record_source=stream")
			f.StringVar(&target, "target-file-size", "", "roll data files at about this size, e.g. 64MiB (default: delta.targetFileSize, else 128MiB)")
			f.IntVar(&cfg.Writers, "writers", 0, "parallel Parquet writers for epochs above 8 MiB, each with its own files (0, the default: CPUs, at most 4)")
			f.BoolVar(&cfg.AllowArbitraryProperties, "allow-arbitrary-properties", false, "accept delta.* table properties Delta does not define (default: refused, as Spark does)")
			f.BoolVar(&cfg.FlowTakeover, "flow-takeover", false, "let this checkpoint take over a flow bound to another checkpoint (its epochs must continue past the table's txn version for the flow; an epoch at or below it is refused)")
			f.BoolVar(&cfg.TruncateTimestamps, "truncate-timestamps", false, "drop sub-microsecond digits of timestamps instead of failing")
			cli.UnsafeSingleWriterFlag(f, &unsafeSingleWriter)
			cli.StageFlags(f, &o)
		},
	}
}
