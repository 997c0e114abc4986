package kafka

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/codec/rescue"
)

// badFile is the --bad-records-output file: one JSON line per record whose key or value did not
// decode,
//
//	{"topic":"t","partition":0,"offset":7,"timestamp":"2024-05-01T00:00:00.123Z",
//	 "reason":"value: schema id 9: …","key":"…","value_base64":"…"}
//
// (key/value as text when UTF-8, else base64 under key_base64/value_base64; absent when null).
// Exactly once with the checkpoint: Open cuts from the file every line of an assigned
// partition at or after the offset the run starts from (what an uncommitted epoch wrote is
// written again by its replay), lines of other partitions stay; the file is synced before
// each batch is handed on, so before any epoch's offsets are written.
type badFile struct {
	out *rescue.LineFile
	buf []byte
}

type badLine struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// openBadFile rewrites path keeping only lines before start[tp] for the partitions in start,
// then opens it for appending.
func openBadFile(path string, start map[TP]int64) (*badFile, error) {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("--bad-records-output: %w", err)
	}
	if len(data) > 0 {
		var keep bytes.Buffer
		cut := 0
		for i, line := range bytes.SplitAfter(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var l badLine
			if err := json.Unmarshal(line, &l); err != nil || line[len(line)-1] != '\n' {
				if i == bytes.Count(data, []byte("\n")) {
					cut++ // a torn last line of a crashed run
					continue
				}
				return nil, fmt.Errorf("--bad-records-output %s: line %d is not a bad-record line (%v); is it the right file?", path, i+1, err)
			}
			if pos, ok := start[TP{l.Topic, l.Partition}]; ok && l.Offset >= pos {
				cut++
				continue
			}
			keep.Write(line)
		}
		if cut > 0 {
			tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
			if err := os.WriteFile(tmp, keep.Bytes(), 0o644); err != nil {
				return nil, fmt.Errorf("--bad-records-output: %w", err)
			}
			if err := os.Rename(tmp, path); err != nil {
				return nil, fmt.Errorf("--bad-records-output: %w", err)
			}
		}
	}
	out, err := rescue.OpenLineFile("--bad-records-output", path)
	if err != nil {
		return nil, err
	}
	return &badFile{out: out}, nil
}

func (b *badFile) write(r *kgo.Record, reason string, badKey, badVal bool) error {
	s := append(b.buf[:0], `{"topic":`...)
	s = rescue.AppendQuoted(s, r.Topic)
	s = append(s, `,"partition":`...)
	s = strconv.AppendInt(s, int64(r.Partition), 10)
	s = append(s, `,"offset":`...)
	s = strconv.AppendInt(s, r.Offset, 10)
	s = append(s, `,"timestamp":`...)
	s = rescue.AppendQuoted(s, r.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	s = append(s, `,"reason":`...)
	s = rescue.AppendQuoted(s, reason)
	add := func(name string, raw []byte) {
		if raw == nil {
			return
		}
		if utf8.Valid(raw) {
			s = append(rescue.AppendQuoted(append(s, ','), name), ':')
			s = rescue.AppendQuoted(s, string(raw))
		} else {
			s = append(rescue.AppendQuoted(append(s, ','), name+"_base64"), ':', '"')
			s = base64.StdEncoding.AppendEncode(s, raw)
			s = append(s, '"')
		}
	}
	if badKey || badVal {
		add(ColKey, r.Key)
		add(ColValue, r.Value)
	}
	s = append(s, "}\n"...)
	b.buf = s
	return b.out.Write(s)
}

// sync makes the lines written so far durable.
func (b *badFile) sync() error {
	if b == nil {
		return nil
	}
	return b.out.Sync()
}

func (b *badFile) close() error {
	if b == nil {
		return nil
	}
	return b.out.Close()
}

// warnNotUTF8 warns, once per partition and run, when the json key or value of r just decoded
// held text that is not valid UTF-8: it is kept base64 in the struct's _rescued_data member
// (codec/rescue), and the field is null. (Undecodable string keys and values are bad records,
// counted and logged as such.)
func (b *builder) warnNotUTF8(r *kgo.Record) {
	for _, c := range []fieldCodec{b.keyC, b.valC} {
		j, ok := c.(*jsonCodec)
		if !ok || !j.notUTF8 {
			continue
		}
		tp := TP{r.Topic, r.Partition}
		if b.notUTF8Warned == nil {
			b.notUTF8Warned = map[TP]bool{}
		}
		if !b.notUTF8Warned[tp] && b.log != nil {
			b.notUTF8Warned[tp] = true
			b.log("json text that is not valid UTF-8: the fields are null and their bytes kept base64 in _rescued_data (<field>_base64); further records of this partition are not logged",
				"at", b.srcName())
		}
		return
	}
}
