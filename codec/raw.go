package codec

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/endian"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// RawMessage is one item of a stream read by Reader.NextRaw: a data batch as the bytes of its
// IPC message, or a control.
type RawMessage struct {
	// Data is the whole IPC message of a data batch (continuation marker, metadata length,
	// flatbuffer metadata padded to 8 bytes, body), as Writer.WriteRaw takes it. It is valid
	// until the next call of NextRaw.
	Data []byte
	// Control is set when the message is a control batch.
	Control *Control
}

// Forwardable reports whether the stream's data batches can be passed on as raw IPC messages
// (NextRaw, Writer.WriteRaw) into a stream of an equal schema: its schema has no
// dictionary-encoded field (dictionary messages and ids would have to be rewritten) and the
// stream is in the machine's byte order.
func (r *Reader) Forwardable() bool {
	return !hasDictionary(r.Schema().Fields()) && schemaEndianness(r.eos.first) == endian.NativeEndian
}

// NextRaw is Next without decoding data batches: a data batch comes back as the bytes of its
// IPC message, checked for well-formed metadata whose buffers all lie within the body, but
// not decoded nor validated column by column (whoever decodes it does that, as Next does).
// Controls, the end of the stream and truncation are as with Next. Only for a Forwardable
// stream, and not mixed with Next; a dictionary or schema message in the stream is an error.
func (r *Reader) NextRaw() (RawMessage, error) {
	buf, bodyLen, m, err := r.rawHead()
	if err != nil || m.Control != nil {
		return m, err
	}
	return r.rawBody(buf, bodyLen)
}

// ForwardNext reads the next message of a Forwardable stream like NextRaw and passes a data
// batch on into w as WriteRaw does, inside write (which runs the write it is given, e.g. under
// a lock, and returns its error, possibly wrapped). It returns the control read, or nil after
// a data batch. When the stream's source and w's output are files (pipes, regular files) and
// the body is large, the body is not read into memory: it goes from the source to the output
// with splice(2), so the forwarding process copies nothing. The body is
// then not read before write starts: a source cut inside it leaves a partial message on w's
// output, and write returns the ErrTruncated error (the writer's stream is broken anyway).
func (r *Reader) ForwardNext(w *Writer, write func(func() error) error) (*Control, error) {
	buf, bodyLen, m, err := r.rawHead()
	if err != nil || m.Control != nil {
		return m.Control, err
	}
	src, srcFile := r.eos.src.(*os.File)
	out, outFile := w.out.(*os.File)
	direct := srcFile && outFile && bodyLen >= gatherDirectMin
	if direct {
		rows, _, err := batchHeader(buf[8:], bodyLen)
		if err != nil {
			return nil, fmt.Errorf("read arrow stream: %w", err)
		}
		direct = rows > 0 // a zero-row batch may be a control: read it whole
	}
	if !direct {
		if m, err = r.rawBody(buf, bodyLen); err != nil || m.Control != nil {
			return m.Control, err
		}
		return nil, write(func() error { return w.WriteRaw(m.Data) })
	}
	br := r.eos.r.(*bufio.Reader)
	return nil, write(func() error {
		// The head and the body bytes already buffered go first, then the rest of the body.
		k := min(int64(br.Buffered()), bodyLen)
		peeked, _ := br.Peek(int(k))
		r.raw = append(buf, peeked...)
		br.Discard(int(k))
		if err := w.WriteRaw(r.raw); err != nil {
			return err
		}
		ok, err := splice(out, src, bodyLen-k)
		if !ok {
			_, err = io.CopyN(out, src, bodyLen-k)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: arrow/ipc: could not read message body: %v", ErrTruncated, io.ErrUnexpectedEOF)
		}
		return err
	})
}

// rawHead reads the framing and metadata of the next message into r.raw (continuation marker,
// metadata length, metadata padded to 8 bytes) and returns it with the body length; at the end
// of the stream it returns the end control (or io.EOF, ErrTruncated) in m instead.
func (r *Reader) rawHead() (buf []byte, bodyLen int64, m RawMessage, err error) {
	if r.done {
		return nil, 0, RawMessage{}, io.EOF
	}
	var prefix [8]byte
	binary.LittleEndian.PutUint32(prefix[:], 0xFFFFFFFF)
	buf, bodyLen, err = r.eos.frame(append(r.raw[:0], prefix[:]...))
	if err != nil {
		if errors.Is(err, io.EOF) {
			r.done = true
			if !r.eos.sawEOS {
				return nil, 0, RawMessage{}, ErrTruncated
			}
			c := EndControl(Final)
			return nil, 0, RawMessage{Control: &c}, nil
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, 0, RawMessage{}, fmt.Errorf("%w: %v", ErrTruncated, err)
		}
		return nil, 0, RawMessage{}, fmt.Errorf("read arrow stream: %w", err)
	}
	// Legacy streams (no continuation marker) may pad the metadata to 8 bytes with the 4-byte
	// length only: pad it again so the body stays 8-byte aligned behind the 8-byte prefix.
	for len(buf)%8 != 0 {
		buf = append(buf, 0)
	}
	binary.LittleEndian.PutUint32(buf[4:], uint32(len(buf)-8))
	r.raw = buf
	return buf, bodyLen, RawMessage{}, nil
}

// rawBody reads the body of the message whose head rawHead returned in buf and returns the
// whole message, or the control it is.
func (r *Reader) rawBody(buf []byte, bodyLen int64) (RawMessage, error) {
	meta := buf[8:]
	at := len(buf)
	buf = append(buf, make([]byte, bodyLen)...)
	r.raw = buf
	if err := r.eos.readBody(buf[at:]); err != nil {
		return RawMessage{}, fmt.Errorf("%w: arrow/ipc: could not read message body: %v", ErrTruncated, noEOF(err))
	}
	rows, md, err := batchHeader(meta, bodyLen)
	if err != nil {
		return RawMessage{}, fmt.Errorf("read arrow stream: %w", err)
	}
	if rows == 0 {
		c, ok, err := ParseControlMetadata(md)
		if err != nil {
			return RawMessage{}, err
		}
		if ok {
			if c.Kind == End {
				r.done = true
			}
			return RawMessage{Control: &c}, nil
		}
	}
	return RawMessage{Data: buf}, nil
}

// batchHeader reads the row count and custom metadata of a verified record batch message
// (Arrow Message.fbs) and checks that each of its buffers lies within the body.
func batchHeader(meta []byte, bodyLen int64) (rows int64, md arrow.Metadata, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("invalid message metadata: %v", p)
		}
	}()
	r := &fbReader{b: meta}
	msg := r.table(0)
	htype := byte(0)
	if p := r.field(msg, 1); p >= 0 {
		htype = meta[p]
	}
	rb := r.child(msg, 2)
	if htype != 3 || rb < 0 { // MessageHeader.RecordBatch
		return 0, md, fmt.Errorf("unexpected %s message inside the stream (want a record batch)", messageType(htype))
	}
	if p := r.field(rb, 0); p >= 0 {
		if p+8 > len(meta) {
			panic(errFB)
		}
		rows = int64(binary.LittleEndian.Uint64(meta[p:]))
	}
	if rows < 0 {
		return 0, md, fmt.Errorf("record batch of %d rows", rows)
	}
	start, n := r.vector(rb, 2, 16)
	for i := 0; i < n; i++ {
		off := int64(binary.LittleEndian.Uint64(meta[start+16*i:]))
		size := int64(binary.LittleEndian.Uint64(meta[start+16*i+8:]))
		if off < 0 || size < 0 || off > bodyLen || size > bodyLen-off {
			return 0, md, fmt.Errorf("buffer %d (offset %d, length %d) lies outside the message body of %d bytes", i, off, size, bodyLen)
		}
	}
	var keys, values []string
	kvs, nkv := r.vector(msg, 4, 4)
	for i := 0; i < nkv; i++ {
		kv := r.table(kvs + 4*i)
		ks, kn := r.vector(kv, 0, 1)
		vs, vn := r.vector(kv, 1, 1)
		keys = append(keys, string(meta[ks:ks+kn]))
		values = append(values, string(meta[vs:vs+vn]))
	}
	if len(keys) > 0 {
		md = arrow.NewMetadata(keys, values)
	}
	return rows, md, nil
}

func messageType(t byte) string {
	switch t {
	case 1:
		return "schema"
	case 2:
		return "dictionary batch"
	case 3:
		return "record batch"
	}
	return fmt.Sprintf("type-%d", t)
}

// schemaEndianness reads the byte order of a verified schema message (Schema.fbs: field 0 of
// the Schema table, 0 = little endian).
func schemaEndianness(meta []byte) (e endian.Endianness) {
	defer func() {
		if recover() != nil {
			e = endian.NonNativeEndian
		}
	}()
	r := &fbReader{b: meta}
	msg := r.table(0)
	h := r.child(msg, 2)
	if h < 0 {
		return endian.NonNativeEndian
	}
	little := true
	if p := r.field(h, 0); p >= 0 {
		if p+2 > len(meta) {
			return endian.NonNativeEndian
		}
		little = binary.LittleEndian.Uint16(meta[p:]) == 0
	}
	if little {
		return endian.LittleEndian
	}
	return endian.BigEndian
}

func hasDictionary(fields []arrow.Field) bool {
	for _, f := range fields {
		if hasDictionaryType(f.Type) {
			return true
		}
	}
	return false
}

func hasDictionaryType(t arrow.DataType) bool {
	switch t := t.(type) {
	case *arrow.DictionaryType:
		return true
	case arrow.ExtensionType:
		return hasDictionaryType(t.StorageType())
	case arrow.NestedType:
		return hasDictionary(t.Fields())
	}
	return false
}

// payloadWriter writes IPC payloads to w (buffered over out); it drops the next skip payloads
// (the schema that ipc.Writer writes when it starts, after WriteRaw wrote it already). A
// message with large column buffers goes past the buffer, in one vectored write when out is a
// file descriptor.
type payloadWriter struct {
	w      *bufio.Writer
	out    io.Writer
	skip   int
	g      gather
	pieces [][]byte
}

func (p *payloadWriter) Start() error { return nil }

func (p *payloadWriter) WritePayload(pl ipc.Payload) error {
	if p.skip > 0 {
		p.skip--
		return nil
	}
	p.g.reset()
	if _, err := pl.WritePayload(&p.g); err != nil {
		return err
	}
	p.pieces = p.g.pieces(p.pieces[:0])
	defer clear(p.pieces) // drop the references to the payload's buffers
	if p.g.ext >= gatherDirectMin {
		if err := p.w.Flush(); err != nil {
			return err
		}
		if ok, err := writev(p.out, p.pieces); ok {
			return err
		}
	}
	return writePieces(p.w, p.pieces)
}

// Close writes the end-of-stream marker (continuation token, zero length).
func (p *payloadWriter) Close() error {
	_, err := p.w.Write([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0})
	return err
}

// WriteRaw writes a data batch given as the bytes of its IPC message (RawMessage.Data of a
// Forwardable stream whose schema equals this stream's, but for metadata) and flushes. The
// schema goes first if nothing was written yet. Errors: a stream schema with dictionaries.
func (w *Writer) WriteRaw(msg []byte) error {
	if !w.started {
		if hasDictionary(w.schema.Fields()) {
			return errors.New("codec: raw batches cannot go into a stream with dictionary-encoded fields")
		}
		ps := ipc.GetSchemaPayload(w.schema, w.mem)
		_, err := ps.WritePayload(w.bw)
		ps.Release()
		if err != nil {
			return err
		}
		w.pw.skip = 1
		w.started = true
	}
	// Past the buffer: a message is written as it is, not copied into it first.
	if err := w.bw.Flush(); err != nil {
		return err
	}
	_, err := w.out.Write(msg)
	return err
}
