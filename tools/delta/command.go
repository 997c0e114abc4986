// Package deltacmd is the `streamkit delta` command group: inspection and maintenance of Delta
// tables — describe (schema, protocol, properties, size, flows), history (versions,
// operations, metrics, progress per flow), optimize (bin-packing
// compaction) and vacuum (deleting files the table no longer needs). The Delta protocol is
// implemented by packages delta (the log) and sink/delta (the data files).
package deltacmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/internal/duration"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
	"github.com/streamkit/streamkit/tools/cli"
)

func usagef(format string, args ...any) error { return stage.Usagef(format, args...) }

// Command returns the cobra command group `streamkit delta`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit delta` and its subcommands: their usage, help, flags and
// examples (docs/cli/delta.md).
func CommandSpec() cli.Spec {
	return cli.Spec{
		Use:   "delta",
		Short: "Inspect and maintain Delta tables: describe, history, optimize, vacuum, cleanup-log",
		Long: `The delta commands inspect and maintain Delta Lake tables (local directories, file://
URIs or bucket URLs: s3://, gs://, az://, abfss://), such as the ones write-delta produces.
They commit like any other writer, so they are
safe to run while write-delta processes append to the table.`,
		Args:     cli.NoArgs,
		Commands: []cli.Spec{describeSpec(), historySpec(), optimizeSpec(), vacuumSpec(), cleanupLogSpec()},
	}
}

func historySpec() cli.Spec {
	var format string
	var limit int
	return cli.Spec{
		Use:   "history TABLE",
		Short: "Show a Delta table's versions, operations, metrics and progress per flow",
		Long: `history lists the commits of TABLE, newest first: version, time, operation, its parameters
and metrics, and the txn (flow id and epoch) a streaming writer recorded, then the newest
committed epoch of every flow (txn appId). Commits whose log files were cleaned up are not
shown. --format json prints one JSON document for jq.

TABLE is a local path, a file:// URI or a bucket URL (s3://, gs://, az://, abfss://; credentials
and endpoint from the cloud SDK's environment, never from the URL).`,
		Examples: []string{
			"# What happened to a table, newest first\nstreamkit delta history ./lake/orders --limit 20",
			"# A table on S3 (AWS_* variables or profile give the credentials)\nstreamkit delta history s3://bucket/lake/orders --limit 5",
			"# The newest committed epoch of each flow, with jq\nstreamkit delta history ./lake/orders --format json | jq '.flows'",
		},
		Args: cli.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) error {
			if format != "table" && format != "json" {
				return usagef("delta history: --format must be table or json, got %q", format)
			}
			if limit < 0 {
				return usagef("delta history: --limit must be ≥ 0")
			}
			h, err := ReadHistory(cmd.Context(), args[0], limit)
			if err != nil {
				return err
			}
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(h)
			}
			return printHistory(cmd.OutOrStdout(), h)
		},
		Flags: func(f *pflag.FlagSet) {
			f.StringVar(&format, "format", "table", "output format: table or json")
			cli.Choices(f, "format", "table", "json")
			f.IntVar(&limit, "limit", 0, "show at most this many commits (0: all)")
		},
	}
}

func kv(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, " ")
}

func printHistory(w io.Writer, h *History) error {
	fmt.Fprintf(w, "table %s, version %d", h.Table, h.Version)
	if h.Oldest > 0 {
		fmt.Fprintf(w, " (commits before %d were cleaned up)", h.Oldest)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tTIMESTAMP\tOPERATION\tTXN\tFILES\tPARAMETERS\tMETRICS")
	for _, c := range h.Commits {
		var txns []string
		for _, t := range c.Txns {
			txns = append(txns, fmt.Sprintf("%s:%d", t.AppID, t.Version))
		}
		files := fmt.Sprintf("+%d -%d", c.Adds, c.Removes)
		ts := ""
		if !c.Timestamp.IsZero() {
			ts = c.Timestamp.Format(timeLayout)
		}
		op := c.Operation
		if c.Metadata {
			op += " (metadata)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Version, ts, op, strings.Join(txns, ","), files,
			kv(c.OperationParameters), kv(c.OperationMetrics))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(h.Flows) > 0 {
		fmt.Fprintln(w)
		return printFlows(w, h.Flows)
	}
	return nil
}

// printFlows writes the table of flows: appId, committed epoch (txn version), last update.
func printFlows(w io.Writer, flows []Flow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FLOW (TXN APPID)\tCOMMITTED EPOCH (TXN VERSION)\tLAST UPDATED")
	for _, f := range flows {
		lu := ""
		if f.LastUpdated != nil {
			lu = f.LastUpdated.Format(timeLayout)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", f.AppID, f.Version, lu)
	}
	return tw.Flush()
}

func optimizeSpec() cli.Spec {
	var opts OptimizeOptions
	var target string
	var unsafeSingleWriter bool
	return cli.Spec{
		Use:   "optimize TABLE",
		Short: "Compact small data files of a Delta table (bin-packing)",
		Long: `optimize rewrites the small data files of TABLE into fewer, larger ones (Delta's OPTIMIZE
with bin-packing): within each partition, files smaller than --target-file-size are packed,
smallest first, into bins of up to that size, and each bin of two or more files becomes one
file. A file with a deletion vector is always rewritten (alone if need be) without the rows
the vector deletes. Rows, partition values and the table's contents are unchanged; statistics
are recomputed. The commit removes and adds files with dataChange=false, so streaming readers
ignore it and concurrent appends (write-delta flows) never conflict with it. The old files
stay on disk for readers of older versions until 'streamkit delta vacuum'. TABLE is a
directory, a file:// URI or a bucket URL (s3://, gs://, az://, abfss://).

--where restricts the work to partitions matching a predicate over partition columns, e.g.
"day >= 2024-01-01 AND region IN ('eu', 'us')" (=, !=, <, <=, >, >=, IN, IS [NOT] NULL,
AND, OR, NOT), with read-delta --where's syntax and SQL null semantics.

On a liquid-clustered table (CLUSTER BY) optimize only compacts the files no clustering has
laid out yet (no clusteringProvider, e.g. those write-delta appended) and leaves the
clustered ones as they are; the clustering columns stay, and the next OPTIMIZE of Spark
clusters the compacted files. optimize does not cluster.`,
		Examples: []string{
			"# Compact the whole table\nstreamkit delta optimize ./lake/orders",
			"# Only yesterday's partition, into files of about 256 MiB\nstreamkit delta optimize ./lake/orders --where \"day = '2024-03-09'\" --target-file-size 256MiB",
		},
		Args: cli.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) error {
			var err error
			if target != "" {
				if opts.TargetFileSize, err = cli.ParsePositiveSize(target); err != nil {
					return usagef("delta optimize: --target-file-size: %v", err)
				}
			}
			switch opts.Compression {
			case "snappy", "zstd":
			default:
				return usagef("delta optimize: --compression must be snappy or zstd, got %q", opts.Compression)
			}
			st, err := openTable(cmd.Context(), "optimize", args[0], unsafeSingleWriter)
			if err != nil {
				return err
			}
			res, err := Optimize(cmd.Context(), st, opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if res.Version < 0 {
				fmt.Fprintln(out, "nothing to compact")
				return nil
			}
			fmt.Fprintf(out, "version %d: compacted %d files (%d bytes) into %d (%d bytes) in %d partition(s), %d rows\n",
				res.Version, res.FilesRemoved, res.BytesRemoved, res.FilesAdded, res.BytesAdded, res.PartitionsTouched, res.Rows)
			return nil
		},
		Flags: func(f *pflag.FlagSet) {
			f.StringVar(&opts.Where, "where", "", "partition predicate selecting the partitions to compact (default: all)")
			f.StringVar(&target, "target-file-size", "", "size to pack files up to, e.g. 256MiB (default: delta.targetFileSize, else 128MiB)")
			f.StringVar(&opts.Compression, "compression", "snappy", "Parquet compression of the new files: snappy or zstd")
			cli.Choices(f, "compression", "snappy", "zstd")
			cli.UnsafeSingleWriterFlag(f, &unsafeSingleWriter)
		},
	}
}

func vacuumSpec() cli.Spec {
	var opts VacuumOptions
	var retain string
	return cli.Spec{
		Use:   "vacuum TABLE",
		Short: "Delete files a Delta table no longer references",
		Long: `vacuum deletes the files in TABLE's directory that the current version does not use and
that are older than the retention: files removed by overwrites and optimize (once their removal
is older than the retention) and files of writers that never committed them (e.g. killed
ones). The retention keeps what readers of older versions (time travel) and concurrent writers
(files written but not committed yet) still need. It defaults to the table's
delta.deletedFileRetentionDuration (168h unless set); a shorter --retain is refused without
--force. _delta_log and hidden files and directories are never touched; a deletion vector
file is kept while a live file (or a removal younger than the retention) uses it.
TABLE is a directory, a file:// URI or a bucket URL (s3://, gs://, az://, abfss://); on a
bucket the table's prefix is listed page by page.
--dry-run lists the files without deleting them.`,
		Examples: []string{
			"# What would be deleted?\nstreamkit delta vacuum ./lake/orders --dry-run",
			"# Delete unreferenced files older than 30 days\nstreamkit delta vacuum ./lake/orders --retain 720h",
			"# Reclaim space now, when no writer is running (time travel to older versions breaks)\nstreamkit delta vacuum ./lake/orders --retain 0h --force",
		},
		Args: cli.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) error {
			if err := retentionFlag("vacuum", retain, &opts.Retain); err != nil {
				return err
			}
			st, err := openTable(cmd.Context(), "vacuum", args[0], false)
			if err != nil {
				return err
			}
			res, err := Vacuum(cmd.Context(), st, opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if opts.DryRun {
				for _, f := range res.Files {
					fmt.Fprintln(out, f)
				}
				fmt.Fprintf(out, "dry run: %d files (%d bytes) older than %s would be deleted\n", len(res.Files), res.Bytes, res.Retention)
				return nil
			}
			fmt.Fprintf(out, "deleted %d files (%d bytes) older than %s\n", len(res.Files), res.Bytes, res.Retention)
			return nil
		},
		Flags: func(f *pflag.FlagSet) {
			f.StringVar(&retain, "retain", "", "keep unreferenced files younger than this, e.g. 168h or 7d (default: the table's delta.deletedFileRetentionDuration)")
			f.BoolVar(&opts.DryRun, "dry-run", false, "list the files that would be deleted, delete nothing")
			f.BoolVar(&opts.Force, "force", false, "allow a retention below the table's delta.deletedFileRetentionDuration")
		},
	}
}

// openTable opens the TABLE argument of delta SUB: a local path, file:// URI or bucket URL
// (tools/cli.OpenStore; unsafeSingleWriter is --unsafe-single-writer).
func openTable(ctx context.Context, sub, table string, unsafeSingleWriter bool) (storage.Store, error) {
	s, err := cli.OpenStore(ctx, table, unsafeSingleWriter)
	if err != nil {
		return nil, cli.TableError("delta "+sub, err)
	}
	return s, nil
}

// retentionFlag parses --retain of delta SUB into *retain: -1 when the flag is absent (the
// table's setting applies), else the duration; a bad value is a usage error naming SUB.
func retentionFlag(sub, flag string, retain *time.Duration) error {
	*retain = -1
	if flag == "" {
		return nil
	}
	var err error
	if *retain, err = parseRetention(flag); err != nil {
		return usagef("delta %s: --retain: %v", sub, err)
	}
	return nil
}

// parseRetention parses a duration (internal/duration: "168h", "30m", "7d", "1w"); a negative
// one ("-1h", "-5d") is refused as such.
func parseRetention(s string) (time.Duration, error) {
	if strings.HasPrefix(strings.TrimSpace(s), "-") {
		return 0, fmt.Errorf("%s: a negative retention is not allowed (give e.g. 168h or 7d; 0h keeps nothing)", s)
	}
	return duration.Parse(s)
}
