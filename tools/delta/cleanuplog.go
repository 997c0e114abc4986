package deltacmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/tools/cli"
)

// CleanupLogOptions configure CleanupLog.
type CleanupLogOptions struct {
	// Retain keeps log files younger than this; < 0: the table's delta.logRetentionDuration
	// (30 days by default).
	Retain time.Duration
	// DryRun lists the files that would be deleted without deleting anything.
	DryRun bool
	// Force allows a retention below the table's setting.
	Force bool
	// Now is the clock the retention's cut-off is measured from; default time.Now.
	Now func() time.Time
}

// CleanupLog deletes the expired files of the transaction log of the table at loc (a local
// path, a file:// URI or a bucket URL, see [cli.OpenStore]) ([delta.Table.CleanupLog]) — what
// every writer does after a checkpoint — for tables whose retention was shortened or whose
// writers do not clean up. A retention below the table's delta.logRetentionDuration is refused
// unless Force is set: time travel to versions within the table's retention would break.
func CleanupLog(ctx context.Context, loc string, opts CleanupLogOptions) (*delta.LogCleanup, error) {
	st, err := cli.OpenStore(ctx, loc, false)
	if err != nil {
		return nil, err
	}
	tbl := delta.OpenTable(st, nil)
	tbl.Now = opts.Now
	s, err := tbl.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("cleanup-log: %w", err)
	}
	retain := opts.Retain
	if retain < 0 {
		retain = s.LogRetention()
	}
	if retain < s.LogRetention() && !opts.Force {
		return nil, usagef("cleanup-log: --retain %s is below the table's delta.logRetentionDuration (%s): time travel to versions within the table's retention would break; pass --force to clean up anyway",
			retain, s.LogRetention())
	}
	res, err := tbl.CleanupLog(ctx, retain, opts.DryRun)
	if err != nil {
		return nil, fmt.Errorf("cleanup-log: %w", err)
	}
	return res, nil
}

func cleanupLogSpec() cli.Spec {
	var opts CleanupLogOptions
	var retain string
	return cli.Spec{
		Use:   "cleanup-log TABLE",
		Short: "Delete expired files of a Delta table's transaction log",
		Long: `cleanup-log deletes the commit files, checkpoints, .crc and log compaction files of TABLE's
_delta_log that are older than the log retention and precede the newest checkpoint that is
itself older than it — as Delta writers (Spark, write-delta, delta optimize/vacuum) do after
every checkpoint unless delta.enableExpiredLogCleanup is false. When a checkpoint goes, so do
the v2 checkpoint sidecars (_delta_log/_sidecars) that no remaining checkpoint references and
that are older than the cut-off and a day. Every version committed within
the retention stays loadable (time travel), and so does the version current at the cut-off.
The cut-off is now minus the retention, truncated to the previous midnight UTC, as in Spark;
the retention defaults to the table's delta.logRetentionDuration (30 days unless set), and a
shorter --retain needs --force. Data files are not touched (that is vacuum).

TABLE is a local path, a file:// URI or a bucket URL (s3://, gs://, az://, abfss://; credentials
and endpoint from the cloud SDK's environment, never from the URL). On a bucket a version's
time is its commit object's modification time, as on a local disk the file's.`,
		Examples: []string{
			"# Which log files have expired?\nstreamkit delta cleanup-log ./lake/orders --dry-run",
			"# The same on S3\nstreamkit delta cleanup-log s3://bucket/lake/orders --dry-run",
			"# Keep one week of history only (shorter than the table's setting)\nstreamkit delta cleanup-log ./lake/orders --retain 7d --force",
		},
		Args: cli.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) error {
			if err := retentionFlag("cleanup-log", retain, &opts.Retain); err != nil {
				return err
			}
			res, err := CleanupLog(cmd.Context(), args[0], opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, f := range res.Files {
				if opts.DryRun {
					fmt.Fprintln(out, f)
				}
			}
			cut := res.Cutoff.Format(time.RFC3339)
			switch {
			case res.Checkpoint < 0:
				fmt.Fprintf(out, "nothing to delete: no checkpoint older than the cut-off %s\n", cut)
			case opts.DryRun:
				fmt.Fprintf(out, "dry run: %d log files before checkpoint %d (cut-off %s) would be deleted\n", len(res.Files), res.Checkpoint, cut)
			default:
				fmt.Fprintf(out, "deleted %d log files before checkpoint %d (cut-off %s)\n", len(res.Files), res.Checkpoint, cut)
			}
			return nil
		},
		Flags: func(f *pflag.FlagSet) {
			f.StringVar(&retain, "retain", "", "keep log files younger than this, e.g. 720h or 30d (default: the table's delta.logRetentionDuration)")
			f.BoolVar(&opts.DryRun, "dry-run", false, "list the files that would be deleted, delete nothing")
			f.BoolVar(&opts.Force, "force", false, "allow a retention below the table's delta.logRetentionDuration")
		},
	}
}
