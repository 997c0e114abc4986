package deltacmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/streamkit/streamkit/codec/int96"
	"github.com/streamkit/streamkit/delta"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	rd "github.com/streamkit/streamkit/source/delta"
	"github.com/streamkit/streamkit/storage"
	"github.com/streamkit/streamkit/tools/cli"
)

// OptimizeOptions configure Optimize.
type OptimizeOptions struct {
	// Where is a predicate on partition columns, in read-delta --where's syntax and semantics
	// (source/delta.Filter); empty: every partition.
	Where string
	// TargetFileSize is the size files are packed up to (default: delta.targetFileSize when
	// numeric, else 128 MiB). Files at least this large are left alone.
	TargetFileSize int64
	// Compression of the new files: snappy (default) or zstd.
	Compression string
	// Mem allocates Arrow buffers (default memory.DefaultAllocator).
	Mem memory.Allocator
	// beforeCommit runs between writing the new files and committing (tests).
	beforeCommit func()
}

// OptimizeResult reports what Optimize did.
type OptimizeResult struct {
	Version           int64 // the OPTIMIZE commit; -1 when nothing needed compacting
	PartitionsTouched int
	FilesRemoved      int
	FilesAdded        int
	BytesRemoved      int64
	BytesAdded        int64
	Rows              int64
}

// Optimize compacts small data files (Delta's OPTIMIZE, bin-packing): in every partition
// selected by opts.Where, files smaller than the target size are packed, smallest first, into
// bins of up to the target size; every bin of two or more files is rewritten as one file (rows
// and partition values unchanged, statistics recomputed). One commit removes the old files and
// adds the new ones, all with dataChange=false, so streaming readers skip it and it never
// conflicts with concurrent blind appends (DELTA.md "Concurrency"); it fails only when another
// writer removed a file being compacted or changed the metadata. Removed files stay on disk
// until `delta vacuum`. A file carrying a deletion vector is always rewritten, whatever its
// size and even alone in its bin, without the rows the vector deletes (as Spark's OPTIMIZE
// purges them); its remove carries the vector, so it is that logical file that leaves. On a
// clustered table (writer feature clustering) only files without a clusteringProvider are
// compacted: the clustered ones keep the layout their clustering gave them, the new files are
// unclustered (no clusteringProvider) for the next clustering run, and the delta.clustering
// domain stays.
//
// The table is rooted at store st (a local directory or a bucket prefix); the new files are
// written through it and the old ones read from it.
func Optimize(ctx context.Context, st storage.Store, opts OptimizeOptions) (*OptimizeResult, error) {
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	tbl := delta.OpenTable(st, opts.Mem)
	tbl.EngineInfo = "streamkit delta optimize"
	s, err := tbl.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("optimize: %w", err)
	}
	if err := s.CheckWrite(); err != nil {
		return nil, fmt.Errorf("optimize: %w", err)
	}
	meta := s.Metadata()
	filter, err := rd.ParseTableFilter(opts.Where, meta)
	if err != nil {
		return nil, usagef("optimize: %v", err)
	}
	target := opts.TargetFileSize
	if target <= 0 {
		if n, err := cli.ParsePositiveSize(meta.Configuration["delta.targetFileSize"]); err == nil {
			target = n
		} else {
			target = deltasink.DefaultTargetFileSize
		}
	}
	// Group the small files by partition.
	partKeys := partitionKeys(meta)
	groups := map[string][]*delta.Add{}
	var keys []string
	clustered := slices.Contains(s.Protocol().WriterFeatures, delta.FeatureClustering)
	for _, a := range s.Files() {
		if a.Size >= target && a.DeletionVector == nil {
			continue
		}
		if clustered && a.ClusteringProvider != nil {
			continue // laid out by the table's clustering (Spark's OPTIMIZE): not ours to undo
		}
		if ok, err := filter.MatchPartitionValues(a.PartitionValues); err != nil {
			return nil, fmt.Errorf("optimize: data file %s: %w", a.Path, err)
		} else if !ok {
			continue
		}
		k := partitionKey(partKeys, a.PartitionValues)
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], a)
	}
	sort.Strings(keys)
	var bins [][]*delta.Add
	for _, k := range keys {
		files := groups[k]
		sort.SliceStable(files, func(i, j int) bool { return files[i].Size < files[j].Size })
		var cur []*delta.Add
		var size int64
		dvs := false // cur holds a file with a deletion vector
		flush := func() {
			if len(cur) >= 2 || dvs {
				bins = append(bins, cur)
			}
			cur, size, dvs = nil, 0, false
		}
		for _, f := range files {
			if len(cur) > 0 && size+f.Size > target {
				flush()
			}
			cur = append(cur, f)
			size += f.Size
			dvs = dvs || f.DeletionVector != nil
		}
		flush()
	}
	res := &OptimizeResult{Version: -1}
	if len(bins) == 0 {
		return res, nil
	}
	touched := map[string]bool{}
	var adds []delta.Add
	var removes []delta.Remove
	var writers []*deltasink.DataWriter
	abort := func() {
		for _, w := range writers {
			w.Abort()
		}
	}
	now := time.Now().UnixMilli()
	ext := true
	var mapped *rd.Reader // column mapping: files are read by physical names or field ids
	if meta.ColumnMapping().Mapped() {
		if mapped, err = mappedReader(st, meta, opts.Mem); err != nil {
			return nil, fmt.Errorf("optimize: %w", err)
		}
		defer mapped.Close()
	}
	for _, bin := range bins {
		w, err := deltasink.NewDataWriter(st, meta, deltasink.WriterOptions{TargetFileSize: 2 * target, Compression: opts.Compression, Allocator: opts.Mem, Context: ctx})
		if err != nil {
			abort()
			return nil, fmt.Errorf("optimize: %w", err)
		}
		writers = append(writers, w)
		for _, f := range bin {
			var n int64
			if mapped != nil {
				n, err = copyMapped(ctx, w, mapped, f)
			} else {
				n, err = copyFile(ctx, w, st, f, meta.PartitionColumns, opts.Mem)
			}
			if err != nil {
				abort()
				return nil, fmt.Errorf("optimize: %s: %w", f.Path, err)
			}
			res.Rows += n
			size := f.Size
			removes = append(removes, delta.Remove{Path: f.Path, DeletionTimestamp: &now, DataChange: false,
				ExtendedFileMetadata: &ext, PartitionValues: f.PartitionValues, Size: &size,
				DeletionVector: f.DeletionVector, BaseRowID: f.BaseRowID, DefaultRowCommitVersion: f.DefaultRowCommitVersion})
			res.BytesRemoved += f.Size
			touched[partitionKey(partKeys, f.PartitionValues)] = true
		}
		out, err := w.Close()
		if err != nil {
			abort()
			return nil, fmt.Errorf("optimize: %w", err)
		}
		for _, a := range out {
			a.DataChange = false
			adds = append(adds, a)
			res.BytesAdded += a.Size
		}
	}
	res.FilesRemoved, res.FilesAdded, res.PartitionsTouched = len(removes), len(adds), len(touched)
	if opts.beforeCommit != nil {
		opts.beforeCommit()
	}
	predicate := "[]"
	if strings.TrimSpace(opts.Where) != "" {
		b, _ := json.Marshal([]string{opts.Where})
		predicate = string(b)
	}
	cr, err := tbl.Commit(ctx, delta.CommitRequest{
		Read: s, Adds: adds, Removes: removes, Operation: "OPTIMIZE",
		OperationParameters: map[string]string{"predicate": predicate, "zOrderBy": "[]", "clusterBy": "[]", "auto": "false"},
		OperationMetrics: map[string]string{
			"numRemovedFiles":        strconv.Itoa(res.FilesRemoved),
			"numAddedFiles":          strconv.Itoa(res.FilesAdded),
			"numRemovedBytes":        strconv.FormatInt(res.BytesRemoved, 10),
			"numAddedBytes":          strconv.FormatInt(res.BytesAdded, 10),
			"numPartitionsOptimized": strconv.Itoa(res.PartitionsTouched),
			"numBins":                strconv.Itoa(len(bins)),
		},
	})
	if err != nil {
		abort()
		var ce *delta.ConflictError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("optimize: %w; run optimize again", err)
		}
		return nil, fmt.Errorf("optimize: %w", err)
	}
	res.Version = cr.Version
	return res, nil
}

// partitionKey renders partition values in column order (for grouping).
func partitionKey(cols []string, values map[string]*string) string {
	var b strings.Builder
	for _, c := range cols {
		if v := values[c]; v == nil || *v == "" {
			b.WriteString("\x00")
		} else {
			b.WriteString("\x01" + *v)
		}
		b.WriteString("\xff")
	}
	return b.String()
}

// copyFile streams the rows of data file f of the table in st into w, in the partition f
// belongs to, less those its deletion vector deletes, and returns the number of rows.
func copyFile(ctx context.Context, w *deltasink.DataWriter, st storage.Store, f *delta.Add, partCols []string, mem memory.Allocator) (int64, error) {
	rel, err := delta.DecodePath(f.Path)
	if err != nil {
		return 0, err
	}
	var dv *roaring64.Bitmap
	if f.DeletionVector != nil {
		if dv, err = delta.ReadDeletionVector(ctx, st, f.DeletionVector, storage.Options{}); err != nil {
			return 0, fmt.Errorf("deletion vector: %w", err)
		}
	}
	var pf *file.Reader
	if root := st.LocalDir(); root != "" {
		pf, err = file.OpenParquetFile(filepath.Join(root, filepath.FromSlash(rel)), false)
	} else {
		// A file being compacted is small (below the target size): one GET of the whole
		// object rather than a ranged GET per column chunk.
		var b []byte
		if b, err = st.ReadFile(ctx, rel); err == nil {
			pf, err = file.NewParquetReader(bytes.NewReader(b))
		}
	}
	if err != nil {
		return 0, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, mem)
	if err != nil {
		return 0, err
	}
	// INT96 timestamps (Spark's) are read straight to µs over years 1 to 9999 (codec/int96),
	// not through pqarrow's nanoseconds. A file Spark wrote in LEGACY rebase mode (or before
	// 3.0/3.1) holds hybrid-Julian readings before 1582-10-15: they are rebased as read-delta
	// reads them, since the rewritten file carries no legacy keys.
	micros := int96.RewriteFields(pf, fr, nil)
	legacy96, legacyDT := int96.SparkLegacyModes(pf.MetaData().KeyValueMetadata())
	rebase96 := int96.LegacyRebase(legacy96)
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	isPart := map[string]bool{}
	for _, c := range partCols {
		isPart[strings.ToLower(c)] = true
	}
	// write writes one batch; some writers also store partition columns in the data files:
	// they are dropped, the partition values of the log win.
	write := func(rec arrow.RecordBatch) error {
		if len(isPart) > 0 {
			var fields []arrow.Field
			var cols []arrow.Array
			for i, fl := range rec.Schema().Fields() {
				if !isPart[strings.ToLower(fl.Name)] {
					fields = append(fields, fl)
					cols = append(cols, rec.Column(i))
				}
			}
			if len(fields) != int(rec.NumCols()) {
				rec = array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
				defer rec.Release()
			}
		}
		return w.WritePartition(f.PartitionValues, rec)
	}
	var rows, pos int64 // pos: the file row of rec's first row
	for rr.Next() {
		rec := rr.RecordBatch()
		if err := micros.Decode(rec, rebase96); err != nil {
			return 0, err
		}
		if legacyDT {
			for i := range fr.Manifest.Fields {
				if err := int96.RebaseLegacyDateTime(pf, &fr.Manifest.Fields[i], rec.Column(i).Data()); err != nil {
					return 0, err
				}
			}
		}
		first := pos
		pos += rec.NumRows()
		if dv != nil {
			kept, err := rd.DropDeletedRows(ctx, mem, rec, dv, first)
			if err != nil {
				return 0, err
			}
			if kept.NumRows() > 0 {
				err = write(kept)
			}
			rows += kept.NumRows()
			kept.Release()
			if err != nil {
				return 0, err
			}
			continue
		}
		if err := write(rec); err != nil {
			return 0, err
		}
		rows += rec.NumRows()
	}
	if err := rr.Err(); err != nil {
		return 0, err
	}
	return rows, nil
}
