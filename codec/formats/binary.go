package formats

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/streamkit/streamkit/codec/int96"
)

func arrowNewRecord(s *arrow.Schema, cols []arrow.Array, n int64) arrow.RecordBatch {
	return array.NewRecordBatch(s, cols, n)
}

// slicer cuts record batches larger than BatchRows into zero-copy slices.
type slicer struct {
	max int64
	cur arrow.RecordBatch
	off int64
}

// take returns the next slice of the current batch, or nil when it is used up.
func (s *slicer) take() arrow.RecordBatch {
	if s.cur == nil {
		return nil
	}
	n := s.cur.NumRows()
	if s.off == 0 && n <= s.max {
		rec := s.cur
		s.cur = nil
		return rec
	}
	if s.off >= n {
		s.cur.Release()
		s.cur = nil
		return nil
	}
	end := min(n, s.off+s.max)
	rec := s.cur.NewSlice(s.off, end)
	s.off = end
	return rec
}

func (s *slicer) set(rec arrow.RecordBatch) { s.cur, s.off = rec, 0 }

func (s *slicer) release() {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
}

// binaryReader adapts a source of record batches (parquet, IPC file) to Reader.
type binaryReader struct {
	name   string
	schema *arrow.Schema
	fetch  func() (arrow.RecordBatch, error) // the next source batch (caller owns), io.EOF at end
	close  func() error
	sl     slicer
	rows   int64
}

func (b *binaryReader) Schema() *arrow.Schema { return b.schema }

func (b *binaryReader) Next() (Batch, error) {
	for {
		if rec := b.sl.take(); rec != nil {
			if rec.NumRows() == 0 {
				rec.Release()
				continue
			}
			out := Batch{Record: rec, Source: b.name, FirstRow: b.rows}
			b.rows += rec.NumRows()
			return out, nil
		}
		rec, err := b.fetch()
		if err != nil {
			return Batch{}, err
		}
		b.sl.set(rec)
	}
}

func (b *binaryReader) Close() error {
	b.sl.release()
	if b.close != nil {
		err := b.close()
		b.close = nil
		return err
	}
	return nil
}

// newParquetReader streams a Parquet file row group by row group (pqarrow record reader with
// BatchRows-row batches, columns read serially to bound memory), reading only the projected
// columns' chunks. INT96 timestamps (top-level or inside structs, lists and maps) are read as
// timestamp[µs, UTC] over years 1 to 9999 (codec/int96). Files Spark wrote in LEGACY rebase
// mode (org.apache.spark.legacyINT96 / legacyDateTime, or a Spark version before 3.1 / 3.0) have
// their INT96, DATE and INT64 TIMESTAMP values before 1582-10-15 rebased from the Julian
// calendar, as Spark's Parquet reader does (int96.SparkLegacyModes); only such files pay for it.
func newParquetReader(f File, name string, opts Options) (Reader, error) {
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(opts.BatchRows)}, opts.Allocator)
	if err != nil {
		pf.Close()
		return nil, err
	}
	full, err := fr.Schema()
	if err != nil {
		pf.Close()
		return nil, err
	}
	var leaves []int
	want := map[string]bool{}
	if len(opts.Columns) > 0 {
		for _, c := range opts.Columns {
			if len(full.FieldIndices(c)) == 0 {
				pf.Close()
				return nil, fmt.Errorf("column %q is not in the schema (%s)", c, fieldNames(full))
			}
			want[c] = true
		}
		ps := pf.MetaData().Schema
		for i := 0; i < ps.NumColumns(); i++ {
			if want[ps.Column(i).ColumnPath()[0]] {
				leaves = append(leaves, i)
			}
		}
	}
	// INT96 leaves, top-level or nested, are read as µs (codec/int96): pqarrow hands their raw
	// values over, decoded in place in each batch below.
	var read func(string) bool
	if len(want) > 0 {
		read = func(name string) bool { return want[name] }
	}
	micros := int96.RewriteFields(pf, fr, read)
	legacy96, legacyDT := int96.SparkLegacyModes(pf.MetaData().KeyValueMetadata())
	rebase96 := int96.LegacyRebase(legacy96)
	var dtFields []*pqarrow.SchemaField // per batch column (file order): its manifest field
	if legacyDT {
		for i := range fr.Manifest.Fields {
			if f := &fr.Manifest.Fields[i]; read == nil || read(f.Field.Name) {
				dtFields = append(dtFields, f)
			}
		}
	}
	rr, err := fr.GetRecordReader(context.Background(), leaves, nil)
	if err != nil {
		pf.Close()
		return nil, err
	}
	br := &binaryReader{name: name, schema: rr.Schema(), sl: slicer{max: int64(opts.BatchRows)}}
	var project []int
	if len(opts.Columns) > 0 {
		// pqarrow returns projected columns in file order; reorder to the requested order.
		idx, s, err := projection(rr.Schema(), opts.Columns, false)
		if err != nil {
			rr.Release()
			pf.Close()
			return nil, err
		}
		project, br.schema = idx, s
	}
	br.fetch = func() (arrow.RecordBatch, error) {
		for rr.Next() {
			rec := rr.RecordBatch()
			if rec.NumRows() == 0 {
				continue
			}
			if err := micros.Decode(rec, rebase96); err != nil {
				return nil, err
			}
			for i, sf := range dtFields {
				if err := int96.RebaseLegacyDateTime(pf, sf, rec.Column(i).Data()); err != nil {
					return nil, err
				}
			}
			if project != nil {
				cols := make([]arrow.Array, len(project))
				for i, j := range project {
					cols[i] = rec.Column(j)
				}
				return array.NewRecordBatch(br.schema, cols, rec.NumRows()), nil
			}
			rec.Retain()
			return rec, nil
		}
		if err := rr.Err(); err != nil && err != io.EOF {
			return nil, err
		}
		return nil, io.EOF
	}
	br.close = func() error {
		rr.Release()
		return pf.Close()
	}
	return br, nil
}

// newArrowFileReader reads an Arrow IPC file batch by batch.
func newArrowFileReader(f File, name string, opts Options) (Reader, error) {
	fr, err := ipc.NewFileReader(f, ipc.WithAllocator(opts.Allocator))
	if err != nil {
		return nil, err
	}
	br := &binaryReader{name: name, schema: fr.Schema(), sl: slicer{max: int64(opts.BatchRows)}}
	var project []int
	if len(opts.Columns) > 0 {
		idx, s, err := projection(fr.Schema(), opts.Columns, false)
		if err != nil {
			fr.Close()
			return nil, err
		}
		project, br.schema = idx, s
	}
	i := 0
	br.fetch = func() (arrow.RecordBatch, error) {
		if i >= fr.NumRecords() {
			return nil, io.EOF
		}
		rec, err := fr.RecordBatch(i)
		i++
		if err != nil {
			return nil, err
		}
		if project != nil {
			cols := make([]arrow.Array, len(project))
			for k, j := range project {
				cols[k] = rec.Column(j)
			}
			p := array.NewRecordBatch(br.schema, cols, rec.NumRows())
			rec.Release()
			return p, nil
		}
		return rec, nil
	}
	br.close = func() error {
		fr.Close()
		return f.Close()
	}
	return br, nil
}

// ipcStream reads an Arrow IPC stream; zero-row batches (streamkit control batches) are
// skipped — a file holds data only.
type ipcStream struct {
	schema *arrow.Schema
	r      *ipc.Reader
	sl     slicer
}

func newIPCStream(r io.Reader, opts Options) (*ipcStream, error) {
	ir, err := ipc.NewReader(r, ipc.WithAllocator(opts.Allocator))
	if err != nil {
		return nil, err
	}
	return &ipcStream{schema: ir.Schema(), r: ir, sl: slicer{max: int64(opts.BatchRows)}}, nil
}

func (s *ipcStream) next() (arrow.RecordBatch, []int64, []int64, error) {
	for {
		if rec := s.sl.take(); rec != nil {
			if rec.NumRows() == 0 {
				rec.Release()
				continue
			}
			return rec, nil, nil, nil
		}
		if !s.r.Next() {
			if err := s.r.Err(); err != nil && err != io.EOF {
				return nil, nil, nil, err
			}
			return nil, nil, nil, io.EOF
		}
		rec := s.r.RecordBatch()
		rec.Retain()
		s.sl.set(rec)
	}
}

func (s *ipcStream) release() {
	s.sl.release()
	s.r.Release()
}
