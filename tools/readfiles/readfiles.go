// Package readfiles is the `streamkit read-files` tool: an incremental file source (Databricks
// Auto Loader's model) that reads CSV/TSV, NDJSON/JSON, Parquet, Avro and Arrow IPC files
// matched by doublestar globs into one Arrow IPC stream, and with a checkpoint reads every
// file exactly once across runs (source/files has the design).
package readfiles

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/codec/formats"
	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/source/files"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/tools/cli"
)

// DecodeFlags are read-files' options on how files are decoded (format, schema, inference,
// CSV dialect, malformed records, metadata column, time zone), shared by every tool that reads
// files through source/files (backfill --from), so they have one set of names, defaults and
// meanings. Register them with [AddDecodeFlags] and call [DecodeFlags.Apply] once the command
// line is parsed. The options about listing, checkpoints, epochs and following are not among
// them.
type DecodeFlags struct {
	cfg                               *files.Config
	format, schema, hints, mode, tz   string
	onSchemaMismatch                  string
	delimiter, quote, escape, comment string
	noQuote                           bool
}

// AddDecodeFlags registers read-files' decoding options on f. Flags with plain values are
// stored into cfg as they are parsed; the others are checked and stored by Apply, into the
// same cfg. prefix is put before each flag's help text (e.g. "--from: ", "" for read-files).
func AddDecodeFlags(f *pflag.FlagSet, cfg *files.Config, prefix string) *DecodeFlags {
	d := &DecodeFlags{cfg: cfg}
	f.StringVar(&d.format, "format", "", prefix+"file format for every file: csv, tsv, json, parquet, avro, arrow or arrows (default: by extension)")
	f.StringVar(&d.schema, "schema", "", prefix+"schema: Spark DDL, or @file (or a file path that is not valid DDL) with DDL, a JSON Schema or an Avro schema (default: inferred)")
	f.StringVar(&d.hints, "schema-hints", "", prefix+"pin inferred column types, as DDL with dot paths: 'amount decimal(10,2), user.id string'")
	f.IntVar(&cfg.InferRows, "infer-rows", 10000, prefix+"records sampled to infer the schema")
	f.BoolVar(&cfg.CSV.Header, "header", true, prefix+"CSV/TSV: the first line names the columns (--header=false: columns _c0, _c1 …)")
	f.StringVar(&d.delimiter, "delimiter", "", prefix+`CSV: field delimiter, one byte or \t (default "," for CSV, tab for TSV)`)
	f.StringVar(&d.quote, "quote", "", prefix+`CSV: quote character (default ")`)
	f.BoolVar(&d.noQuote, "no-quote", false, prefix+"CSV: no quoting at all (every byte is data)")
	f.StringVar(&d.escape, "escape", "", prefix+`CSV: escape character inside quotes (default: the quote itself, "" is one quote; Spark files use a backslash)`)
	f.StringVar(&d.comment, "comment", "", prefix+"CSV: lines starting with this character are skipped")
	f.StringVar(&cfg.CSV.NullValue, "null-value", "", prefix+"CSV: the text of a null value (default: an empty field)")
	f.StringVar(&d.mode, "mode", "permissive", prefix+"records that do not fit: permissive (rescue / bad records), dropmalformed (drop rows with mistyped fields), failfast (stop)")
	f.StringVar(&d.onSchemaMismatch, "on-schema-mismatch", "fail", prefix+"a Parquet/Avro/Arrow column whose type cannot be converted to the schema's at all: fail (naming file, column and types), or rescue (column null, values in _rescued_data)")
	f.StringVar(&cfg.BadRecords, "bad-records", "", prefix+"append unparseable records to this NDJSON file (file, line, offset, reason, raw); default: log them")
	f.BoolVar(&cfg.WithMetadata, "with-metadata", false, prefix+"add a _metadata struct column: file_path, file_name, file_size, file_modification_time, row_index, line, byte_offset")
	f.StringVar(&d.tz, "tz", "UTC", prefix+"time zone of zone-less timestamps (IANA name); never the machine's zone")
	f.IntVar(&cfg.BufferSize, "read-buffer", 0, prefix+"initial read buffer of the text decoders in bytes (default 256 KiB)")
	f.MarkHidden("read-buffer")
	return d
}

// Apply checks the decoding options and stores them into the Config given to AddDecodeFlags;
// errors are usage errors prefixed with tool (the command's name).
func (d *DecodeFlags) Apply(tool string) error {
	cfg := d.cfg
	var err error
	if d.format != "" {
		if cfg.Format, err = formats.ParseFormat(d.format); err != nil {
			return stage.Usagef("%s: --format: %v", tool, err)
		}
	}
	if d.schema != "" {
		if cfg.Schema, err = schema.Load(d.schema); err != nil {
			return stage.Usagef("%s: --schema: %v", tool, err)
		}
	}
	if d.hints != "" {
		if cfg.Hints, err = schema.ParseHints(d.hints); err != nil {
			return stage.Usagef("%s: --schema-hints: %v", tool, err)
		}
	}
	if cfg.Mode, err = rescue.ParseMode(d.mode); err != nil {
		return stage.Usagef("%s: --mode: %v", tool, err)
	}
	switch d.onSchemaMismatch {
	case "fail", "rescue":
		cfg.RescueSchemaMismatch = d.onSchemaMismatch == "rescue"
	default:
		return stage.Usagef("%s: --on-schema-mismatch must be fail or rescue, got %q", tool, d.onSchemaMismatch)
	}
	if cfg.Location, err = time.LoadLocation(d.tz); err != nil || d.tz == "" || strings.EqualFold(d.tz, "local") {
		return stage.Usagef("%s: --tz %q: want an IANA zone name such as UTC or Europe/Paris (never the machine's Local zone)", tool, d.tz)
	}
	if cfg.InferRows < 1 {
		return stage.Usagef("%s: --infer-rows must be ≥ 1, got %d", tool, cfg.InferRows)
	}
	for _, c := range []struct {
		name string
		val  string
		dst  *byte
	}{{"delimiter", d.delimiter, &cfg.CSV.Delimiter}, {"quote", d.quote, &cfg.CSV.Quote}, {"escape", d.escape, &cfg.CSV.Escape}, {"comment", d.comment, &cfg.CSV.Comment}} {
		if c.val == "" {
			continue
		}
		b, err := oneByte(c.val)
		if err != nil {
			return stage.Usagef("%s: --%s: %v", tool, c.name, err)
		}
		*c.dst = b
	}
	cfg.CSV.NoQuote = d.noQuote
	return nil
}

// flags are read-files' raw command-line values before validation.
type flags struct {
	dec                 *DecodeFlags
	onRewrite, maxBytes string
}

// Command returns the cobra command of `streamkit read-files`.
func Command() *cobra.Command {
	var cfg files.Config
	var fl flags
	o := stage.SourceOptions{Options: stage.Options{Tool: "read-files"}}
	cmd := &cobra.Command{
		Use:   "read-files PATTERN...",
		Short: "Read CSV, JSON, Parquet, Avro and Arrow files into a stream, each file once",
		Long: `read-files reads the files matched by PATTERNs — doublestar globs ('landing/**/*.csv'),
files, directories (everything below them) or - for stdin — into one Arrow IPC stream on
stdout. The format comes from --format or each file's extension: .csv, .tsv, .json/.ndjson/
.jsonl (lines or one array), .parquet, .avro, .arrow/.feather/.ipc (the IPC file format when
the file starts with its magic ARROW1, else an IPC stream, as side outputs such as
window --late-output x.arrow write), .arrows (IPC stream); .gz and .zst files are decompressed.

Schema: --schema as Spark DDL ("id long, ts timestamp, tags array<string>"), or @file (or a path
that is not valid DDL, e.g. schema.json) holding DDL, a JSON Schema or an Avro schema; otherwise it is inferred from the first --infer-rows
records (integers with doubles widen to double, conflicting types to string) and
--schema-hints pins some columns. Values that do not fit go to the _rescued_data column (JSON
naming the fields and the file); records that cannot be parsed at all go to --bad-records
(NDJSON: file, line, offset, reason, raw) and are counted in the progress and at exit.
--mode permissive|dropmalformed|failfast works as in Spark. A CSV or JSON field (or a top-level
Parquet/Arrow string value) that is not valid UTF-8 is null with its bytes base64 in
_rescued_data under <field>_base64 (one warning per file counts the rows); a bad record that is not UTF-8 has raw_base64 in --bad-records. Parquet,
Avro and Arrow columns are
matched by name and cast to the schema's type; values that do not cast are rescued, but a
column whose type cannot be cast at all (a record read as a number, a string as a struct: the
file's writer schema does not resolve to --schema) fails the run naming the file, the column
and both types, unless --on-schema-mismatch rescue (the column is null, its values rescued).

With a checkpoint (--checkpoint or $STREAMKIT_CHECKPOINT) the files already read are
remembered (path, size, modification time and a fingerprint of the first bytes), so a cron job
running read-files reads each new file once, and a restart after a crash replays the
uncommitted epochs exactly. Hidden and temporary names (.x, _x, *.tmp, *._COPYING_,
*.crdownload …) are skipped; a file still being written is left until it has not changed for
--stable-after. By default read-files reads what is there and ends (end=pause with a
checkpoint, end=final without); --follow keeps listing every --poll-interval.

Zone-less timestamps are read in --tz (default UTC), never in the machine's zone.`,
		Example: cli.Examples(
			"# Print a CSV file\nstreamkit read-files data.csv | streamkit print --limit 20",
			"# Every new JSON file under landing/, once per file, from cron\nstreamkit read-files --checkpoint ./ckpt/landing 'landing/**/*.json' | streamkit print --checkpoint ./ckpt/print --format json",
			"# Follow a directory with an explicit schema and keep unparseable records\nstreamkit read-files --follow --schema 'id long, amount decimal(10,2), ts timestamp' --bad-records bad.ndjson --tz Europe/Paris 'in/*.csv.gz' | streamkit print",
			"# Parquet files, two columns, with file metadata\nstreamkit read-files --schema 'origin string, delay int' --with-metadata 'flights/*.parquet' | streamkit print --format json",
			"# Newline-delimited JSON from stdin\ncat events.ndjson | streamkit read-files --format json -",
		),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return stage.Usagef("read-files needs at least one PATTERN (a glob, a file, a directory or - for stdin); see '%s --help'", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cli.Fill(&o.Options, cmd)
			cfg.Patterns = args
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
	}
	f := cmd.Flags()
	fl.dec = AddDecodeFlags(f, &cfg, "")
	f.BoolVar(&cfg.Follow, "follow", false, "keep listing for new files every --poll-interval instead of ending")
	f.DurationVar(&cfg.PollInterval, "poll-interval", 5*time.Second, "--follow: how often to list the patterns")
	f.DurationVar(&cfg.StableAfter, "stable-after", 2*time.Second, "read a file only once it has not changed for this long (0: at once)")
	f.StringVar(&fl.onRewrite, "on-rewrite", "skip", "a file that changes after it was read: skip (warn), reprocess (read it again) or fail")
	f.IntVar(&cfg.MaxFilesPerEpoch, "max-files-per-epoch", 1000, "cut an epoch after this many files (0: no limit)")
	f.StringVar(&fl.maxBytes, "max-bytes-per-epoch", "0", "cut an epoch once files of this total size were started (e.g. 512MiB; 0: no limit)")
	o.AddFlags(f)
	return cmd
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
	return map[string]string{
		"format":        fl.dec.format,
		"schema":        fl.dec.schema,
		"schema-hints":  fl.dec.hints,
		"with-metadata": strconv.FormatBool(cfg.WithMetadata),
	}, nil
}

// oneByte parses a one-byte character option: a single ASCII character, \t, or "tab".
func oneByte(s string) (byte, error) {
	switch s {
	case `\t`, "tab", "\t":
		return '\t', nil
	}
	if len(s) != 1 {
		return 0, fmt.Errorf("want one ASCII character (or \\t), got %q", s)
	}
	return s[0], nil
}
