package deltacmd

import (
	"context"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/delta"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	rd "github.com/streamkit/streamkit/source/delta"
	"github.com/streamkit/streamkit/storage"
)

// mappedReader reads the data columns of a table with column mapping (mode name or id) by
// display name: its files name columns by physical name or field id, and may hold columns
// dropped since (which a rewrite leaves out) or lack columns added since (null).
func mappedReader(st storage.Store, meta *delta.Metadata, mem memory.Allocator) (*rd.Reader, error) {
	schema, err := meta.Schema()
	if err != nil {
		return nil, err
	}
	var cols []string
	for _, f := range schema.Fields {
		if !slices.Contains(meta.PartitionColumns, f.Name) {
			cols = append(cols, f.Name)
		}
	}
	return rd.NewReader(st, meta, rd.ReadOptions{Columns: cols, Allocator: mem})
}

// copyMapped streams the rows of data file f through r into w, in the partition f belongs
// to, and returns the number of rows.
func copyMapped(ctx context.Context, w *deltasink.DataWriter, r *rd.Reader, f *delta.Add) (int64, error) {
	sc := r.Scan(ctx, []rd.FileRef{{Add: f, End: -1}})
	defer sc.Close()
	var rows int64
	for {
		b, err := sc.Next()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
		if b.Rec == nil {
			continue
		}
		err = w.WritePartition(f.PartitionValues, b.Rec)
		rows += b.Rec.NumRows()
		b.Rec.Release()
		if err != nil {
			return rows, err
		}
	}
}

// partitionKeys returns the keys of the partition values of meta's table: the partition
// columns, by physical name under column mapping.
func partitionKeys(meta *delta.Metadata) []string {
	schema, err := meta.Schema()
	if err != nil {
		return meta.PartitionColumns
	}
	keys := make([]string, len(meta.PartitionColumns))
	for i, c := range meta.PartitionColumns {
		keys[i] = schema.PhysicalColumn(meta.ColumnMapping(), c)
	}
	return keys
}
