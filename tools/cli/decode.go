package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/codec/formats"
	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/source/files"
	"github.com/streamkit/streamkit/stage"
)

// DecodeFlags are the read-files options on how files are decoded (format, schema, inference,
// CSV dialect, malformed records, metadata column, time zone), shared by every tool that reads
// files through source/files (read-files; backfill --from), so they have one set of names, defaults and
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

// AddDecodeFlags registers the decoding options on f. Flags with plain values are
// stored into cfg as they are parsed; the others are checked and stored by Apply, into the
// same cfg. prefix is put before each flag's help text (e.g. "--from: ", "" for read-files).
func AddDecodeFlags(f *pflag.FlagSet, cfg *files.Config, prefix string) *DecodeFlags {
	d := &DecodeFlags{cfg: cfg}
	f.StringVar(&d.format, "format", "", prefix+"file format for every file: csv, tsv, json, parquet, avro, arrow or arrows (default: by extension)")
	Choices(f, "format", "csv", "tsv", "json", "parquet", "avro", "arrow", "arrows")
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
	Choices(f, "mode", "permissive", "dropmalformed", "failfast")
	f.StringVar(&d.onSchemaMismatch, "on-schema-mismatch", "fail", prefix+"a Parquet/Avro/Arrow column whose type cannot be converted to the schema's at all: fail (naming file, column and types), or rescue (column null, values in _rescued_data)")
	f.StringVar(&cfg.BadRecords, "bad-records-output", "", prefix+"append unparseable records to this NDJSON file (file, line, offset, reason, raw); default: log them")
	Alias(f, "bad-records-output", "bad-records")
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

// StateOptions are the decoding options that shape a checkpoint (read-files records them in
// its state options): format, schema and schema-hints as given on the command line.
func (d *DecodeFlags) StateOptions() map[string]string {
	return map[string]string{"format": d.format, "schema": d.schema, "schema-hints": d.hints}
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
