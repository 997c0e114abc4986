package codec

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BufferSize is the size of the write buffer around stdout (1 MiB); messages with large column
// buffers go past it (one vectored write).
const BufferSize = 1 << 20

// ReadBufferSize is the size of the read buffer around stdin (64 KiB): it gathers the small
// reads of message framing, metadata and small batches; larger bodies are read past it,
// straight from the input, so a large buffer would only add a copy.
const ReadBufferSize = 64 << 10

// ErrNoStream is returned by NewReader when the input ends before an Arrow IPC schema message.
var ErrNoStream = errors.New("the input is empty: no Arrow IPC stream arrived (if an upstream stage failed, its error is above)")

// ErrNotArrow is returned by NewReader when the input does not start like an Arrow IPC stream
// (text, CSV, a Parquet file piped by mistake).
var ErrNotArrow = errors.New("the input is not an Arrow IPC stream")

// ErrTruncated is returned by Reader.Next when the input ends without the IPC end-of-stream
// marker: the upstream process died or was killed. It is never mistaken for a final end.
var ErrTruncated = errors.New("input ended without an end-of-stream marker (upstream process died?)")

// Message is one item of a stream: a data batch or a control.
type Message struct {
	// Batch is a data batch (nil for a control). The receiver owns one reference and must
	// Release it.
	Batch arrow.RecordBatch
	// Control is set when the message is a control batch.
	Control *Control
}

// Reader reads an Arrow IPC stream with streamkit control batches.
type Reader struct {
	eos  *messageReader
	r    *ipc.Reader
	done bool
	raw  []byte // NextRaw's message buffer
}

// NewReader starts reading an IPC stream from r (buffered) and reads its schema. Errors:
// ErrNoStream for empty input; otherwise a wrapped IPC error.
func NewReader(r io.Reader, mem memory.Allocator) (*Reader, error) {
	mr := &messageReader{r: bufio.NewReaderSize(r, ReadBufferSize), src: r, mem: mem, refs: 1}
	ir, err := ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(mem))
	if err != nil {
		mr.Release()
		if errors.Is(err, io.EOF) && !mr.sawEOS {
			return nil, ErrNoStream
		}
		if errors.Is(err, io.ErrUnexpectedEOF) { // cut inside the schema message
			return nil, fmt.Errorf("read arrow stream schema: %w: %v", ErrTruncated, err)
		}
		return nil, fmt.Errorf("read arrow stream schema: %w", err)
	}
	rd := &Reader{eos: mr, r: ir}
	return rd, nil
}

// SetBodyAllocator makes the reader allocate the bodies of later messages (the buffers of the
// batches it returns) from a, e.g. a Recycler when the caller releases every batch before it
// reads the next few and keeps none of its bytes.
func (r *Reader) SetBodyAllocator(a memory.Allocator) { r.eos.bodies = a }

// Schema is the stream's schema (with its metadata).
func (r *Reader) Schema() *arrow.Schema { return r.r.Schema() }

// Next returns the next message. At the end it returns io.EOF; an end-of-stream without an
// end control (a foreign producer) first yields a synthesized end=final control. After an
// end control, Next returns io.EOF. A stream cut without end-of-stream marker yields
// ErrTruncated (wrapped when the cut is inside a message); a malformed stream or control
// batch yields a descriptive error.
func (r *Reader) Next() (Message, error) {
	if r.done {
		return Message{}, io.EOF
	}
	var rec arrow.RecordBatch
	{
		if !r.r.Next() {
			if err := r.r.Err(); err != nil {
				if errors.Is(err, io.ErrUnexpectedEOF) { // cut inside a message
					return Message{}, fmt.Errorf("%w: %v", ErrTruncated, err)
				}
				return Message{}, fmt.Errorf("read arrow stream: %w", err)
			}
			r.done = true
			if !r.eos.sawEOS {
				return Message{}, ErrTruncated
			}
			c := EndControl(Final)
			return Message{Control: &c}, nil
		}
		rec = r.r.RecordBatch()
		rec.Retain()
	}
	c, ok, err := ParseControl(rec)
	if err != nil {
		rec.Release()
		return Message{}, err
	}
	if !ok {
		// Buffers come from another process: check offsets and lengths before anyone indexes
		// into them (arrow-go checks only the last offset; a bad middle one would panic later).
		for i, col := range rec.Columns() {
			if err := validate(col); err != nil {
				rec.Release()
				return Message{}, fmt.Errorf("read arrow stream: column %q of a data batch is malformed: %w", rec.Schema().Field(i).Name, err)
			}
		}
		return Message{Batch: rec}, nil
	}
	rec.Release()
	if c.Kind == End {
		r.done = true
	}
	return Message{Control: &c}, nil
}

// Release frees the reader.
func (r *Reader) Release() {
	r.r.Release()
}

// Writer writes an Arrow IPC stream with control batches; every Write and WriteControl is
// flushed to the underlying writer so downstream stages see batches without delay.
type Writer struct {
	out     io.Writer // under bw
	bw      *bufio.Writer
	pw      *payloadWriter
	w       *ipc.Writer
	schema  *arrow.Schema
	mem     memory.Allocator
	closed  bool
	started bool // the schema was written
}

// NewWriter returns a writer of schema s (its metadata is written as the stream schema).
func NewWriter(w io.Writer, s *arrow.Schema, mem memory.Allocator) *Writer {
	bw := bufio.NewWriterSize(w, BufferSize)
	pw := &payloadWriter{w: bw, out: w}
	return &Writer{out: w, bw: bw, pw: pw, w: ipc.NewWriterWithPayloadWriter(pw, ipc.WithSchema(s), ipc.WithAllocator(mem)), schema: s, mem: mem}
}

// Schema is the stream's schema.
func (w *Writer) Schema() *arrow.Schema { return w.schema }

// Write writes a data batch (borrowed; the caller keeps its reference). Its schema must equal
// the stream's schema.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	w.started = true
	if err := w.w.Write(rec); err != nil {
		return err
	}
	return w.bw.Flush()
}

// WriteSchema writes the stream's schema now, if nothing was written yet, and flushes: a reader
// then learns the schema before the first batch (a child of keyby --shards declares its event
// time in it, SchemaShardEventTime).
func (w *Writer) WriteSchema() error {
	if w.started {
		return nil
	}
	ps := ipc.GetSchemaPayload(w.schema, w.mem)
	_, err := ps.WritePayload(w.bw)
	ps.Release()
	if err != nil {
		return err
	}
	w.pw.skip = 1 // the IPC writer's own schema message, at its first write
	w.started = true
	return w.bw.Flush()
}

// WriteControl writes control c as a zero-row batch with custom metadata.
func (w *Writer) WriteControl(c Control) error {
	rec := NewControlBatch(w.mem, w.schema, c)
	defer rec.Release()
	return w.Write(rec)
}

// Close writes the IPC end-of-stream marker and flushes. It does not close the underlying
// writer. An end control should precede it (WriteControl(EndControl(...))).
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.w.Close(); err != nil {
		return err
	}
	return w.bw.Flush()
}

// monotonic checks that offsets never decrease (array.Validate already bounds the first and
// last against the data buffer, so all lie within it). UTF-8 is not checked: bad text cannot
// make an access go out of bounds, and checking it would cost more than decoding.
func monotonic[T int32 | int64](offs []T) error {
	for i := 1; i < len(offs); i++ {
		if offs[i] < offs[i-1] {
			return fmt.Errorf("offset %d (%d) is below offset %d (%d)", i, offs[i], i-1, offs[i-1])
		}
	}
	return nil
}

// validate checks an array read from another process before it is used: the O(1) layout of
// every level (buffer sizes against lengths, children), and the offsets of variable-length
// types in full (monotonic, within the data), which arrow-go checks only at the ends. Null
// counts are not recounted: a wrong one cannot make an access go out of bounds.
func validate(a arrow.Array) error {
	if a.DataType().ID() == arrow.NULL {
		// No buffers to index into (arrow-go reads a null column with none, which
		// array.Validate refuses): only its length, which the batch's length bounds.
		return nil
	}
	if err := array.Validate(a); err != nil {
		return err
	}
	return validateOffsets(a)
}

func validateOffsets(a arrow.Array) error {
	switch a := a.(type) {
	case *array.String:
		return monotonic(a.ValueOffsets())
	case *array.Binary:
		return monotonic(a.ValueOffsets())
	case *array.LargeString:
		return monotonic(a.ValueOffsets())
	case *array.LargeBinary:
		return monotonic(a.ValueOffsets())
	case *array.List:
		if err := a.ValidateFull(); err != nil {
			return err
		}
		return validateOffsets(a.ListValues())
	case *array.LargeList:
		if err := a.ValidateFull(); err != nil {
			return err
		}
		return validateOffsets(a.ListValues())
	case *array.Map:
		if err := a.ValidateFull(); err != nil {
			return err
		}
		if err := validateOffsets(a.Keys()); err != nil {
			return err
		}
		return validateOffsets(a.Items())
	case *array.FixedSizeList:
		return validateOffsets(a.ListValues())
	case *array.Struct:
		for i := 0; i < a.NumField(); i++ {
			if err := validateOffsets(a.Field(i)); err != nil {
				return err
			}
		}
	case *array.Dictionary:
		return validateOffsets(a.Dictionary())
	case array.Validator:
		// views, list views, unions, run-end encoded: their own full checks
		return a.ValidateFull()
	}
	return nil
}
