package files

import (
	"encoding/base64"
	"log/slog"
	"strconv"
	"unicode/utf8"

	"github.com/streamkit/streamkit/codec/rescue"
)

// logBad is how many bad records are logged one by one (the rest are counted).
const logBad = 10

// badRecords receives the records no decoder could parse (codec/rescue handler): it appends
// them to the --bad-records-output file as NDJSON lines
//
//	{"file":"/abs/x.json","line":7,"offset":312,"reason":"…","raw":"…"}
//
// (raw is the record's text without its line terminator; a record that is not valid UTF-8 has
// its bytes base64 under raw_base64 instead), counts them, and logs the first few. It also
// counts the rows of the file being read whose rescued data keeps text that is not valid UTF-8
// (codec/rescue: base64 under <field>_base64) and warns once per file with their number. The file is opened for appending: a replayed epoch appends
// its bad records again (at-least-once, like any side output); the file is flushed and
// synced before each epoch's offsets are written.
type badRecords struct {
	path    string
	out     *rescue.LineFile
	n       int64
	log     *slog.Logger
	onBad   func()
	buf     []byte
	notUTF8 int64 // rows of the current file with text that is not UTF-8
}

// notUTF8Row counts a row of the current file whose rescued data keeps text that is not UTF-8.
func (b *badRecords) notUTF8Row() { b.notUTF8++ }

// fileDone warns once about the rows of the file just read that held text that is not UTF-8.
func (b *badRecords) fileDone(path string) {
	if b.notUTF8 == 0 {
		return
	}
	b.log.Warn("text that is not valid UTF-8: the fields are null and their bytes kept base64 in _rescued_data (<field>_base64); is the file in another encoding?",
		"file", path, "rows", b.notUTF8)
	b.notUTF8 = 0
}

func openBadRecords(path string, log *slog.Logger, onBad func()) (*badRecords, error) {
	b := &badRecords{path: path, log: log, onBad: onBad}
	if path != "" {
		out, err := rescue.OpenLineFile("--bad-records-output", path)
		if err != nil {
			return nil, err
		}
		b.out = out
	}
	return b, nil
}

// handle is the rescue.Handler.
func (b *badRecords) handle(r rescue.BadRecord) error {
	b.n++
	if b.onBad != nil {
		b.onBad()
	}
	if b.n <= logBad {
		raw := string(r.Raw)
		if len(raw) > 200 {
			raw = raw[:200] + "…"
		}
		args := []any{"file", r.Source, "line", r.Line, "byte", r.Offset, "reason", r.Reason}
		if b.out == nil {
			args = append(args, "raw", raw)
		}
		b.log.Warn("bad record", args...)
		if b.n == logBad {
			b.log.Warn("further bad records are only counted", "to", b.dest())
		}
	}
	if b.out == nil {
		return nil
	}
	buf := append(b.buf[:0], `{"file":`...)
	buf = rescue.AppendQuoted(buf, r.Source)
	buf = append(buf, `,"line":`...)
	buf = strconv.AppendInt(buf, r.Line, 10)
	buf = append(buf, `,"offset":`...)
	buf = strconv.AppendInt(buf, r.Offset, 10)
	buf = append(buf, `,"reason":`...)
	buf = rescue.AppendQuoted(buf, r.Reason)
	if utf8.Valid(r.Raw) {
		buf = append(buf, `,"raw":`...)
		buf = rescue.AppendQuoted(buf, string(r.Raw))
	} else {
		buf = append(buf, `,"raw_base64":"`...)
		buf = base64.StdEncoding.AppendEncode(buf, r.Raw)
		buf = append(buf, '"')
	}
	buf = append(buf, "}\n"...)
	b.buf = buf
	return b.out.Write(buf)
}

func (b *badRecords) dest() string {
	if b.path == "" {
		return "the log (use --bad-records-output PATH to keep them)"
	}
	return b.path
}

// sync makes the bad records written so far durable.
func (b *badRecords) sync() error { return b.out.Sync() }

func (b *badRecords) close() error {
	err := b.out.Close()
	b.out = nil
	return err
}
