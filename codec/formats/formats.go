// Package formats opens data files by format — CSV, TSV, NDJSON/JSON, Parquet, Avro object
// container files, Arrow IPC files and streams — optionally gzip- or zstd-compressed, behind
// one streaming Reader that yields Arrow record batches of at most BatchRows rows with the
// source position of every row (read-files builds on it; DESIGN.md §1, §2).
//
// Text formats (CSV, TSV, JSON) are decoded by codec/csvrow and codec/jsonrow against the
// given schema, or one inferred from the first rows, with a "_rescued_data" column and a
// bad-record handler (codec/rescue). Binary formats carry their own schema: Parquet is read
// with arrow-go's pqarrow one row group at a time with column projection, Avro with
// github.com/linkedin/goavro/v2 (types mapped by schema.AvroType), Arrow IPC with arrow-go's
// ipc package; they have no rescued-data column since their values are typed already.
package formats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/streamkit/streamkit/codec/csvrow"
	"github.com/streamkit/streamkit/codec/jsonrow"
	"github.com/streamkit/streamkit/codec/rescue"
)

// Format names a file format.
type Format string

// The formats Open reads; the strings are the --format option values.
const (
	CSV         Format = "csv"
	TSV         Format = "tsv"
	JSON        Format = "json" // NDJSON / JSON Lines, or one top-level array (detected)
	Parquet     Format = "parquet"
	Avro        Format = "avro"  // Avro object container file
	ArrowFile   Format = "arrow" // Arrow IPC file (Feather v2)
	ArrowStream Format = "arrows"
)

// ParseFormat accepts a format name or a common alias (ndjson, jsonl, feather, ipc).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "csv":
		return CSV, nil
	case "tsv", "tab":
		return TSV, nil
	case "json", "ndjson", "jsonl", "jsonlines":
		return JSON, nil
	case "parquet", "pq":
		return Parquet, nil
	case "avro":
		return Avro, nil
	case "arrow", "feather", "ipc":
		return ArrowFile, nil
	case "arrows", "arrow-stream", "ipc-stream":
		return ArrowStream, nil
	}
	return "", fmt.Errorf("unknown format %q (want csv, tsv, json, parquet, avro, arrow or arrows)", s)
}

// Compression is a whole-file compression.
type Compression string

// Compressions recognised by suffix (.gz, .zst) or magic bytes.
const (
	NoCompression Compression = ""
	Gzip          Compression = "gzip"
	Zstd          Compression = "zstd"
)

// DetectFormat guesses a path's format and compression from its extensions, e.g.
// "x.csv.gz" is (CSV, Gzip). It returns "" when the extension is unknown.
func DetectFormat(path string) (Format, Compression) {
	name := strings.ToLower(filepath.Base(path))
	comp := NoCompression
	switch {
	case strings.HasSuffix(name, ".gz"), strings.HasSuffix(name, ".gzip"):
		comp = Gzip
		name = strings.TrimSuffix(strings.TrimSuffix(name, ".gz"), ".gzip")
	case strings.HasSuffix(name, ".zst"), strings.HasSuffix(name, ".zstd"):
		comp = Zstd
		name = strings.TrimSuffix(strings.TrimSuffix(name, ".zst"), ".zstd")
	}
	ext := strings.TrimPrefix(filepath.Ext(name), ".")
	f, err := ParseFormat(ext)
	if err != nil {
		return "", comp
	}
	return f, comp
}

// Options configure a Reader. The zero value reads by file extension, infers text schemas,
// and cuts 64Ki-row batches.
type Options struct {
	// Format overrides detection by extension.
	Format Format
	// Schema for text formats; nil infers it from the first rows (csvrow / jsonrow inference,
	// with dates and timestamps inferred). Binary formats use their own schema and ignore it.
	Schema *arrow.Schema
	// Columns projects the output to these top-level columns, in this order (the rescued-data
	// column of text formats is always kept last). Parquet reads only their column chunks.
	// A name that is not in the file's schema is an error.
	Columns []string
	// BatchRows is the maximum rows per batch (default 65536).
	BatchRows int
	// CSV options for CSV and TSV (delimiter, header, quoting, null value ...). For TSV the
	// delimiter defaults to '\t'. Mode, OnBadRecord, Location and Allocator below override
	// the fields of the same name.
	CSV csvrow.Options
	// JSON options (layout, epoch unit, ...).
	JSON jsonrow.ReaderOptions
	// Mode, OnBadRecord: the rescue contract of text formats (see codec/rescue).
	Mode        rescue.Mode
	OnBadRecord rescue.Handler
	// OnNotUTF8 is called for every row of a text format whose rescued data keeps text that is
	// not valid UTF-8 (base64, see codec/rescue); nil: not counted.
	OnNotUTF8 func()
	// Location for zone-less timestamps in text formats (default UTC).
	Location *time.Location
	// Allocator for Arrow memory (default memory.DefaultAllocator).
	Allocator memory.Allocator
}

// Batch is one record batch and where its rows came from.
type Batch struct {
	// Record holds the rows; the caller must Release it.
	Record arrow.RecordBatch
	// Source is the path (or name) given to Open / NewReader.
	Source string
	// FirstRow is the 0-based index, among the rows this reader returned, of Record's first
	// row; in binary formats it is also the row's index in the file.
	FirstRow int64
	// Lines and Offsets (text formats only, else nil) give for each row the 1-based line where
	// its record starts and its byte offset in the decompressed file.
	Lines   []int64
	Offsets []int64
}

// Reader streams record batches from one file.
type Reader interface {
	// Schema is the schema of every batch.
	Schema() *arrow.Schema
	// Next returns the next batch, or io.EOF after the last. Lines/Offsets are valid until the
	// following call.
	Next() (Batch, error)
	// Close releases the reader's resources (not the batches it returned).
	Close() error
}

func (o *Options) fill() {
	if o.BatchRows <= 0 {
		o.BatchRows = 1 << 16
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
}

// Open opens the file at path. The format comes from Options.Format or the extension (a file
// named as the Arrow IPC file format, .arrow/.feather/.ipc, that does not start with the magic
// ARROW1 is read as an Arrow IPC stream); gzip and zstd compression from the extension or the
// file's magic bytes. Parquet and Arrow IPC files
// need random access, so they cannot be compressed.
func Open(path string, opts Options) (Reader, error) {
	format, err := openFormat(path, opts)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return openFile(f, path, format, opts)
}

// File is a random-access file as [OpenFile] reads it: an *os.File, or an object of a bucket
// (a storage.File, whose ReadAt is a ranged GET).
type File interface {
	io.Reader
	io.ReaderAt
	io.Seeker
	io.Closer
}

// OpenFile is [Open] for a file already opened: f, named name (a path or URL: its extension
// gives the format and compression as in Open, and it names the file in errors and batches).
// The Reader's Close closes f; so does an error. For a bucket object, Parquet and Arrow IPC
// files are read by ranges (the footer, then the column chunks or batches read); a sequential
// format is better read with [NewReader] over f, one streamed range.
func OpenFile(f File, name string, opts Options) (Reader, error) {
	format, err := openFormat(name, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return openFile(f, name, format, opts)
}

// openFormat is the format Open and OpenFile read name in.
func openFormat(name string, opts Options) (Format, error) {
	format, _ := DetectFormat(name)
	if opts.Format != "" {
		format = opts.Format
	}
	if format == "" {
		return "", fmt.Errorf("open %s: unknown format; name it with --format (csv, tsv, json, parquet, avro, arrow, arrows)", name)
	}
	return format, nil
}

func openFile(f File, path string, format Format, opts Options) (Reader, error) {
	opts.fill()
	_, comp := DetectFormat(path)
	var err error
	if format == ArrowFile && !IsArrowFile(f) {
		// .arrow names both Arrow IPC formats (streamkit's side outputs and `> x.arrow` write
		// the stream format): the file format starts with its magic ARROW1, else it is a stream.
		format = ArrowStream
	}
	switch format {
	case Parquet, ArrowFile:
		if c, _ := sniff(f); c != NoCompression || comp != NoCompression {
			f.Close()
			return nil, fmt.Errorf("open %s: a compressed %s file cannot be read in place; decompress it first", path, format)
		}
		var r Reader
		if format == Parquet {
			r, err = newParquetReader(f, path, opts)
		} else {
			r, err = newArrowFileReader(f, path, opts)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		return r, nil
	}
	if c, _ := sniff(f); comp != NoCompression && c != comp {
		f.Close()
		return nil, compressionMismatch(path, comp)
	}
	r, err := newStreamReader(f, f, path, format, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// NewReader reads a non-seekable stream (stdin, a pipe, an object-store body) of the given
// format (Options.Format, or by name's extension). Parquet and Arrow IPC files need random
// access and are refused; use Open. Compression is detected by magic bytes.
func NewReader(r io.Reader, name string, opts Options) (Reader, error) {
	opts.fill()
	format, comp := DetectFormat(name)
	if opts.Format != "" {
		format = opts.Format
	}
	switch format {
	case "":
		return nil, fmt.Errorf("read %s: unknown format", name)
	case Parquet, ArrowFile:
		return nil, fmt.Errorf("read %s: %s needs random access; open the file instead of a stream", name, format)
	}
	if comp != NoCompression {
		br := bufio.NewReader(r)
		magic, _ := br.Peek(4)
		if magicCompression(magic) != comp {
			return nil, compressionMismatch(name, comp)
		}
		r = br
	}
	return newStreamReader(r, nil, name, format, opts)
}

// compressionMismatch: the name promises compression the bytes do not have. Reading such a
// file as plain text would turn damage into garbage rows, so it is an error naming the file.
func compressionMismatch(name string, comp Compression) error {
	return fmt.Errorf("read %s: named as %s but it does not start like %s (damaged, or not compressed: rename it)", name, comp, comp)
}

// IsArrowFile reports whether f starts with the Arrow IPC file format's magic "ARROW1"
// (an Arrow IPC stream starts with a message length or continuation marker instead).
func IsArrowFile(f io.ReaderAt) bool {
	var magic [6]byte
	n, _ := f.ReadAt(magic[:], 0)
	return string(magic[:n]) == "ARROW1"
}

// sniff reports the compression of f from its magic bytes (read at offset 0, so f's read
// offset does not move).
func sniff(f io.ReaderAt) (Compression, error) {
	var magic [4]byte
	n, err := f.ReadAt(magic[:], 0)
	if err == io.EOF {
		err = nil
	}
	return magicCompression(magic[:n]), err
}

func magicCompression(b []byte) Compression {
	switch {
	case bytes.HasPrefix(b, []byte{0x1f, 0x8b}):
		return Gzip
	case bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return Zstd
	}
	return NoCompression
}

// Decompress wraps r with a gzip or zstd decoder when its first bytes are that format's magic
// number (multi-member gzip and concatenated zstd frames are read whole), else returns r
// buffered. The returned closer releases decoder resources.
func Decompress(r io.Reader) (io.Reader, Compression, func(), error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(4)
	switch magicCompression(magic) {
	case Gzip:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, Gzip, nil, fmt.Errorf("gzip: %w", err)
		}
		return zr, Gzip, func() { zr.Close() }, nil
	case Zstd:
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, Zstd, nil, fmt.Errorf("zstd: %w", err)
		}
		return zr, Zstd, zr.Close, nil
	}
	return br, NoCompression, func() {}, nil
}

// streamReader adapts the sequential formats.
type streamReader struct {
	name    string
	closer  io.Closer
	release func()
	next    func() (arrow.RecordBatch, []int64, []int64, error)
	schema  *arrow.Schema
	free    func()
	project []int
	rows    int64
}

func newStreamReader(r io.Reader, closer io.Closer, name string, format Format, opts Options) (Reader, error) {
	dr, _, release, err := Decompress(r)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	sr := &streamReader{name: name, closer: closer, release: release}
	switch format {
	case CSV, TSV:
		co := opts.CSV
		if format == TSV && co.Delimiter == 0 {
			co.Delimiter = '\t'
		}
		co.Mode, co.OnBadRecord, co.Allocator, co.Source, co.BatchRows = opts.Mode, opts.OnBadRecord, opts.Allocator, name, opts.BatchRows
		co.OnNotUTF8 = opts.OnNotUTF8
		if opts.Location != nil {
			co.Location = opts.Location
		}
		if opts.Schema == nil {
			co.Infer.Timestamps = true
		}
		cr, err := csvrow.NewReader(dr, opts.Schema, co)
		if err != nil {
			release()
			return nil, fmt.Errorf("open %s: %w", name, err)
		}
		sr.schema, sr.free = cr.Schema(), cr.Release
		sr.next = func() (arrow.RecordBatch, []int64, []int64, error) {
			rec, err := cr.Next()
			if err != nil {
				return nil, nil, nil, err
			}
			l, o := cr.Positions()
			return rec, l, o, nil
		}
	case JSON:
		jo := opts.JSON
		jo.Mode, jo.OnBadRecord, jo.Allocator, jo.Source, jo.BatchRows = opts.Mode, opts.OnBadRecord, opts.Allocator, name, opts.BatchRows
		jo.OnNotUTF8 = opts.OnNotUTF8
		if opts.Location != nil {
			jo.Location = opts.Location
		}
		if opts.Schema == nil {
			jo.Infer.Timestamps = true
		}
		jr, err := jsonrow.NewReader(dr, opts.Schema, jo)
		if err != nil {
			release()
			return nil, fmt.Errorf("open %s: %w", name, err)
		}
		sr.schema, sr.free = jr.Schema(), jr.Release
		sr.next = func() (arrow.RecordBatch, []int64, []int64, error) {
			rec, err := jr.Next()
			if err != nil {
				return nil, nil, nil, err
			}
			l, o := jr.Positions()
			return rec, l, o, nil
		}
	case Avro:
		ar, err := newAvroReader(dr, opts)
		if err != nil {
			release()
			return nil, fmt.Errorf("open %s: %w", name, err)
		}
		sr.schema, sr.free, sr.next = ar.schema, ar.release, ar.next
	case ArrowStream:
		ir, err := newIPCStream(dr, opts)
		if err != nil {
			release()
			return nil, fmt.Errorf("open %s: %w", name, err)
		}
		sr.schema, sr.free, sr.next = ir.schema, ir.release, ir.next
	default:
		release()
		return nil, fmt.Errorf("open %s: format %s is not a stream format", name, format)
	}
	if len(opts.Columns) > 0 {
		keep := format == CSV || format == TSV || format == JSON
		idx, s, err := projection(sr.schema, opts.Columns, keep)
		if err != nil {
			sr.Close()
			return nil, fmt.Errorf("open %s: %w", name, err)
		}
		sr.project, sr.schema = idx, s
	}
	return sr, nil
}

// projection maps column names to indices in s; keepLast keeps s's last column (the rescued
// data) at the end.
func projection(s *arrow.Schema, cols []string, keepLast bool) ([]int, *arrow.Schema, error) {
	var idx []int
	var fields []arrow.Field
	for _, c := range cols {
		i := s.FieldIndices(c)
		if len(i) == 0 {
			return nil, nil, fmt.Errorf("column %q is not in the schema (%s)", c, fieldNames(s))
		}
		idx = append(idx, i[0])
		fields = append(fields, s.Field(i[0]))
	}
	if keepLast {
		last := s.NumFields() - 1
		if len(idx) == 0 || idx[len(idx)-1] != last {
			idx = append(idx, last)
			fields = append(fields, s.Field(last))
		}
	}
	md := s.Metadata()
	return idx, arrow.NewSchema(fields, &md), nil
}

func fieldNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

func (sr *streamReader) Schema() *arrow.Schema { return sr.schema }

func (sr *streamReader) Next() (Batch, error) {
	rec, lines, offsets, err := sr.next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Batch{}, io.EOF
		}
		return Batch{}, err
	}
	if sr.project != nil {
		cols := make([]arrow.Array, len(sr.project))
		for i, j := range sr.project {
			cols[i] = rec.Column(j)
		}
		p := arrowNewRecord(sr.schema, cols, rec.NumRows())
		rec.Release()
		rec = p
	}
	b := Batch{Record: rec, Source: sr.name, FirstRow: sr.rows, Lines: lines, Offsets: offsets}
	sr.rows += rec.NumRows()
	return b, nil
}

func (sr *streamReader) Close() error {
	if sr.free != nil {
		sr.free()
		sr.free = nil
	}
	if sr.release != nil {
		sr.release()
		sr.release = nil
	}
	if sr.closer != nil {
		err := sr.closer.Close()
		sr.closer = nil
		return err
	}
	return nil
}
