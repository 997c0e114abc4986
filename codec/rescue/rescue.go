// Package rescue is the contract shared by streamkit's record decoders (codec/jsonrow,
// codec/csvrow, codec/formats) for records that do not fit the schema (DESIGN.md §2): they are
// never dropped silently.
//
//   - A field that is not in the schema, or whose value does not parse as its column's type, is
//     copied into the string column "_rescued_data" and the column is left null. The row is kept.
//   - A record that cannot be parsed at all (invalid JSON, an unterminated CSV quote, a NOT NULL
//     violation) goes to a bad-record Handler with its source, line, byte offset, the reason and
//     its raw text. The row is not emitted.
//
// The _rescued_data value is a JSON object (null when nothing was rescued):
//
//	{"<path>": <value>, ..., "_file": "<source>"}
//
// <path> names the field from the record root: struct members joined with "." (user.id), list
// elements as name[i] (tags[2], 0-based), map values as name.key. <value> is the original JSON
// value, verbatim (JSON input), or the original text as a JSON string (CSV input; an extra CSV
// column without a header name is keyed "_c<i>", its 0-based position, as Spark names it).
// "_file" (SourceKey) names the source — a file path, or topic/partition@offset for Kafka — and
// is left out when the decoder was given no source. Keys appear in record order.
//
// Text that is not valid UTF-8 cannot go into a string column (Arrow utf8) nor a JSON string
// without being rewritten, so its bytes are kept instead, base64 (RFC 4648 standard alphabet,
// padded), under "<path>_base64" (Base64Suffix): {"name_base64":"YmFk//51dGY4"} is the CSV field
// bad\xff\xfeutf8; for JSON input it is the field's verbatim JSON value, quotes included. A
// string column whose value is not valid UTF-8 is left null and rescued that way, as a mistyped
// value is (in DropMalformed/FailFast mode it makes the record bad). A field name that is not
// valid UTF-8 is written with U+FFFD in the path and its member text ("name":value) is the
// base64 value. Builder.NotUTF8 tells a decoder that the record held such text, so the reader
// can count those rows and warn.
//
// Modes follow Spark's parse modes (DataFrameReader option "mode"):
//
//	Permissive     mistyped and extra fields are rescued; unparseable records go to the handler.
//	DropMalformed  a record with a mistyped field is dropped and goes to the handler (reason
//	               names the field); extra fields are still rescued; unparseable records go to
//	               the handler.
//	FailFast       the first unparseable record or mistyped field stops decoding with an *Error;
//	               extra fields are still rescued.
//
// A decoder given no Handler returns an *Error for the first bad record, whatever the mode.
package rescue

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Column is the default name of the rescued-data column (Databricks' rescuedDataColumn).
const Column = "_rescued_data"

// SourceKey is the key naming the source inside a rescued-data object.
const SourceKey = "_file"

// Base64Suffix is appended to the path of a rescued value whose bytes are not valid UTF-8; its
// value is then the bytes in standard base64 (see the package doc).
const Base64Suffix = "_base64"

// Mode is how a decoder treats records that do not fit the schema (see the package doc).
type Mode int

// The parse modes; the zero value is Permissive.
const (
	Permissive Mode = iota
	DropMalformed
	FailFast
)

// String returns the mode's option spelling ("permissive", "dropmalformed", "failfast").
func (m Mode) String() string {
	switch m {
	case DropMalformed:
		return "dropmalformed"
	case FailFast:
		return "failfast"
	}
	return "permissive"
}

// ParseMode parses a mode name, case-insensitively, as Spark spells it (PERMISSIVE,
// DROPMALFORMED, FAILFAST); "" is Permissive.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "", "permissive":
		return Permissive, nil
	case "dropmalformed", "drop-malformed":
		return DropMalformed, nil
	case "failfast", "fail-fast":
		return FailFast, nil
	}
	return 0, fmt.Errorf("unknown parse mode %q (want permissive, dropmalformed or failfast)", s)
}

// BadRecord describes one record that could not be decoded.
type BadRecord struct {
	// Source is the file path (or Kafka topic/partition@offset); "" when unknown.
	Source string
	// Line is the 1-based line number where the record starts; 0 when not line-based.
	Line int64
	// Offset is the byte offset of the record's first byte in the (decompressed) source.
	Offset int64
	// Reason says what is wrong, e.g. `invalid character 'x' at byte 12` or `field amount: "abc" is not a double`.
	Reason string
	// Raw is the record's text, without its line terminator. It is a copy the handler may keep.
	Raw []byte
}

// Handler receives bad records. Returning an error stops the decoder, which returns it.
type Handler func(BadRecord) error

// Error is returned for a bad record in FailFast mode, or when no Handler is set.
type Error struct{ BadRecord }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("bad record")
	if e.Source != "" {
		b.WriteString(" in ")
		b.WriteString(e.Source)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " at line %d", e.Line)
	}
	fmt.Fprintf(&b, " (byte %d): %s", e.Offset, e.Reason)
	return b.String()
}

// Report hands br to h, the decoder's bad-record handler, and returns h's error; in FailFast
// mode, or without a handler, it returns br as an *Error instead (see the package doc).
func Report(m Mode, h Handler, br BadRecord) error {
	if m == FailFast || h == nil {
		return &Error{BadRecord: br}
	}
	return h(br)
}

// Builder accumulates one record's rescued fields and renders the JSON object. The zero value
// is ready; Reset reuses its memory.
type Builder struct {
	buf     []byte
	n       int
	notUTF8 bool
}

// Reset forgets the fields added so far.
func (b *Builder) Reset() { b.buf, b.n, b.notUTF8 = b.buf[:0], 0, false }

// NotUTF8 reports whether a field added since Reset was not valid UTF-8 (kept as base64).
func (b *Builder) NotUTF8() bool { return b.notUTF8 }

// addBase64 adds raw, which is not valid UTF-8, base64 under path + Base64Suffix.
func (b *Builder) addBase64(path string, raw []byte) {
	b.notUTF8 = true
	b.key(path + Base64Suffix)
	b.buf = append(b.buf, '"')
	b.buf = base64.StdEncoding.AppendEncode(b.buf, raw)
	b.buf = append(b.buf, '"')
}

// Len reports how many fields were added since Reset.
func (b *Builder) Len() int { return b.n }

func (b *Builder) key(path string) {
	if b.n == 0 {
		b.buf = append(b.buf, '{')
	} else {
		b.buf = append(b.buf, ',')
	}
	b.n++
	b.buf = AppendQuoted(b.buf, path)
	b.buf = append(b.buf, ':')
}

// AddRaw adds a field whose value is already JSON text (verbatim input; kept base64 when it
// is not valid UTF-8).
func (b *Builder) AddRaw(path string, value []byte) {
	if !utf8.Valid(value) {
		b.addBase64(path, value)
		return
	}
	b.key(path)
	b.buf = append(b.buf, value...)
}

// AddRawKey adds a field whose key is already a quoted JSON string (as it appeared in the
// input) and whose value is valid JSON text.
func (b *Builder) AddRawKey(quotedKey, value []byte) {
	if !utf8.Valid(quotedKey) {
		member := append(append(append([]byte(nil), quotedKey...), ':'), value...)
		b.addBase64(string(quotedKey[1:len(quotedKey)-1]), member)
		return
	}
	if !utf8.Valid(value) {
		b.addBase64(string(quotedKey[1:len(quotedKey)-1]), value)
		return
	}
	if b.n == 0 {
		b.buf = append(b.buf, '{')
	} else {
		b.buf = append(b.buf, ',')
	}
	b.n++
	b.buf = append(b.buf, quotedKey...)
	b.buf = append(b.buf, ':')
	b.buf = append(b.buf, value...)
}

// AddString adds a field whose value is text, written as a JSON string (kept base64 when it
// is not valid UTF-8).
func (b *Builder) AddString(path string, value []byte) {
	if !utf8.Valid(value) {
		b.addBase64(path, value)
		return
	}
	b.key(path)
	b.buf = AppendQuoted(b.buf, string(value))
}

// Finish closes the object, adding SourceKey when source is not empty, and returns it. The
// result is valid until the next Reset. It returns nil when no field was added.
func (b *Builder) Finish(source string) []byte {
	if b.n == 0 {
		return nil
	}
	if source != "" {
		b.buf = append(b.buf, ',')
		b.buf = AppendQuoted(b.buf, SourceKey)
		b.buf = append(b.buf, ':')
		b.buf = AppendQuoted(b.buf, source)
	}
	b.buf = append(b.buf, '}')
	return b.buf
}

const hexDigits = "0123456789abcdef"

// AppendQuoted appends s as a JSON string (RFC 8259): quotes, backslashes and control
// characters are escaped; invalid UTF-8 bytes become U+FFFD.
func AppendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
