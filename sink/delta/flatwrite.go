package delta

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The flat path: when no data column is nested, a data file is written with arrow-go's
// file.Writer directly, one column chunk after the other, instead of through
// pqarrow.FileWriter. The columns are the same; what differs is how a pre-encoded dictionary
// column goes in. pqarrow's writeDictionaryArrow computes the chunk's Parquet statistics
// from the dictionary values its indices reference, found with a hash-based unique kernel
// over all indices (about a third of the CPU time once the dictionary was built here); the
// dictionaries built by dictEncode hold exactly the values of the chunk, so their statistics
// are those of the whole dictionary, computed without looking at the indices. Everything
// else is pqarrow's own code: the dictionary goes into the column's dictionary encoder
// (PutDictionary, as pqarrow does), the indices through ColumnChunkWriter.WriteDictIndices,
// and dense columns through pqarrow.WriteArrowToColumn.

// isFlat reports whether no field of sc is nested (struct, list, map).
func isFlat(sc *arrow.Schema) bool {
	for _, f := range sc.Fields() {
		if _, nested := f.Type.(arrow.NestedType); nested {
			return false
		}
	}
	return true
}

// dictPutter is the part of arrow-go's dictionary encoders (parquet/internal/encoding) that
// seeds the dictionary from an Arrow array.
type dictPutter interface {
	PutDictionary(values arrow.Array) error
	NumEntries() int
}

// colScratch holds one data column's buffers between row groups.
type colScratch struct {
	indices   []int32         // dictionary indices (dictEncode)
	defLevels []int16         // definition levels of the flat path
	arrCtx    context.Context // pqarrow write context (its buffers are per column)
}

// parallelColumnRows is the smallest row group whose columns are encoded concurrently.
const parallelColumnRows = 1 << 16

// flushFlat writes the pending row group of a flat schema. A large row group's columns are
// encoded concurrently into a buffered row group (arrow-go's column writers of one row group
// share no state; each column has its own scratch and statistics), which arrow-go then writes
// out in column order: encoding is CPU-bound, and a lane's last row group of an epoch would
// otherwise keep one core busy while the others wait for it.
func (w *DataWriter) flushFlat(of *openFile) error {
	fields := w.dataSch.Fields()
	if len(fields) < 2 || of.rgRows < parallelColumnRows || runtime.GOMAXPROCS(0) < 2 {
		rgw, err := of.pw.AppendRowGroupChecked()
		if err != nil {
			return err
		}
		for j := range fields {
			cw, err := rgw.NextColumn()
			if err == nil {
				err = w.flushFlatColumn(of, cw, j)
			}
			if err != nil {
				return err
			}
		}
		return rgw.Close()
	}
	rgw := of.pw.AppendBufferedRowGroup()
	cws := make([]file.ColumnChunkWriter, len(fields))
	for j := range fields {
		var err error
		if cws[j], err = rgw.Column(j); err != nil {
			return err
		}
	}
	errs := make([]error, len(fields))
	var wg sync.WaitGroup
	for j := range fields {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[j] = w.flushFlatColumn(of, cws[j], j)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return rgw.Close()
}

// flushFlatColumn writes data column j of the pending row group into cw.
func (w *DataWriter) flushFlatColumn(of *openFile, cw file.ColumnChunkWriter, j int) error {
	f := w.dataSch.Field(j)
	sc := &w.scratch[j]
	chunks, dict := w.columnWith(of, j, &sc.indices)
	if dict != nil {
		defer dict.Release()
	}
	var def []int16
	if f.Nullable {
		def = sc.definitionLevels(chunks, int(of.rgRows))
	}
	if sc.arrCtx == nil {
		sc.arrCtx = pqarrow.NewArrowWriteContext(context.Background(), &w.arrProps)
	}
	if err := writeFlatColumn(sc.arrCtx, cw, f, chunks, dict, def); err != nil {
		return fmt.Errorf("column %s: %w", f.Name, err)
	}
	return nil
}

// definitionLevels returns the Parquet definition levels of a nullable flat column made of
// chunks (1 = value, 0 = null) in a scratch slice valid until the next call.
func (sc *colScratch) definitionLevels(chunks []arrow.Array, rows int) []int16 {
	if cap(sc.defLevels) < rows {
		sc.defLevels = make([]int16, rows)
	}
	def := sc.defLevels[:rows]
	pos := 0
	for _, c := range chunks {
		out := def[pos : pos+c.Len()]
		if c.NullN() == 0 {
			for i := range out {
				out[i] = 1
			}
		} else {
			for i := range out {
				out[i] = 0
				if c.IsValid(i) {
					out[i] = 1
				}
			}
		}
		pos += c.Len()
	}
	return def
}

// writeFlatColumn writes one column chunk: the dictionary-encoded column d when there is one
// (pqarrow's path for it when the column writer is not dictionary-encoding), else the chunks
// through pqarrow.
func writeFlatColumn(arrCtx context.Context, cw file.ColumnChunkWriter, f arrow.Field, chunks []arrow.Array, d *array.Dictionary, def []int16) error {
	if d != nil {
		enc, ok := cw.CurrentEncoder().(dictPutter)
		if !ok || cw.CurrentEncoder().Encoding() != parquet.Encodings.PlainDict || enc.NumEntries() != 0 {
			return pqarrow.WriteArrowToColumn(arrCtx, cw, d, def, nil, f.Nullable)
		}
		dict := d.Dictionary()
		if err := enc.PutDictionary(dict); err != nil {
			return err
		}
		if enc.NumEntries() != dict.Len() {
			return fmt.Errorf("dictionary of %d values became %d entries", dict.Len(), enc.NumEntries())
		}
		if st := cw.PageStatistics(); st != nil {
			if err := dictionaryStats(st, d); err != nil {
				return err
			}
		}
		return cw.WriteDictIndices(d.Indices(), def, nil)
	}
	pos := 0
	for _, c := range chunks {
		var d []int16
		if def != nil {
			d = def[pos : pos+c.Len()]
		}
		if err := pqarrow.WriteArrowToColumn(arrCtx, cw, c, d, nil, f.Nullable); err != nil {
			return err
		}
		pos += c.Len()
	}
	return nil
}

// dictionaryStats folds the dictionary-encoded column d into Parquet statistics st: counts
// from d, min/max from its dictionary (every value of which occurs in d). Byte arrays go
// through Update, not UpdateFromArrow, which skips empty values (arrow-go v18.8.0) and
// would record a min above "".
func dictionaryStats(st metadata.TypedStatistics, d *array.Dictionary) error {
	dict := d.Dictionary()
	st.IncNulls(int64(d.NullN()))
	st.IncNumValues(int64(d.Len()-d.NullN()) - int64(dict.Len())) // Update counts dict's values
	switch s := st.(type) {
	case *metadata.ByteArrayStatistics:
		offs := dict.(interface{ ValueOffsets() []int32 }).ValueOffsets()
		var data []byte
		if b := dict.Data().Buffers()[2]; b != nil {
			data = b.Bytes()
		}
		vals := make([]parquet.ByteArray, dict.Len())
		for i := range vals {
			vals[i] = data[offs[i]:offs[i+1]]
		}
		s.Update(vals, 0)
	case *metadata.Int64Statistics:
		s.Update(dict.(*array.Int64).Int64Values(), 0)
	default:
		return fmt.Errorf("dictionary statistics of %s columns", dict.DataType())
	}
	return nil
}
