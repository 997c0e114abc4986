// Package readfiles is the `streamkit read-files` tool: an incremental file source (Databricks
// Auto Loader's model) that reads CSV/TSV, NDJSON/JSON, Parquet, Avro and Arrow IPC files
// matched by doublestar globs into one Arrow IPC stream, and with a checkpoint reads every
// file exactly once across runs (source/files has the design).
package readfiles

import (
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/source/files"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/tools/cli"
)

// flags are read-files' raw command-line values before validation.
type flags struct {
	dec                          *cli.DecodeFlags
	onRewrite, maxBytes, columns string
}

// Command returns the cobra command of `streamkit read-files`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit read-files`: its usage, help, flags and examples (docs/cli/read-files.md).
func CommandSpec() cli.Spec {
	var cfg files.Config
	var fl flags
	o := stage.SourceOptions{Options: stage.Options{Tool: "read-files"}}
	return cli.Spec{
		Use:   "read-files PATTERN...",
		Short: "Read CSV, JSON, Parquet, Avro and Arrow files into a stream, each file once",
		Long: `read-files reads the files matched by PATTERNs — doublestar globs ('landing/**/*.csv'),
files, directories (everything below them), bucket URLs or - for stdin — into one Arrow IPC
stream on stdout. A bucket URL ('s3://bucket/landing/**/*.json'; also s3a://, gs://, az://,
abfss://) lists the objects under its literal prefix (landing/ here), page by page, and
matches the rest of the glob against their names; a literal URL is one object, or every
object under it if no object has that name. "?" in a URL is the glob wildcard: endpoint,
region and credentials come from the SDK's environment (AWS_ENDPOINT_URL, AWS_REGION,
AWS_PROFILE ..., see package storage), never from the URL. The format comes from --format or each file's extension: .csv, .tsv, .json/.ndjson/
.jsonl (lines or one array), .parquet, .avro, .arrow/.feather/.ipc (the IPC file format when
the file starts with its magic ARROW1, else an IPC stream, as side outputs such as
window --late-output x.arrow write), .arrows (IPC stream); .gz and .zst files are decompressed.

Schema: --schema as Spark DDL ("id long, ts timestamp, tags array<string>"), or @file (or a path
that is not valid DDL, e.g. schema.json) holding DDL, a JSON Schema or an Avro schema; otherwise it is inferred from the first --infer-rows
records (integers with doubles widen to double, conflicting types to string) and
--schema-hints pins some columns. Values that do not fit go to the _rescued_data column (JSON
naming the fields and the file); records that cannot be parsed at all go to --bad-records-output
(NDJSON: file, line, offset, reason, raw) and are counted in the progress and at exit.
--mode permissive|dropmalformed|failfast works as in Spark. A CSV or JSON field (or a top-level
Parquet/Arrow string value) that is not valid UTF-8 is null with its bytes base64 in
_rescued_data under <field>_base64 (one warning per file counts the rows); a bad record that is not UTF-8 has raw_base64 in --bad-records-output. Parquet,
Avro and Arrow columns are
matched by name and cast to the schema's type; values that do not cast are rescued, but a
column whose type cannot be cast at all (a record read as a number, a string as a struct: the
file's writer schema does not resolve to --schema) fails the run naming the file, the column
and both types, unless --on-schema-mismatch rescue (the column is null, its values rescued).

With a checkpoint (--checkpoint or $STREAMKIT_CHECKPOINT) the files already read are
remembered (path, size, modification time, a fingerprint of the first bytes and, for an
object, its ETag), so a cron job
running read-files reads each new file once, and a restart after a crash replays the
uncommitted epochs exactly. Hidden and temporary names (.x, _x, *.tmp, *._COPYING_,
*.crdownload …) are skipped; a file still being written is left until it has not changed for
--stable-after. By default read-files reads what is there and ends (end=pause with a
checkpoint, end=final without); --follow keeps listing every --poll-interval.

--columns a,b outputs only those columns of the stream schema, in that order, then
_rescued_data: the other columns are read past, not decoded, so a value of theirs that does not
fit is neither rescued nor a bad record; Parquet files are read for those columns only. The
checkpoint keeps the whole schema, so a later run may select other columns.

Zone-less timestamps are read in --tz (default UTC), never in the machine's zone. Parquet INT96
timestamps (Spark's, Impala's) are read as µs timestamps over years 1 to 9999, top level or inside
structs, lists and maps. Files Spark wrote in LEGACY rebase mode, or before Spark 3.0 (3.1 for
INT96), have their DATE, TIMESTAMP and INT96 values before 1582-10-15 rebased, as Spark reads them.`,
		Examples: []string{
			"# Print a CSV file\nstreamkit read-files data.csv | streamkit print --limit 20",
			"# Every new JSON file under landing/, once per file, from cron\nstreamkit read-files --checkpoint ./ckpt/landing 'landing/**/*.json' | streamkit print --checkpoint ./ckpt/print --format json",
			"# Every new JSON object under s3://bucket/landing/, once per object\nstreamkit read-files --checkpoint ./ckpt/s3landing 's3://bucket/landing/**/*.json' | streamkit print --format json",
			"# Follow a directory with an explicit schema and keep unparseable records\nstreamkit read-files --follow --schema 'id long, amount decimal(10,2), ts timestamp' --bad-records-output bad.ndjson --tz Europe/Paris 'in/*.csv.gz' | streamkit print",
			"# Parquet files, two columns, with file metadata\nstreamkit read-files --schema 'origin string, delay int' --with-metadata 'flights/*.parquet' | streamkit print --format json",
			"# Two columns of CSV files, in this order (the others are not decoded)\nstreamkit read-files --columns user_id,amount 'orders/*.csv' | streamkit print",
			"# Newline-delimited JSON from stdin\ncat events.ndjson | streamkit read-files --format json -",
		},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return stage.Usagef("read-files needs at least one PATTERN (a glob, a file, a directory or - for stdin); see '%s --help'", cmd.CommandPath())
			}
			return nil
		},
		Run: func(cmd *cobra.Command, args []string) error {
			cli.Fill(&o.Options, cmd)
			cfg.Patterns = args
			cfg.OpenStore = cli.PatternStore
			opts, err := resolve(&cfg, &fl)
			if err != nil {
				return err
			}
			o.StateOptions = opts
			src, err := files.New(cfg)
			if err != nil {
				return err
			}
			return stage.RunSource(cmd.Context(), o, src)
		},
		Flags: func(f *pflag.FlagSet) {
			fl.dec = cli.AddDecodeFlags(f, &cfg, "")
			f.StringVar(&fl.columns, "columns", "", "output only these columns of the stream schema, comma-separated, in this order; the others are not decoded, so their values are never rescued or bad (Parquet reads only these); _rescued_data is always kept (default: all)")
			f.BoolVar(&cfg.Follow, "follow", false, "keep listing for new files every --poll-interval instead of ending")
			cli.DurationVar(f, &cfg.PollInterval, "poll-interval", 5*time.Second, "--follow: how often to list the patterns")
			cli.DurationVar(f, &cfg.StableAfter, "stable-after", 2*time.Second, "read a file only once it has not changed for this long (0: at once)")
			f.StringVar(&fl.onRewrite, "on-rewrite", "skip", "a file that changes after it was read: skip (warn), reprocess (read it again) or fail")
			cli.Choices(f, "on-rewrite", "skip", "reprocess", "fail")
			f.IntVar(&cfg.MaxFilesPerEpoch, "max-files-per-epoch", 1000, "cut an epoch after this many files (0: no limit)")
			f.StringVar(&fl.maxBytes, "max-bytes-per-epoch", "0", "cut an epoch once files of this total size were started (e.g. 512MiB; 0: no limit)")
			cli.SourceFlags(f, &o)
		},
	}
}

// resolve validates the flags into cfg and returns the options that shape the checkpoint.
func resolve(cfg *files.Config, fl *flags) (map[string]string, error) {
	if err := fl.dec.Apply("read-files"); err != nil {
		return nil, err
	}
	var err error
	if cfg.OnRewrite, err = files.ParseRewrite(fl.onRewrite); err != nil {
		return nil, stage.Usagef("read-files: %v", err)
	}
	if cfg.MaxBytesPerEpoch, err = cli.ParseSize(fl.maxBytes); err != nil {
		return nil, stage.Usagef("read-files: --max-bytes-per-epoch: %v", err)
	}
	if fl.columns != "" {
		if cfg.Columns, err = cli.KeyList("read-files: --columns", fl.columns); err != nil {
			return nil, err
		}
	}
	opts := fl.dec.StateOptions()
	opts["with-metadata"] = strconv.FormatBool(cfg.WithMetadata)
	return opts, nil
}
