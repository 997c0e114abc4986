package csvrow

import (
	"bytes"
	"io"
)

// Dialect describes the text layout of a CSV/TSV stream. The zero value is RFC 4180 CSV.
type Dialect struct {
	// Delimiter separates fields (default ','; '\t' for TSV).
	Delimiter byte
	// Quote encloses fields that contain delimiters, quotes or line breaks (default '"').
	// NoQuote disables quoting: every byte is data (IANA text/tab-separated-values).
	Quote   byte
	NoQuote bool
	// Escape, inside a quoted field, makes the next quote (or escape) character literal. The
	// default is the quote itself: a doubled quote "" is one quote (RFC 4180). Spark's default
	// is '\\'; set Escape: '\\' for files written that way. A backslash before any other
	// character is kept as is.
	Escape byte
	// Comment, when not 0, marks lines starting with it as comments, skipped.
	Comment byte
}

func (d *Dialect) fill() {
	if d.Delimiter == 0 {
		d.Delimiter = ','
	}
	if d.Quote == 0 {
		d.Quote = '"'
	}
	if d.Escape == 0 {
		d.Escape = d.Quote
	}
}

// Parser states.
const (
	stFieldStart = iota
	stUnquoted
	stQuoted
	stQuoteInQuoted  // saw the quote inside a quoted field: doubled quote or the end
	stEscapeInQuoted // saw an escape (different from the quote) inside a quoted field
	stAfterQuoted    // after the closing quote, before the delimiter
	stComment
)

// record is one parsed CSV record: fields are rec[ends[i-1]:ends[i]].
type record struct {
	buf    []byte
	ends   []int
	quoted []bool
	raw    []byte // the record's text without its terminator (valid until the next record)
	line   int64  // 1-based line where it starts
	offset int64  // byte offset of its first byte
	bad    string // non-empty: the record could not be parsed (unterminated quote)
}

func (r *record) field(i int) []byte {
	start := 0
	if i > 0 {
		start = r.ends[i-1]
	}
	return r.buf[start:r.ends[i]]
}

// parser splits a byte stream into CSV records. It is correct at every buffer boundary: all
// its state lives in the struct, and the buffer keeps the current record from its first byte
// (so bad records can be reported whole). Memory: the buffer grows to the longest record.
type parser struct {
	d    Dialect
	r    io.Reader
	buf  []byte
	pos  int   // next byte to look at
	end  int   // end of valid data
	rs   int   // start of the current record in buf
	base int64 // stream offset of buf[0]
	line int64 // current line number
	eof  bool
	err  error
	bom  bool // the BOM check at byte 0 is done

	state    int
	skipLF   bool // the previous byte was a '\r' ending a line: a following '\n' belongs to it
	started  bool // the current record has content
	recLine  int64
	special  [256]bool // bytes that stop the unquoted fast scan
	qspecial [256]bool // bytes that stop the quoted fast scan
	rec      record
	crq      bool // the previous byte inside a quoted field was '\r'
}

func newParser(r io.Reader, d Dialect, size int) *parser {
	d.fill()
	if size < 1 {
		size = 1
	}
	p := &parser{d: d, r: r, buf: make([]byte, size), line: 1}
	p.special[d.Delimiter] = true
	p.special['\n'] = true
	p.special['\r'] = true
	if !d.NoQuote {
		p.qspecial[d.Quote] = true
		p.qspecial[d.Escape] = true
	}
	// Line breaks inside quoted fields are data, but they are counted.
	p.qspecial['\n'] = true
	p.qspecial['\r'] = true
	return p
}

// reset starts over on a new input, keeping the buffer.
func (p *parser) reset(r io.Reader) {
	buf, special, qspecial, d, rec := p.buf, p.special, p.qspecial, p.d, p.rec
	*p = parser{d: d, r: r, buf: buf, line: 1, special: special, qspecial: qspecial}
	p.rec.buf, p.rec.ends, p.rec.quoted = rec.buf[:0], rec.ends[:0], rec.quoted[:0]
}

// fill reads more input, keeping buf[rs:]. It returns false when no byte was added.
func (p *parser) fill() bool {
	if p.eof || p.err != nil {
		return false
	}
	if p.rs > 0 {
		copy(p.buf, p.buf[p.rs:p.end])
		p.base += int64(p.rs)
		p.pos -= p.rs
		p.end -= p.rs
		p.rs = 0
	}
	if p.end == len(p.buf) {
		nb := make([]byte, 2*len(p.buf))
		copy(nb, p.buf[:p.end])
		p.buf = nb
	}
	for i := 0; i < 100; i++ {
		n, err := p.r.Read(p.buf[p.end:])
		p.end += n
		if err == io.EOF {
			p.eof = true
			return n > 0
		}
		if err != nil {
			p.err = err
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
	p.err = io.ErrNoProgress
	return false
}

func (p *parser) endField() {
	p.rec.ends = append(p.rec.ends, len(p.rec.buf))
	if len(p.rec.quoted) < len(p.rec.ends) {
		p.rec.quoted = append(p.rec.quoted, false)
	}
}

// next returns the next record, or io.EOF. The record is valid until the next call.
//
// It is one state machine over the bytes of the record (field start, unquoted, quoted, quote
// in quoted, escape, line end) kept in one function on purpose: it runs once per byte of
// every CSV file, and per-state calls would add a call per byte.
func (p *parser) next() (*record, error) {
	p.rec.buf = p.rec.buf[:0]
	p.rec.ends = p.rec.ends[:0]
	p.rec.quoted = p.rec.quoted[:0]
	p.rec.bad = ""
	p.started = false
	p.crq = false
	p.state = stFieldStart
	p.rs = p.pos
	p.recLine = p.line
	q, esc, delim := p.d.Quote, p.d.Escape, p.d.Delimiter
	noQuote := p.d.NoQuote
	for {
		if p.pos >= p.end {
			if !p.fill() {
				if p.err != nil {
					return nil, p.err
				}
				return p.finish()
			}
		}
		if !p.bom {
			// A UTF-8 byte order mark is skipped only at byte 0 of the stream.
			for p.end < 3 && !p.eof && p.fill() {
			}
			p.bom = true
			if p.base == 0 && bytes.HasPrefix(p.buf[p.pos:p.end], []byte("\xEF\xBB\xBF")) {
				p.pos += 3
				p.rs = p.pos
			}
			continue
		}
		c := p.buf[p.pos]
		if p.skipLF {
			p.skipLF = false
			if c == '\n' {
				p.pos++
				if !p.started {
					p.rs = p.pos
				}
				continue
			}
		}
		if !p.started {
			// Skip blank lines (Spark does) and comments before the record begins.
			if c == '\n' || c == '\r' {
				p.pos++
				p.line++
				p.skipLF = c == '\r'
				p.rs = p.pos
				p.recLine = p.line
				continue
			}
			p.started = true
			p.rs = p.pos
			p.recLine = p.line
			if p.d.Comment != 0 && c == p.d.Comment {
				p.state = stComment
			}
		}
		switch p.state {
		case stComment:
			i := bytes.IndexAny(p.buf[p.pos:p.end], "\r\n")
			if i < 0 {
				p.pos = p.end
				continue
			}
			p.pos += i
			c = p.buf[p.pos]
			p.pos++
			p.line++
			p.skipLF = c == '\r'
			p.started = false
			p.state = stFieldStart
			p.rs = p.pos
			continue
		case stFieldStart:
			switch {
			case c == q && !noQuote:
				p.state = stQuoted
				for len(p.rec.quoted) <= len(p.rec.ends) {
					p.rec.quoted = append(p.rec.quoted, false)
				}
				p.rec.quoted[len(p.rec.ends)] = true
				p.pos++
				continue
			default:
				p.state = stUnquoted
			}
			fallthrough
		case stUnquoted:
			// Fast scan to the next delimiter or line break.
			i := p.pos
			for i < p.end && !p.special[p.buf[i]] {
				i++
			}
			p.rec.buf = append(p.rec.buf, p.buf[p.pos:i]...)
			p.pos = i
			if i == p.end {
				continue
			}
			c = p.buf[i]
			p.pos++
			if c == delim {
				p.endField()
				p.state = stFieldStart
				continue
			}
			return p.endRecord(c)
		case stQuoted:
			i := p.pos
			for i < p.end && !p.qspecial[p.buf[i]] {
				i++
			}
			if i > p.pos {
				p.crq = false
				p.rec.buf = append(p.rec.buf, p.buf[p.pos:i]...)
				p.pos = i
			}
			if i == p.end {
				continue
			}
			c = p.buf[i]
			p.pos++
			switch {
			case c == '\n':
				// Line breaks inside quotes are data; "\r\n" counts as one line.
				p.rec.buf = append(p.rec.buf, c)
				if !p.crq {
					p.line++
				}
				p.crq = false
			case c == '\r':
				p.rec.buf = append(p.rec.buf, c)
				p.line++
				p.crq = true
			case c == q && esc == q:
				p.crq = false
				p.state = stQuoteInQuoted
			case c == esc:
				p.crq = false
				p.state = stEscapeInQuoted
			case c == q:
				p.crq = false
				p.state = stAfterQuoted
			}
		case stQuoteInQuoted:
			if c == q {
				p.rec.buf = append(p.rec.buf, q)
				p.pos++
				p.state = stQuoted
				continue
			}
			p.state = stAfterQuoted
		case stEscapeInQuoted:
			if c != q && c != esc {
				p.rec.buf = append(p.rec.buf, esc)
			}
			if c == '\n' || c == '\r' {
				p.state = stQuoted
				continue // let stQuoted count the line break
			}
			p.rec.buf = append(p.rec.buf, c)
			p.pos++
			p.state = stQuoted
		case stAfterQuoted:
			p.pos++
			switch c {
			case delim:
				p.endField()
				p.state = stFieldStart
			case '\n', '\r':
				return p.endRecord(c)
			default:
				// Text after a closing quote is kept (lenient, like Python's csv module).
				p.rec.buf = append(p.rec.buf, c)
			}
		}
	}
}

// endRecord finishes the record at the line break c (already consumed).
func (p *parser) endRecord(c byte) (*record, error) {
	p.endField()
	p.line++
	p.skipLF = c == '\r'
	p.rec.raw = p.buf[p.rs : p.pos-1]
	p.rec.line = p.recLine
	p.rec.offset = p.base + int64(p.rs)
	return &p.rec, nil
}

// finish handles end of input.
func (p *parser) finish() (*record, error) {
	if !p.started {
		return nil, io.EOF
	}
	switch p.state {
	case stQuoted, stEscapeInQuoted:
		p.rec.bad = "unterminated quoted field"
	case stComment:
		p.started = false
		return nil, io.EOF
	}
	p.endField()
	p.rec.raw = p.buf[p.rs:p.end]
	p.rec.line = p.recLine
	p.rec.offset = p.base + int64(p.rs)
	p.started = false
	p.state = stFieldStart
	p.rs = p.end
	return &p.rec, nil
}
