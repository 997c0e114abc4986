package codec

import "io"

// gatherCopyMax is the size below which gather copies a piece rather than referencing it.
const gatherCopyMax = 4 << 10

// gatherDirectMin is the size of referenced pieces from which a message is written with one
// vectored write past the buffer (writev), not copied into it.
const gatherDirectMin = 64 << 10

// gather collects the pieces of one IPC message as arrow-go writes them: small ones (framing,
// flatbuffer, padding: arrow-go reuses some of those slices) are copied, large ones (column
// buffers, alive until the payload is released) referenced.
type gather struct {
	small []byte
	parts []part
	ext   int // bytes referenced
}

type part struct {
	ext    []byte // a referenced piece; nil for small[lo:hi]
	lo, hi int
}

func (g *gather) Write(p []byte) (int, error) {
	if len(p) >= gatherCopyMax {
		g.parts = append(g.parts, part{ext: p})
		g.ext += len(p)
		return len(p), nil
	}
	lo := len(g.small)
	g.small = append(g.small, p...)
	if n := len(g.parts); n > 0 && g.parts[n-1].ext == nil && g.parts[n-1].hi == lo {
		g.parts[n-1].hi = len(g.small)
	} else {
		g.parts = append(g.parts, part{lo: lo, hi: len(g.small)})
	}
	return len(p), nil
}

// pieces returns the message as slices, in order.
func (g *gather) pieces(dst [][]byte) [][]byte {
	for _, p := range g.parts {
		if p.ext != nil {
			dst = append(dst, p.ext)
		} else {
			dst = append(dst, g.small[p.lo:p.hi])
		}
	}
	return dst
}

func (g *gather) reset() {
	g.small, g.parts, g.ext = g.small[:0], g.parts[:0], 0
}

// writeTo writes the pieces to w one by one.
func writePieces(w io.Writer, pieces [][]byte) error {
	for _, p := range pieces {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}
