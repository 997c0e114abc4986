// Package backfill is the `streamkit backfill` command: its flags become a
// sink/delta/backfill Config (with --from, a source/files source configured by read-files'
// decoding flags, tools/cli.DecodeFlags) and backfill.Run runs the once flow.
package backfill

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/sink/delta/backfill"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
	"github.com/streamkit/streamkit/tools/cli"
)

func parseKVs(flag string, vals []string) ([]backfill.KV, error) {
	var out []backfill.KV
	for _, v := range vals {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			k, val, ok := strings.Cut(part, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return nil, stage.Usagef("backfill: %s %q: want COL=VALUE", flag, part)
			}
			out = append(out, backfill.KV{Key: strings.TrimSpace(k), Value: val})
		}
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Command returns the cobra command of `streamkit backfill`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit backfill`: its usage, help, flags and examples (docs/cli/backfill.md).
func CommandSpec() cli.Spec {
	cfg := backfill.Config{FromVersion: -1}
	var with, streamFilter []string
	var dedupCols, partitionBy, targetSize string
	var from []string
	var fl *filesFlags
	var unsafeSingleWriter bool
	return cli.Spec{
		Use:   "backfill (--from PATTERN | --from-delta TABLE) --to TABLE --flow NAME",
		Short: "Copy files or a Delta table into a Delta table once, with MERGE dedup and an overlap check",
		Long: `backfill is a bounded flow that runs once (Lakeflow's "once" append flow): it reads files
(--from, with read-files' options) or a Delta table (--from-delta) and appends the rows to
the Delta table --to in ONE commit carrying a txn action {appId: --flow, version}. Running
it again finds that txn and does nothing (exit 0, with a message) unless --rerun. A run that
dies commits nothing; the next run starts over.

--dedup-cols c1,c2 (dot paths; --dedup alone: every source column) gives MERGE-style
insert-only semantics: a row is written only when no row with the same key is in the target,
and only once from the backfill itself. When a live flow commits to the target meanwhile,
the rows it added are checked too: backfill rows whose key arrived concurrently are removed
and the commit retried, so no key is written twice. A target that does not exist yet and is
created meanwhile by another writer (a live flow's first epoch) is joined, as write-delta does,
when its schema and partitioning are the backfill's.

The overlap check serves backfills next to a live stream (as Databricks feature tables):
--overlap-col COL --min-overlap 1h runs the backfill only once its max value of COL exceeds
the live rows' min value of COL in the target by at least 1h (numbers for numeric columns);
--stream-filter record_source=stream says which target rows are live (default: all). Before
that, backfill exits 3 saying how far apart they are; after --overlap-deadline (counted from
the first live commit) it runs anyway and says so.

--with col=value adds constant columns (typed as the target's column when it has one).
--plan prints what would be read (files, rows), the overlap figures and the dedup key hits
as JSON, and writes nothing. A lock file in <target>/_streamkit/flows keeps two cron runs of
the same flow from overlapping. Exit codes: 0 done (or nothing to do), 1 error, 2 usage,
3 overlap not reached yet.`,
		Examples: []string{
			"# Load a year of Parquet files into a table, once (a second run does nothing)\nstreamkit backfill --from 'archive/2023/**/*.parquet' --to ./lake/orders --flow orders-2023",
			"# One-time load of a Delta table into another, skipping rows whose id is already there\nstreamkit backfill --from-delta ./lake/orders_2023 --to ./lake/orders --flow orders-2023 --dedup-cols id",
			"# Cron: backfill history next to a live stream once they overlap by an hour (exit 3 until then)\nstreamkit backfill --from-delta ./archive/events --to ./lake/events --flow events-history --dedup-cols event_id --overlap-col ts --min-overlap 1h --stream-filter record_source=stream --overlap-deadline 48h --with record_source=backfill",
			"# Dry run: what would be read and how many keys already exist\nstreamkit backfill --from-delta ./archive/events --to ./lake/events --flow events-history --dedup-cols event_id --plan",
		},
		Args: cli.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.With, err = parseKVs("--with", with); err != nil {
				return err
			}
			if cfg.StreamFilter, err = parseKVs("--stream-filter", streamFilter); err != nil {
				return err
			}
			cfg.DedupCols = splitList(dedupCols)
			cfg.PartitionBy = splitList(partitionBy)
			if targetSize != "" {
				n, err := cli.ParseSize(targetSize)
				if err != nil {
					return stage.Usagef("backfill: --target-file-size: %v", err)
				}
				cfg.TargetFileSize = n
			}
			if len(from) > 0 {
				if err := filesSource(&cfg, from, fl); err != nil {
					return err
				}
			}
			cfg.Progress = cli.G.Progress
			cfg.Stdout, cfg.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := cfg.Validate(); err != nil {
				return err // before any store is opened
			}
			if cfg.ToStore, err = cli.OpenStore(cmd.Context(), cfg.To, unsafeSingleWriter); err != nil {
				return cli.TableError("backfill: --to", err)
			}
			if storage.IsURL(cfg.To) {
				cfg.To = cfg.ToStore.Location()
			}
			if cfg.FromDelta != "" {
				if cfg.FromStore, err = cli.OpenStore(cmd.Context(), cfg.FromDelta, false); err != nil {
					return cli.TableError("backfill: --from-delta", err)
				}
				if storage.IsURL(cfg.FromDelta) {
					cfg.FromDelta = cfg.FromStore.Location()
				}
			}
			return backfill.Run(cmd.Context(), cfg)
		},
		Flags: func(f *pflag.FlagSet) {
			f.StringArrayVar(&from, "from", nil, "read these files (glob patterns, as read-files; repeatable)")
			f.StringVar(&cfg.FromDelta, "from-delta", "", "read this Delta table, a path or bucket URL (its latest version, or --from-version)")
			f.Int64Var(&cfg.FromVersion, "from-version", -1, "with --from-delta: read this version of the source table")
			f.StringVar(&cfg.FromWhere, "from-where", "", "with --from-delta: partition filter on the source (read-delta --where syntax)")
			f.StringVar(&cfg.To, "to", "", "target Delta table: a path, file:// URI or bucket URL (created when missing)")
			cli.UnsafeSingleWriterFlag(f, &unsafeSingleWriter)
			f.StringVar(&cfg.Flow, "flow", "", "flow name: recorded as the txn appId in the target, so the backfill runs once")
			f.BoolVar(&cfg.Rerun, "rerun", false, "run again although the flow already ran")
			f.BoolVar(&cfg.Dedup, "dedup", false, "insert-only MERGE: skip rows whose key is already in the target or earlier in the backfill (key: --dedup-cols, default every source column)")
			f.StringVar(&dedupCols, "dedup-cols", "", "dedup key columns, comma-separated dot paths (implies --dedup)")
			f.StringVar(&cfg.OverlapCol, "overlap-col", "", "overlap check column (timestamp, date or numeric)")
			f.StringVar(&cfg.MinOverlap, "min-overlap", "", "required overlap between the backfill's max and the live rows' min of --overlap-col (e.g. 1h, 2d; a number for numeric columns)")
			f.StringArrayVar(&streamFilter, "stream-filter", nil, "COL=VALUE selecting the live rows of the target for the overlap check (repeatable; default: all rows)")
			cli.DurationVar(f, &cfg.OverlapDeadline, "overlap-deadline", 0, "run anyway this long after the first live commit, even without the overlap (0: never)")
			f.StringArrayVar(&with, "with", nil, "add a constant column COL=VALUE to every row (repeatable)")
			f.BoolVar(&cfg.Plan, "plan", false, "print the plan as JSON (files, rows, overlap, dedup key hits) and write nothing")
			f.StringVar(&partitionBy, "partition-by", "", "partition columns of a new target table, comma-separated")
			f.BoolVar(&cfg.MergeSchema, "merge-schema", false, "add source columns the target lacks")
			f.StringVar(&cfg.Compression, "compression", "snappy", "Parquet compression: snappy, zstd, gzip or uncompressed")
			cli.Choices(f, "compression", "snappy", "zstd", "gzip", "uncompressed")
			f.BoolVar(&cfg.TruncateTimestamps, "truncate-timestamps", false, "drop sub-microsecond digits of timestamps instead of failing (floored, as write-delta does)")
			f.StringVar(&targetSize, "target-file-size", "", "roll data files at about this size (e.g. 128MiB; default 128 MiB)")
			cli.DurationVar(f, &cfg.LockWait, "lock-wait", 0, "wait this long for a running backfill of the same flow instead of failing at once")
			// addFilesFlags registers on a command of its own (its tests build one); its flags
			// join f as they are, bound to fl.
			c := &cobra.Command{}
			fl = addFilesFlags(c)
			f.AddFlagSet(c.Flags())
		},
	}
}
