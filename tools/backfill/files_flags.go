package backfill

import (
	"github.com/spf13/cobra"

	"github.com/streamkit/streamkit/tools/stage"
)

// addFilesFlags registers read-files' options on backfill (wired to source/files once the
// read-files tool exports its flag set).
func addFilesFlags(*cobra.Command) {}

// filesSource configures the --from file source.
func filesSource(cfg *Config, patterns []string, _ *cobra.Command) error {
	return stage.Usagef("backfill: --from (files) is not available in this build yet; use --from-delta, or read-files | write-delta")
}
