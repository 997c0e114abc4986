package backfill

import (
	"github.com/spf13/cobra"

	"github.com/streamkit/streamkit/sink/delta/backfill"
	"github.com/streamkit/streamkit/source/files"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/tools/cli"
)

// filesFlags are the read-files options backfill accepts with --from: read-files' decoding
// options (cli.AddDecodeFlags: same names, defaults and meaning) and --stable-after.
// The options about checkpoints, epochs and following do not apply to a run-once flow.
type filesFlags struct {
	cfg files.Config
	dec *cli.DecodeFlags
}

// addFilesFlags registers the --from options on cmd.
func addFilesFlags(cmd *cobra.Command) *filesFlags {
	fl := &filesFlags{}
	f := cmd.Flags()
	fl.dec = cli.AddDecodeFlags(f, &fl.cfg, "--from: ")
	cli.DurationVar(f, &fl.cfg.StableAfter, "stable-after", 0, "--from: read a file only once it has not changed for this long (0: at once)")
	return fl
}

// filesSource configures cfg to read the files matched by patterns with the read-files
// options given.
func filesSource(cfg *backfill.Config, patterns []string, fl *filesFlags) error {
	if err := fl.dec.Apply("backfill"); err != nil {
		return err
	}
	for _, p := range patterns {
		if p == "-" {
			return stage.Usagef("backfill: --from - (stdin) is not supported; pipe into write-delta instead")
		}
	}
	fl.cfg.OpenStore = cli.PatternStore
	cfg.SetFiles(fl.cfg, patterns)
	return nil
}
