package backfill

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamkit/streamkit/codec/formats"
	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/source/files"
	"github.com/streamkit/streamkit/tools/stage"
)

// filesFlags are the read-files options backfill accepts with --from (same names, defaults
// and meaning as read-files, which documents them), mapped onto source/files.Config. The
// options about checkpoints, epochs and following do not apply to a run-once flow.
type filesFlags struct {
	cfg                               files.Config
	format, schema, hints, mode, tz   string
	delimiter, quote, escape, comment string
	noQuote                           bool
}

// addFilesFlags registers read-files' decoding options on backfill.
func addFilesFlags(cmd *cobra.Command) *filesFlags {
	fl := &filesFlags{}
	f := cmd.Flags()
	f.StringVar(&fl.format, "format", "", "--from: file format for every file: csv, tsv, json, parquet, avro, arrow or arrows (default: by extension)")
	f.StringVar(&fl.schema, "schema", "", "--from: schema as Spark DDL, or @file with DDL, a JSON Schema or an Avro schema (default: inferred)")
	f.StringVar(&fl.hints, "schema-hints", "", "--from: pin inferred column types, as DDL with dot paths")
	f.IntVar(&fl.cfg.InferRows, "infer-rows", 10000, "--from: records sampled to infer the schema")
	f.BoolVar(&fl.cfg.CSV.Header, "header", true, "--from: CSV/TSV files start with a header line")
	f.StringVar(&fl.delimiter, "delimiter", "", `--from: CSV field delimiter, one byte or \t`)
	f.StringVar(&fl.quote, "quote", "", `--from: CSV quote character (default ")`)
	f.BoolVar(&fl.noQuote, "no-quote", false, "--from: CSV without quoting")
	f.StringVar(&fl.escape, "escape", "", "--from: CSV escape character inside quotes")
	f.StringVar(&fl.comment, "comment", "", "--from: CSV comment line prefix")
	f.StringVar(&fl.cfg.CSV.NullValue, "null-value", "", "--from: CSV text of a null value")
	f.StringVar(&fl.mode, "mode", "permissive", "--from: records that do not fit: permissive, dropmalformed or failfast")
	f.StringVar(&fl.cfg.BadRecords, "bad-records", "", "--from: append unparseable records to this NDJSON file")
	f.BoolVar(&fl.cfg.WithMetadata, "with-metadata", false, "--from: add the _metadata column (file path, name, size, time, row)")
	f.StringVar(&fl.tz, "tz", "UTC", "--from: time zone of zone-less timestamps (IANA name)")
	f.DurationVar(&fl.cfg.StableAfter, "stable-after", 0, "--from: read a file only once it has not changed for this long (0: at once)")
	return fl
}

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

// filesSource configures cfg to read the files matched by patterns with the read-files
// options given.
func filesSource(cfg *Config, patterns []string, fl *filesFlags) error {
	c := fl.cfg
	c.Patterns = patterns
	var err error
	if fl.format != "" {
		if c.Format, err = formats.ParseFormat(fl.format); err != nil {
			return stage.Usagef("backfill: --format: %v", err)
		}
	}
	if fl.schema != "" {
		if c.Schema, err = schema.Load(fl.schema); err != nil {
			return stage.Usagef("backfill: --schema: %v", err)
		}
	}
	if fl.hints != "" {
		if c.Hints, err = schema.ParseHints(fl.hints); err != nil {
			return stage.Usagef("backfill: --schema-hints: %v", err)
		}
	}
	if c.Mode, err = rescue.ParseMode(fl.mode); err != nil {
		return stage.Usagef("backfill: --mode: %v", err)
	}
	if c.Location, err = time.LoadLocation(fl.tz); err != nil || fl.tz == "" || strings.EqualFold(fl.tz, "local") {
		return stage.Usagef("backfill: --tz %q: want an IANA zone name such as UTC or Europe/Paris", fl.tz)
	}
	for _, o := range []struct {
		name, val string
		dst       *byte
	}{{"delimiter", fl.delimiter, &c.CSV.Delimiter}, {"quote", fl.quote, &c.CSV.Quote}, {"escape", fl.escape, &c.CSV.Escape}, {"comment", fl.comment, &c.CSV.Comment}} {
		if o.val == "" {
			continue
		}
		b, err := oneByte(o.val)
		if err != nil {
			return stage.Usagef("backfill: --%s: %v", o.name, err)
		}
		*o.dst = b
	}
	c.CSV.NoQuote = fl.noQuote
	for _, p := range patterns {
		if p == "-" {
			return stage.Usagef("backfill: --from - (stdin) is not supported; pipe into write-delta instead")
		}
	}
	cfg.FilesDesc = patterns
	cfg.Files = func(ctx context.Context, env *stage.Env) (stage.Source, error) {
		src, err := files.New(c)
		if err != nil {
			return nil, err
		}
		return src, nil
	}
	return nil
}
