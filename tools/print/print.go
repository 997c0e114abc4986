// Package print is the `streamkit print` tool: Arrow IPC in, text out for people and Unix
// tools (an aligned table, JSON lines or CSV), through the text sink sink/print. It is a
// committing sink: after flushing epoch n to stdout it writes commit markers (at-least-once to
// stdout consumers, DESIGN.md §3).
package print

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/sink/print"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/tools/cli"
)

// Command returns the cobra command of `streamkit print`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit print`: its usage, help, flags and examples (docs/cli/print.md).
func CommandSpec() cli.Spec {
	var cfg print.Config
	o := stage.Options{Tool: "print"}
	return cli.Spec{
		Use:   "print",
		Short: "Print an Arrow IPC stream as a table, JSON lines or CSV",
		Long: `print reads an Arrow IPC stream on stdin and writes it as text on stdout: an aligned
table (default), JSON lines (one object per row, for jq) or CSV with a header.

Values are written as Spark writes them (to_json, its CSV writer), so read-files reads the
output back unchanged: NaN and infinities as "NaN", "Infinity", "-Infinity" (JSON strings);
timestamps as ISO 8601 with the fraction digits they need (nine for nanoseconds), in the
column's zone, without a zone for timestamp_ntz, and years past 9999 as "+10000-01-01T…";
maps as JSON objects. In CSV a null is an empty field (or --null-value) and the empty string
is "".

It is a committing sink: after flushing epoch n it writes commit markers into every upstream
checkpoint directory, so a restarted pipeline resumes after the last printed epoch
(at-least-once: rows of an epoch that was printed but not yet committed are printed again).`,
		Examples: []string{
			"# Look at the first 20 rows of a file\nstreamkit read-files data.csv | streamkit print --limit 20",
			"# JSON lines for jq, with barriers and watermarks shown\nstreamkit read-files 'logs/*.json' | streamkit print --format json --show-control",
			"# CSV for spreadsheets\nstreamkit read-files data.parquet | streamkit print --format csv > out.csv",
		},
		Args: cli.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) error {
			cli.Fill(&o, cmd)
			cfg.Color = cli.Color(cmd.OutOrStdout())
			// On a terminal the rows go above the pipeline's view (stage.ConsoleRows).
			p, err := print.New(cfg, stage.ConsoleRows(cmd.OutOrStdout(), o.Progress))
			if err != nil {
				return err
			}
			return stage.RunOperator(cmd.Context(), o, p)
		},
		Flags: func(f *pflag.FlagSet) {
			f.StringVar(&cfg.Format, "format", print.FormatTable, "output format: table, json or csv")
			cli.Choices(f, "format", "table", "json", "csv")
			f.Int64Var(&cfg.Limit, "limit", 0, "stop after this many rows (0: no limit)")
			f.BoolVar(&cfg.ShowControl, "show-control", false, "also print control batches (barriers, watermarks, end) in stream order")
			f.StringVar(&cfg.NullValue, "null-value", "", "CSV: the text of a null value (default: an empty field; the empty string is written as \"\")")
			cli.StageFlags(f, &o)
		},
	}
}
