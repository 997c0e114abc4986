// Package schema is the `streamkit schema` tool: it prints the schema of the Arrow IPC stream
// on stdin, or of a data file, with the streamkit metadata and the control batches a stream
// carried. What it reads and prints is package codec/describe; this package is its spec and
// wiring.
package schema

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/codec/describe"
	"github.com/streamkit/streamkit/codec/formats"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
	"github.com/streamkit/streamkit/tools/cli"
)

// Command returns the cobra command of `streamkit schema`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit schema`: its usage, help, flags and examples
// (docs/cli/schema.md).
func CommandSpec() cli.Spec {
	var format, inputFormat string
	var first bool
	return cli.Spec{
		Use:   "schema [FILE]",
		Short: "Print the schema of a stream or a file, its streamkit metadata and control batches",
		Long: `schema prints the schema of the Arrow IPC stream on stdin, or of FILE: every field's name,
its type as Spark SQL names it (bigint, timestamp, array<string>; Arrow's name where Spark has
none) and as Arrow does, whether it is nullable, its field metadata, and what the streamkit
metadata declares: the key columns (streamkit.key, set by keyby), the event-time column
(streamkit.event_time), the column a shard generates its watermark from
(streamkit.shard_event_time), whether the epochs are replayable, the source partitions, the
upstream checkpoint directories and any other streamkit.* or foreign metadata key.

Of a stream, schema prints the schema as soon as it arrives, before the first row, and then
counts what follows until the end of the stream: data batches and rows, barriers (first and
last epoch), watermarks (first and last) and the end (final or pause). On a live stream
(read-kafka) give --first to stop at the schema, or press Ctrl-C: the counts so far are
printed and schema exits 130. It takes no part in checkpoints: it writes no commit markers, so
a checkpointed source upstream replays what schema saw. A stream cut off without its
end-of-stream marker is counted up to the cut and is an error (exit 1).

FILE is a local path or a bucket URL (s3://, gs://, az://, abfss://). An Arrow IPC stream
file (.arrows, or .arrow without the IPC file magic) is read as a stream; a Parquet, Avro or
Arrow IPC file gives its own schema; CSV, TSV and JSON give the schema read-files infers from
their first rows. The format comes from the extension unless --input-format names it.

--format json prints one JSON document (fields, streamkit, metadata, stream) when schema is
done, for scripts; its field names are stable.`,
		Examples: []string{
			"# What does a source produce?\nstreamkit read-files 'orders/*.csv' | streamkit schema",
			"# The schema of a live topic, at once\nstreamkit read-kafka -b localhost:9092 -t orders | streamkit schema --first",
			"# The key and event time after keyby, for a script\nstreamkit read-files data.csv | streamkit keyby id | streamkit schema --format json | jq '.streamkit'",
			"# The schema of a Parquet file\nstreamkit schema orders/part-0.parquet",
		},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return stage.Usagef("%s takes at most 1 argument (FILE), got %d; see '%s --help'", cmd.Name(), len(args), cmd.CommandPath())
			}
			return nil
		},
		Run: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return stage.Usagef("schema: --format must be text or json, got %q", format)
			}
			var inFormat formats.Format
			if inputFormat != "" {
				var err error
				if inFormat, err = formats.ParseFormat(inputFormat); err != nil {
					return stage.Usagef("schema: --input-format: %v", err)
				}
				if len(args) == 0 && inFormat != formats.ArrowStream {
					return stage.Usagef("schema: --input-format %s needs a FILE: stdin is an Arrow IPC stream", inputFormat)
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			onSchema := func(r *describe.Report) error {
				if format == "json" {
					return nil
				}
				return describe.WriteSchemaText(out, r)
			}
			var rep *describe.Report
			var err error
			if len(args) == 0 {
				if f, ok := cmd.InOrStdin().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
					slog.Warn("waiting for an Arrow IPC stream on stdin, which is a terminal: pipe a streamkit source into this stage, e.g. streamkit read-files data.csv | streamkit schema")
				}
				rep, err = describe.ReadStream(ctx, cmd.InOrStdin(), "stdin", first, onSchema)
				if rep == nil && errors.Is(err, codec.ErrNoStream) {
					// An empty pipe: the stage upstream failed and said why (stage.InputError).
					err = stage.InputError("schema", cmd.InOrStdin(), codec.ErrNoStream)
				}
			} else {
				var f formats.File
				if f, err = openFile(ctx, args[0]); err != nil {
					return err
				}
				rep, err = describe.ReadFile(ctx, f, storage.Redact(args[0]), inFormat, first, onSchema)
			}
			if rep != nil {
				var werr error
				if format == "json" {
					werr = describe.WriteJSON(out, rep)
				} else if rep.Stream != nil {
					fmt.Fprintln(out)
					werr = describe.WriteStreamText(out, rep)
				}
				if err == nil {
					err = werr
				}
			}
			if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return stage.ErrInterrupted
			}
			if err == nil && rep != nil && rep.Stream != nil && rep.Stream.Interrupted {
				return stage.ErrInterrupted // the pipeline was interrupted upstream (docs/protocol.md §2)
			}
			return err
		},
		Flags: func(f *pflag.FlagSet) {
			f.StringVar(&format, "format", "text", "output format: text or json (one document, printed when schema is done)")
			cli.Choices(f, "format", "text", "json")
			f.BoolVar(&first, "first", false, "stop after the schema: do not read the stream on (for a live stream)")
			f.StringVar(&inputFormat, "input-format", "", "format of FILE: csv, tsv, json, parquet, avro, arrow or arrows (default: by its extension)")
			cli.Choices(f, "input-format", "csv", "tsv", "json", "parquet", "avro", "arrow", "arrows")
		},
	}
}

// openFile opens FILE: a local path, or an object of a bucket URL (its parent prefix opened
// with cli.OpenStore, the object by name, read by ranges).
func openFile(ctx context.Context, loc string) (formats.File, error) {
	if !strings.Contains(loc, "://") {
		f, err := os.Open(loc)
		if err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		return f, nil
	}
	path, query, _ := strings.Cut(loc, "?")
	i := strings.LastIndexByte(path, '/')
	if i < 0 || i == len(path)-1 || strings.HasSuffix(path[:i+1], "://") {
		return nil, stage.Usagef("schema: %s names no object (give the file's URL, e.g. s3://bucket/dir/x.parquet)", storage.Redact(loc))
	}
	dir, name := path[:i], path[i+1:]
	if query != "" {
		dir += "?" + query
	}
	st, err := cli.OpenStore(ctx, dir, false)
	if err != nil {
		return nil, cli.TableError("schema", err)
	}
	f, err := st.Open(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("schema: %s: %w", storage.Redact(loc), err)
	}
	return f, nil
}
