package describe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/codec/csvrow"
	"github.com/streamkit/streamkit/codec/formats"
	"github.com/streamkit/streamkit/codec/rescue"
)

// ReadStream describes the Arrow IPC stream on r, named source ("stdin" or the file). It
// reads the schema and calls onSchema with the report at once (a live stream's schema is
// shown before its first batch); then, unless first, it counts the stream's batches and
// controls until its end. It returns when the stream ends, when ctx is done (the report's
// Stream.Stopped is set and the error is ctx's), or on a read error, with the report of what
// was read so far when there is one (a truncated stream: Stream.Truncated). Errors name
// source; codec.ErrNoStream and codec.ErrNotArrow are wrapped.
func ReadStream(ctx context.Context, r io.Reader, source string, first bool, onSchema func(*Report) error) (*Report, error) {
	mem := memory.DefaultAllocator
	rd, err := codec.NewReader(r, mem)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	rep := &Report{Source: source, Format: string(formats.ArrowStream), Schema: Of(rd.Schema())}
	if onSchema != nil {
		if err := onSchema(rep); err != nil {
			rd.Release()
			return rep, err
		}
	}
	if first {
		rd.Release()
		return rep, nil
	}
	// The count runs beside the wait for ctx: a live stream blocks in Next until its next
	// message, and an interrupt must report what was counted so far at once.
	var mu sync.Mutex
	var st Stream
	done := make(chan error, 1)
	go func() {
		defer rd.Release()
		for {
			m, err := rd.Next()
			if errors.Is(err, io.EOF) {
				err = nil
			}
			mu.Lock()
			if err != nil || m == (codec.Message{}) {
				st.Truncated = errors.Is(err, codec.ErrTruncated)
				mu.Unlock()
				done <- err
				return
			}
			st.Add(m)
			mu.Unlock()
		}
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
		mu.Lock()
		defer mu.Unlock()
		st.Stopped = true
	}
	s := st
	rep.Stream = &s
	if err != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%s: %w", source, err)
	}
	return rep, err
}

// InferRows is how many records of a CSV, TSV or JSON file the schema is inferred from:
// read-files' default (--infer-rows).
const InferRows = 10000

// ReadFile describes the data file f named name (its extension gives the format unless
// format is set, as read-files takes them: formats.DetectFormat). An Arrow IPC stream (.arrows,
// or .arrow without the IPC file magic) is read as ReadStream reads stdin; any other format
// gives its schema only — the file's own for Parquet, Avro and Arrow IPC files, the one
// read-files infers from the first rows for CSV, TSV and JSON. ReadFile closes f.
func ReadFile(ctx context.Context, f formats.File, name string, format formats.Format, first bool, onSchema func(*Report) error) (*Report, error) {
	if format == "" {
		format, _ = formats.DetectFormat(name)
	}
	if format == "" {
		f.Close()
		return nil, fmt.Errorf("%s: unknown format; name it with --input-format (csv, tsv, json, parquet, avro, arrow, arrows)", name)
	}
	if format == formats.ArrowStream || format == formats.ArrowFile && !formats.IsArrowFile(f) {
		defer f.Close()
		return ReadStream(ctx, f, name, first, onSchema)
	}
	// read-files' defaults: a header line, inference over the first InferRows records; the
	// records that do not fit are not this tool's business.
	o := formats.Options{Format: format, CSV: csvrow.Options{Header: true}, Mode: rescue.Permissive,
		OnBadRecord: func(rescue.BadRecord) error { return nil }}
	o.CSV.Infer.Rows, o.JSON.Infer.Rows = InferRows, InferRows
	rd, err := formats.OpenFile(f, name, o)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	sc := rd.Schema()
	if format == formats.Parquet {
		sc = withoutUnsetFieldIDs(sc)
	}
	rep := &Report{Source: name, Format: string(format), Schema: Of(sc)}
	if onSchema != nil {
		err = onSchema(rep)
	}
	return rep, err
}

// withoutUnsetFieldIDs drops the field metadata PARQUET:field_id=-1 that pqarrow gives every
// column of a file without field ids: it is not in the file.
func withoutUnsetFieldIDs(s *arrow.Schema) *arrow.Schema {
	fields := s.Fields()
	for i, f := range fields {
		if v, ok := f.Metadata.GetValue(fieldIDKey); ok && v == "-1" {
			var keys, vals []string
			for j, k := range f.Metadata.Keys() {
				if k != fieldIDKey {
					keys, vals = append(keys, k), append(vals, f.Metadata.Values()[j])
				}
			}
			fields[i].Metadata = arrow.NewMetadata(keys, vals)
		}
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// fieldIDKey is the field metadata key under which pqarrow reports a Parquet field id.
const fieldIDKey = "PARQUET:field_id"
