package delta

import (
	"fmt"

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

// flushFlat writes the pending row group of a flat schema.
func (w *DataWriter) flushFlat(of *openFile) error {
	rgw, err := of.pw.AppendRowGroupChecked()
	if err != nil {
		return err
	}
	rows := int(of.rgRows)
	for j, f := range w.dataSch.Fields() {
		chunks, dict, plain := w.column(of, j)
		cw, err := rgw.NextColumn()
		if err == nil {
			var def []int16
			if f.Nullable {
				def = w.definitionLevels(chunks, rows)
			}
			if plain {
				// The column's dictionary outgrew the page size limit here already:
				// arrow-go's encoder would build it again, value by value, up to that
				// limit before falling back to plain (for unique strings a fifth of the
				// writer's CPU).
				cw.FallbackToPlain()
			}
			err = w.writeFlatColumn(cw, f, chunks, dict, def)
		}
		if dict != nil {
			dict.Release()
		}
		if err != nil {
			return fmt.Errorf("column %s: %w", f.Name, err)
		}
	}
	return rgw.Close()
}

// definitionLevels returns the Parquet definition levels of a nullable flat column made of
// chunks (1 = value, 0 = null) in a scratch slice valid until the next call.
func (w *DataWriter) definitionLevels(chunks []arrow.Array, rows int) []int16 {
	if cap(w.defLevels) < rows {
		w.defLevels = make([]int16, rows)
	}
	def := w.defLevels[:rows]
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
func (w *DataWriter) writeFlatColumn(cw file.ColumnChunkWriter, f arrow.Field, chunks []arrow.Array, d *array.Dictionary, def []int16) error {
	if d != nil {
		enc, ok := cw.CurrentEncoder().(dictPutter)
		if !ok || cw.CurrentEncoder().Encoding() != parquet.Encodings.PlainDict || enc.NumEntries() != 0 {
			return pqarrow.WriteArrowToColumn(w.arrCtx, cw, d, def, nil, f.Nullable)
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
		if err := pqarrow.WriteArrowToColumn(w.arrCtx, cw, c, d, nil, f.Nullable); err != nil {
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
