package delta

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/google/uuid"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/storage"
)

// Default sizes of the data writer.
const (
	DefaultTargetFileSize = 128 << 20 // bytes of Parquet per data file before rolling
	// DefaultRowGroupSize is the Arrow bytes collected per row group. A row group is encoded
	// column by column from the collected batches; at 8 MiB they stay in the CPU's last-level
	// cache for all its columns. 32 MiB (before 2026-11-30) cost 47% more CPU per row on the
	// flights data (3M rows, one writer: 475 -> 322 ms), faulted in twice the memory, and
	// wrote 1.2% larger files.
	DefaultRowGroupSize = 8 << 20
	// MaxRowGroupRows caps the rows of a Parquet row group (as arrow-rs/delta-rs: 1Mi).
	MaxRowGroupRows = 1 << 20
)

// WriterOptions configure a DataWriter. Zero values give the defaults.
type WriterOptions struct {
	// TargetFileSize is the approximate size in bytes at which a data file is closed and the
	// next one started (per partition); default DefaultTargetFileSize (128 MiB).
	TargetFileSize int64
	// RowGroupSize bounds the Arrow bytes collected in memory per open file before they are
	// written as one Parquet row group (also cut at MaxRowGroupRows rows); default
	// DefaultRowGroupSize (8 MiB). Memory use is about RowGroupSize × open partitions.
	RowGroupSize int64
	// Compression is "snappy" (default), "zstd", "gzip" or "uncompressed".
	Compression string
	// TruncateTimestamps allows dropping sub-microsecond digits of nanosecond timestamps
	// (Delta stores microseconds); without it such values are an error.
	TruncateTimestamps bool
	// Allocator allocates Arrow and Parquet buffers; default memory.DefaultAllocator.
	Allocator memory.Allocator
	// Now stamps add.modificationTime; default time.Now.
	Now func() time.Time
	// Context bounds the store calls (creating, uploading and removing data files); default
	// context.Background().
	Context context.Context
}

// DataWriter streams Arrow record batches into the Parquet data files of one table (one
// transaction's worth). It is not safe for concurrent use.
//
// Input batches are conformed to the table schema (columns by name; see [FromArrowSchema] for
// the accepted types), split by partition values into Hive-style directories (partition
// columns are not stored in data files), collected per open file into row groups of at most
// RowGroupSize Arrow bytes and MaxRowGroupRows rows, and written through pqarrow column by
// column (timestamps as INT64 TIMESTAMP(MICROS), 3-level lists; int64, timestamp, string and
// binary columns dictionary-encoded by the writer itself, see dictEncode). Statistics are
// exact and computed from the written values.
type DataWriter struct {
	store     storage.Store
	root      string // the store's location, for messages
	partCols  []string
	partKeys  []string      // the partition values' keys: partCols, or their physical names under column mapping
	partIdx   []int         // partition column indices in the table schema
	dataIdx   []int         // data column indices in the table schema
	dataSch   *arrow.Schema // the data columns as stored in files (physical names and field ids under column mapping)
	logSch    *arrow.Schema // the data columns by display name (dataSch without column mapping)
	retype    []bool        // per data column: its display type names nested fields otherwise than dataSch
	conf      conformer
	dataConf  *conformer // for WritePartition: conforms to logSch
	mem       memory.Allocator
	opts      WriterOptions
	props     *parquet.WriterProperties
	arrProps  pqarrow.ArrowWriterProperties
	flat      *schema.Schema  // the Parquet schema when every data column is flat, else nil
	arrCtx    context.Context // pqarrow write context (arrProps) of the flat path
	defLevels []int16         // scratch definition levels of the flat path
	indices   []int32         // scratch dictionary indices (dictEncode)
	ratio     float64         // Parquet bytes per Arrow byte of the last row group; 0 = none yet
	codecName string
	numIdx    int
	prefix    string
	seq       int
	open      map[string]*openFile
	order     []string // open keys in opening order
	adds      []delta.Add
	written   []string // names of the files closed so far (for Abort)
	closed    bool
}

type openFile struct {
	relDir  string // on-disk relative directory ("" for the root)
	relPath string // on-disk relative path
	values  map[string]*string
	f       countingWriter      // the store's streamed write of the file
	bw      *bufio.Writer       // buffers the Parquet writer's small writes into f
	fw      *pqarrow.FileWriter // nested data columns: pqarrow writes the file
	pw      *file.Writer        // flat data columns: column chunks are written by flushFlat
	stats   *statsCollector
	rows    int64
	pending []arrow.RecordBatch // the batches of the row group being collected (retained)
	rgRows  int64               // rows in pending
	rgBytes int64               // Arrow bytes in pending
}

// NewDataWriter prepares a writer of data files for a table with metadata meta (from a
// Snapshot or NewTableMetadata) whose root is store s (delta.Table.Store: a local directory or
// a bucket prefix). Files are created lazily on the first row of each partition, as streamed
// writes of the store (storage.Store.Create): on a local disk the final name is created
// O_EXCL and fsynced with its directory at close; on a bucket the object is uploaded at close.
func NewDataWriter(s storage.Store, meta *delta.Metadata, opts WriterOptions) (*DataWriter, error) {
	root := s.Location()
	schema, err := meta.Schema()
	if err != nil {
		return nil, fmt.Errorf("new data writer %s: %w", root, err)
	}
	target, err := schema.ToArrow()
	if err != nil {
		return nil, fmt.Errorf("new data writer %s: %w", root, err)
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	if opts.TargetFileSize <= 0 {
		opts.TargetFileSize = DefaultTargetFileSize
	}
	if opts.RowGroupSize <= 0 {
		opts.RowGroupSize = DefaultRowGroupSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Context == nil {
		opts.Context = context.Background()
	}
	var codec compress.Compression
	name := strings.ToLower(opts.Compression)
	switch name {
	case "", "snappy":
		codec, name = compress.Codecs.Snappy, "snappy"
	case "zstd":
		codec = compress.Codecs.Zstd
	case "gzip":
		codec = compress.Codecs.Gzip
	case "uncompressed", "none":
		codec, name = compress.Codecs.Uncompressed, ""
	default:
		return nil, fmt.Errorf("new data writer %s: compression %q: want snappy, zstd, gzip or uncompressed", root, opts.Compression)
	}
	w := &DataWriter{store: s, root: root, partCols: meta.PartitionColumns, mem: opts.Allocator, opts: opts,
		codecName: name, numIdx: meta.NumIndexedCols(), prefix: uuid.NewString(),
		open: map[string]*openFile{}}
	w.conf = conformer{mem: opts.Allocator, target: target, truncate: opts.TruncateTimestamps}
	isPart := map[string]int{}
	for i, c := range meta.PartitionColumns {
		isPart[c] = i
	}
	w.partIdx = make([]int, len(meta.PartitionColumns))
	// Under column mapping data files, partition values and statistics use physical names,
	// and the Parquet schema carries the column ids as field ids (PROTOCOL.md "Writer
	// Requirements for Column Mapping"), and list elements and map keys and values their nested
	// ids (IcebergCompatV2).
	mode := meta.ColumnMapping()
	physical, err := schema.DataFileArrow(mode)
	if err != nil {
		return nil, fmt.Errorf("new data writer %s: %w", root, err)
	}
	for _, c := range meta.PartitionColumns {
		w.partKeys = append(w.partKeys, schema.PhysicalColumn(mode, c))
	}
	var dataFields, logFields []arrow.Field
	for i, f := range target.Fields() {
		if pi, ok := isPart[f.Name]; ok {
			w.partIdx[pi] = i
			delete(isPart, f.Name)
			continue
		}
		w.dataIdx = append(w.dataIdx, i)
		logFields = append(logFields, f)
		dataFields = append(dataFields, physical.Field(i))
		w.retype = append(w.retype, !arrow.TypeEqual(f.Type, physical.Field(i).Type))
	}
	for c := range isPart {
		return nil, fmt.Errorf("new data writer %s: partition column %q is not in the schema", root, c)
	}
	w.dataSch, w.logSch = arrow.NewSchema(dataFields, nil), nil
	if mode.Mapped() {
		w.logSch = arrow.NewSchema(logFields, nil)
	} else {
		w.logSch = w.dataSch
	}
	w.props = parquet.NewWriterProperties(
		parquet.WithCompression(codec),
		parquet.WithAllocator(opts.Allocator),
		parquet.WithCreatedBy("streamkit"),
		parquet.WithMaxRowGroupLength(MaxRowGroupRows),
		parquet.WithDataPageVersion(parquet.DataPageV1),
		// Encode 64Ki values per call instead of 1Ki: about 10% less CPU per row; a data page
		// may then exceed the 1 MiB page size by up to one batch.
		parquet.WithBatchSize(64<<10),
	)
	w.arrProps = pqarrow.NewArrowWriterProperties(
		pqarrow.WithAllocator(opts.Allocator),
		pqarrow.WithCoerceTimestamps(arrow.Microsecond),
		pqarrow.WithTruncatedTimestamps(opts.TruncateTimestamps),
	)
	if isFlat(w.dataSch) {
		if w.flat, err = pqarrow.ToParquet(w.dataSch, w.props, w.arrProps); err != nil {
			return nil, fmt.Errorf("new data writer %s: %w", root, err)
		}
		w.arrCtx = pqarrow.NewArrowWriteContext(context.Background(), &w.arrProps)
	}
	return w, nil
}

// Write appends the rows of rec. rec's buffers are referenced (retained, never modified) until
// the row group they belong to is written; the caller may release rec at once. On error the
// writer should be aborted.
func (w *DataWriter) Write(rec arrow.RecordBatch) error {
	if w.closed {
		return errors.New("write data: writer is closed")
	}
	if rec.NumRows() == 0 {
		return nil
	}
	conformed, err := w.conf.record(rec)
	if err != nil {
		return fmt.Errorf("write data %s: %w", w.root, err)
	}
	defer conformed.Release()
	if len(w.partCols) == 0 {
		data := w.project(conformed)
		defer data.Release()
		return w.writeTo("", nil, data, codec.BatchBytes(data))
	}
	// Group rows by partition values.
	n := int(conformed.NumRows())
	type group struct {
		values map[string]*string
		rows   []int32
	}
	groups := map[string]*group{}
	var keys []string
	runs := 0
	prev := ""
	var kb strings.Builder
	for i := 0; i < n; i++ {
		kb.Reset()
		vals := make([]*string, len(w.partIdx))
		for j, ci := range w.partIdx {
			v, err := partitionValue(conformed.Column(ci), i)
			if err != nil {
				return fmt.Errorf("write data %s: partition column %s: %w", w.root, w.partCols[j], err)
			}
			vals[j] = v
			if v == nil {
				kb.WriteByte(0)
			} else {
				kb.WriteByte(1)
				kb.WriteString(*v)
			}
			kb.WriteByte(0xff)
		}
		key := kb.String()
		g := groups[key]
		if g == nil {
			m := make(map[string]*string, len(vals))
			for j, c := range w.partKeys {
				m[c] = vals[j]
			}
			g = &group{values: m}
			groups[key] = g
			keys = append(keys, key)
		}
		g.rows = append(g.rows, int32(i))
		if i == 0 || key != prev {
			runs++
		}
		prev = key
	}
	data := w.project(conformed)
	defer data.Release()
	total := codec.BatchBytes(data)
	if len(groups) == 1 {
		g := groups[keys[0]]
		return w.writeTo(PartitionDir(w.partKeys, g.values), g.values, data, total)
	}
	for _, key := range keys {
		g := groups[key]
		var sub arrow.RecordBatch
		if runs == len(groups) { // each partition is one contiguous run: slice, no copy
			sub = data.NewSlice(int64(g.rows[0]), int64(g.rows[len(g.rows)-1])+1)
		} else {
			sub, err = w.take(data, g.rows)
			if err != nil {
				return fmt.Errorf("write data %s: %w", w.root, err)
			}
		}
		err := w.writeTo(PartitionDir(w.partKeys, g.values), g.values, sub, total*int64(len(g.rows))/int64(n))
		sub.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// WritePartition appends the rows of rec, which holds only data columns (partition columns
// absent), to the partition whose logged partition values (as in add.partitionValues: column,
// or its physical name under column mapping → serialized string, nil = null) are values. The values are kept byte for byte, so files
// rewritten by a compaction (streamkit delta optimize) keep the partition values another writer
// logged. rec is borrowed. Errors name the column that does not fit the table schema.
func (w *DataWriter) WritePartition(values map[string]*string, rec arrow.RecordBatch) error {
	if w.closed {
		return errors.New("write data: writer is closed")
	}
	if rec.NumRows() == 0 {
		return nil
	}
	if w.dataConf == nil {
		w.dataConf = &conformer{mem: w.mem, target: w.logSch, truncate: w.opts.TruncateTimestamps}
	}
	for i, c := range w.partKeys {
		if _, ok := values[c]; !ok {
			return fmt.Errorf("write data %s: partition value of column %s missing", w.root, w.partCols[i])
		}
	}
	conformed, err := w.dataConf.record(rec)
	if err != nil {
		return fmt.Errorf("write data %s: %w", w.root, err)
	}
	data := conformed
	if w.logSch != w.dataSch {
		data = w.physicalRecord(conformed, nil)
		conformed.Release()
	}
	defer data.Release()
	pv := make(map[string]*string, len(w.partKeys))
	for _, c := range w.partKeys {
		pv[c] = values[c]
	}
	if len(w.partCols) == 0 {
		pv = nil
	}
	return w.writeTo(PartitionDir(w.partKeys, pv), pv, data, codec.BatchBytes(data))
}

// project drops the partition columns.
func (w *DataWriter) project(rec arrow.RecordBatch) arrow.RecordBatch {
	if w.logSch != w.dataSch {
		return w.physicalRecord(rec, w.dataIdx)
	}
	cols := make([]arrow.Array, len(w.dataIdx))
	for i, ci := range w.dataIdx {
		cols[i] = rec.Column(ci)
	}
	return array.NewRecordBatch(w.dataSch, cols, rec.NumRows())
}

// physicalRecord returns the data columns of rec (at indices idx, or all when nil) as a
// record of dataSch, whose nested fields carry physical names: the buffers are shared
// (codec.Retype), nothing is copied.
func (w *DataWriter) physicalRecord(rec arrow.RecordBatch, idx []int) arrow.RecordBatch {
	cols := make([]arrow.Array, w.dataSch.NumFields())
	var made []arrow.Array
	for i := range cols {
		ci := i
		if idx != nil {
			ci = idx[i]
		}
		cols[i] = rec.Column(ci)
		if w.retype[i] {
			d := codec.Retype(cols[i].Data(), w.dataSch.Field(i).Type)
			cols[i] = array.MakeFromData(d)
			d.Release()
			made = append(made, cols[i])
		}
	}
	out := array.NewRecordBatch(w.dataSch, cols, rec.NumRows())
	for _, c := range made {
		c.Release()
	}
	return out
}

func (w *DataWriter) take(rec arrow.RecordBatch, rows []int32) (arrow.RecordBatch, error) {
	ib := array.NewInt32Builder(w.mem)
	ib.AppendValues(rows, nil)
	idx := ib.NewArray()
	ib.Release()
	defer idx.Release()
	ctx := compute.WithAllocator(context.Background(), w.mem)
	cols := make([]arrow.Array, rec.NumCols())
	for i := range cols {
		c, err := compute.TakeArray(ctx, rec.Column(i), idx)
		if err != nil {
			for _, p := range cols[:i] {
				p.Release()
			}
			return nil, err
		}
		cols[i] = c
	}
	out := array.NewRecordBatch(w.dataSch, cols, int64(len(rows)))
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// writeTo appends data (of about arrowBytes in memory) to the open file of partition relDir.
// A row group is flushed when its Arrow input reaches RowGroupSize; the file is closed when
// its flushed bytes plus the estimated encoded size of the pending row group reach
// TargetFileSize.
func (w *DataWriter) writeTo(relDir string, values map[string]*string, data arrow.RecordBatch, arrowBytes int64) error {
	of := w.open[relDir]
	if of == nil {
		var err error
		if of, err = w.openFile(relDir, values); err != nil {
			return fmt.Errorf("write data %s: %w", w.root, err)
		}
	}
	of.rows += data.NumRows()
	n := data.NumRows()
	for off := int64(0); off < n; {
		// Cut the batch where the row group reaches MaxRowGroupRows. The slices share (and
		// retain) data's buffers until the row group is written.
		take := min(n-off, MaxRowGroupRows-of.rgRows)
		part := data.NewSlice(off, off+take)
		share := arrowBytes * take / n
		if held := codec.BatchBytes(part); held > 2*share+64<<10 {
			// A small slice of large buffers (a partition's rows, the head of a batch cut at
			// a row group): keep a copy, so a file that gets few rows from each batch does
			// not hold on to all of them.
			c, err := w.compact(part)
			part.Release()
			if err != nil {
				return fmt.Errorf("write data %s: %w", of.relPath, err)
			}
			part = c
		}
		of.pending = append(of.pending, part)
		of.rgRows += take
		of.rgBytes += share
		off += take
		if of.rgBytes >= w.opts.RowGroupSize || of.rgRows >= MaxRowGroupRows {
			if err := w.flushRowGroup(of); err != nil {
				return err
			}
		}
	}
	if w.ratio == 0 && of.bytesWritten()+of.rgBytes >= w.opts.TargetFileSize {
		// The encoded size of the collected rows is not known before a row group was
		// written (flights: 1/7 of the Arrow size): write one to measure it rather than
		// close a file far below the target.
		if err := w.flushRowGroup(of); err != nil {
			return err
		}
	}
	if of.bytesWritten()+int64(float64(of.rgBytes)*w.ratio) >= w.opts.TargetFileSize {
		return w.closeFile(relDir)
	}
	return nil
}

// hasEmptyValue reports whether dict, a string or binary array without nulls, holds "".
func hasEmptyValue(dict arrow.Array) bool {
	o, ok := dict.(interface{ ValueOffsets() []int32 })
	if !ok {
		return false
	}
	offs := o.ValueOffsets()
	for i := 1; i < len(offs); i++ {
		if offs[i] == offs[i-1] {
			return true
		}
	}
	return false
}

// compact copies rec into buffers of its own size.
func (w *DataWriter) compact(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	for i := range cols {
		c, err := array.Concatenate([]arrow.Array{rec.Column(i)}, w.mem)
		if err != nil {
			for _, p := range cols[:i] {
				p.Release()
			}
			return nil, err
		}
		cols[i] = c
	}
	out := array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// flushRowGroup writes the collected batches of of as one row group, column by column; the
// eligible columns (dictEligible) go in as one dictionary array each (dictEncode).
func (w *DataWriter) flushRowGroup(of *openFile) error {
	if len(of.pending) == 0 {
		return nil
	}
	defer func() {
		for _, b := range of.pending {
			b.Release()
		}
		of.pending, of.rgRows, of.rgBytes = of.pending[:0], 0, 0
	}()
	before := of.bytesWritten()
	of.stats.numRecords += of.rgRows
	var err error
	if of.pw != nil {
		err = w.flushFlat(of)
	} else {
		err = w.flushArrow(of)
	}
	if err != nil {
		return fmt.Errorf("write data %s: %w", of.relPath, err)
	}
	if of.rgBytes > 0 {
		w.ratio = float64(of.bytesWritten()-before) / float64(of.rgBytes)
	}
	return nil
}

// column returns column j of the pending row group of of: its chunks, and when the column is
// dictionary-encoded (dictEligible, dictionary enabled, small enough) also the whole column
// as one dictionary array (the caller releases it). plain reports a column that was eligible
// but whose dictionary outgrew the dictionary page size limit: it is to be written plain. The
// column is folded into the file's statistics, from the dictionary when there is one (the
// same values, each once).
func (w *DataWriter) column(of *openFile, j int) (chunks []arrow.Array, dict *array.Dictionary, plain bool) {
	chunks = make([]arrow.Array, len(of.pending))
	for i, b := range of.pending {
		chunks[i] = b.Column(j)
	}
	f := w.dataSch.Field(j)
	if dictEligible(f.Type) && w.props.DictionaryEnabledFor(f.Name) {
		if enc := dictEncode(chunks, int(of.rgRows), w.props.DictionaryPageSizeLimit(), &w.indices); enc != nil {
			d := enc.(*array.Dictionary)
			of.stats.updateDictionary(j, d.Dictionary(), int64(d.NullN()))
			return chunks, d, false
		}
		plain = true
	}
	for _, c := range chunks {
		of.stats.updateColumn(j, c)
	}
	return chunks, nil, plain
}

// flushArrow writes the pending row group through pqarrow (any schema). A dictionary holding
// an empty string or binary goes in dense: pqarrow computes the statistics of dictionary
// arrays with UpdateFromArrow, which skips empty values (arrow-go v18.8.0), so the chunk's min
// would be above "".
func (w *DataWriter) flushArrow(of *openFile) error {
	if err := of.fw.NewRowGroupChecked(); err != nil {
		return err
	}
	for j, f := range w.dataSch.Fields() {
		chunks, dict, _ := w.column(of, j)
		var col *arrow.Chunked
		if dict != nil && !hasEmptyValue(dict.Dictionary()) {
			col = arrow.NewChunked(dict.DataType(), []arrow.Array{dict})
		}
		if dict != nil {
			dict.Release()
		}
		if col == nil {
			col = arrow.NewChunked(f.Type, chunks)
		}
		err := of.fw.WriteColumnChunked(col, 0, of.rgRows)
		col.Release()
		if err != nil {
			return fmt.Errorf("column %s: %w", f.Name, err)
		}
	}
	return nil
}

func (w *DataWriter) openFile(relDir string, values map[string]*string) (*openFile, error) {
	name := fmt.Sprintf("part-%05d-%s.c000", w.seq, w.prefix)
	w.seq++
	if w.codecName != "" {
		name += "." + w.codecName
	}
	name += ".parquet"
	rel := name
	if relDir != "" {
		rel = relDir + "/" + name
	}
	f, err := w.store.Create(w.opts.Context, rel)
	if err != nil {
		return nil, err
	}
	of := &openFile{relDir: relDir, relPath: rel, values: values, f: countingWriter{w: f},
		stats: newStatsCollector(w.dataSch, w.numIdx)}
	of.bw = bufio.NewWriterSize(&of.f, 1<<20)
	if w.flat != nil {
		of.pw, err = file.NewParquetWriterWithError(of.bw, w.flat.Root(), file.WithWriterProps(w.props))
	} else {
		of.fw, err = pqarrow.NewFileWriter(w.dataSch, of.bw, w.props, w.arrProps)
	}
	if err != nil {
		f.Abort()
		return nil, err
	}
	w.open[relDir] = of
	w.order = append(w.order, relDir)
	return of, nil
}

// countingWriter is a store Writer that counts the bytes written (add.size).
type countingWriter struct {
	w storage.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (w *DataWriter) closeFile(relDir string) error {
	of := w.open[relDir]
	delete(w.open, relDir)
	for i, k := range w.order {
		if k == relDir {
			w.order = append(w.order[:i], w.order[i+1:]...)
			break
		}
	}
	err := w.flushRowGroup(of)
	if cerr := of.closeParquet(); err == nil {
		err = cerr
	}
	if err == nil {
		err = of.bw.Flush()
	}
	if err == nil {
		err = of.f.w.Close()
	}
	if err != nil {
		of.f.w.Abort()
		return fmt.Errorf("write data %s: %w", of.relPath, err)
	}
	w.written = append(w.written, of.relPath)
	size := of.f.n
	pv := of.values
	if pv == nil {
		pv = map[string]*string{}
	}
	w.adds = append(w.adds, delta.Add{
		Path:             delta.EncodePath(of.relPath),
		PartitionValues:  pv,
		Size:             size,
		ModificationTime: w.opts.Now().UnixMilli(),
		DataChange:       true,
		Stats:            of.stats.json(w.dataSch),
	})
	return nil
}

// Close flushes and closes every open file and returns one add action per data file
// (dataChange true, exact stats). Each file is durable when Close returns (on a local disk the
// file and the directories that gained entries are fsynced), but no file is visible in the
// table until the adds are committed.
func (w *DataWriter) Close() ([]delta.Add, error) {
	if w.closed {
		return w.adds, nil
	}
	w.closed = true
	for len(w.order) > 0 {
		if err := w.closeFile(w.order[0]); err != nil {
			return nil, err
		}
	}
	return w.adds, nil
}

// Abort closes the writer and deletes every data file it created (uncommitted files are
// invisible to readers anyway; this only saves space).
func (w *DataWriter) Abort() error {
	w.closed = true
	for _, of := range w.open {
		for _, b := range of.pending {
			b.Release()
		}
		of.pending = nil
		of.closeParquet()
		of.f.w.Abort()
	}
	w.open = map[string]*openFile{}
	w.order = nil
	var first error
	for _, p := range w.written {
		if err := w.store.Remove(w.opts.Context, p); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Files returns the add actions of the files closed so far (rolled files).
func (w *DataWriter) Files() []delta.Add { return w.adds }

// bytesWritten is the size of the Parquet data written so far (completed row groups).
func (of *openFile) bytesWritten() int64 {
	if of.pw != nil {
		return of.pw.TotalBytesWritten()
	}
	return of.fw.TotalBytesWritten()
}

// closeParquet writes the Parquet footer (into the buffered writer).
func (of *openFile) closeParquet() error {
	if of.pw != nil {
		return of.pw.Close()
	}
	return of.fw.Close()
}
