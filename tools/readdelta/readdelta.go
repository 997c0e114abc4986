// Package readdelta is the `streamkit read-delta` tool: a batch read of a Delta table (latest
// version or time travel), or with --follow a stream of the rows every new commit adds, with
// the table versions of each epoch in the offsets WAL so replays after a crash are exact.
package readdelta

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/source/delta"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
	"github.com/streamkit/streamkit/tools/cli"
)

// ParseTime parses a --timestamp value: RFC 3339 (2024-05-01T12:00:00Z), a date and time
// without zone read as UTC (2024-05-01 12:00:00), or a date (midnight UTC).
func ParseTime(s string) (time.Time, error) {
	for _, l := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(l, strings.TrimSpace(s)); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, stage.Usagef("read-delta: --timestamp %q: want RFC 3339 (2024-05-01T12:00:00Z), '2024-05-01 12:00:00' (UTC) or a date", s)
}

// Command returns the cobra command of `streamkit read-delta`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit read-delta`: its usage, help, flags and examples (docs/cli/read-delta.md).
func CommandSpec() cli.Spec {
	cfg := delta.Config{Version: -1, StartingVersion: -1}
	var columns, timestamp, starting string
	o := stage.SourceOptions{Options: stage.Options{Tool: "read-delta"}}
	return cli.Spec{
		Use:   "read-delta TABLE",
		Short: "Read a Delta table, or follow the rows its new commits add",
		Long: `read-delta reads the Delta table TABLE (a directory, a file:// URI, or a bucket URL:
s3://BUCKET/PATH, gs://…, az://…, abfss://…, with the cloud SDKs' usual credentials) as an
Arrow stream: the latest version, or --version N / --timestamp T (time travel). --columns
projects. Partition columns are restored from the log's partitionValues; INT96, ms, µs and
ns timestamps all come out as µs timestamps (INT96 over years 1 to 9999, top level or inside
a struct, list or map; files Spark wrote in LEGACY rebase mode, or before Spark 3.0 (3.1
for INT96), are rebased before 1582-10-15, as Spark reads them); columns missing from
older files are null.

--where PREDICATE keeps the rows for which a Spark SQL predicate over any column is true, in
the language of streamkit filter (a row whose predicate is false or NULL is dropped); it
is type-checked against the table schema before anything is read (a syntax error, an
unknown column or a type mismatch exits 2 with a caret under the position). Data files
whose partition values or add-action statistics (minValues, maxValues, nullCount,
numRecords) prove that no row can match are skipped without being opened: comparisons of
a column with literals (= <> < <= > >= IN BETWEEN IS [NOT] NULL) under AND, OR and NOT;
anything else reads the file. Statistics are taken as bounds: string maxima may be
truncated, timestamp statistics have ms precision, and x > c on a float column never skips
a file (writers may leave NaN out of max). The number of skipped files is logged and shown
as files_pruned in --progress=json. A predicate the older partition syntax accepts keeps
its meaning there: bare words are values of the partition column's type
(date >= 2024-05-01, region = eu).

--follow streams: first the current snapshot (or the snapshot of --version), then the files
added by every new commit, in commit order; --starting-version N reads the commits from N
instead of a snapshot ("latest": only commits made from now on). Each epoch's end position
(a table version, and the file and row within it) goes to the offsets WAL before its
barrier, so a restart replays exactly the same rows. Like Spark's Delta source, a stream only
follows appends: a commit that removes data fails it, naming the version, unless
--ignore-deletes (skip commits that only delete), --skip-change-commits (skip every commit
that deletes or changes existing rows, its added files too: Spark's skipChangeCommits) or
--ignore-changes (also read files rewritten by updates and merges — their unchanged rows
come again); compactions (dataChange=false) are skipped. A DELETE, UPDATE or MERGE that
marks rows deleted in a deletion vector removes the file and adds it back with the new
vector: it is such a change.

Without --follow but with a checkpoint, a run reads what is new since the last run and
stops ("available now", for cron).

Tables are read directly from the transaction log (JSON commits and checkpoints: classic,
multi-part and v2 ones, UUID-named with a JSON or Parquet top-level file and sidecars; the
newest complete checkpoint is found by listing, whatever _last_checkpoint says). Deletion
vectors (inline, in deletion_vector_*.bin files of the table or at an absolute path) drop
the rows they delete: those rows are never read; column mapping (name and id modes,
after RENAME or DROP COLUMN) is read by physical names or Parquet field ids, and the output
has the display names; files written before a type widening are read with the current type.
Tables needing reader features streamkit lacks (variantType …) are refused with a message
naming the feature, and paths in the log that point outside the table are refused.`,
		Examples: []string{
			"# Read the latest version\nstreamkit read-delta ./lake/orders | streamkit print",
			"# A table on S3 (or an S3-compatible server through AWS_ENDPOINT_URL)\nstreamkit read-delta s3://lake/orders --columns order_id,amount | streamkit print",
			"# Time travel, two columns, one month of a date-partitioned table\nstreamkit read-delta ./lake/orders --version 12 --columns order_id,amount --where \"date >= 2024-05-01 and date < 2024-06-01\" | streamkit print",
			"# Large orders of two regions: files whose partition or statistics rule them out are not read\nstreamkit read-delta ./lake/orders --where \"amount > 100 AND region IN ('eu', 'us')\" | streamkit print",
			"# Bronze to silver: follow new commits, drop duplicates, append exactly once\nexport STREAMKIT_CHECKPOINT=./ckpt/silver\nstreamkit read-delta --follow ./lake/bronze | streamkit dedup --key id | streamkit write-delta ./lake/silver",
		},
		Args: cli.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) error {
			cli.Fill(&o.Options, cmd)
			cfg.Table = args[0]
			for _, c := range strings.Split(columns, ",") {
				if c = strings.TrimSpace(c); c != "" {
					cfg.Columns = append(cfg.Columns, c)
				}
			}
			if timestamp != "" {
				ts, err := ParseTime(timestamp)
				if err != nil {
					return err
				}
				cfg.Timestamp = ts
			}
			switch s := strings.TrimSpace(starting); {
			case s == "":
			case strings.EqualFold(s, "latest"):
				cfg.StartingLatest = true
			default:
				v, err := strconv.ParseInt(s, 10, 64)
				if err != nil || v < 0 {
					return stage.Usagef("read-delta: --starting-version %q: want a version number or latest", starting)
				}
				cfg.StartingVersion = v
			}
			if !cmd.Flags().Changed("version") {
				cfg.Version = -1
			} else if cfg.Version < 0 {
				return stage.Usagef("read-delta: --version must be ≥ 0")
			}
			store, err := cli.OpenStore(cmd.Context(), args[0], false)
			if err != nil {
				return cli.TableError("read-delta", err)
			}
			cfg.Store = store
			if storage.IsURL(args[0]) {
				cfg.Table = store.Location() // local paths are named as given
			}
			src, err := delta.NewSource(cfg)
			if err != nil {
				return err
			}
			o.StateOptions = map[string]string{"table": store.Location()}
			return stage.RunSource(cmd.Context(), o, src)
		},
		Flags: func(f *pflag.FlagSet) {
			f.StringVar(&columns, "columns", "", "read only these columns, comma-separated, in this order (default: all)")
			f.StringVar(&cfg.Where, "where", "", "keep the rows where this Spark SQL predicate is true, e.g. \"amount > 100 AND region IN ('eu', 'us')\"; files that cannot match are skipped")
			f.Int64Var(&cfg.Version, "version", -1, "read the table as of this version (time travel)")
			f.StringVar(&timestamp, "timestamp", "", "read the newest version committed at or before this time (RFC 3339, or a UTC date/time)")
			f.BoolVar(&cfg.Follow, "follow", false, "after the snapshot, keep streaming the rows of new commits")
			f.StringVar(&starting, "starting-version", "", "with --follow: read the commits from this version on instead of a snapshot; latest = only new commits")
			f.BoolVar(&cfg.IgnoreDeletes, "ignore-deletes", false, "skip commits that only remove data instead of failing")
			f.BoolVar(&cfg.IgnoreChanges, "ignore-changes", false, "accept commits that rewrite files (update/merge): read their added files again")
			f.BoolVar(&cfg.SkipChangeCommits, "skip-change-commits", false, "with --follow: skip every commit that deletes or changes existing rows (delete, update, merge, new deletion vectors), reading only appends (Spark's skipChangeCommits)")
			cli.DurationVar(f, &cfg.PollInterval, "poll-interval", 250*time.Millisecond, "with --follow: how often to look for a new commit")
			f.IntVar(&cfg.MaxFilesPerEpoch, "max-files-per-epoch", 1000, "cut an epoch after this many data files (Spark's maxFilesPerTrigger); -1: no limit")
			f.IntVar(&cfg.Workers, "workers", 0, "goroutines decoding Parquet ahead of the output (default: number of CPUs, at most 8)")
			cli.SourceFlags(f, &o)
		},
	}
}
