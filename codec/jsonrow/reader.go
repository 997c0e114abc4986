package jsonrow

import (
	"bytes"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
)

// Layout is how records are laid out in a JSON stream.
type Layout int

const (
	// AutoLayout looks at the first non-blank byte: '[' means ArrayLayout, anything else
	// LinesLayout.
	AutoLayout Layout = iota
	// LinesLayout is NDJSON / JSON Lines: one record per line ("\n" or "\r\n"); blank lines are
	// skipped. A bad line affects only itself.
	LinesLayout
	// ArrayLayout is one top-level JSON array whose elements are the records; elements may span
	// lines and the whole array may be one line (it is streamed, never held whole). An element
	// that is not valid JSON is a bad record; decoding resumes at the next element.
	ArrayLayout
)

// ReaderOptions configure a Reader: the decoder Options plus the stream's layout, batching
// and inference.
type ReaderOptions struct {
	Options
	// Layout of the stream (default AutoLayout).
	Layout Layout
	// Source names the stream (a file path) in rescued data and bad records.
	Source string
	// BatchRows is the maximum number of rows per batch (default 65536, DESIGN.md §2).
	BatchRows int
	// BufferSize is the initial read buffer (default 256 KiB); it grows to hold the longest
	// record, so memory is bounded by BatchRows rows plus the longest record.
	BufferSize int
	// Infer is used when NewReader gets a nil schema: the first Infer.Rows records are read,
	// the schema inferred from them, then decoded.
	Infer InferOptions
}

// Reader decodes a stream of JSON records into record batches.
type Reader struct {
	opts    ReaderOptions
	dec     *Decoder
	split   *splitter
	pending []pendingRec
	lines   []int64
	offsets []int64
	done    bool
}

type pendingRec struct {
	data         []byte
	line, offset int64
}

// NewReader returns a Reader of r. With a nil schema the schema is inferred from the first
// opts.Infer.Rows records (see Inferrer), which are buffered and then decoded normally.
// Errors: a schema the decoder does not support, or a read error while inferring.
func NewReader(r io.Reader, schema *arrow.Schema, opts ReaderOptions) (*Reader, error) {
	if opts.BatchRows <= 0 {
		opts.BatchRows = 1 << 16
	}
	if opts.BufferSize <= 0 {
		opts.BufferSize = 256 << 10
	}
	rd := &Reader{opts: opts, split: newSplitter(r, opts.Layout, opts.BufferSize)}
	if schema == nil {
		inf := NewInferrer(opts.Infer)
		n := inf.opts.Rows
		for len(rd.pending) < n {
			rec, line, off, err := rd.split.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("jsonrow: infer schema of %s: %w", opts.Source, err)
			}
			inf.Add(rec)
			rd.pending = append(rd.pending, pendingRec{append([]byte(nil), rec...), line, off})
		}
		schema = inf.Schema()
	}
	dec, err := NewDecoder(schema, opts.Options)
	if err != nil {
		return nil, err
	}
	rd.dec = dec
	return rd, nil
}

// Schema is the output schema (the decoder's, with the rescued-data column).
func (r *Reader) Schema() *arrow.Schema { return r.dec.Schema() }

// Next decodes up to BatchRows records and returns them as a batch the caller must Release.
// At the end of the stream it returns io.EOF. A batch may have fewer rows (at the end, or
// when bad records were skipped); it is never empty. Errors are read errors, handler errors
// and *rescue.Error (FailFast, or no handler).
func (r *Reader) Next() (arrow.RecordBatch, error) {
	r.lines, r.offsets = r.lines[:0], r.offsets[:0]
	src := Source{Name: r.opts.Source}
	for r.dec.Len() < r.opts.BatchRows && !r.done {
		var rec []byte
		if len(r.pending) > 0 {
			p := r.pending[0]
			r.pending = r.pending[1:]
			rec, src.Line, src.Offset = p.data, p.line, p.offset
		} else {
			var err error
			rec, src.Line, src.Offset, err = r.split.next()
			if err == io.EOF {
				r.done = true
				break
			}
			if err != nil {
				return nil, fmt.Errorf("jsonrow: read %s: %w", r.opts.Source, err)
			}
		}
		ok, err := r.dec.Append(rec, src)
		if err != nil {
			return nil, err
		}
		if ok {
			r.lines = append(r.lines, src.Line)
			r.offsets = append(r.offsets, src.Offset)
		}
	}
	if r.dec.Len() == 0 {
		return nil, io.EOF
	}
	return r.dec.NewRecordBatch(), nil
}

// Positions returns, for each row of the last batch, the 1-based line where its record
// starts and its byte offset in the (decompressed) stream. The slices are reused by Next.
func (r *Reader) Positions() (lines, offsets []int64) { return r.lines, r.offsets }

// Release frees the decoder's memory.
func (r *Reader) Release() { r.dec.Release() }

// splitter cuts a byte stream into records, tracking line numbers and offsets.
type splitter struct {
	r      io.Reader
	buf    []byte
	pos    int   // start of unconsumed data
	end    int   // end of valid data
	base   int64 // stream offset of buf[0]
	line   int64 // line number at buf[pos]
	eof    bool
	err    error
	layout Layout
	state  int // array layout: 0 before '[', 1 inside, 2 after ']'
	start  bool
	scan   int // lines layout: bytes after pos already searched for '\n'
}

func newSplitter(r io.Reader, layout Layout, size int) *splitter {
	return &splitter{r: r, buf: make([]byte, size), line: 1, layout: layout, start: true}
}

// fill reads more data, compacting or growing the buffer. It returns false at EOF with
// nothing more read.
func (s *splitter) fill() bool {
	if s.eof || s.err != nil {
		return false
	}
	if s.pos > 0 {
		copy(s.buf, s.buf[s.pos:s.end])
		s.base += int64(s.pos)
		s.end -= s.pos
		s.pos = 0
	}
	if s.end == len(s.buf) {
		nb := make([]byte, 2*len(s.buf)+1)
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for i := 0; i < 100; i++ {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err == io.EOF {
			s.eof = true
			return n > 0
		}
		if err != nil {
			s.err = err
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
	s.err = io.ErrNoProgress
	return false
}

// consume advances past n bytes, counting newlines.
func (s *splitter) consume(n int) {
	s.line += int64(bytes.Count(s.buf[s.pos:s.pos+n], []byte{'\n'}))
	s.pos += n
}

// next returns the next record (valid until the following call), its line and offset.
func (s *splitter) next() ([]byte, int64, int64, error) {
	if s.start {
		s.start = false
		for s.end-s.pos < 3 && s.fill() {
		}
		if bytes.HasPrefix(s.buf[s.pos:s.end], []byte("\xEF\xBB\xBF")) {
			s.pos += 3
		}
		if s.layout == AutoLayout {
			s.layout = LinesLayout
			for {
				for s.pos < s.end && isSpace(s.buf[s.pos]) {
					s.consume(1)
				}
				if s.pos < s.end || !s.fill() {
					break
				}
			}
			if s.pos < s.end && s.buf[s.pos] == '[' {
				s.layout = ArrayLayout
			}
		}
	}
	if s.layout == ArrayLayout {
		return s.nextElement()
	}
	for {
		if i := bytes.IndexByte(s.buf[s.pos+s.scan:s.end], '\n'); i >= 0 {
			n := s.scan + i
			s.scan = 0
			rec := s.buf[s.pos : s.pos+n]
			line, off := s.line, s.base+int64(s.pos)
			s.pos += n + 1
			s.line++
			rec = bytes.TrimSuffix(rec, []byte{'\r'})
			if isBlank(rec) {
				continue
			}
			return rec, line, off, nil
		}
		s.scan = s.end - s.pos
		if !s.fill() {
			if s.err != nil {
				return nil, 0, 0, s.err
			}
			s.scan = 0
			if s.pos < s.end {
				rec := s.buf[s.pos:s.end]
				line, off := s.line, s.base+int64(s.pos)
				s.pos = s.end
				rec = bytes.TrimSuffix(rec, []byte{'\r'})
				if !isBlank(rec) {
					return rec, line, off, nil
				}
			}
			return nil, 0, 0, io.EOF
		}
	}
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

// skipSpace skips whitespace, refilling; it returns false at EOF.
func (s *splitter) skipSpace() bool {
	for {
		for s.pos < s.end && isSpace(s.buf[s.pos]) {
			if s.buf[s.pos] == '\n' {
				s.line++
			}
			s.pos++
		}
		if s.pos < s.end {
			return true
		}
		if !s.fill() {
			return false
		}
	}
}

// nextElement returns the next element of the top-level array. Element boundaries are found
// structurally (brackets and strings), so an invalid element is still cut out whole and
// reported by the decoder.
func (s *splitter) nextElement() ([]byte, int64, int64, error) {
	for {
		if !s.skipSpace() {
			if s.err != nil {
				return nil, 0, 0, s.err
			}
			if s.state == 1 {
				// Unterminated array: report the missing ']' as a bad (empty) record once.
				s.state = 2
				return []byte("["), s.line, s.base + int64(s.pos), nil
			}
			return nil, 0, 0, io.EOF
		}
		switch s.state {
		case 0:
			if s.buf[s.pos] != '[' {
				// Not an array after all: treat the rest as one bad record.
				s.state = 2
				return s.rest()
			}
			s.pos++
			s.state = 1
			continue
		case 2:
			return s.rest()
		}
		if s.buf[s.pos] == ']' {
			s.pos++
			s.state = 2
			continue
		}
		// Scan one element.
		depth, inStr, esc := 0, false, false
		i := s.pos
		for {
			for ; i < s.end; i++ {
				c := s.buf[i]
				if inStr {
					switch {
					case esc:
						esc = false
					case c == '\\':
						esc = true
					case c == '"':
						inStr = false
					}
					continue
				}
				switch c {
				case '"':
					inStr = true
				case '{', '[':
					depth++
				case '}', ']':
					if depth == 0 {
						if c == ']' {
							goto found
						}
						continue // a stray '}' belongs to this (invalid) element
					}
					depth--
				case ',':
					if depth == 0 {
						goto found
					}
				}
			}
			{
				off := i - s.pos
				if !s.fill() {
					if s.err != nil {
						return nil, 0, 0, s.err
					}
					// End of input inside an element: hand the remainder over as a record.
					s.state = 2
					return s.rest()
				}
				i = s.pos + off
			}
		}
	found:
		rec := bytes.TrimRight(s.buf[s.pos:i], " \t\r\n")
		line, off := s.line, s.base+int64(s.pos)
		n := i - s.pos
		if s.buf[i] == ',' {
			n++
		}
		s.consume(n)
		return rec, line, off, nil
	}
}

// rest returns everything left in the stream as one record (for trailing garbage or an
// unterminated element); memory grows with it, but such input is an error anyway.
func (s *splitter) rest() ([]byte, int64, int64, error) {
	for s.fill() {
	}
	if s.err != nil {
		return nil, 0, 0, s.err
	}
	if s.pos >= s.end || isBlank(s.buf[s.pos:s.end]) {
		s.pos = s.end
		return nil, 0, 0, io.EOF
	}
	rec := s.buf[s.pos:s.end]
	line, off := s.line, s.base+int64(s.pos)
	s.consume(s.end - s.pos)
	return rec, line, off, nil
}
