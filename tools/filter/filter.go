// Package filter is the `streamkit filter` tool: it keeps the rows for which a Spark SQL
// predicate is true (Spark's DataFrame.filter / where), evaluated vectorized over each batch
// by package expr; rows whose predicate is false or NULL are dropped, optionally into a side
// output (--dropped-output) that a checkpoint keeps exactly-once per epoch.
package filter

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/codec/rowpos"
	"github.com/streamkit/streamkit/expr"
	"github.com/streamkit/streamkit/sink/sideoutput"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/storage"
	"github.com/streamkit/streamkit/tools/cli"
)

// Config are filter's options.
type Config struct {
	// Predicate is the condition (Spark SQL), e.g. "amount > 100 AND region IN ('eu', 'us')".
	Predicate string
	// DroppedOutput is a file for the rows the predicate drops (sink/sideoutput: .arrow Arrow
	// IPC stream, .ndjson JSON lines); empty: they are only counted.
	DroppedOutput string
}

// extra is what filter keeps in each epoch's state manifest, with --dropped-output and a
// checkpoint: where the file stood, so a restart cuts off what uncommitted epochs appended.
type extra struct {
	Dropped *sideoutput.Mark `json:"dropped_output,omitempty"`
}

// noValue is the value of filter's state: it keeps no keys, only the epoch manifests (extra).
type noValue struct{}

type noCodec struct{}

func (noCodec) Fields() []arrow.Field                      { return nil }
func (noCodec) Append([]array.Builder, noValue)            {}
func (noCodec) Decode([]arrow.Array, int) (noValue, error) { return noValue{}, nil }

var _ state.Codec[noValue] = noCodec{}

// Filter is the filter operator.
type Filter struct {
	cfg  Config
	env  *stage.Env
	prog *expr.Program
	pos  *rowpos.Tracker
	// side is the --dropped-output file (nil without one); store keeps its marks per epoch
	// when the stage has a checkpoint.
	side     *sideoutput.File
	sidePath string
	store    *state.Store[noValue]
	dropBuf  *memory.Buffer
	// bufs holds the buffers of the filtered batches once written, for the next ones.
	bufs    *codec.Recycler
	in, out int64
}

// New validates cfg: a predicate that does not parse is a usage error (with a caret under
// the position), reported before any input is read.
func New(cfg Config) (*Filter, error) {
	if _, err := expr.Parse(cfg.Predicate); err != nil {
		return nil, cli.Usage("filter", err)
	}
	if cfg.DroppedOutput != "" {
		if err := sideoutput.Check("filter: --dropped-output", cfg.DroppedOutput); err != nil {
			return nil, err
		}
	}
	return &Filter{cfg: cfg}, nil
}

// Open type-checks the predicate against the input schema (an unknown column or function, or
// a type mismatch, is a usage error before the first row) and opens the side output, restored
// to the committed epoch. The output schema is the input's, metadata and all.
func (f *Filter) Open(_ context.Context, env *stage.Env, in *arrow.Schema) (*arrow.Schema, error) {
	f.env = env
	var err error
	if f.prog, err = expr.CompilePredicate(f.cfg.Predicate, in, expr.Options{Mem: env.Mem, Now: env.Now}); err != nil {
		return nil, cli.Usage("filter", err)
	}
	f.pos = rowpos.New(in, rowpos.FirstEpoch(env.Committed, env.Dir != nil, codec.Info(in).Replayable))
	f.bufs = codec.NewRecycler(env.Mem)
	if f.cfg.DroppedOutput == "" {
		return in, nil
	}
	if f.sidePath, err = filepath.Abs(sideoutput.Path(f.cfg.DroppedOutput, env.Shard.Name())); err != nil {
		return nil, fmt.Errorf("filter: --dropped-output: %w", err)
	}
	var x extra
	if env.Dir != nil {
		env.MarkStateful() // the marks must follow the committed epoch without a gap
		f.store = state.NewStore[noValue](noCodec{})
		man, err := f.store.Restore(env.Mem, env.Dir.Path, env.Committed)
		if err != nil {
			return nil, fmt.Errorf("filter: %w", err)
		}
		if len(man.Extra) > 0 {
			if err := json.Unmarshal(man.Extra, &x); err != nil {
				return nil, fmt.Errorf("filter: restore epoch %d: %w", env.Committed, err)
			}
		}
	}
	var ckpt storage.Store
	if env.Dir != nil {
		ckpt = env.Dir.Store()
	}
	if f.side, err = sideoutput.Reopen("filter: --dropped-output", f.sidePath, in, env.Mem, ckpt, sideoutput.StartFile, x.Dropped); err != nil {
		return nil, err
	}
	f.dropBuf = memory.NewResizableBuffer(env.Mem)
	return in, nil
}

// Process evaluates the predicate over the batch and emits the rows where it is true, with
// the batch's custom metadata (its source partition); the others go to --dropped-output.
func (f *Filter) Process(ctx context.Context, rec arrow.RecordBatch, emit stage.Emit) error {
	n := rec.NumRows()
	pos := f.pos.Batch(rec)
	if n == 0 {
		return nil
	}
	f.in += n
	m, err := f.prog.Eval(ctx, rec, pos)
	if err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	defer m.Release()
	ctx = compute.WithAllocator(ctx, f.env.Mem)
	mask, ok := m.(*array.Boolean)
	if !ok { // the predicate is the NULL literal (type void): no row is kept
		if f.side != nil {
			return f.side.Write(rec)
		}
		return nil
	}
	kept, err := expr.FilterBatchInto(ctx, rec, mask, f.bufs)
	if err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	if f.side != nil && kept.NumRows() < n {
		if err := f.writeDropped(ctx, rec, mask, kept.NumRows() == 0); err != nil {
			kept.Release()
			return err
		}
	}
	if kept.NumRows() == 0 {
		kept.Release()
		return nil
	}
	f.out += kept.NumRows()
	if kept != rec {
		kept = codec.CarryMetadata(kept, rec) // the source partition of the rows, if named
	}
	return emit(kept)
}

// writeDropped writes the rows of rec where mask is not true (false or NULL) to the side
// output (all of them when all).
func (f *Filter) writeDropped(ctx context.Context, rec arrow.RecordBatch, mask *array.Boolean, all bool) error {
	if all {
		return f.side.Write(rec)
	}
	n := mask.Len()
	f.dropBuf.ResizeNoShrink(int(bitutil.BytesForBits(int64(n))))
	bits := f.dropBuf.Bytes()
	for i := range n {
		bitutil.SetBitTo(bits, i, !(mask.IsValid(i) && mask.Value(i)))
	}
	drop := array.NewBoolean(n, f.dropBuf, nil, 0)
	defer drop.Release()
	out, err := expr.FilterBatch(ctx, rec, drop)
	if err != nil {
		return fmt.Errorf("filter: --dropped-output: %w", err)
	}
	defer out.Release()
	return f.side.Write(out)
}

// Watermark: rows are not held, so the watermark passes on (the stage forwards it).
func (f *Filter) Watermark(context.Context, time.Time, stage.Emit) error { return nil }

// Barrier syncs --dropped-output and, with a checkpoint, records where it stands in the
// epoch's state, so a restart resumes it exactly there.
func (f *Filter) Barrier(_ context.Context, n uint64, _ stage.Emit) error {
	f.pos.Barrier(n)
	if f.side == nil {
		return nil
	}
	mark, err := f.side.Mark(f.sidePath)
	if err != nil {
		return fmt.Errorf("filter: --dropped-output: %w", err)
	}
	if f.store == nil {
		return nil
	}
	return f.store.Checkpoint(f.env.Mem, f.env.Dir, n, extra{Dropped: mark})
}

// End logs how many rows were kept; filter holds nothing to flush.
func (f *Filter) End(context.Context, codec.EndKind, stage.Emit) error {
	f.env.Log.Info("filter done", "rows_in", f.in, "rows_out", f.out, "rows_dropped", f.in-f.out)
	return nil
}

// Close closes the --dropped-output file.
func (f *Filter) Close() error {
	if f.dropBuf != nil {
		f.dropBuf.Release()
	}
	if f.bufs != nil {
		f.bufs.Release() // batches still referenced give their buffers back to Env.Mem
	}
	if f.side != nil {
		return f.side.Close()
	}
	return nil
}

// Command returns the cobra command of `streamkit filter`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit filter`: its usage, help, flags and examples
// (docs/cli/filter.md). The help lists the expression language and every function
// (expr.Help), so it stays current.
func CommandSpec() cli.Spec {
	var cfg Config
	// Nothing keeps an input buffer past Process but through Retain (the side output writes
	// synchronously): input bodies can be recycled.
	o := stage.Options{Tool: "filter", RecycleInput: true}
	return cli.Spec{
		Use:   "filter PREDICATE",
		Short: "Keep the rows for which a Spark SQL predicate is true",
		Long: `filter keeps the rows of the stream for which PREDICATE, a Spark SQL boolean expression, is
true, as Spark's DataFrame.filter / where does: a row whose predicate is false or NULL is
dropped. The predicate is evaluated vectorized over each batch. Control batches (barriers,
watermarks, end) pass through, and so do the schema with its metadata (streamkit.key,
streamkit.event_time …) and each batch's source partition.

Errors surface at their own moment, with their exit code:
  2  the predicate does not parse (the message shows it with a caret under the position),
     before any input is read; or, once the input schema is known and before the first row,
     it names an unknown column or function (with "did you mean") or mixes types that do not
     go together, or is not boolean;
  1  a row fails under ANSI rules (division by zero, a bad cast, an overflow): the message
     names Spark's error class and the row's source position: FILE:LINE (or FILE row N) from
     read-files --with-metadata, TOPIC/PARTITION@OFFSET from read-kafka, else the source
     partition, the epoch and the row's index in it. Use the try_ functions or TRY_CAST to get
     NULL instead.

Dropping rows is filter's job, so it does not warn when most rows go; the status line and
--progress=json show the rows in and out, and the end of the run logs both.

--dropped-output FILE keeps the dropped rows: an Arrow IPC stream (.arrow) or JSON lines
(.ndjson); a .ndjson file is appended to, an existing .arrow file is refused. With a
checkpoint the file is synced at every barrier and a restart continues it from the committed
epoch, so it holds every dropped row of the committed epochs exactly once. As a shard of keyby
--shards, shard i writes FILE with .shard-i before the extension.

` + expr.Help(),
		Examples: []string{
			"# Keep large orders from two regions\nstreamkit read-files 'orders/*.json' | streamkit filter \"amount > 100 AND region IN ('eu', 'us')\" | streamkit print",
			"# Rows of May, kept dropped rows for an audit\nstreamkit read-files data.parquet | streamkit filter \"ts BETWEEN TIMESTAMP '2024-05-01' AND TIMESTAMP '2024-06-01'\" --dropped-output dropped.ndjson | streamkit print",
			"# Spark's LIKE and IS NOT NULL on a Kafka JSON value\nstreamkit read-kafka -b 127.0.0.1:9092 -t logs --value-format json --value-schema logs.json | streamkit filter \"value.path LIKE '/api/%' AND value.user IS NOT NULL\" | streamkit print",
		},
		Args: cli.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) error {
			cli.Fill(&o, cmd)
			cfg.Predicate = args[0]
			o.StateOptions = map[string]string{"dropped-output": cfg.DroppedOutput}
			f, err := New(cfg)
			if err != nil {
				return err
			}
			return stage.RunOperator(cmd.Context(), o, f)
		},
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&cfg.DroppedOutput, "dropped-output", "", "file for the rows the predicate drops (false or NULL): .arrow (Arrow IPC stream) or .ndjson (JSON lines)")
			cli.StageFlags(fs, &o)
		},
	}
}
