// Package print is the `streamkit print` tool: Arrow IPC in, text out for people and Unix
// tools (an aligned table, JSON lines or CSV). It is a committing sink: after flushing epoch n
// to stdout it writes commit markers (at-least-once to stdout consumers, DESIGN.md §3).
package print

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/spf13/cobra"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/tools/cli"
	"github.com/streamkit/streamkit/tools/stage"
)

// Formats of --format.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatCSV   = "csv"
)

// Config are print's options.
type Config struct {
	// Format is table (default), json (one object per line) or csv (header + rows).
	Format string
	// Limit stops after this many data rows (0 = no limit); the stage then ends quietly.
	Limit int64
	// ShowControl prints control batches (barriers, watermarks, end) in stream order.
	ShowControl bool
	// Color enables lipgloss styling of the table (a terminal without NO_COLOR).
	Color bool
}

// Printer is the print operator.
type Printer struct {
	cfg     Config
	out     *bufio.Writer
	schema  *arrow.Schema
	csv     *csv.Writer
	printed int64
	header  bool
}

// New returns a printer writing text to w. Errors: an unknown format.
func New(cfg Config, w io.Writer) (*Printer, error) {
	switch cfg.Format {
	case "":
		cfg.Format = FormatTable
	case FormatTable, FormatJSON, FormatCSV:
	default:
		return nil, stage.Usagef("--format must be table, json or csv, got %q", cfg.Format)
	}
	if cfg.Limit < 0 {
		return nil, stage.Usagef("--limit must be ≥ 0, got %d", cfg.Limit)
	}
	return &Printer{cfg: cfg, out: bufio.NewWriterSize(pipeWriter{w}, 256<<10)}, nil
}

// pipeWriter turns EPIPE (the reader of stdout went away, e.g. `| head`) into stage.ErrStop,
// so print ends quietly with exit 0 and commits nothing more (DESIGN.md §3).
type pipeWriter struct{ w io.Writer }

func (p pipeWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		err = stage.ErrStop
	}
	return n, err
}

// Open implements stage.Operator; print is a sink.
func (p *Printer) Open(_ context.Context, env *stage.Env, in *arrow.Schema) (*arrow.Schema, error) {
	env.MarkSink()
	p.Start(in)
	return nil, nil
}

// Start prepares printing batches of schema in outside a stage (state-dump uses it); then
// call Process for each batch and Close.
func (p *Printer) Start(in *arrow.Schema) {
	p.schema = in
	if p.cfg.Format == FormatCSV {
		p.csv = csv.NewWriter(p.out)
	}
}

// Process prints one batch.
func (p *Printer) Process(_ context.Context, rec arrow.RecordBatch, _ stage.Emit) error {
	n := rec.NumRows()
	if n == 0 {
		return nil
	}
	if p.cfg.Limit > 0 && p.printed+n > p.cfg.Limit {
		n = p.cfg.Limit - p.printed
	}
	var err error
	switch p.cfg.Format {
	case FormatJSON:
		err = p.json(rec, n)
	case FormatCSV:
		err = p.csvRows(rec, n)
	default:
		err = p.table(rec, n)
	}
	if err != nil {
		return err
	}
	p.printed += n
	// Flush every batch: a live stream (a heartbeat monitor, a tail of Kafka) must show rows
	// as they come, not at the next barrier. Batches are large when throughput matters.
	if err := p.flush(); err != nil {
		return err
	}
	if p.cfg.Limit > 0 && p.printed >= p.cfg.Limit {
		return stage.ErrStop
	}
	return nil
}

func (p *Printer) json(rec arrow.RecordBatch, n int64) error {
	cols := rec.Columns()
	names := make([][]byte, len(cols))
	for i, f := range rec.Schema().Fields() {
		names[i], _ = json.Marshal(f.Name)
	}
	for r := 0; r < int(n); r++ {
		p.out.WriteByte('{')
		for c, col := range cols {
			if c > 0 {
				p.out.WriteByte(',')
			}
			p.out.Write(names[c])
			p.out.WriteByte(':')
			v := col.GetOneForMarshal(r)
			if d, ok := decimalText(col, r); ok {
				v = d
			}
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("print: column %s row %d: %w", rec.Schema().Field(c).Name, r, err)
			}
			p.out.Write(b)
		}
		p.out.WriteString("}\n")
	}
	return nil
}

// text renders one value for table and CSV output.
func text(col arrow.Array, r int) (string, bool) {
	if col.IsNull(r) {
		return "", false
	}
	switch a := col.(type) {
	case *array.String:
		return a.Value(r), true
	case *array.LargeString:
		return a.Value(r), true
	case *array.StringView:
		return a.Value(r), true
	case *array.Binary:
		return fmt.Sprintf("%x", a.Value(r)), true
	case *array.LargeBinary:
		return fmt.Sprintf("%x", a.Value(r)), true
	case *array.FixedSizeBinary:
		return fmt.Sprintf("%x", a.Value(r)), true
	case *array.BinaryView:
		return fmt.Sprintf("%x", a.Value(r)), true
	case *array.Float64:
		return strconv.FormatFloat(a.Value(r), 'g', -1, 64), true
	case *array.Float32:
		return strconv.FormatFloat(float64(a.Value(r)), 'g', -1, 32), true
	case *array.Timestamp:
		return a.ValueStr(r), true
	case *array.Date32:
		return a.Value(r).ToTime().Format(time.DateOnly), true
	}
	if d, ok := decimalText(col, r); ok {
		return d, true
	}
	v := col.GetOneForMarshal(r)
	switch s := v.(type) {
	case string:
		return s, true
	case nil:
		return "", false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return col.ValueStr(r), true
	}
	return string(b), true
}

// decimalText renders a non-null decimal exactly, in plain notation with the type's scale
// ("-0.0000000001", "1.50"); arrow-go's own rendering uses %g ("-1e-10", "1.5"). ok is false
// for other types.
func decimalText(col arrow.Array, r int) (string, bool) {
	dt, ok := col.DataType().(arrow.DecimalType)
	if !ok || col.IsNull(r) {
		return "", false
	}
	scale := dt.GetScale()
	switch a := col.(type) {
	case *array.Decimal32:
		return a.Value(r).ToString(scale), true
	case *array.Decimal64:
		return a.Value(r).ToString(scale), true
	case *array.Decimal128:
		return a.Value(r).ToString(scale), true
	case *array.Decimal256:
		return a.Value(r).ToString(scale), true
	}
	return "", false
}

func (p *Printer) csvRows(rec arrow.RecordBatch, n int64) error {
	if !p.header {
		names := make([]string, rec.NumCols())
		for i, f := range rec.Schema().Fields() {
			names[i] = f.Name
		}
		p.csv.Write(names)
		p.header = true
	}
	row := make([]string, rec.NumCols())
	for r := 0; r < int(n); r++ {
		for c, col := range rec.Columns() {
			row[c], _ = text(col, r)
		}
		if err := p.csv.Write(row); err != nil {
			return err
		}
	}
	p.csv.Flush()
	return p.csv.Error()
}

func (p *Printer) table(rec arrow.RecordBatch, n int64) error {
	headers := make([]string, rec.NumCols())
	for i, f := range rec.Schema().Fields() {
		headers[i] = f.Name
	}
	t := table.New().Headers(headers...).Border(lipgloss.NormalBorder())
	if p.cfg.Color {
		t = t.StyleFunc(func(row, _ int) lipgloss.Style {
			s := lipgloss.NewStyle().Padding(0, 1)
			if row == table.HeaderRow {
				return s.Bold(true).Foreground(lipgloss.Color("6"))
			}
			return s
		})
	} else {
		t = t.StyleFunc(func(int, int) lipgloss.Style { return lipgloss.NewStyle().Padding(0, 1) })
	}
	for r := 0; r < int(n); r++ {
		row := make([]string, rec.NumCols()) // the table keeps each row slice
		for c, col := range rec.Columns() {
			s, ok := text(col, r)
			if !ok {
				s = "null"
			}
			row[c] = strings.ReplaceAll(s, "\n", `\n`)
		}
		t.Row(row...)
	}
	_, err := fmt.Fprintln(p.out, t.Render())
	return err
}

func (p *Printer) control(c codec.Control) error {
	if !p.cfg.ShowControl {
		return nil
	}
	if p.cfg.Format == FormatJSON {
		m := map[string]any{"_control": c.Kind.String()}
		switch c.Kind {
		case codec.Barrier:
			m["epoch"] = c.Epoch
		case codec.Watermark:
			m["watermark"] = codec.FormatWatermark(c.Watermark)
		case codec.End:
			m["end"] = c.End.String()
			if c.Interrupted {
				m["reason"] = "interrupt"
			}
		}
		b, _ := json.Marshal(m)
		if _, err := fmt.Fprintf(p.out, "%s\n", b); err != nil {
			return err
		}
		return p.flush()
	}
	if p.csv != nil {
		p.csv.Flush()
	}
	if _, err := fmt.Fprintf(p.out, "-- %s\n", c); err != nil {
		return err
	}
	return p.flush()
}

func (p *Printer) flush() error {
	if p.csv != nil {
		p.csv.Flush()
	}
	return p.out.Flush()
}

// Watermark prints the watermark with --show-control.
func (p *Printer) Watermark(_ context.Context, wm time.Time, _ stage.Emit) error {
	return p.control(codec.WatermarkControl(wm))
}

// Barrier flushes everything printed for the epoch; the stage then writes commit markers.
func (p *Printer) Barrier(_ context.Context, n uint64, _ stage.Emit) error {
	if err := p.control(codec.BarrierControl(n)); err != nil {
		return err
	}
	return p.flush()
}

// End flushes the output.
func (p *Printer) End(_ context.Context, k codec.EndKind, _ stage.Emit) error {
	if err := p.control(codec.EndControl(k)); err != nil {
		return err
	}
	return p.flush()
}

// Close flushes what is buffered.
func (p *Printer) Close() error { return p.flush() }

// Command returns the cobra command of `streamkit print`.
func Command() *cobra.Command {
	var cfg Config
	o := stage.Options{Tool: "print"}
	cmd := &cobra.Command{
		Use:   "print",
		Short: "Print an Arrow IPC stream as a table, JSON lines or CSV",
		Long: `print reads an Arrow IPC stream on stdin and writes it as text on stdout: an aligned
table (default), JSON lines (one object per row, for jq) or CSV with a header.

It is a committing sink: after flushing epoch n it writes commit markers into every upstream
checkpoint directory, so a restarted pipeline resumes after the last printed epoch
(at-least-once: rows of an epoch that was printed but not yet committed are printed again).`,
		Example: cli.Examples(
			"# Look at the first 20 rows of a file\nstreamkit read-files data.csv | streamkit print --limit 20",
			"# JSON lines for jq, with barriers and watermarks shown\nstreamkit read-files 'logs/*.json' | streamkit print --format json --show-control",
			"# CSV for spreadsheets\nstreamkit read-files data.parquet | streamkit print --format csv > out.csv",
		),
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cli.Fill(&o, cmd)
			cfg.Color = cli.Color(cmd.OutOrStdout())
			p, err := New(cfg, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			return stage.RunOperator(cmd.Context(), o, p)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Format, "format", FormatTable, "output format: table, json or csv")
	f.Int64Var(&cfg.Limit, "limit", 0, "stop after this many rows (0: no limit)")
	f.BoolVar(&cfg.ShowControl, "show-control", false, "also print control batches (barriers, watermarks, end) in stream order")
	o.AddFlags(f)
	return cmd
}
