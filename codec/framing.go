package codec

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Limits on untrusted input: a message's flatbuffer metadata and body. Larger claims are
// errors, so a corrupt length never turns into a huge allocation.
const (
	MaxMetadataSize = 64 << 20 // bytes
	MaxBodySize     = 8 << 30  // bytes; bodies above bodyChunk are read (and grown) in chunks
	bodyChunk       = 64 << 20
)

// messageReader frames IPC stream messages itself (continuation token, length, flatbuffer
// metadata, body) so that it can (1) verify the metadata flatbuffer before arrow-go decodes
// it — arrow-go trusts vector lengths and would allocate whatever a corrupt stream claims —,
// (2) read bodies without trusting their claimed length, and (3) tell an end-of-stream marker
// from input that just stops (a killed producer).
type messageReader struct {
	r   io.Reader // buffered over src
	src io.Reader
	mem memory.Allocator
	// bodies allocates message bodies (mem when nil).
	bodies memory.Allocator
	msg    *ipc.Message
	sawEOS bool
	refs   int64
	hdr    [4]byte
	seen   bool // a message was read (the first one tells Arrow IPC from other input)
	// first is the metadata of the first message (the schema's).
	first []byte
}

func (m *messageReader) Retain() { m.refs++ }

func (m *messageReader) Release() {
	m.refs--
	if m.refs <= 0 && m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
}

// Message returns the next message, valid until the next call. io.EOF (possibly wrapped)
// ends the stream; sawEOS tells whether it ended with the marker.
func (m *messageReader) Message() (*ipc.Message, error) {
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
	meta, bodyLen, err := m.frame(nil)
	if err != nil {
		return nil, err
	}
	mem := m.mem
	if m.bodies != nil {
		mem = m.bodies
	}
	body := memory.NewResizableBuffer(mem)
	defer body.Release()
	// Grow in chunks: a truncated stream fails before a huge claimed length is allocated.
	var read int64
	for read < bodyLen {
		step := min(bodyLen-read, bodyChunk)
		body.Resize(int(read + step))
		if err := m.readBody(body.Bytes()[read : read+step]); err != nil {
			return nil, fmt.Errorf("arrow/ipc: could not read message body: %w", noEOF(err))
		}
		read += step
	}
	mb := memory.NewBufferBytes(meta)
	defer mb.Release()
	m.msg = ipc.NewMessage(mb, body)
	return m.msg, nil
}

// frame reads the framing and the flatbuffer metadata of the next message, verifies the
// metadata and returns it appended to dst, with the body length the metadata claims (the body
// is the next thing to read). io.EOF (possibly wrapped) ends the stream; sawEOS tells whether
// it ended with the marker.
func (m *messageReader) frame(dst []byte) (meta []byte, bodyLen int64, err error) {
	if _, err := io.ReadFull(m.r, m.hdr[:]); err != nil {
		if err == io.EOF {
			return nil, 0, io.EOF // no marker: the caller reports truncation
		}
		return nil, 0, fmt.Errorf("arrow/ipc: could not read continuation indicator: %w", noEOF(err))
	}
	n := binary.LittleEndian.Uint32(m.hdr[:])
	switch n {
	case 0: // legacy end-of-stream
		m.sawEOS = true
		return nil, 0, io.EOF
	case 0xFFFFFFFF:
		if _, err := io.ReadFull(m.r, m.hdr[:]); err != nil {
			return nil, 0, fmt.Errorf("arrow/ipc: could not read message length: %w", noEOF(err))
		}
		n = binary.LittleEndian.Uint32(m.hdr[:])
		if n == 0 {
			m.sawEOS = true
			return nil, 0, io.EOF
		}
	}
	if n < 4 || n > MaxMetadataSize {
		if !m.seen {
			return nil, 0, fmt.Errorf("%w (it begins with %q)", ErrNotArrow, m.hdr[:])
		}
		return nil, 0, fmt.Errorf("arrow/ipc: invalid message metadata length %d", n)
	}
	m.seen = true
	at := len(dst)
	dst = append(dst, make([]byte, n)...)
	meta = dst[at:]
	if _, err := io.ReadFull(m.r, meta); err != nil {
		return nil, 0, fmt.Errorf("arrow/ipc: could not read message metadata: %w", noEOF(err))
	}
	if bodyLen, err = verifyMessage(meta); err != nil {
		return nil, 0, fmt.Errorf("arrow/ipc: invalid message metadata: %w", err)
	}
	if m.first == nil {
		m.first = meta
	}
	if bodyLen < 0 || bodyLen > MaxBodySize {
		return nil, 0, fmt.Errorf("arrow/ipc: invalid message body length %d", bodyLen)
	}
	return dst, bodyLen, nil
}

// readBody fills p with the next bytes of the stream. A large p takes what the buffer holds
// and reads the rest straight from the source, not through the buffer (one copy less).
func (m *messageReader) readBody(p []byte) error {
	br, ok := m.r.(*bufio.Reader)
	if !ok || m.src == nil || len(p) < gatherDirectMin {
		_, err := io.ReadFull(m.r, p)
		return err
	}
	k := min(br.Buffered(), len(p))
	if k > 0 {
		b, _ := br.Peek(k)
		copy(p, b)
		br.Discard(k)
	}
	_, err := io.ReadFull(m.src, p[k:])
	return err
}

// noEOF turns io.EOF inside a message into io.ErrUnexpectedEOF, so a cut message is never
// taken for a clean end.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// fbReader reads a flatbuffer with bounds checks; every vector length is checked against the
// buffer size before anyone allocates for it (Arrow Message.fbs / Schema.fbs).
type fbReader struct {
	b     []byte
	depth int
}

var errFB = errors.New("flatbuffer out of bounds")

func (r *fbReader) u32(pos int) uint32 {
	if pos < 0 || pos+4 > len(r.b) {
		panic(errFB)
	}
	return binary.LittleEndian.Uint32(r.b[pos:])
}

// table returns the position of the table referenced by the uoffset at pos.
func (r *fbReader) table(pos int) int {
	t := pos + int(r.u32(pos))
	r.u32(t)
	// vtable: soffset back from the table start.
	vt := t - int(int32(r.u32(t)))
	if vt < 0 || vt+4 > len(r.b) {
		panic(errFB)
	}
	vlen := int(binary.LittleEndian.Uint16(r.b[vt:]))
	if vlen < 4 || vt+vlen > len(r.b) {
		panic(errFB)
	}
	return t
}

// field returns the absolute position of field slot i of table t, or -1 when absent.
func (r *fbReader) field(t, i int) int {
	vt := t - int(int32(r.u32(t)))
	vlen := int(binary.LittleEndian.Uint16(r.b[vt:]))
	off := 4 + 2*i
	if off+2 > vlen {
		return -1
	}
	o := int(binary.LittleEndian.Uint16(r.b[vt+off:]))
	if o == 0 {
		return -1
	}
	if t+o >= len(r.b) {
		panic(errFB)
	}
	return t + o
}

// vector checks the vector referenced by field slot i of t (elem bytes per element) and
// returns its element start and length; length 0 when absent.
func (r *fbReader) vector(t, i, elem int) (start, n int) {
	p := r.field(t, i)
	if p < 0 {
		return 0, 0
	}
	v := p + int(r.u32(p))
	n = int(r.u32(v))
	if n < 0 || v+4+n*elem > len(r.b) || n > len(r.b) {
		panic(errFB)
	}
	return v + 4, n
}

// tables visits the tables of a vector of tables.
func (r *fbReader) tables(t, i int, visit func(int)) {
	start, n := r.vector(t, i, 4)
	for k := 0; k < n; k++ {
		visit(r.table(start + 4*k))
	}
}

// child returns the table in field slot i of t, or -1.
func (r *fbReader) child(t, i int) int {
	p := r.field(t, i)
	if p < 0 {
		return -1
	}
	return r.table(p)
}

func (r *fbReader) keyValues(t, i int) {
	r.tables(t, i, func(kv int) {
		r.vector(kv, 0, 1) // key (string)
		r.vector(kv, 1, 1) // value
	})
}

func (r *fbReader) schemaFields(t, i int) {
	r.depth++
	if r.depth > 64 {
		panic(errors.New("schema nested deeper than 64 levels"))
	}
	r.tables(t, i, func(f int) {
		r.vector(f, 0, 1) // name
		if typ := r.child(f, 3); typ >= 0 {
			// Union {mode, typeIds: [int]} is the only type with a vector; checking slot 1
			// as a vector on other types is harmless when absent and bounds-checked otherwise.
			if tt := r.field(f, 2); tt >= 0 && r.b[tt] == 14 { // Type.Union
				r.vector(typ, 1, 4)
			}
		}
		if d := r.child(f, 4); d >= 0 {
			r.child(d, 1) // indexType
		}
		r.schemaFields(f, 5) // children
		r.keyValues(f, 6)
	})
	r.depth--
}

func (r *fbReader) recordBatch(t int) {
	r.vector(t, 1, 16) // nodes: FieldNode{length, null_count}
	r.vector(t, 2, 16) // buffers: Buffer{offset, length}
	r.child(t, 3)      // compression
	r.vector(t, 4, 8)  // variadicBufferCounts
}

// verifyMessage checks an IPC Message flatbuffer and returns its bodyLength.
func verifyMessage(b []byte) (bodyLen int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			if e, ok := p.(error); ok {
				err = e
			} else {
				err = fmt.Errorf("%v", p)
			}
		}
	}()
	r := &fbReader{b: b}
	msg := r.table(0)
	if p := r.field(msg, 3); p >= 0 {
		if p+8 > len(b) {
			panic(errFB)
		}
		bodyLen = int64(binary.LittleEndian.Uint64(b[p:]))
	}
	var htype byte
	if p := r.field(msg, 1); p >= 0 {
		htype = b[p]
	}
	if h := r.child(msg, 2); h >= 0 {
		switch htype {
		case 1: // Schema
			r.schemaFields(h, 1)
			r.keyValues(h, 2)
			r.vector(h, 3, 8)
		case 2: // DictionaryBatch
			if rb := r.child(h, 1); rb >= 0 {
				r.recordBatch(rb)
			}
		case 3: // RecordBatch
			r.recordBatch(h)
		default:
			return 0, fmt.Errorf("unsupported message type %d", htype)
		}
	}
	r.keyValues(msg, 4)
	return bodyLen, nil
}
