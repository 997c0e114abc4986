package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec/csvrow"
	"github.com/streamkit/streamkit/codec/formats"
	"github.com/streamkit/streamkit/codec/jsonrow"
	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
)

// Rewrite is what happens to a file that changes after it was read (--on-rewrite).
type Rewrite int

// The --on-rewrite policies; the zero value is RewriteSkip.
const (
	// RewriteSkip logs a warning once per run and never reads the new content (Auto Loader's
	// default, cloudFiles.allowOverwrites=false).
	RewriteSkip Rewrite = iota
	// RewriteReprocess reads the new version again as a new file, once it is stable.
	RewriteReprocess
	// RewriteFail stops with an error naming the file.
	RewriteFail
)

// ParseRewrite parses skip, reprocess or fail.
func ParseRewrite(s string) (Rewrite, error) {
	switch s {
	case "", "skip":
		return RewriteSkip, nil
	case "reprocess":
		return RewriteReprocess, nil
	case "fail":
		return RewriteFail, nil
	}
	return 0, fmt.Errorf("--on-rewrite must be skip, reprocess or fail, got %q", s)
}

// Config are the options of the files source (read-files flags).
type Config struct {
	// Patterns are doublestar globs ("landing/**/*.csv"), literal files, directories (all
	// files below) or "-" for stdin (read first, once; needs Format; no checkpoint). A bucket
	// URL (s3://, s3a://, gs://, az://, abfss://) is a glob over object names
	// ("s3://bucket/landing/**/*.json"), listed by its literal prefix; see compileURL.
	Patterns []string
	// OpenStore opens the store of a bucket pattern, rooted at the pattern's literal prefix
	// (a URL); nil: storage.Open with default options. Tools pass cli.OpenStore, which makes
	// a malformed URL a usage error.
	OpenStore func(ctx context.Context, url string) (storage.Store, error)
	// Format forces one format for every file; "" detects it from each file's extension.
	Format formats.Format
	// Schema is the stream's data schema (--schema); nil infers it from the first InferRows
	// records of the first files (text formats) or the first file's own schema (binary).
	Schema *arrow.Schema
	// Hints pin the types of some columns (--schema-hints, schema.Merge).
	Hints []schema.Hint
	// InferRows is how many records inference samples (default 10000).
	InferRows int
	// CSV holds the dialect, Header and NullValue of CSV/TSV files.
	CSV csvrow.Options
	// JSONLayout is the layout of JSON files (default: detected per file).
	JSONLayout jsonrow.Layout
	// BufferSize is the text decoders' initial read buffer (default 256 KiB; tests vary it).
	BufferSize int
	// Mode is the parse mode (codec/rescue): permissive (default), dropmalformed, failfast.
	Mode rescue.Mode
	// BadRecords is the NDJSON file receiving unparseable records ("" = log them only).
	BadRecords string
	// RescueSchemaMismatch (--on-schema-mismatch rescue) reads a binary file (Parquet, Avro,
	// Arrow) whose column cannot be converted to the stream schema's type at all (no cast
	// exists between the types: a schema mismatch, not a bad value) with that column null and
	// its values in _rescued_data; by default such a file fails the run, naming the file, the
	// column and both types (Spark's Avro and Parquet readers fail the same way).
	RescueSchemaMismatch bool
	// WithMetadata adds the _metadata struct column (MetadataType).
	WithMetadata bool
	// Columns, when set (--columns), are the output's data columns, in this order, each a
	// top-level column of the stream schema; _rescued_data (and _metadata) follow. The
	// checkpoint keeps the whole schema, so another run may select others. See project.
	Columns []string
	// Location reads zone-less timestamps (default UTC; never the machine's zone).
	Location *time.Location
	// Follow keeps listing every PollInterval (default 5 s); otherwise the source reads what
	// is there at the start of the run ("available now") and ends.
	Follow       bool
	PollInterval time.Duration
	// StableAfter is how long a file must be unchanged before it is read (default 2 s when
	// set by the tool; 0 reads every listed file at once).
	StableAfter time.Duration
	// OnRewrite is the policy for files that change after they were read.
	OnRewrite Rewrite
	// MaxFilesPerEpoch and MaxBytesPerEpoch cut an epoch once that many files (bytes) were
	// started in it; 0 = no limit. An epoch always holds at least one file.
	MaxFilesPerEpoch int
	MaxBytesPerEpoch int64
	// Stdin is read for the pattern "-" (default os.Stdin).
	Stdin io.Reader
	// Sleep waits d or until ctx is done (default: a timer); tests inject a fake clock.
	Sleep func(ctx context.Context, d time.Duration) error
}

// cursor is a place in the files log: the next file to read and the rows of it already read.
type cursor struct {
	Next int   `json:"next"`
	Row  int64 `json:"row"`
}

func (c cursor) less(o cursor) bool { return c.Next < o.Next || c.Next == o.Next && c.Row < o.Row }

// position is the source's stage.Position (an offsets WAL entry): the cursor at the end of the
// epoch and the files the epoch read from (all of them, with their log index).
type position struct {
	cursor
	Files []posFile `json:"files"`
}

type posFile struct {
	Index int `json:"index"`
	Entry
}

// Source is the files source (a stage.Source, stage.EpochLimiter). See the package doc.
type Source struct {
	cfg      Config
	env      *stage.Env
	patterns []*pattern
	stdin    bool

	log     fileLog
	entries []*Entry
	known   map[string]*Entry // path -> newest planned version
	stab    *stability
	stores  map[string]storage.Store // bucket prefix URL -> store, for entries of no pattern
	odd     map[string]bool          // objects no store can open, warned about once
	listed  bool                     // available-now: the run's listing was done
	next    time.Time                // follow: next listing

	cur, epochStart cursor
	epochFiles      int
	epochBytes      int64
	open            *openFile
	stdinPlanned    bool

	dec, out   *arrow.Schema
	projecting bool // --schema or --columns given: binary formats read only its columns
	// --columns: the stream schema's columns left out (text decoders skip them) and all its
	// data columns in order (a CSV file's columns without a header)
	skip, positions []string
	bad             *badRecords
	err             error // sticky (bad-records sync)

	files, rows, rescued, missing int64
}

// openFile is the file being read.
type openFile struct {
	e        *Entry
	r        formats.Reader
	conv     *converter
	ahead    arrow.RecordBatch // the next converted batch (read ahead to know a file's end)
	eof      bool
	skip     int64 // rows still to skip (resuming inside a file)
	lastLine int64
}

// New validates cfg and compiles the patterns. Errors are usage errors.
func New(cfg Config) (*Source, error) {
	if len(cfg.Patterns) == 0 {
		return nil, stage.Usagef("read-files: give at least one PATTERN (a glob, a file, a directory or - for stdin)")
	}
	if cfg.InferRows <= 0 {
		cfg.InferRows = 10000
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 5 * time.Second
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.Stdin == nil {
		cfg.Stdin = os.Stdin
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.OpenStore == nil {
		cfg.OpenStore = func(ctx context.Context, loc string) (storage.Store, error) {
			return storage.Open(ctx, loc, storage.Options{})
		}
	}
	if cfg.StableAfter < 0 || cfg.MaxFilesPerEpoch < 0 || cfg.MaxBytesPerEpoch < 0 {
		return nil, stage.Usagef("read-files: --stable-after, --max-files-per-epoch and --max-bytes-per-epoch must be ≥ 0")
	}
	s := &Source{cfg: cfg, known: map[string]*Entry{}, stab: newStability(cfg.StableAfter),
		stores: map[string]storage.Store{}, odd: map[string]bool{}}
	for _, p := range cfg.Patterns {
		if p == "-" {
			if s.stdin {
				return nil, stage.Usagef("read-files: - (stdin) given twice")
			}
			s.stdin = true
			continue
		}
		pt, err := compilePattern(p)
		if err != nil {
			return nil, stage.Usagef("read-files: %v", err)
		}
		if f, _ := formats.DetectFormat(p); pt.file && f == "" && cfg.Format == "" {
			return nil, stage.Usagef("read-files: %s: unknown file format (by extension); name it with --format csv|tsv|json|parquet|avro|arrow|arrows", p)
		}
		s.patterns = append(s.patterns, pt)
	}
	if s.stdin && cfg.Format == "" {
		return nil, stage.Usagef("read-files: reading stdin (-) needs --format")
	}
	if s.stdin && cfg.Follow {
		return nil, stage.Usagef("read-files: --follow cannot be combined with - (stdin)")
	}
	if s.stdin && cfg.Schema == nil && len(cfg.Hints) > 0 {
		return nil, stage.Usagef("read-files: --schema-hints with - (stdin) needs --schema (stdin cannot be read twice)")
	}
	if s.stdin && cfg.Schema == nil && len(cfg.Columns) > 0 {
		return nil, stage.Usagef("read-files: --columns with - (stdin) needs --schema (stdin cannot be read twice)")
	}
	return s, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Open loads the files log and the stream schema from the checkpoint (if any), positions the
// source after the committed epoch, and resolves the schema (stored, --schema or inferred).
func (s *Source) Open(ctx context.Context, env *stage.Env, committed stage.Position) (*arrow.Schema, error) {
	s.env = env
	if env.Dir != nil {
		if s.stdin {
			return nil, stage.Usagef("read-files: - (stdin) cannot be replayed; run it without --checkpoint (and without $%s)", stage.EnvCheckpoint)
		}
		s.log.store = env.Dir.Store().Sub(LogDir) // a local directory or a bucket prefix
		s.log.held = env.Dir.Held
	}
	for _, p := range s.patterns {
		if p.bucket {
			if err := p.open(ctx, s.cfg.OpenStore); err != nil {
				return nil, fmt.Errorf("read-files: %w", err)
			}
			s.stores[p.base] = p.store
			if f, _ := formats.DetectFormat(p.glob); p.file && f == "" && s.cfg.Format == "" {
				return nil, stage.Usagef("read-files: %s: unknown file format (by extension); name it with --format csv|tsv|json|parquet|avro|arrow|arrows", p.arg)
			}
		}
	}
	var err error
	if s.entries, err = s.log.load(); err != nil {
		return nil, err
	}
	for _, e := range s.entries {
		s.known[e.Path] = e
	}
	if committed != nil {
		var p position
		if err := json.Unmarshal(committed, &p); err != nil {
			return nil, fmt.Errorf("read-files: committed position %s: %w", committed, err)
		}
		if p.Next > len(s.entries) || p.Next < 0 || p.Row < 0 {
			return nil, fmt.Errorf("read-files: the committed epoch ends at file %d of the files log in %s, which has %d: the checkpoint is inconsistent", p.Next, s.log.where(), len(s.entries))
		}
		if err := s.checkFiles(p); err != nil {
			return nil, err
		}
		s.cur = p.cursor
	}
	s.epochStart = s.cur
	if s.bad, err = openBadRecords(s.cfg.BadRecords, env.Log, func() { env.Stats.Reject(stage.BadRecord, 1) }); err != nil {
		return nil, stage.Usagef("read-files: %v", err)
	}
	if err := s.resolveSchema(ctx); err != nil {
		return nil, err
	}
	if err := s.project(); err != nil {
		return nil, err
	}
	return s.out, nil
}

// checkFiles verifies that a WAL position's file list is the files log's.
func (s *Source) checkFiles(p position) error {
	for _, f := range p.Files {
		if f.Index < 0 || f.Index >= len(s.entries) || !s.entries[f.Index].sameVersion(&f.Entry) {
			have := "nothing"
			if f.Index >= 0 && f.Index < len(s.entries) {
				e := s.entries[f.Index]
				have = fmt.Sprintf("%s (size %d, fingerprint %s)", e.Path, e.Size, e.FP)
			}
			return fmt.Errorf("read-files: the offsets WAL lists file %d as %s (size %d, fingerprint %s) but the files log in %s has %s: the checkpoint is inconsistent",
				f.Index, f.Path, f.Size, f.FP, s.log.where(), have)
		}
	}
	return nil
}

// resolveSchema sets s.dec and s.out.
func (s *Source) resolveSchema(ctx context.Context) error {
	stored, err := s.log.loadSchema()
	if err != nil {
		return fmt.Errorf("read-files: %w", err)
	}
	var data *arrow.Schema
	if s.cfg.Schema != nil {
		s.projecting = true
		if data, err = s.applyHints(s.cfg.Schema); err != nil {
			return err
		}
	}
	if stored != nil {
		if data != nil {
			if want := s.outputSchema(data); !want.Equal(stored) {
				return fmt.Errorf("read-files: --schema resolves to\n  %s\nbut the checkpoint in %s was created with\n  %s\nuse a new checkpoint directory to change the schema",
					schema.DDL(want), s.log.where(), schema.DDL(stored))
			}
		}
		s.setSchema(stored)
		return nil
	}
	if data == nil {
		inferred, err := s.infer(ctx)
		if err != nil {
			return err
		}
		if inferred == nil {
			return nil // stdin: set by infer
		}
		if data, err = s.applyHints(inferred); err != nil {
			return err
		}
	}
	out := s.outputSchema(data)
	if err := s.log.saveSchema(out); err != nil {
		return fmt.Errorf("read-files: save the stream schema: %w", err)
	}
	s.setSchema(out)
	return nil
}

func (s *Source) applyHints(data *arrow.Schema) (*arrow.Schema, error) {
	if len(s.cfg.Hints) == 0 {
		return data, nil
	}
	out, err := schema.Merge(data, s.cfg.Hints)
	if err != nil {
		return nil, stage.Usagef("read-files: --schema-hints: %v", err)
	}
	return out, nil
}

// outputSchema is data's columns (without any _rescued_data or _metadata) + _rescued_data
// (+ _metadata).
func (s *Source) outputSchema(data *arrow.Schema) *arrow.Schema {
	var fields []arrow.Field
	for _, f := range data.Fields() {
		if f.Name == rescue.Column || f.Name == MetadataColumn {
			continue
		}
		fields = append(fields, f)
	}
	fields = append(fields, arrow.Field{Name: rescue.Column, Type: arrow.BinaryTypes.String, Nullable: true})
	if s.cfg.WithMetadata {
		fields = append(fields, arrow.Field{Name: MetadataColumn, Type: MetadataType})
	}
	md := data.Metadata()
	return arrow.NewSchema(fields, &md)
}

func (s *Source) setSchema(out *arrow.Schema) {
	s.out = out
	fields := out.Fields()
	if s.cfg.WithMetadata && len(fields) > 0 && fields[len(fields)-1].Name == MetadataColumn {
		fields = fields[:len(fields)-1]
	}
	md := out.Metadata()
	s.dec = arrow.NewSchema(fields, &md)
}

// infer derives the data schema from the first InferRows records of the files after the
// cursor (listing first if none is planned): text formats by csvrow/jsonrow inference widened
// across files (schema.WidenFields), binary formats by the first file's own schema. Columns
// are made nullable, as Spark's file sources do. With stdin, the schema is stdin's alone and
// its reader stays open (returns nil).
func (s *Source) infer(ctx context.Context) (*arrow.Schema, error) {
	for s.cur.Next >= len(s.entries) {
		n, err := s.discover(ctx)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			break
		}
		if !s.cfg.Follow {
			return nil, fmt.Errorf("read-files: no input file matches %s yet, so there is nothing to infer the schema from; give --schema", storage.Redact(strings.Join(s.cfg.Patterns, " ")))
		}
		s.env.Log.Info("waiting for a first file to infer the schema from", "patterns", storage.Redact(strings.Join(s.cfg.Patterns, " ")))
		if err := s.cfg.Sleep(ctx, time.Until(s.next)); err != nil {
			return nil, stage.ErrInterrupted
		}
	}
	if s.entries[s.cur.Next].Path == "-" {
		// stdin can be read once: its reader infers and then keeps decoding.
		r, text, err := s.openReader(ctx, s.entries[s.cur.Next], nil)
		if err != nil {
			return nil, err
		}
		s.setSchema(s.outputSchema(nullable(r.Schema())))
		conv, err := newConverter(s.env.Mem, s.dec, s.out, s.cfg.WithMetadata, s.entries[s.cur.Next], text, r.Schema(), !s.cfg.RescueSchemaMismatch, s.bad.notUTF8Row)
		if err != nil {
			r.Close()
			return nil, err
		}
		s.open = &openFile{e: s.entries[s.cur.Next], r: r, conv: conv}
		s.epochFiles++
		return nil, nil
	}
	var fields []arrow.Field
	remaining := s.cfg.InferRows
	for i := s.cur.Next; i < len(s.entries) && remaining > 0; i++ {
		e := s.entries[i]
		if e.Skip != "" {
			continue
		}
		r, text, err := s.openReaderInfer(ctx, e, remaining)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read-files: infer the schema: %w", err)
		}
		fields = schema.WidenFields(fields, nullable(r.Schema()).Fields())
		if !text {
			r.Close()
			break
		}
		for remaining > 0 {
			b, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("read-files: infer the schema: %w", err)
			}
			remaining -= int(b.Record.NumRows())
			b.Record.Release()
		}
		r.Close()
	}
	if fields == nil {
		return nil, fmt.Errorf("read-files: none of the files to read could be opened to infer the schema; give --schema")
	}
	return arrow.NewSchema(fields, nil), nil
}

// nullable returns s with every top-level column nullable (streaming file sources accept
// files that lack a column).
func nullable(s *arrow.Schema) *arrow.Schema {
	fields := append([]arrow.Field(nil), s.Fields()...)
	for i := range fields {
		fields[i].Nullable = true
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// formatOf is the format of e.
func (s *Source) formatOf(e *Entry) (formats.Format, error) {
	if s.cfg.Format != "" {
		return s.cfg.Format, nil
	}
	f, _ := formats.DetectFormat(e.Path)
	if f == "" {
		return "", fmt.Errorf("read-files: %s: unknown file format (by extension); name it with --format csv|tsv|json|parquet|avro|arrow|arrows, or narrow the pattern", e.Path)
	}
	return f, nil
}

func isText(f formats.Format) bool { return f == formats.CSV || f == formats.TSV || f == formats.JSON }

func (s *Source) readerOptions(format formats.Format, sch *arrow.Schema) formats.Options {
	o := formats.Options{
		Format: format, Schema: sch, BatchRows: s.env.BatchRows, CSV: s.cfg.CSV,
		JSON: jsonrow.ReaderOptions{Layout: s.cfg.JSONLayout, BufferSize: s.cfg.BufferSize},
		Mode: s.cfg.Mode, OnBadRecord: s.bad.handle, Location: s.cfg.Location, Allocator: s.env.Mem,
		OnNotUTF8: s.bad.notUTF8Row,
	}
	if o.BatchRows <= 0 {
		o.BatchRows = 1 << 16
	}
	o.CSV.BufferSize = s.cfg.BufferSize
	if sch != nil && s.positions != nil {
		o.CSV.Skip, o.JSON.Skip = s.skip, s.skip
		if !o.CSV.Header {
			o.CSV.Positions = s.positions
		}
	}
	return o
}

// openReaderInfer opens e for schema inference: no schema, the first rows sampled, bad
// records ignored (they are reported when the file is read).
func (s *Source) openReaderInfer(ctx context.Context, e *Entry, rows int) (formats.Reader, bool, error) {
	format, err := s.formatOf(e)
	if err != nil {
		return nil, false, err
	}
	o := s.readerOptions(format, nil)
	o.Mode = rescue.Permissive
	o.OnBadRecord = func(rescue.BadRecord) error { return nil }
	o.OnNotUTF8 = nil // counted when the file is read
	o.CSV.Infer.Rows, o.JSON.Infer.Rows = rows, rows
	r, err := s.openWith(ctx, e, format, o)
	return r, isText(format), err
}

// openReader opens e decoding into sch (nil: infer, stdin only).
func (s *Source) openReader(ctx context.Context, e *Entry, sch *arrow.Schema) (formats.Reader, bool, error) {
	format, err := s.formatOf(e)
	if err != nil {
		return nil, false, err
	}
	o := s.readerOptions(format, sch)
	if sch == nil {
		o.CSV.Infer.Rows, o.JSON.Infer.Rows = s.cfg.InferRows, s.cfg.InferRows
	}
	if format == formats.Parquet && s.projecting && sch != nil {
		// Read only the schema's columns (their column chunks).
		probe, err := s.openRandom(ctx, e, formats.Options{Format: format, Allocator: s.env.Mem})
		if err != nil {
			return nil, false, err
		}
		fsch := probe.Schema()
		probe.Close()
		for _, f := range sch.Fields() {
			if len(fsch.FieldIndices(f.Name)) > 0 {
				o.Columns = append(o.Columns, f.Name)
			}
		}
		if len(o.Columns) == 0 {
			return nil, false, fmt.Errorf("read-files: %s has none of the schema's columns (it has %s)", e.Path, schema.DDL(fsch))
		}
	}
	r, err := s.openWith(ctx, e, format, o)
	return r, isText(format), err
}

// openWith opens e. Sequential formats read at most the listed size, so a file appended to
// after it was listed is read as listed (replays stay exact); a bucket object is read as one
// streamed range. Parquet and Arrow IPC files are read in place (ranged reads on a bucket).
func (s *Source) openWith(ctx context.Context, e *Entry, format formats.Format, o formats.Options) (formats.Reader, error) {
	if e.Path == "-" {
		return formats.NewReader(s.cfg.Stdin, "-", o)
	}
	switch format {
	case formats.Parquet, formats.ArrowFile:
		if !storage.IsURL(e.Path) {
			if _, err := os.Stat(e.Path); err != nil {
				return nil, err
			}
		}
		return s.openRandom(ctx, e, o)
	}
	var f io.ReadCloser
	if storage.IsURL(e.Path) {
		st, name, err := s.object(ctx, e.Path)
		if err != nil {
			return nil, err
		}
		if f, err = st.Open(ctx, name); err != nil {
			return nil, err
		}
	} else {
		var err error
		if f, err = os.Open(e.Path); err != nil {
			return nil, err
		}
	}
	r, err := formats.NewReader(io.LimitReader(f, e.Size), e.Path, o)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &closingReader{Reader: r, f: f}, nil
}

// openRandom opens e with formats.Open, or a bucket object with formats.OpenFile over the
// store's ranged reads.
func (s *Source) openRandom(ctx context.Context, e *Entry, o formats.Options) (formats.Reader, error) {
	if !storage.IsURL(e.Path) {
		return formats.Open(e.Path, o)
	}
	st, name, err := s.object(ctx, e.Path)
	if err != nil {
		return nil, err
	}
	f, err := st.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return formats.OpenFile(f, e.Path, o)
}

// object is the store and name of the bucket object at path (an Entry.Path URL): the store
// of the pattern whose prefix holds it, else (a file planned under an earlier run's patterns)
// a store opened at its parent prefix and kept.
func (s *Source) object(ctx context.Context, path string) (storage.Store, string, error) {
	for _, p := range s.patterns {
		if p.store == nil {
			continue
		}
		if name, ok := strings.CutPrefix(path, p.base+"/"); ok && name != "" {
			return p.store, name, nil
		}
	}
	i := strings.LastIndexByte(path, '/')
	dir, name := path[:i], path[i+1:]
	st := s.stores[dir]
	if st == nil {
		var err error
		if st, err = s.cfg.OpenStore(ctx, dir); err != nil {
			return nil, "", err
		}
		s.stores[dir] = st
	}
	return st, name, nil
}

type closingReader struct {
	formats.Reader
	f io.Closer
}

func (c *closingReader) Close() error {
	err := c.Reader.Close()
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// discover lists the patterns and plans the new stable files (see the package doc); it
// returns how many it planned. Available-now runs list once (waiting for files that are
// still being written, at most StableAfter); follow runs list every PollInterval.
func (s *Source) discover(ctx context.Context) (int, error) {
	planned := 0
	if s.stdin && !s.stdinPlanned {
		s.stdinPlanned = true
		s.entries = append(s.entries, &Entry{Path: "-", Size: -1})
		planned++
	}
	if len(s.patterns) == 0 {
		return planned, nil
	}
	now := s.env.Now()
	if !s.cfg.Follow {
		if s.listed {
			return planned, nil
		}
		s.listed = true
		files, err := list(ctx, s.patterns, s.warnOdd)
		if err != nil {
			return 0, fmt.Errorf("read-files: %w", err)
		}
		cands, unstable, readyAt, err := s.classify(ctx, files, now)
		if err != nil {
			return 0, err
		}
		if unstable > 0 {
			wait := min(readyAt.Sub(now), s.cfg.StableAfter)
			s.env.Log.Info("waiting for files that are still being written", "files", unstable, "wait", wait.Round(time.Millisecond))
			if err := s.cfg.Sleep(ctx, wait); err != nil {
				return 0, stage.ErrInterrupted
			}
			now = s.env.Now()
			if files, err = list(ctx, s.patterns, s.warnOdd); err != nil {
				return 0, fmt.Errorf("read-files: %w", err)
			}
			if cands, unstable, _, err = s.classify(ctx, files, now); err != nil {
				return 0, err
			}
			if unstable > 0 {
				s.env.Log.Info("left files that are still being written for the next run", "files", unstable, "stable_after", s.cfg.StableAfter)
			}
		}
		n, err := s.plan(ctx, cands)
		return planned + n, err
	}
	if now.Before(s.next) {
		return planned, nil
	}
	s.next = now.Add(s.cfg.PollInterval)
	files, err := list(ctx, s.patterns, s.warnOdd)
	if err != nil {
		s.env.Log.Warn("listing failed; retrying at the next poll", "err", err)
		return planned, nil
	}
	cands, _, _, err := s.classify(ctx, files, now)
	if err != nil {
		return 0, err
	}
	n, err := s.plan(ctx, cands)
	return planned + n, err
}

// warnOdd warns once about an object that matches a pattern but that no store can open.
func (s *Source) warnOdd(path string) {
	if !s.odd[path] {
		s.odd[path] = true
		s.env.Log.Warn("object name has an empty path segment, which no store can open; skipped", "file", path)
	}
}

// candidate is a listed file to plan.
type candidate struct {
	f    listed
	fp   string
	skip string // Entry.Skip
}

// classify sorts a listing into files to plan (new or, with --on-rewrite reprocess,
// rewritten, and stable), counts the unstable ones and the time by which all of them may be
// stable (the latest; an available-now run waits that long, at most StableAfter, once).
func (s *Source) classify(ctx context.Context, files []listed, now time.Time) ([]candidate, int, time.Time, error) {
	var cands []candidate
	unstable := 0
	var readyAt time.Time
	present := make(map[string]bool, len(files))
	for _, f := range files {
		present[f.path] = true
		k := s.known[f.path]
		if k != nil && k.Size == f.size && k.MTime == f.mtime && k.ETag == f.etag {
			continue
		}
		stable, _ := s.stab.observe(f, now)
		if !stable {
			unstable++
			if t := s.stab.readyAt(f); t.After(readyAt) {
				readyAt = t
			}
			continue
		}
		c := candidate{f: f}
		if k != nil && k.Skip != "format" && k.Skip != "unread" {
			fp, err := fingerprint(ctx, f)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, 0, time.Time{}, fmt.Errorf("read-files: %w", err)
			}
			c.fp = fp
			switch {
			case fp == k.FP && f.size == k.Size:
				c.skip = "touched" // only its time changed: same content
			case s.cfg.OnRewrite == RewriteFail:
				return nil, 0, time.Time{}, fmt.Errorf("read-files: %s changed after it was read (size %d → %d, modified %s → %s); --on-rewrite fail",
					f.path, k.Size, f.size, fmtNS(k.MTime), fmtNS(f.mtime))
			case s.cfg.OnRewrite == RewriteSkip:
				s.env.Log.Warn("file changed after it was read; not reading it again (--on-rewrite skip)", "file", f.path,
					"size", fmt.Sprintf("%d → %d", k.Size, f.size), "modified", fmtNS(f.mtime))
				c.skip = "rewritten"
			}
		}
		if c.skip == "" && s.cfg.Format == "" {
			if format, _ := formats.DetectFormat(f.path); format == "" {
				s.env.Log.Warn("no format for this file's extension; skipped (name one with --format, or narrow the pattern)", "file", f.path)
				c.skip = "format"
			}
		}
		cands = append(cands, c)
	}
	s.stab.prune(present)
	return cands, unstable, readyAt, nil
}

func fmtNS(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// plan appends the candidates to the files log, oldest first (modification time, then path),
// and writes the log record before any of them is read.
func (s *Source) plan(ctx context.Context, cands []candidate) (int, error) {
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i].f, cands[j].f
		return a.mtime < b.mtime || a.mtime == b.mtime && a.path < b.path
	})
	files, fps := make([]listed, len(cands)), make([]string, len(cands))
	for i, c := range cands {
		files[i], fps[i] = c.f, c.fp
	}
	gone, err := fingerprintAll(ctx, files, fps)
	if err != nil {
		return 0, fmt.Errorf("read-files: %w", err)
	}
	first := len(s.entries)
	for i, c := range cands {
		if gone[i] {
			continue
		}
		e := &Entry{Path: c.f.path, Size: c.f.size, MTime: c.f.mtime, FP: fps[i], ETag: c.f.etag, Skip: c.skip}
		s.entries = append(s.entries, e)
		s.known[e.Path] = e
		s.stab.forget(e.Path)
	}
	n := len(s.entries) - first
	if n == 0 {
		return 0, nil
	}
	if err := s.log.append(s.entries, first); err != nil {
		return 0, fmt.Errorf("read-files: %w", err)
	}
	s.env.Log.Debug("planned new files", "files", n)
	return n, nil
}

// full reports whether the epoch has reached --max-files-per-epoch / --max-bytes-per-epoch.
func (s *Source) full() bool {
	return s.cfg.MaxFilesPerEpoch > 0 && s.epochFiles >= s.cfg.MaxFilesPerEpoch ||
		s.cfg.MaxBytesPerEpoch > 0 && s.epochBytes >= s.cfg.MaxBytesPerEpoch
}

// EpochFull implements stage.EpochLimiter: the epoch is full once its file limit is reached
// and no file is half read.
func (s *Source) EpochFull() bool { return s.open == nil && s.full() }

// EpochCut implements stage.EpochLimiter: a new epoch starts at the cursor.
func (s *Source) EpochCut() {
	s.epochStart = s.cur
	s.epochFiles, s.epochBytes = 0, 0
	if s.open != nil {
		s.epochFiles, s.epochBytes = 1, max(s.open.e.Size, 0)
	}
}

// Read returns the next batch; see stage.Source.
func (s *Source) Read(ctx context.Context, limit stage.Position) (arrow.RecordBatch, error) {
	if s.err != nil {
		return nil, s.err
	}
	var lim *cursor
	if limit != nil {
		var p position
		if err := json.Unmarshal(limit, &p); err != nil {
			return nil, fmt.Errorf("read-files: offsets WAL position %s: %w", limit, err)
		}
		if err := s.checkFiles(p); err != nil {
			return nil, err
		}
		lim = &p.cursor
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if lim != nil && !s.cur.less(*lim) {
			return nil, io.EOF
		}
		if s.open == nil {
			if s.cur.Next >= len(s.entries) {
				if lim != nil {
					return nil, fmt.Errorf("read-files: the offsets WAL ends at file %d but the files log in %s has %d: the checkpoint is inconsistent", lim.Next, s.log.where(), len(s.entries))
				}
				if s.full() {
					return nil, nil
				}
				n, err := s.discover(ctx)
				if err != nil {
					return nil, err
				}
				if n > 0 {
					continue
				}
				if !s.cfg.Follow {
					return nil, io.EOF
				}
				wait := min(s.env.Linger, time.Until(s.next))
				if wait <= 0 {
					wait = 10 * time.Millisecond
				}
				if err := s.cfg.Sleep(ctx, wait); err != nil {
					return nil, err
				}
				return nil, nil
			}
			if lim == nil && s.full() {
				return nil, nil
			}
			if err := s.openNext(ctx, lim != nil); err != nil {
				return nil, err
			}
			continue
		}
		f := s.open
		if err := s.fetch(f); err != nil {
			return nil, err
		}
		if f.ahead == nil {
			s.finishFile()
			continue
		}
		rec := f.ahead
		f.ahead = nil
		if lim != nil && lim.Next == s.cur.Next {
			if max := lim.Row - s.cur.Row; rec.NumRows() > max {
				head, rest := rec.NewSlice(0, max), rec.NewSlice(max, rec.NumRows())
				rec.Release()
				rec, f.ahead = head, rest
			}
		}
		s.cur.Row += rec.NumRows()
		if f.ahead == nil {
			if err := s.fetch(f); err != nil {
				rec.Release()
				return nil, err
			}
			if f.ahead == nil {
				s.finishFile()
			}
		}
		s.rows += rec.NumRows()
		if res := rec.Column(s.dec.NumFields() - 1); res.NullN() < res.Len() {
			n := int64(res.Len() - res.NullN())
			s.rescued += n
			s.env.Stats.Reject(stage.RescuedRow, n)
		}
		return rec, nil
	}
}

// openNext opens the file at the cursor (skipping the rows already read when resuming).
// A file that vanished since it was listed is skipped with a warning. A file that changed
// between its listing and its first read is not read now: an "unread" entry is recorded and
// a later listing plans its new version once it is stable. When rows of it were emitted
// already (a replay, or resuming inside it) it is read as listed instead — sequential formats
// up to the listed size — so the replay stays as close to the original as the file allows.
func (s *Source) openNext(ctx context.Context, replay bool) error {
	e := s.entries[s.cur.Next]
	if e.Skip != "" {
		s.cur = cursor{Next: s.cur.Next + 1}
		return nil
	}
	if e.Path != "-" {
		if size, changed := s.changed(ctx, e); changed {
			if !replay && s.cur.Row == 0 {
				s.env.Log.Warn("file changed between its listing and its reading; it will be read once it is stable again",
					"file", e.Path, "listed_size", e.Size, "size", size)
				u := *e
				u.Skip = "unread"
				first := len(s.entries)
				s.entries = append(s.entries, &u)
				s.known[u.Path] = &u
				if err := s.log.append(s.entries, first); err != nil {
					return fmt.Errorf("read-files: %w", err)
				}
				s.cur = cursor{Next: s.cur.Next + 1}
				return nil
			}
			s.env.Log.Warn("file changed since it was read; replaying it as listed (its first bytes up to the listed size)",
				"file", e.Path, "listed_size", e.Size, "size", size)
		}
	}
	s.epochFiles++
	s.epochBytes += max(e.Size, 0)
	r, text, err := s.openReader(ctx, e, s.dec)
	if errors.Is(err, fs.ErrNotExist) {
		s.env.Log.Warn("file vanished before it was read; skipped", "file", e.Path)
		s.missing++
		s.cur = cursor{Next: s.cur.Next + 1}
		return nil
	}
	if err != nil {
		if !strings.Contains(err.Error(), e.Path) {
			err = fmt.Errorf("open %s: %w", e.Path, err)
		}
		return fmt.Errorf("read-files: %w", err)
	}
	conv, err := newConverter(s.env.Mem, s.dec, s.out, s.cfg.WithMetadata, e, text, r.Schema(), !s.cfg.RescueSchemaMismatch, s.bad.notUTF8Row)
	if err == nil && s.projecting && !text {
		conv.extras = nil // --schema selects the columns of typed files
	}
	if err != nil {
		r.Close()
		return fmt.Errorf("read-files: %s: %w", e.Path, err)
	}
	s.open = &openFile{e: e, r: r, conv: conv, skip: s.cur.Row}
	return nil
}

// changed reports whether the file of e is there with another version than e records, and its
// size now. A missing or unreadable file is not "changed": opening it says what it is. A
// bucket object is compared by size, ETag (where both are known; quotes aside, as a HEAD
// quotes it and a listing does not) and modification time to the second (what object stores'
// HTTP dates hold).
func (s *Source) changed(ctx context.Context, e *Entry) (int64, bool) {
	if !storage.IsURL(e.Path) {
		fi, err := os.Stat(e.Path)
		if err != nil {
			return 0, false
		}
		return fi.Size(), fi.Size() != e.Size || fi.ModTime().UnixNano() != e.MTime
	}
	st, name, err := s.object(ctx, e.Path)
	if err != nil {
		return 0, false
	}
	in, err := st.Stat(ctx, name)
	if err != nil {
		return 0, false
	}
	etag := strings.Trim(in.ETag, `"`)
	return in.Size, in.Size != e.Size || etag != "" && e.ETag != "" && etag != e.ETag ||
		in.ModTime.Unix() != time.Unix(0, e.MTime).Unix()
}

// fetch reads ahead the next non-empty batch of f (after skipping rows), or sets f.eof.
func (s *Source) fetch(f *openFile) error {
	for f.ahead == nil && !f.eof {
		b, err := f.r.Next()
		if err == io.EOF {
			f.eof = true
			if f.skip > 0 {
				s.env.Log.Warn("file has fewer rows than the checkpoint says were read", "file", f.e.Path, "missing_rows", f.skip)
			}
			return nil
		}
		if err != nil {
			return s.readError(f, err)
		}
		n := b.Record.NumRows()
		if len(b.Lines) > 0 {
			f.lastLine = b.Lines[len(b.Lines)-1]
		}
		if n == 0 || f.skip >= n {
			f.skip -= n
			b.Record.Release()
			continue
		}
		rec, err := f.conv.convert(b)
		if err != nil {
			return fmt.Errorf("read-files: %s: %w", f.e.Path, err)
		}
		if f.skip > 0 {
			sl := rec.NewSlice(f.skip, n)
			rec.Release()
			rec, f.skip = sl, 0
		}
		f.ahead = rec
	}
	return nil
}

// readError names the file and the last line read in a decoding error.
func (s *Source) readError(f *openFile, err error) error {
	var re *rescue.Error
	if errors.As(err, &re) {
		return fmt.Errorf("read-files: %w (--mode %s)", err, s.cfg.Mode)
	}
	where := f.e.Path
	if f.lastLine > 0 {
		where = fmt.Sprintf("%s after line %d", f.e.Path, f.lastLine)
	}
	msg := err.Error()
	if strings.Contains(msg, f.e.Path) {
		return fmt.Errorf("read-files: %w", err)
	}
	return fmt.Errorf("read-files: read %s: %w", where, err)
}

func (s *Source) finishFile() {
	if f := s.open; f != nil {
		if f.ahead != nil {
			f.ahead.Release()
		}
		f.r.Close()
		s.open = nil
		s.files++
		s.bad.fileDone(f.e.Path)
	}
	s.cur = cursor{Next: s.cur.Next + 1}
}

// Position implements stage.Source: the cursor and the files of the current epoch. It also
// makes the bad records written so far durable (before the WAL entry is written).
func (s *Source) Position() stage.Position {
	if err := s.bad.sync(); err != nil && s.err == nil {
		s.err = fmt.Errorf("read-files: %w", err)
	}
	p := position{cursor: s.cur, Files: []posFile{}}
	end := s.cur.Next
	if s.cur.Row > 0 {
		end++
	}
	for i := s.epochStart.Next; i < end && i < len(s.entries); i++ {
		if s.entries[i].Skip == "" {
			p.Files = append(p.Files, posFile{Index: i, Entry: *s.entries[i]})
		}
	}
	b, _ := json.Marshal(p)
	return b
}

// Close releases the open file and reports the counts.
func (s *Source) Close() error {
	if s.open != nil {
		if s.open.ahead != nil {
			s.open.ahead.Release()
		}
		s.open.r.Close()
		s.open = nil
	}
	var err error
	if s.bad != nil {
		err = s.bad.close()
		args := []any{"files", s.files, "rows", s.rows, "rescued_rows", s.rescued, "bad_records", s.bad.n}
		if s.missing > 0 {
			args = append(args, "vanished_files", s.missing)
		}
		if s.bad.n > 0 || s.rescued > 0 {
			args = append(args, "bad_records_to", s.bad.dest())
			s.env.Log.Warn("read-files done", args...)
		} else {
			s.env.Log.Info("read-files done", args...)
		}
	}
	return err
}

var _ stage.Source = (*Source)(nil)
var _ stage.EpochLimiter = (*Source)(nil)
