// Package selecttool is the `streamkit select` tool (package select would be a Go keyword):
// a Spark SQL select list (Spark's selectExpr) over the stream — column subsets and orders,
// `*`, `* EXCEPT (…)`, `s.*`, renames and computed columns — evaluated vectorized by package
// expr. Passed-through columns are shared with the input, not copied.
package selecttool

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/codec/rowpos"
	"github.com/streamkit/streamkit/expr"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/tools/cli"
)

// Select is the select operator.
type Select struct {
	list string
	env  *stage.Env
	proj *expr.Projection
	pos  *rowpos.Tracker
}

// New validates the select list: one that does not parse is a usage error (with a caret
// under the position), reported before any input is read.
func New(list string) (*Select, error) {
	if _, err := expr.ParseSelect(list); err != nil {
		return nil, cli.Usage("select", err)
	}
	return &Select{list: list}, nil
}

// Open type-checks the select list against the input schema (an unknown column or function,
// or a type mismatch, is a usage error before the first row) and returns the output schema:
// the list's columns (passed-through ones with their field metadata), the input's schema
// metadata, and the stream's key and event-time columns followed through the list (Follow).
func (s *Select) Open(_ context.Context, env *stage.Env, in *arrow.Schema) (*arrow.Schema, error) {
	s.env = env
	var err error
	if s.proj, err = expr.CompileSelect(s.list, in, expr.Options{Mem: env.Mem, Now: env.Now}); err != nil {
		return nil, cli.Usage("select", err)
	}
	s.pos = rowpos.New(in, rowpos.FirstEpoch(env.Committed, env.Dir != nil, codec.Info(in).Replayable))
	out, notes := OutputSchema(in, s.proj)
	for _, n := range notes.Renamed {
		env.Log.Info("select: " + n)
	}
	if len(notes.Dropped) > 0 {
		env.Log.Warn("select: " + strings.Join(notes.Dropped, "; ") + "; declare it again downstream where needed (keyby COLUMNS, --event-time)")
	}
	return out, nil
}

// Notes say what happened to the stream's declared columns (streamkit.key,
// streamkit.event_time) in OutputSchema: sentences for the log.
type Notes struct {
	Renamed []string // followed to a new name (Info)
	Dropped []string // no longer declared (one Warn)
}

// OutputSchema is the schema select writes for input schema in: p's columns with in's schema
// metadata, in which streamkit.key and streamkit.event_time follow their columns. A declared
// column survives when an output column passes it (or a struct holding it) through unchanged;
// under its own name it stays as it is, under another (a AS b, s.*) the metadata names the new
// path, as Spark's Alias keeps a column's metadata. A key of several columns stays only when
// all of them survive. A declared column that no output column passes through (dropped, or
// only used in a computed column) is no longer declared, and the note says so. Every other
// metadata key passes through unchanged.
func OutputSchema(in *arrow.Schema, p *expr.Projection) (*arrow.Schema, Notes) {
	var notes Notes
	info := codec.Info(in)
	ps := p.Schema()
	md := in.Metadata()
	out := arrow.NewSchema(ps.Fields(), &md)
	if len(info.Key) > 0 {
		key := make([]string, len(info.Key))
		var lost []string
		for i, k := range info.Key {
			var ok bool
			if key[i], ok = follow(in, p, k); !ok {
				lost = append(lost, k)
			}
		}
		switch {
		case len(lost) > 0:
			notes.Dropped = append(notes.Dropped, fmt.Sprintf("the stream's key (streamkit.key=%s) is no longer declared: %s not passed through", strings.Join(info.Key, ","), isAre(lost)))
			info.Key = nil
		case strings.Join(key, ",") != strings.Join(info.Key, ","):
			notes.Renamed = append(notes.Renamed, fmt.Sprintf("the stream's key %s is now %s", strings.Join(info.Key, ","), strings.Join(key, ",")))
			info.Key = key
		}
	}
	if info.EventTime != "" {
		switch t, ok := follow(in, p, info.EventTime); {
		case !ok:
			notes.Dropped = append(notes.Dropped, fmt.Sprintf("the event-time column (streamkit.event_time=%s) is no longer declared: it is not passed through", info.EventTime))
			info.EventTime = ""
		case t != info.EventTime:
			notes.Renamed = append(notes.Renamed, fmt.Sprintf("the event-time column %s is now %s", info.EventTime, t))
			info.EventTime = t
		}
	}
	return codec.WithInfo(out, info), notes
}

// follow finds the output path of the input column at dot path path: the output column that
// passes it (or a struct holding it) through, preferring one that keeps the path as it is.
func follow(in *arrow.Schema, p *expr.Projection, path string) (string, bool) {
	want, err := codec.ResolvePath(in, path)
	if err != nil {
		return "", false
	}
	found := ""
	for i, f := range p.Schema().Fields() {
		src := p.Source(i)
		if len(src) == 0 || len(src) > len(want.Indexes) || !prefix(src, want.Indexes) {
			continue
		}
		name := f.Name
		// the struct fields below the passed-through column, by their input names
		t := fieldAt(in, src).Type
		for _, j := range want.Indexes[len(src):] {
			st := t.(*arrow.StructType)
			name += "." + st.Field(j).Name
			t = st.Field(j).Type
		}
		if name == path {
			return name, true
		}
		if found == "" {
			found = name
		}
	}
	return found, found != ""
}

// isAre lists names with "is" or "are".
func isAre(names []string) string {
	if len(names) == 1 {
		return names[0] + " is"
	}
	return strings.Join(names, ", ") + " are"
}

func prefix(p, of []int) bool {
	for i := range p {
		if p[i] != of[i] {
			return false
		}
	}
	return true
}

func fieldAt(s *arrow.Schema, path []int) arrow.Field {
	f := s.Field(path[0])
	for _, j := range path[1:] {
		f = f.Type.(*arrow.StructType).Field(j)
	}
	return f
}

// Process evaluates the select list over the batch and emits the result with the batch's
// custom metadata (its source partition).
func (s *Select) Process(ctx context.Context, rec arrow.RecordBatch, emit stage.Emit) error {
	pos := s.pos.Batch(rec)
	if rec.NumRows() == 0 {
		return nil
	}
	out, err := s.proj.Eval(ctx, rec, pos)
	if err != nil {
		return fmt.Errorf("select: %w", err)
	}
	return emit(codec.CarryMetadata(out, rec))
}

// Watermark: rows are not held, so the watermark passes on (the stage forwards it).
func (s *Select) Watermark(context.Context, time.Time, stage.Emit) error { return nil }

// Barrier starts counting the next epoch's rows for their source positions.
func (s *Select) Barrier(_ context.Context, n uint64, _ stage.Emit) error {
	s.pos.Barrier(n)
	return nil
}

// End: select holds nothing.
func (s *Select) End(context.Context, codec.EndKind, stage.Emit) error { return nil }

// Close releases nothing: select holds no buffers between batches.
func (s *Select) Close() error { return nil }

// Command returns the cobra command of `streamkit select`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit select`: its usage, help, flags and examples
// (docs/cli/select.md). The help lists the expression language and every function
// (expr.Help), so it stays current.
func CommandSpec() cli.Spec {
	// Passed-through columns are retained, nothing else keeps an input buffer past Process:
	// input bodies can be recycled.
	o := stage.Options{Tool: "select", RecycleInput: true}
	return cli.Spec{
		Use:   "select 'EXPR [AS name], …'",
		Short: "Select, rename and compute columns with Spark SQL expressions (selectExpr)",
		Long: `select writes, for every row, the columns of a select list, as Spark's selectExpr does:
  *                        every input column
  * EXCEPT (a, b)          every input column but a and b
  value.*                  the fields of struct value, as columns
  a, b AS c                columns, renamed with AS
  amount * 1.2 AS gross    computed columns (named by their text without AS)
Two output columns with one name are an error. Passed-through columns keep their field
metadata and are shared with the input, not copied; computed columns are evaluated vectorized
over each batch. Control batches (barriers, watermarks, end) and each batch's source
partition pass through.

The schema metadata passes through, and the stream's declared key (streamkit.key) and
event-time column (streamkit.event_time) follow their columns: a column kept under its name
stays declared as it is; one kept under another name (ts AS t, value.*) is declared under the
new name, as Spark keeps a column's metadata through an alias (logged); one that is not
passed through — left out, or only used inside a computed column — is no longer declared,
with one warning on stderr (a key of several columns goes when one of them goes).

Errors surface at their own moment, with their exit code:
  2  the list does not parse (the message shows it with a caret under the position), before
     any input is read; or, once the input schema is known and before the first row, it names
     an unknown column or function (with "did you mean") or mixes types that do not go
     together;
  1  a row fails under ANSI rules (division by zero, a bad cast, an overflow): the message
     names Spark's error class and the row's source position: FILE:LINE (or FILE row N) from
     read-files --with-metadata, TOPIC/PARTITION@OFFSET from read-kafka, else the source
     partition, the epoch and the row's index in it. Use the try_ functions or TRY_CAST to get
     NULL instead.

` + expr.Help(),
		Examples: []string{
			"# Rename, cast and compute columns\nstreamkit read-files 'orders/*.csv' | streamkit select \"id, CAST(amount AS DOUBLE) * 1.2 AS gross, lower(trim(region)) AS region\" | streamkit print",
			"# All columns but two\nstreamkit read-files data.parquet | streamkit select '* EXCEPT (_rescued_data, raw)' | streamkit print",
			"# Flatten a Kafka JSON value and truncate its time to the hour\nstreamkit read-kafka -b 127.0.0.1:9092 -t orders --value-format json --value-schema orders.json | streamkit select \"value.*, date_trunc('HOUR', timestamp) AS hour\" | streamkit print",
		},
		Args: cli.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) error {
			cli.Fill(&o, cmd)
			s, err := New(args[0])
			if err != nil {
				return err
			}
			return stage.RunOperator(cmd.Context(), o, s)
		},
		Flags: func(f *pflag.FlagSet) {
			cli.StageFlags(f, &o)
		},
	}
}
