package jsonrow

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Token kinds on the tape.
const (
	tObj      uint8 = iota + 1 // object; next = index after the matching end
	tArr                       // array; next likewise
	tStr                       // string of plain (valid, escape-free) bytes
	tStrEsc                    // string with escapes or invalid UTF-8: needs unescape
	tNumInt                    // number without fraction or exponent
	tNumFloat                  // number with fraction or exponent
	tTrue
	tFalse
	tNull
)

// tok is one JSON value or object key. [start, end) is its raw text in the record (strings
// include their quotes; containers span from '{' to after '}'). next is the index of the token
// following this value and its children, so a subtree is skipped in O(1).
type tok struct {
	kind  uint8
	start int32
	end   int32
	next  int32
	n     int32 // containers: number of members (object pairs or array elements)
}

// maxDepth bounds nesting so hostile input cannot exhaust memory through the stack.
const maxDepth = 512

// syntaxError is a JSON syntax error at byte offset pos within the record.
type syntaxError struct {
	pos int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.pos) }

// strClass marks bytes that end the fast scan of a string body.
var strClass = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	for c := 0x80; c < 0x100; c++ {
		t[c] = true
	}
	return
}()

// swarStop reports whether one of the eight bytes of x (SWAR: a word as eight byte lanes) may
// end the fast scan of a string body: '"', '\\', a control character or a non-ASCII byte (the
// strClass bytes). A false positive only sends the scan to the byte loop.
func swarStop(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	quote := x ^ (lo * '"')
	back := x ^ (lo * '\\')
	return ((quote-lo)&^quote|(back-lo)&^back|(x-lo*0x20)|x)&hi != 0
}

// tokenizer validates a JSON value (RFC 8259) and records it on the tape.
type tokenizer struct {
	toks  []tok
	stack []int32
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// tokenize parses data, which must hold exactly one JSON value (surrounding whitespace allowed).
//
// The validating tokenizer (RFC 8259) is one loop over the bytes with a switch per token kind,
// in one function on purpose: it runs for every byte of every JSON record.
func (t *tokenizer) tokenize(data []byte) error {
	t.toks = t.toks[:0]
	t.stack = t.stack[:0]
	i := 0
	n := len(data)
	if n > 1<<31-1 {
		return &syntaxError{0, "record larger than 2 GiB"}
	}
	// state: expecting a value (after start, ':' , '[' or ',' in array), or a key.
	for {
		for i < n && isSpace(data[i]) {
			i++
		}
		if i >= n {
			return &syntaxError{i, "unexpected end of input"}
		}
		c := data[i]
		switch {
		case c == '{':
			if len(t.stack) >= maxDepth {
				return &syntaxError{i, "nesting too deep"}
			}
			t.stack = append(t.stack, int32(len(t.toks)))
			t.toks = append(t.toks, tok{kind: tObj, start: int32(i)})
			i++
			for i < n && isSpace(data[i]) {
				i++
			}
			if i < n && data[i] == '}' {
				i++
				goto closeContainer
			}
			goto key
		case c == '[':
			if len(t.stack) >= maxDepth {
				return &syntaxError{i, "nesting too deep"}
			}
			t.stack = append(t.stack, int32(len(t.toks)))
			t.toks = append(t.toks, tok{kind: tArr, start: int32(i)})
			i++
			for i < n && isSpace(data[i]) {
				i++
			}
			if i < n && data[i] == ']' {
				i++
				goto closeContainer
			}
			continue
		case c == '"':
			j, esc, err := scanString(data, i)
			if err != nil {
				return err
			}
			k := tStr
			if esc {
				k = tStrEsc
			}
			t.toks = append(t.toks, tok{kind: k, start: int32(i), end: int32(j), next: int32(len(t.toks) + 1)})
			i = j
		case c == '-' || c >= '0' && c <= '9':
			j, isFloat, err := scanNumber(data, i)
			if err != nil {
				return err
			}
			k := tNumInt
			if isFloat {
				k = tNumFloat
			}
			t.toks = append(t.toks, tok{kind: k, start: int32(i), end: int32(j), next: int32(len(t.toks) + 1)})
			i = j
		case c == 't':
			if n-i < 4 || string(data[i:i+4]) != "true" {
				return &syntaxError{i, "invalid literal"}
			}
			t.toks = append(t.toks, tok{kind: tTrue, start: int32(i), end: int32(i + 4), next: int32(len(t.toks) + 1)})
			i += 4
		case c == 'f':
			if n-i < 5 || string(data[i:i+5]) != "false" {
				return &syntaxError{i, "invalid literal"}
			}
			t.toks = append(t.toks, tok{kind: tFalse, start: int32(i), end: int32(i + 5), next: int32(len(t.toks) + 1)})
			i += 5
		case c == 'n':
			if n-i < 4 || string(data[i:i+4]) != "null" {
				return &syntaxError{i, "invalid literal"}
			}
			t.toks = append(t.toks, tok{kind: tNull, start: int32(i), end: int32(i + 4), next: int32(len(t.toks) + 1)})
			i += 4
		default:
			return &syntaxError{i, fmt.Sprintf("invalid character %s looking for a value", quoteChar(c))}
		}
	afterValue:
		// A value is complete; what follows depends on the enclosing container.
		for i < n && isSpace(data[i]) {
			i++
		}
		if len(t.stack) == 0 {
			if i < n {
				return &syntaxError{i, fmt.Sprintf("invalid character %s after top-level value", quoteChar(data[i]))}
			}
			return nil
		}
		if i >= n {
			return &syntaxError{i, "unexpected end of input"}
		}
		{
			top := &t.toks[t.stack[len(t.stack)-1]]
			top.n++
			switch data[i] {
			case ',':
				i++
				if top.kind == tObj {
					goto key
				}
				continue
			case '}':
				if top.kind != tObj {
					return &syntaxError{i, "invalid character '}' after array element"}
				}
				i++
				goto closeContainer
			case ']':
				if top.kind != tArr {
					return &syntaxError{i, "invalid character ']' after object value"}
				}
				i++
				goto closeContainer
			}
			if top.kind == tObj {
				return &syntaxError{i, fmt.Sprintf("invalid character %s after object value (expecting ',' or '}')", quoteChar(data[i]))}
			}
			return &syntaxError{i, fmt.Sprintf("invalid character %s after array element (expecting ',' or ']')", quoteChar(data[i]))}
		}
	closeContainer:
		{
			idx := t.stack[len(t.stack)-1]
			t.stack = t.stack[:len(t.stack)-1]
			t.toks[idx].end = int32(i)
			t.toks[idx].next = int32(len(t.toks))
			goto afterValue
		}
	key:
		for i < n && isSpace(data[i]) {
			i++
		}
		if i >= n {
			return &syntaxError{i, "unexpected end of input"}
		}
		if data[i] != '"' {
			return &syntaxError{i, fmt.Sprintf("invalid character %s looking for an object key", quoteChar(data[i]))}
		}
		{
			j, esc, err := scanString(data, i)
			if err != nil {
				return err
			}
			k := tStr
			if esc {
				k = tStrEsc
			}
			t.toks = append(t.toks, tok{kind: k, start: int32(i), end: int32(j), next: int32(len(t.toks) + 1)})
			i = j
		}
		for i < n && isSpace(data[i]) {
			i++
		}
		if i >= n || data[i] != ':' {
			if i >= n {
				return &syntaxError{i, "unexpected end of input"}
			}
			return &syntaxError{i, fmt.Sprintf("invalid character %s after object key (expecting ':')", quoteChar(data[i]))}
		}
		i++
	}
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("0x%02x", c)
	}
	return "'" + string(c) + "'"
}

// scanString scans the string starting at the quote data[i]; it returns the index after the
// closing quote and whether the body needs unescaping (escapes or invalid UTF-8).
func scanString(data []byte, i int) (int, bool, error) {
	start := i
	i++
	esc := false
	n := len(data)
	for {
		// Eight bytes at a time while none can end the fast scan, then byte by byte.
		for i+8 <= n && !swarStop(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
		}
		for i < n && !strClass[data[i]] {
			i++
		}
		if i >= n {
			return 0, false, &syntaxError{start, "unterminated string"}
		}
		c := data[i]
		switch {
		case c == '"':
			return i + 1, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= n {
				return 0, false, &syntaxError{start, "unterminated string"}
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > n {
					return 0, false, &syntaxError{i, "invalid \\u escape"}
				}
				for _, h := range data[i+2 : i+6] {
					if !isHex(h) {
						return 0, false, &syntaxError{i, "invalid \\u escape"}
					}
				}
				i += 6
			default:
				return 0, false, &syntaxError{i, fmt.Sprintf("invalid escape %s in string", quoteChar(data[i+1]))}
			}
		case c < 0x20:
			return 0, false, &syntaxError{i, fmt.Sprintf("invalid control character %s in string", quoteChar(c))}
		default: // non-ASCII
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				esc = true // replaced by U+FFFD when decoded
			}
			i += size
		}
	}
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// scanNumber scans a JSON number (RFC 8259 §6) starting at data[i].
func scanNumber(data []byte, i int) (int, bool, error) {
	start := i
	n := len(data)
	isFloat := false
	if data[i] == '-' {
		i++
	}
	switch {
	case i < n && data[i] == '0':
		i++
	case i < n && data[i] >= '1' && data[i] <= '9':
		for i < n && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	default:
		return 0, false, &syntaxError{start, "invalid number"}
	}
	if i < n && data[i] == '.' {
		isFloat = true
		i++
		d := i
		for i < n && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		if i == d {
			return 0, false, &syntaxError{start, "invalid number"}
		}
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		isFloat = true
		i++
		if i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		d := i
		for i < n && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		if i == d {
			return 0, false, &syntaxError{start, "invalid number"}
		}
	}
	if i < n && (data[i] >= 'a' && data[i] <= 'z' || data[i] >= 'A' && data[i] <= 'Z' || data[i] == '.' || data[i] == '_') {
		return 0, false, &syntaxError{i, "invalid number"}
	}
	return i, isFloat, nil
}

// unescape appends the decoded body of the string token raw (quotes included) to dst.
// Invalid UTF-8 and unpaired surrogates become U+FFFD, as encoding/json does.
func unescape(dst, raw []byte) []byte {
	body := raw[1 : len(raw)-1]
	for i := 0; i < len(body); {
		// Copy the run of plain ASCII up to the next escape or multi-byte rune at once.
		j := i
		for j < len(body) && body[j] != '\\' && body[j] < utf8.RuneSelf {
			j++
		}
		dst = append(dst, body[i:j]...)
		if i = j; i == len(body) {
			break
		}
		c := body[i]
		if c == '\\' {
			switch body[i+1] {
			case '"', '\\', '/':
				dst = append(dst, body[i+1])
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := rune(hex4(body[i+2 : i+6]))
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(body) && body[i] == '\\' && body[i+1] == 'u' {
						r2 := rune(hex4(body[i+2 : i+6]))
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							i += 6
							dst = utf8.AppendRune(dst, d)
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			}
			i += 2
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, body[i:i+size]...)
		}
		i += size
	}
	return dst
}

func hex4(b []byte) uint64 {
	v, _ := strconv.ParseUint(string(b), 16, 32)
	return v
}
