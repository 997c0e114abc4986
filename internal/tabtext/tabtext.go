// Package tabtext aligns columns of text output (text/tabwriter) the way the inspection
// commands print them: cells separated by two spaces, and no trailing spaces on a line
// whose last cells are empty.
package tabtext

import (
	"bytes"
	"io"
	"text/tabwriter"
)

// Writer is a text/tabwriter.Writer (cells end with '\t', lines with '\n') that writes its
// aligned lines, trailing spaces trimmed, to the underlying writer on Flush.
type Writer struct {
	*tabwriter.Writer
	buf bytes.Buffer
	w   io.Writer
}

// New returns a Writer onto w: minimum cell width 0, tabs of 4, padding 2 spaces.
func New(w io.Writer) *Writer {
	t := &Writer{w: w}
	t.Writer = tabwriter.NewWriter(&t.buf, 0, 4, 2, ' ', 0)
	return t
}

// Flush aligns the lines written so far and writes them to the underlying writer.
func (t *Writer) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	b := t.buf.Bytes()
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, b...)
			break
		}
		out = append(out, bytes.TrimRight(b[:i], " ")...)
		out = append(out, '\n')
		b = b[i+1:]
	}
	t.buf.Reset()
	_, err := t.w.Write(out)
	return err
}
