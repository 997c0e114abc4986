package backfill

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	dl "github.com/streamkit/streamkit/delta"
	rd "github.com/streamkit/streamkit/source/delta"
	"github.com/streamkit/streamkit/storage"
)

// input is what a backfill reads: a bounded sequence of record batches with one schema.
type input interface {
	// Schema is the schema of every batch.
	Schema() *arrow.Schema
	// Next returns the next batch (the caller releases it) or io.EOF.
	Next(ctx context.Context) (arrow.RecordBatch, error)
	// Describe is the plan's description of the input (files, rows, bytes as far as known).
	Describe() *planSource
	// TotalRows is the number of rows to read when known in advance (for the progress bar),
	// else -1.
	TotalRows() int64
	// Close releases the input.
	Close()
}

// columnScanner is implemented by inputs that can read a few columns cheaply (a Delta table
// reads only those columns' chunks); used for the overlap check before the main pass.
type columnScanner interface {
	ScanColumns(ctx context.Context, cols []string, fn func(arrow.RecordBatch) error) error
}

// deltaInput reads one snapshot of a Delta table.
type deltaInput struct {
	table string // the source's location, for messages
	store storage.Store
	mem   memory.Allocator
	snap  *dl.Snapshot
	rd    *rd.Reader
	files []*dl.Add
	where string
	scan  *rd.Scan
}

func openDelta(ctx context.Context, table string, store storage.Store, version int64, where string, mem memory.Allocator) (*deltaInput, error) {
	t := dl.OpenTable(store, mem)
	if store.LocalDir() != "" {
		t = dl.NewTable(table, mem) // messages name a local table as given
	}
	snap, err := t.SnapshotAt(ctx, version)
	if err != nil {
		return nil, fmt.Errorf("backfill: source %s: %w", table, err)
	}
	r, err := rd.NewReader(store, snap.Metadata(), rd.ReadOptions{Name: table, WhereText: where, Allocator: mem})
	if err != nil {
		return nil, fmt.Errorf("backfill: source %s: %w", table, err)
	}
	files, err := rd.Files(r, snap)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("backfill: source %s: %w", table, err)
	}
	return &deltaInput{table: table, store: store, mem: mem, snap: snap, rd: r, files: files, where: where}, nil
}

func (d *deltaInput) Schema() *arrow.Schema { return d.rd.Schema() }

func refs(files []*dl.Add) []rd.FileRef {
	out := make([]rd.FileRef, len(files))
	for i, f := range files {
		out[i] = rd.FileRef{Add: f, End: -1}
	}
	return out
}

func (d *deltaInput) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if d.scan == nil {
		d.scan = d.rd.Scan(ctx, refs(d.files))
	}
	for {
		b, err := d.scan.Next()
		if err != nil {
			if err != io.EOF {
				err = fmt.Errorf("backfill: source %s: %w", d.table, err)
			}
			return nil, err
		}
		if b.Rec != nil {
			return b.Rec, nil
		}
	}
}

// ScanColumns reads only cols (top-level) of every file.
func (d *deltaInput) ScanColumns(ctx context.Context, cols []string, fn func(arrow.RecordBatch) error) error {
	return scanTable(ctx, d.store, d.snap.Metadata(), d.files, cols, d.mem, func(_ *dl.Add, rec arrow.RecordBatch) error { return fn(rec) })
}

func (d *deltaInput) TotalRows() int64 {
	var n int64
	for _, f := range d.files {
		r := numRecords(f)
		if r < 0 {
			return -1
		}
		n += r
	}
	return n
}

func (d *deltaInput) Describe() *planSource {
	ps := &planSource{Kind: "delta", Table: d.table, Version: d.snap.Version(), Where: d.where, Rows: d.TotalRows()}
	for _, f := range d.files {
		ps.Files = append(ps.Files, planFile{Path: f.Path, Rows: numRecords(f), Bytes: f.Size})
		ps.Bytes += f.Size
	}
	ps.NumFiles = len(d.files)
	return ps
}

func (d *deltaInput) Close() {
	if d.scan != nil {
		d.scan.Close()
	}
	d.rd.Close()
}

// numRecords is the logical file's row count: numRecords from its statistics less the rows
// its deletion vector removes; -1 when absent.
func numRecords(a *dl.Add) int64 {
	if a.Stats == "" {
		return -1
	}
	var st struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if json.Unmarshal([]byte(a.Stats), &st) != nil || st.NumRecords == nil {
		return -1
	}
	if a.DeletionVector != nil {
		return max(*st.NumRecords-a.DeletionVector.Cardinality, 0)
	}
	return *st.NumRecords
}

// scanTable reads the top-level columns cols of files (of a table with metadata meta),
// calling fn with each batch and the file it came from.
func scanTable(ctx context.Context, root storage.Store, meta *dl.Metadata, files []*dl.Add, cols []string, mem memory.Allocator,
	fn func(*dl.Add, arrow.RecordBatch) error) error {
	r, err := rd.NewReader(root, meta, rd.ReadOptions{Columns: cols, Allocator: mem})
	if err != nil {
		return err
	}
	defer r.Close()
	sc := r.Scan(ctx, refs(files))
	defer sc.Close()
	for {
		b, err := sc.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if b.Rec == nil {
			continue
		}
		err = fn(files[b.File], b.Rec)
		b.Rec.Release()
		if err != nil {
			return err
		}
	}
}
