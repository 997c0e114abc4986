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

Binary values (Kafka keys and values) are shown by --binary: text writes a value that is
valid UTF-8 without control characters as that text, as kcat prints it, and any other value
as \x and hex ("\x00000001"); base64; hex. The default keeps each format unambiguous: text
in a table (for people), base64 in JSON (as Spark's to_json writes binary), hex in CSV.

--tail N prints the last N rows, --sample N a uniform random sample of N rows of the whole
stream (reservoir sampling; --seed S draws the same sample each run), in stream order. Both
hold at most N rows, whatever the stream's length, and print them when the stream ends: at
its end, at the first Ctrl-C (the epoch in progress is finished first), or after --limit
rows, which bounds an unbounded stream (--sample 10 --limit 100000: 10 of the first 100000).
Their epochs are committed when the rows are printed, at the end.

An empty pipe on stdin, as a stage upstream leaves when it fails before writing, ends print
(as every stage) with exit 1 and no message of its own: the upstream's error is the one to
read. An empty file or /dev/null on stdin says that the input is empty.

It is a committing sink: after flushing epoch n it writes commit markers into every upstream
checkpoint directory, so a restarted pipeline resumes after the last printed epoch
(at-least-once: rows of an epoch that was printed but not yet committed are printed again).`,
		Examples: []string{
			"# Look at the first 20 rows of a file\nstreamkit read-files data.csv | streamkit print --limit 20",
			"# JSON lines for jq, with barriers and watermarks shown\nstreamkit read-files 'logs/*.json' | streamkit print --format json --show-control",
			"# CSV for spreadsheets\nstreamkit read-files data.parquet | streamkit print --format csv > out.csv",
			"# The last 5 rows, and a sample of 10 rows that is the same every run\nstreamkit generate --rows 100000 --seed 1 | streamkit print --tail 5\nstreamkit generate --rows 100000 --seed 1 | streamkit print --sample 10 --seed 7",
		},
		Args: cli.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) error {
			cli.Fill(&o, cmd)
			cfg.Color = cli.Color(cmd.OutOrStdout())
			cfg.Seeded = cmd.Flags().Changed("seed")
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
			f.Int64Var(&cfg.Limit, "limit", 0, "stop after this many rows (0: no limit); with --tail or --sample, after reading this many")
			f.Int64Var(&cfg.Tail, "tail", 0, "print only the last N rows, when the stream ends (0: every row)")
			f.Int64Var(&cfg.Sample, "sample", 0, "print a uniform random sample of N rows of the whole stream, in stream order, when it ends (0: every row)")
			f.Uint64Var(&cfg.Seed, "seed", 0, "seed of --sample: the same seed and input give the same sample (default: another sample each run)")
			f.StringVar(&cfg.Binary, "binary", "", "binary values (Kafka keys, values): text (valid UTF-8 as text, else \\x and hex), base64 or hex (default: text in a table, base64 in JSON, hex in CSV)")
			cli.Choices(f, "binary", print.BinaryText, print.BinaryBase64, print.BinaryHex)
			f.BoolVar(&cfg.ShowControl, "show-control", false, "also print control batches (barriers, watermarks, end) in stream order")
			f.StringVar(&cfg.NullValue, "null-value", "", "CSV: the text of a null value (default: an empty field; the empty string is written as \"\")")
			cli.StageFlags(f, &o)
		},
	}
}
