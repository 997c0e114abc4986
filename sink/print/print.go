// Package print is the text sink: it writes Arrow record batches to an io.Writer as text for
// people and Unix tools (an aligned table, JSON lines or CSV), as the `streamkit print` tool
// (tools/print) and the JSON-lines side outputs (sink/sideoutput) do. As a stage.Operator it is
// a committing sink: after flushing epoch n it lets the stage write commit markers
// (at-least-once to the writer's consumers, DESIGN.md §3).
package print

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/codec/textout"
	"github.com/streamkit/streamkit/stage"
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
	// NullValue is the text of a null value in CSV output (default "": an empty field; the
	// empty string is written as "", as Spark's CSV writer writes it).
	NullValue string
}

// Printer is the print operator.
type Printer struct {
	cfg     Config
	out     *bufio.Writer
	schema  *arrow.Schema
	buf     []byte // one row (JSON) or up to 64 KiB of rows (CSV)
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
	if cfg.NullValue != "" && cfg.Format != FormatCSV {
		return nil, stage.Usagef("--null-value is for --format csv")
	}
	if strings.ContainsAny(cfg.NullValue, ",\"\r\n") {
		return nil, stage.Usagef("--null-value %q: a null value cannot hold a comma, quote or line break", cfg.NullValue)
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
	if env.Shard.IsShard() {
		// A shard's stdout is keyby's input of Arrow IPC, which a sink shard closes.
		return nil, fmt.Errorf("print: cannot run as a shard of keyby --shards: it writes text to stdout, where keyby reads the shard's Arrow IPC output; print after keyby instead (keyby ... --shards N -- CMD | streamkit print)")
	}
	env.MarkSink()
	p.Start(in)
	return nil, nil
}

// RowsWritten is the data rows printed so far (stage.OutputCounter).
func (p *Printer) RowsWritten() int64 { return p.printed }

// Start prepares printing batches of schema in outside a stage (state-dump uses it); then
// call Process for each batch and Close.
func (p *Printer) Start(in *arrow.Schema) {
	p.schema = in
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
		names[i] = rescue.AppendQuoted(nil, f.Name)
	}
	b := p.buf[:0]
	for r := 0; r < int(n); r++ {
		b = append(b[:0], '{')
		for c, col := range cols {
			if c > 0 {
				b = append(b, ',')
			}
			b = append(b, names[c]...)
			b = append(b, ':')
			b = textout.AppendJSON(b, col, r)
		}
		b = append(b, '}', '\n')
		if _, err := p.out.Write(b); err != nil {
			return err
		}
	}
	p.buf = b
	return nil
}

// text renders one value for table output (textout.AppendText); ok is false for null.
func text(col arrow.Array, r int) (string, bool) {
	b, null := textout.AppendText(nil, col, r)
	return string(b), !null
}

func (p *Printer) csvRows(rec arrow.RecordBatch, n int64) error {
	b := p.buf[:0]
	if !p.header {
		for i, f := range rec.Schema().Fields() {
			if i > 0 {
				b = append(b, ',')
			}
			b = textout.AppendCSVField(b, []byte(f.Name), false, p.cfg.NullValue)
		}
		b = append(b, '\n')
		p.header = true
	}
	var field []byte
	for r := 0; r < int(n); r++ {
		for c, col := range rec.Columns() {
			if c > 0 {
				b = append(b, ',')
			}
			var null bool
			field, null = textout.AppendText(field[:0], col, r)
			b = textout.AppendCSVField(b, field, null, p.cfg.NullValue)
		}
		b = append(b, '\n')
		if len(b) >= 64<<10 {
			if _, err := p.out.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := p.out.Write(b)
	p.buf = b[:0]
	return err
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
	if _, err := fmt.Fprintf(p.out, "-- %s\n", c); err != nil {
		return err
	}
	return p.flush()
}

func (p *Printer) flush() error {
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
