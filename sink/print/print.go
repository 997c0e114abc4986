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
	// Binary is the spelling of binary values (Kafka keys and values): BinaryText, BinaryBase64
	// or BinaryHex; "" is the format's default: text in a table, base64 in JSON (as Spark's
	// to_json), hex in CSV (textout.Binary says what each does).
	Binary string
	// Tail prints only the last Tail rows (0: every row), when the stream ends (see Sample).
	Tail int64
	// Sample prints a uniform random sample of Sample rows of the stream (0: every row), in
	// stream order, when the stream ends: at end=final, at end=pause (the first Ctrl-C) or after
	// Limit rows. Tail and Sample hold at most that many rows, rendered as text; the epochs
	// are committed only once the rows are printed.
	Sample int64
	// Seed seeds Sample's choice when Seeded: the same seed and stream give the same sample.
	// Without it each run draws another sample.
	Seed   uint64
	Seeded bool
}

// Spellings of binary values (Config.Binary).
const (
	BinaryText   = "text"
	BinaryBase64 = "base64"
	BinaryHex    = "hex"
)

// Printer is the print operator.
type Printer struct {
	cfg     Config
	txt     textout.Options
	out     *bufio.Writer
	schema  *arrow.Schema
	names   [][]byte // JSON: the quoted column names of namesOf
	namesOf *arrow.Schema
	buf     []byte // one row (JSON) or up to 64 KiB of rows (CSV)
	buf2    []byte // one value
	printed int64  // rows printed, or held with Tail and Sample (what Limit counts)
	header  bool
	hold    *held  // the rows of Tail or Sample; nil without
	epoch   uint64 // the newest epoch printed and not yet returned by Settle
}

// New returns a printer writing text to w. Errors (usage errors): an unknown format or
// binary spelling, a negative count, and options that do not go together.
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
	p := &Printer{cfg: cfg, out: bufio.NewWriterSize(pipeWriter{w}, 256<<10)}
	switch cfg.Binary {
	case "":
		if cfg.Format == FormatTable {
			p.txt.Binary = textout.BinaryText
		}
	case BinaryText:
		p.txt.Binary = textout.BinaryText
	case BinaryBase64:
		p.txt.Binary = textout.BinaryBase64
	case BinaryHex:
		p.txt.Binary = textout.BinaryHex
	default:
		return nil, stage.Usagef("--binary must be text, base64 or hex, got %q", cfg.Binary)
	}
	hold, err := newHeld(cfg)
	if err != nil {
		return nil, err
	}
	p.hold = hold
	return p, nil
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

// Process prints one batch (with Tail or Sample: keeps the rows of it that it may print).
func (p *Printer) Process(_ context.Context, rec arrow.RecordBatch, _ stage.Emit) error {
	n := rec.NumRows()
	if n == 0 {
		return nil
	}
	if p.cfg.Limit > 0 && p.printed+n > p.cfg.Limit {
		n = p.cfg.Limit - p.printed
	}
	if p.hold != nil {
		p.hold.add(p, rec, n)
		p.printed += n
		if p.cfg.Limit > 0 && p.printed >= p.cfg.Limit {
			if err := p.showHeld(); err != nil {
				return err
			}
			return stage.ErrStop
		}
		return nil
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
	b := p.buf[:0]
	for r := 0; r < int(n); r++ {
		b = p.jsonLine(b[:0], rec.Schema(), cols, r)
		if _, err := p.out.Write(b); err != nil {
			return err
		}
	}
	p.buf = b
	return nil
}

// jsonLine appends row r of cols (of schema s) as one JSON object and a newline.
func (p *Printer) jsonLine(b []byte, s *arrow.Schema, cols []arrow.Array, r int) []byte {
	if p.namesOf != s {
		p.names, p.namesOf = make([][]byte, len(cols)), s
		for i, f := range s.Fields() {
			p.names[i] = rescue.AppendQuoted(nil, f.Name)
		}
	}
	b = append(b, '{')
	for c, col := range cols {
		if c > 0 {
			b = append(b, ',')
		}
		b = append(b, p.names[c]...)
		b = append(b, ':')
		b = p.txt.AppendJSON(b, col, r)
	}
	return append(b, '}', '\n')
}

func (p *Printer) csvRows(rec arrow.RecordBatch, n int64) error {
	b := p.csvHeader(p.buf[:0], rec.Schema())
	for r := 0; r < int(n); r++ {
		b = p.csvLine(b, rec.Columns(), r)
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

// csvHeader appends the CSV header of s, once.
func (p *Printer) csvHeader(b []byte, s *arrow.Schema) []byte {
	if p.header {
		return b
	}
	for i, f := range s.Fields() {
		if i > 0 {
			b = append(b, ',')
		}
		b = textout.AppendCSVField(b, []byte(f.Name), false, p.cfg.NullValue)
	}
	p.header = true
	return append(b, '\n')
}

// csvLine appends row r of cols as one CSV record and a newline.
func (p *Printer) csvLine(b []byte, cols []arrow.Array, r int) []byte {
	for c, col := range cols {
		if c > 0 {
			b = append(b, ',')
		}
		var null bool
		p.buf2, null = p.txt.AppendText(p.buf2[:0], col, r)
		b = textout.AppendCSVField(b, p.buf2, null, p.cfg.NullValue)
	}
	return append(b, '\n')
}

// tableRow returns the cells of row r of cols.
func (p *Printer) tableRow(cols []arrow.Array, r int) []string {
	row := make([]string, len(cols)) // the table keeps each row slice
	for c, col := range cols {
		b, null := p.txt.AppendText(p.buf2[:0], col, r)
		p.buf2 = b
		if null {
			row[c] = "null"
			continue
		}
		row[c] = strings.ReplaceAll(string(b), "\n", `\n`)
	}
	return row
}

func (p *Printer) table(rec arrow.RecordBatch, n int64) error {
	rows := make([][]string, n)
	for r := range rows {
		rows[r] = p.tableRow(rec.Columns(), r)
	}
	return p.renderTable(rec.Schema(), rows)
}

// renderTable writes one table of rows under the column names of s.
func (p *Printer) renderTable(s *arrow.Schema, rows [][]string) error {
	headers := make([]string, s.NumFields())
	for i, f := range s.Fields() {
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
	for _, row := range rows {
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

// Barrier flushes everything printed for the epoch; the stage then writes commit markers
// (Settle). With Tail or Sample the rows are printed, and the epochs committed, at the end.
func (p *Printer) Barrier(_ context.Context, n uint64, _ stage.Emit) error {
	if err := p.control(codec.BarrierControl(n)); err != nil {
		return err
	}
	if err := p.flush(); err != nil {
		return err
	}
	p.epoch = n
	return nil
}

// Durable implements stage.AsyncSink: print settles after every barrier and at the end, so
// it never signals.
func (p *Printer) Durable() <-chan struct{} { return nil }

// Settle implements stage.AsyncSink: it returns the newest epoch whose rows are printed, so
// that the stage commits it. With Tail or Sample that is at the end only (wait): Settle
// prints the held rows then, and until then returns 0, since committing an epoch whose rows
// are not printed yet would lose them to a crash (at-least-once, DESIGN.md §3).
func (p *Printer) Settle(_ context.Context, wait bool) (uint64, error) {
	if p.hold != nil {
		if !wait {
			return 0, nil
		}
		if err := p.showHeld(); err != nil {
			return 0, err
		}
	}
	n := p.epoch
	p.epoch = 0
	return n, nil
}

// End flushes the output.
func (p *Printer) End(_ context.Context, k codec.EndKind, _ stage.Emit) error {
	if err := p.control(codec.EndControl(k)); err != nil {
		return err
	}
	return p.flush()
}

// Close prints the rows of Tail or Sample not printed yet (outside a stage, or when the
// stream failed: as for every row, what was read is shown) and flushes what is buffered.
func (p *Printer) Close() error {
	if err := p.showHeld(); err != nil {
		return err
	}
	return p.flush()
}
