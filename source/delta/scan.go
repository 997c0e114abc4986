package delta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/codec/int96"
	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/expr"
	"github.com/streamkit/streamkit/storage"
)

// ReadOptions configure a [Reader]. Zero values give the defaults.
type ReadOptions struct {
	// Columns projects the output to these top-level columns, in this order (partition
	// columns included); names match exactly, else ignoring case. Default: every column of
	// the table, in schema order.
	Columns []string
	// Where skips data files whose partition values do not match (see [Filter]); parse it with
	// [ParseFilter] or pass the text in WhereText. Default: read every file.
	Where *Filter
	// WhereText is parsed against the table's partition columns when Where is nil.
	WhereText string
	// Predicate is a read-delta --where condition ([ParsePredicate]: Spark SQL over any
	// column, or the partition syntax), used when Where and WhereText are not set: the files
	// it rules out ([Reader.Verdict]) are skipped, the rows of the others are filtered (a row
	// whose condition is false or NULL is dropped). Columns it reads that the projection
	// leaves out are read too, for the evaluation only.
	Predicate string
	// BatchRows bounds the rows per output batch; default 65536.
	BatchRows int
	// Workers is the number of goroutines decoding Parquet row groups ahead of the reader
	// (order is preserved); default GOMAXPROCS, at most 8. Memory grows with it: about two
	// batches per worker plus one row group's column chunks.
	Workers int
	// Allocator allocates every Arrow buffer; default memory.DefaultAllocator.
	Allocator memory.Allocator
	// Name names the table in errors; default the store's location.
	Name string
}

// Reader reads the data files of one Delta table into Arrow record batches with the table's
// canonical Arrow schema ([dl.StructType.ToArrow]), projected to the selected columns:
// partition columns are restored from each file's partitionValues (never from directory
// names), columns a file lacks (older files after schema evolution) are null, and types are
// conformed as [conformData] describes. Paths from the log are validated ([resolvePath]);
// files of a local table are opened through an [os.Root] of the table directory (so a
// symlink cannot escape it), files of a bucket table through [storage.Store.Open], whose
// ranged reads are coalesced per work unit (see prefetch.go). A Reader is safe for concurrent
// Scans.
type Reader struct {
	root      string // absolute and clean, or the bucket table's URL
	store     storage.Store
	rt        *os.Root // local tables only
	mem       memory.Allocator
	schema    *arrow.Schema // output schema
	fields    []outField
	dataCols  []outField // output fields stored in data files
	partCols  []string
	partTypes map[string]arrow.DataType
	cm        colmap // column mapping: physical names and ids (colmap.go)
	filter    *Filter
	pred      *Predicate    // a Spark SQL --where (nil: none, or the partition syntax in filter)
	nOut      int           // fields[:nOut] are the output; the rest are read for pred only
	readSc    *arrow.Schema // the schema of fields (schema when nOut == len(fields))
	batchRows int
	workers   int
	bufs      *codec.Recycler // the buffers of batches filtered by deletion vectors, reused
	opened    atomic.Int64    // data files opened (tests: pruning opens none of the skipped ones)
}

type outField struct {
	name string
	dt   arrow.DataType
	part bool
}

// NewReader prepares a reader of the table rooted at store s (delta.Table.Store: a local
// directory or a bucket prefix) whose schema and partitioning are meta's. Errors: a projected
// column the table lacks, a --where that does not parse or names a column that is not a
// partition column, a schema this package cannot map to Arrow, a local root that cannot be
// opened.
func NewReader(s storage.Store, meta *dl.Metadata, opts ReadOptions) (*Reader, error) {
	root := opts.Name
	if root == "" {
		root = s.Location()
	}
	abs := s.LocalDir()
	if abs == "" {
		abs = s.Location()
	}
	st, err := meta.Schema()
	if err != nil {
		return nil, fmt.Errorf("read table %s: %w", root, err)
	}
	full, err := st.ToArrow()
	if err != nil {
		return nil, fmt.Errorf("read table %s: %w", root, err)
	}
	r := &Reader{root: abs, store: s, mem: opts.Allocator, partCols: meta.PartitionColumns, partTypes: map[string]arrow.DataType{},
		batchRows: opts.BatchRows, workers: opts.Workers}
	if r.cm, err = newColmap(st, meta.ColumnMapping()); err != nil {
		return nil, fmt.Errorf("read table %s: %w", root, err)
	}
	if r.mem == nil {
		r.mem = memory.DefaultAllocator
	}
	r.bufs = codec.NewRecycler(r.mem)
	if r.batchRows <= 0 {
		r.batchRows = 64 * 1024
	}
	if r.workers <= 0 {
		r.workers = min(runtime.GOMAXPROCS(0), 8)
	}
	isPart := map[string]bool{}
	for _, c := range meta.PartitionColumns {
		isPart[c] = true
		f, ok := full.FieldsByName(c)
		if !ok {
			return nil, fmt.Errorf("read table %s: partition column %q is not in the schema", root, c)
		}
		r.partTypes[c] = f[0].Type
	}
	var fields []arrow.Field
	if len(opts.Columns) == 0 {
		fields = full.Fields()
	} else {
		seen := map[string]bool{}
		for _, c := range opts.Columns {
			idx := full.FieldIndices(c)
			if len(idx) == 0 {
				for i, f := range full.Fields() {
					if strings.EqualFold(f.Name, c) {
						idx = []int{i}
						break
					}
				}
			}
			if len(idx) == 0 {
				names := make([]string, full.NumFields())
				for i, f := range full.Fields() {
					names[i] = f.Name
				}
				return nil, fmt.Errorf("read table %s: column %q is not in the table (columns: %s)", root, c, strings.Join(names, ", "))
			}
			f := full.Field(idx[0])
			if seen[f.Name] {
				return nil, fmt.Errorf("read table %s: column %q selected twice", root, f.Name)
			}
			seen[f.Name] = true
			fields = append(fields, f)
		}
	}
	for _, f := range fields {
		of := outField{name: f.Name, dt: f.Type, part: isPart[f.Name]}
		r.fields = append(r.fields, of)
		if !of.part {
			r.dataCols = append(r.dataCols, of)
		}
	}
	r.schema = arrow.NewSchema(fields, nil)
	r.filter = opts.Where
	if r.filter == nil && strings.TrimSpace(opts.WhereText) != "" {
		if r.filter, err = ParseFilter(opts.WhereText, r.partCols, r.partTypes); err != nil {
			return nil, err
		}
		r.filter.phys = r.cm.phys
	}
	r.nOut = len(r.fields)
	if r.filter == nil && strings.TrimSpace(opts.WhereText) == "" {
		p, err := ParsePredicate(opts.Predicate, meta)
		if err != nil {
			return nil, err
		}
		if p != nil && p.Partition() != nil {
			r.filter = p.Partition()
		} else if p != nil {
			r.pred = p
			for _, c := range p.Columns() {
				if len(r.schema.FieldIndices(c)) > 0 {
					continue
				}
				f, _ := full.FieldsByName(c)
				of := outField{name: c, dt: f[0].Type, part: isPart[c]}
				r.fields = append(r.fields, of)
				fields = append(fields, f[0])
				if !of.part {
					r.dataCols = append(r.dataCols, of)
				}
			}
		}
	}
	r.readSc = r.schema
	if len(r.fields) > r.nOut {
		r.readSc = arrow.NewSchema(fields, nil)
	}
	if s.LocalDir() != "" {
		if r.rt, err = os.OpenRoot(abs); err != nil {
			return nil, fmt.Errorf("read table %s: %w", root, err)
		}
	}
	return r, nil
}

// Close releases the table directory handle and the buffers kept for reuse.
func (r *Reader) Close() error {
	r.bufs.Release()
	if r.rt == nil {
		return nil
	}
	return r.rt.Close()
}

// Schema is the output schema.
func (r *Reader) Schema() *arrow.Schema { return r.schema }

// Filter returns the partition filter (nil: none).
func (r *Reader) Filter() *Filter { return r.filter }

// CheckPath validates the logged path of a data file (see [resolvePath]).
func (r *Reader) CheckPath(logged string) error {
	_, err := resolvePath(r.root, logged)
	return err
}

// partitionValues parses the partition values of add for the table's partition columns.
func (r *Reader) partitionValues(add *dl.Add) (map[string]value, error) {
	pv := make(map[string]value, len(r.partCols))
	for _, c := range r.partCols {
		v, err := parseValue(r.partTypes[c], lookupPartitionValue(add.PartitionValues, r.cm.key(c)))
		if err != nil {
			return nil, fmt.Errorf("data file %s: partition column %s: %w", add.Path, c, err)
		}
		pv[c] = v
	}
	return pv, nil
}

// lookupPartitionValue returns the serialized value of partition column c in raw (an add
// action's partitionValues): by exact key, else ignoring case, since some writers key
// partition values case-insensitively.
func lookupPartitionValue(raw map[string]*string, c string) *string {
	if v, ok := raw[c]; ok {
		return v
	}
	for k, v := range raw {
		if strings.EqualFold(k, c) {
			return v
		}
	}
	return nil
}

// Match reports whether the file may hold rows that pass the filter or predicate (true
// without one): Verdict is not VerdictNone.
func (r *Reader) Match(add *dl.Add) (bool, error) {
	v, err := r.Verdict(add)
	return v != VerdictNone, err
}

// Verdict says what the file's partition values (and, for a Spark SQL predicate, its
// statistics) prove about the filter or predicate: VerdictAll without one. A partition value
// that does not parse as its column's type is an error.
func (r *Reader) Verdict(add *dl.Add) (Verdict, error) {
	switch {
	case r.filter != nil:
		pv, err := r.partitionValues(add)
		if err != nil {
			return VerdictNone, err
		}
		if r.filter.Match(pv) {
			return VerdictAll, nil
		}
		return VerdictNone, nil
	case r.pred != nil:
		return r.pred.Verdict(add)
	}
	return VerdictAll, nil
}

// Predicate returns the Spark SQL --where condition whose rows the reader filters (nil: none;
// a condition of the partition syntax is the [Reader.Filter]).
func (r *Reader) Predicate() *Predicate { return r.pred }

// FileRef is one data file to scan: its add action and the rows [Start, End) to emit (End < 0:
// to the end of the file). Matched says every row of the file is known to match the
// predicate (VerdictAll), so it is not evaluated; otherwise each batch is filtered by it.
type FileRef struct {
	Add     *dl.Add
	Start   int64
	End     int64
	Matched bool
}

// Batch is one step of a [Scan]: a record batch of File's rows ending just before file row
// Row, or, with Rec nil and Done true, the end of File (every requested row was emitted).
type Batch struct {
	Rec  arrow.RecordBatch
	File int   // index into the scanned refs
	Row  int64 // the file row after the last row of Rec (Done: the row the file ended at)
	Done bool
}

// Scan reads refs in order: every file's batches, then its Done marker. Files are decoded
// ahead by the reader's workers, row group by row group, and delivered in order.
type Scan struct {
	r      *Reader
	ctx    context.Context
	cancel context.CancelFunc
	order  chan *unit
	work   chan *unit
	wg     sync.WaitGroup
	cur    *unit
	err    error
}

// unit is a run of row groups of one file decoded by one worker.
type unit struct {
	file      int
	fc        *fileCtx
	rowGroups []int
	firstRow  int64 // file row of the first row of the first row group
	skip      int64 // rows to skip at the start of the unit
	take      int64 // rows to emit (< 0: all)
	last      bool  // last unit of the file: the consumer emits Done after it
	check     []int // first unit of a file with nested INT96 leaves: the file's row groups to check first
	endRow    int64 // with last: the file row the file ends at
	out       chan rowBatch
	err       error // set before out is closed
}

// rowBatch is a decoded batch and the file row after its last row.
type rowBatch struct {
	rec arrow.RecordBatch
	row int64
}

// fileCtx is an open data file shared by the units that read it.
type fileCtx struct {
	add    *dl.Add
	f      io.Closer
	pre    *prefetcher // bucket files: the coalesced ranges of the units being decoded
	pf     *file.Reader
	fr     *pqarrow.FileReader
	leaves []int                  // leaf columns to read
	cols   []int                  // per data column: index in the record reader's schema, -1 = missing, -2-k = int96[k]
	types  []arrow.DataType       // per data column under column mapping: the type read (nil: the output type)
	int96  []int                  // top-level INT96 leaf columns, read by int96.Column rather than the record reader
	int96N []int                  // INT96 leaves of nested columns int96.MicrosFields could not rewrite (int96.CheckNested)
	micros []int96Nested          // nested columns whose INT96 leaves the record reader hands over raw
	fields []*pqarrow.SchemaField // per record reader column: its manifest field (for int96.RebaseLegacyDateTime)
	legacy bool                   // the file's INT96 values are Julian readings before 1582-10-15 (int96.SparkLegacyModes)
	pv     []value                // per output partition column (in r.fields order)
	eval   bool                   // filter the rows by r.pred
	dv     *roaring64.Bitmap      // the rows the file's deletion vector removes (nil: none)
	// legacyDT: Spark wrote the file's DATE and INT64 TIMESTAMP values in LEGACY rebase mode
	// (int96.SparkLegacyModes), so those before 1582-10-15 are Julian readings.
	legacyDT bool
	refs     atomic.Int32
}

func (fc *fileCtx) release() {
	if fc.refs.Add(-1) == 0 {
		if fc.pf != nil {
			fc.pf.Close()
		} else if fc.f != nil {
			fc.f.Close()
		}
	}
}

// unitRows is the target number of rows per work unit (row groups are grouped up to it).
const unitRows = 256 * 1024

// Scan starts reading refs. Call Next until io.EOF, then (or on any error) Close.
func (r *Reader) Scan(ctx context.Context, refs []FileRef) *Scan {
	ctx, cancel := context.WithCancel(ctx)
	s := &Scan{r: r, ctx: ctx, cancel: cancel, order: make(chan *unit, 2*r.workers+1), work: make(chan *unit, 2*r.workers+1)}
	s.wg.Add(1 + r.workers)
	go s.plan(refs)
	for range r.workers {
		go s.worker()
	}
	return s
}

func (s *Scan) plan(refs []FileRef) {
	defer s.wg.Done()
	defer close(s.order)
	defer close(s.work)
	send := func(u *unit) bool {
		select {
		case s.order <- u:
		case <-s.ctx.Done():
			return false
		}
		if u.fc == nil || u.err != nil {
			close(u.out)
			return true
		}
		select {
		case s.work <- u:
			return true
		case <-s.ctx.Done():
			// The consumer may wait on u.out: end it.
			u.err = s.ctx.Err()
			close(u.out)
			u.fc.release()
			return false
		}
	}
	for i, ref := range refs {
		fc, rgRows, err := s.r.openFile(s.ctx, ref.Add)
		if err != nil {
			send(&unit{file: i, err: err, out: make(chan rowBatch)})
			return
		}
		fc.eval = s.r.pred != nil && !ref.Matched
		var units []*unit
		row := int64(0)
		end := ref.End
		var u *unit
		for rg, n := range rgRows {
			lo, hi := row, row+n
			row = hi
			if hi <= ref.Start || (end >= 0 && lo >= end) {
				continue
			}
			if u == nil || u.take >= 0 || u.sizeRows(rgRows) >= unitRows {
				u = &unit{file: i, fc: fc, firstRow: lo, take: -1, out: make(chan rowBatch, 2)}
				if lo < ref.Start {
					u.skip = ref.Start - lo
				}
				units = append(units, u)
			}
			u.rowGroups = append(u.rowGroups, rg)
			if end >= 0 && hi > end {
				u.take = end - u.firstRow - u.skip
			}
		}
		endRow := row
		if end >= 0 && end < endRow {
			endRow = end
		}
		if len(units) == 0 {
			fc.refs.Store(1)
			fc.release()
			units = []*unit{{file: i, out: make(chan rowBatch)}}
		} else {
			fc.refs.Store(int32(len(units)))
		}
		units[len(units)-1].last = true
		if len(fc.int96N) > 0 && units[0].fc != nil {
			for _, v := range units {
				units[0].check = append(units[0].check, v.rowGroups...)
			}
		}
		units[len(units)-1].endRow = max(endRow, ref.Start)
		for k, u := range units {
			if !send(u) {
				for _, rest := range units[k+1:] {
					if rest.fc != nil {
						rest.fc.release()
					}
				}
				return
			}
		}
	}
}

// sizeRows is the number of rows in u's row groups.
func (u *unit) sizeRows(rgRows []int64) int64 {
	var n int64
	for _, rg := range u.rowGroups {
		n += rgRows[rg]
	}
	return n
}

// openFile opens a data file and resolves the columns to read; it returns the rows of each
// row group.
func (r *Reader) openFile(ctx context.Context, add *dl.Add) (*fileCtx, []int64, error) {
	rel, err := resolvePath(r.root, add.Path)
	if err != nil {
		return nil, nil, err
	}
	fc := &fileCtx{add: add}
	if add.DeletionVector != nil {
		if fc.dv, err = dl.ReadDeletionVector(ctx, r.store, add.DeletionVector, storage.Options{}); err != nil {
			return nil, nil, fmt.Errorf("data file %s: deletion vector: %w", add.Path, err)
		}
	}
	r.opened.Add(1)
	for _, f := range r.fields {
		if f.part {
			pv, err := r.partitionValues(add)
			if err != nil {
				return nil, nil, err
			}
			for _, g := range r.fields {
				if g.part {
					fc.pv = append(fc.pv, pv[g.name])
				}
			}
			break
		}
	}
	src, err := r.open(ctx, fc, rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("data file %s listed in the log is missing (removed by VACUUM or by hand?): %w", add.Path, err)
		}
		return nil, nil, fmt.Errorf("data file %s: %w", add.Path, err)
	}
	pf, err := file.NewParquetReader(src, file.WithReadProps(parquet.NewReaderProperties(r.mem)))
	if err != nil {
		fc.f.Close()
		return nil, nil, fmt.Errorf("data file %s: %w", add.Path, err)
	}
	fc.pf = pf
	fc.legacy, fc.legacyDT = int96.SparkLegacyModes(pf.MetaData().KeyValueMetadata())
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(r.batchRows)}, r.mem)
	if err != nil {
		pf.Close()
		return nil, nil, fmt.Errorf("data file %s: %w", add.Path, err)
	}
	fc.fr = fr
	if fc.pre != nil {
		fc.pre.md = pf.MetaData()
	}
	// Nested columns read their INT96 leaves as µs, decoded per batch (int96.go).
	mf := fr.Manifest.Fields
	raw96 := make([]bool, len(mf))
	for i := range mf {
		raw96[i] = !mf[i].IsLeaf() && int96.MicrosFields(pf, &mf[i])
	}
	// Map each data column to a top-level field of the file: exactly or ignoring case, by
	// physical name or field id under column mapping.
	used := make([]bool, len(mf))
	var picked []int // manifest field indices, in data column order
	for _, dc := range r.dataCols {
		idx, err := r.cm.match(mf, used, dc.name)
		if err != nil {
			pf.Close()
			return nil, nil, fmt.Errorf("data file %s: %w", add.Path, err)
		}
		var ft arrow.DataType
		if idx >= 0 {
			used[idx] = true
			ft = r.cm.fileType(dc.name, mf[idx].Field.Type)
		}
		picked = append(picked, idx)
		fc.types = append(fc.types, ft)
	}
	// The record reader returns the picked fields in file order; find each one's position.
	// A top-level INT96 column is read apart, to µs (int96.go).
	pos := map[int]int{}
	n := 0
	for i := range mf {
		switch {
		case !used[i]:
		case int96.IsLeaf(pf, &mf[i]):
			pos[i] = -2 - len(fc.int96)
			fc.int96 = append(fc.int96, mf[i].ColIndex)
		default:
			pos[i] = n
			n++
			fc.fields = append(fc.fields, &mf[i])
			k := len(fc.leaves)
			fc.leaves = appendLeaves(fc.leaves, &mf[i])
			if raw96[i] {
				fc.micros = append(fc.micros, int96Nested{col: pos[i], field: &mf[i]})
				continue
			}
			for _, leaf := range fc.leaves[k:] {
				if pf.MetaData().Schema.Column(leaf).PhysicalType() == parquet.Types.Int96 {
					fc.int96N = append(fc.int96N, leaf)
				}
			}
		}
	}
	for _, idx := range picked {
		if idx < 0 {
			fc.cols = append(fc.cols, -1)
		} else {
			fc.cols = append(fc.cols, pos[idx])
		}
	}
	md := pf.MetaData()
	rg := make([]int64, md.NumRowGroups())
	for i := range rg {
		rg[i] = md.RowGroup(i).NumRows()
	}
	return fc, rg, nil
}

func appendLeaves(dst []int, f *pqarrow.SchemaField) []int {
	if f.IsLeaf() {
		return append(dst, f.ColIndex)
	}
	for i := range f.Children {
		dst = appendLeaves(dst, &f.Children[i])
	}
	return dst
}

func (s *Scan) worker() {
	defer s.wg.Done()
	var prog *expr.Program // the worker's own: a Program is not safe for concurrent use
	for u := range s.work {
		u.err = s.r.decode(s.ctx, u, &prog)
		close(u.out)
		u.fc.release()
	}
}

// decode reads unit u into output batches; *prog is the worker's compiled predicate (compiled
// on first use).
func (r *Reader) decode(ctx context.Context, u *unit, prog **expr.Program) error {
	fc := u.fc
	if fc.eval && *prog == nil {
		p, err := r.pred.Compile(r.readSc, r.mem)
		if err != nil {
			return fmt.Errorf("--where: %w", err)
		}
		*prog = p
	}
	emit := func(rec arrow.RecordBatch, row int64) error {
		if rec == nil { // every row filtered out
			return nil
		}
		select {
		case u.out <- rowBatch{rec, row}:
			return nil
		case <-ctx.Done():
			rec.Release()
			return ctx.Err()
		}
	}
	skip, take := u.skip, u.take
	pos := u.firstRow // file row of the next decoded row
	// cut applies skip/take to n rows and returns the slice [lo, hi) to keep.
	cut := func(n int64) (int64, int64, bool) {
		lo := int64(0)
		if skip > 0 {
			d := min(skip, n)
			skip -= d
			lo = d
		}
		hi := n
		if take >= 0 {
			hi = min(n, lo+take)
			take -= hi - lo
		}
		return lo, hi, hi > lo
	}
	if fc.pre != nil && len(fc.leaves)+len(fc.int96) > 0 {
		done, err := fc.pre.fetch(append(fc.leaves[:len(fc.leaves):len(fc.leaves)], fc.int96...), u.rowGroups)
		if err != nil {
			return fmt.Errorf("data file %s: %w", fc.add.Path, err)
		}
		defer done()
	}
	if len(u.check) > 0 {
		if err := int96.CheckNested(fc.pf, fc.int96N, u.check); err != nil {
			return fmt.Errorf("data file %s: %w", fc.add.Path, err)
		}
	}
	// x96 reads the top-level INT96 columns' next n rows, the rows [lo, hi) of them kept.
	cols96 := make([]*int96.Column, len(fc.int96))
	for k, leaf := range fc.int96 {
		cols96[k] = newInt96Column(fc.pf, leaf, u.rowGroups, fc.legacy)
	}
	defer func() {
		for _, c := range cols96 {
			c.Close()
		}
	}()
	x96 := func(n, lo, hi int64) ([]arrow.ArrayData, error) {
		out := make([]arrow.ArrayData, len(cols96))
		for k, c := range cols96 {
			d, err := c.Next(r.mem, int(n))
			if err != nil {
				releaseData(out)
				return nil, fmt.Errorf("data file %s: %w", fc.add.Path, err)
			}
			if lo > 0 || hi < n {
				sl := array.NewSliceData(d, lo, hi)
				d.Release()
				d = sl
			}
			out[k] = d
		}
		return out, nil
	}
	if len(fc.leaves) == 0 {
		// Only partition columns, columns missing from the file and top-level INT96 columns:
		// the row count comes from metadata.
		var total int64
		for _, rg := range u.rowGroups {
			total += fc.pf.MetaData().RowGroup(rg).NumRows()
		}
		for total > 0 && take != 0 {
			n := min(total, int64(r.batchRows))
			total -= n
			lo, hi, ok := cut(n)
			start := pos
			pos += n
			var x []arrow.ArrayData
			if len(cols96) > 0 {
				var err error
				if x, err = x96(n, lo, hi); err != nil {
					return err
				}
			}
			if !ok {
				releaseData(x)
				continue
			}
			span := rowSpan{first: start + lo, n: hi - lo, dv: fc.dv}
			kept := span.n - span.deleted()
			if kept == 0 {
				releaseData(x)
				continue
			}
			x, err := dropDeletedData(ctx, r.mem, x, span)
			if err != nil {
				return fmt.Errorf("data file %s: %w", fc.add.Path, err)
			}
			rec, err := r.assemble(ctx, fc, nil, x, int(kept), *prog, span)
			releaseData(x)
			if err != nil {
				return err
			}
			if err := emit(rec, start+hi); err != nil {
				return err
			}
		}
		return nil
	}
	rr, err := fc.fr.GetRecordReader(ctx, fc.leaves, u.rowGroups)
	if err != nil {
		return fmt.Errorf("data file %s: %w", fc.add.Path, err)
	}
	defer rr.Release()
	for take != 0 && rr.Next() {
		rec := rr.RecordBatch()
		for _, m := range fc.micros {
			if err := int96DecodeNested(fc.pf, m.field, rec.Column(m.col).Data(), fc.legacy); err != nil {
				return fmt.Errorf("data file %s: %w", fc.add.Path, err)
			}
		}
		if fc.legacyDT {
			// In the file's types, before conforming: only the DATE and INT64 TIMESTAMP leaves
			// are rebased (INT96 ones were, above, by their own key).
			for i, sf := range fc.fields {
				if err := int96.RebaseLegacyDateTime(fc.pf, sf, rec.Column(i).Data()); err != nil {
					return fmt.Errorf("data file %s: %w", fc.add.Path, err)
				}
			}
		}
		lo, hi, ok := cut(rec.NumRows())
		start := pos
		pos += rec.NumRows()
		var x []arrow.ArrayData
		if len(cols96) > 0 {
			if x, err = x96(rec.NumRows(), lo, hi); err != nil {
				return err
			}
		}
		if !ok {
			releaseData(x)
			continue
		}
		var in arrow.RecordBatch = rec
		if lo > 0 || hi < rec.NumRows() {
			in = rec.NewSlice(lo, hi)
		} else {
			rec.Retain()
		}
		span := rowSpan{first: start + lo, n: hi - lo, dv: fc.dv}
		if span.deleted() > 0 {
			kept, err := dropDeleted(ctx, r.mem, r.bufs, in, span)
			in.Release()
			if err != nil {
				releaseData(x)
				return fmt.Errorf("data file %s: %w", fc.add.Path, err)
			}
			if in = kept; in.NumRows() == 0 {
				in.Release()
				releaseData(x)
				continue
			}
			if x, err = dropDeletedData(ctx, r.mem, x, span); err != nil {
				in.Release()
				return fmt.Errorf("data file %s: %w", fc.add.Path, err)
			}
		}
		out, err := r.assemble(ctx, fc, in, x, int(in.NumRows()), *prog, span)
		in.Release()
		releaseData(x)
		if err != nil {
			return err
		}
		if err := emit(out, start+hi); err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("data file %s: %w", fc.add.Path, err)
	}
	return nil
}

// assemble builds an output batch of n rows from the file columns in rec (nil when no data
// column is read), the top-level INT96 columns in x96 and the file's partition values; when
// the file's rows are filtered, only the rows where prog is true, nil when there are none
// (span: the file rows rec's rows were kept from, for errors).
func (r *Reader) assemble(ctx context.Context, fc *fileCtx, rec arrow.RecordBatch, x96 []arrow.ArrayData, n int, prog *expr.Program, span rowSpan) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, len(r.fields))
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	di, pi := 0, 0
	for _, f := range r.fields {
		if f.part {
			cols = append(cols, constArray(r.mem, f.dt, fc.pv[pi], n))
			pi++
			continue
		}
		ci, ft := fc.cols[di], fc.types[di]
		di++
		var src arrow.ArrayData
		switch {
		case ci <= -2:
			src = x96[-2-ci]
		case ci < 0 || rec == nil:
			cols = append(cols, array.MakeArrayOfNull(r.mem, f.dt, n))
			continue
		default:
			src = rec.Column(ci).Data()
		}
		var d arrow.ArrayData
		var err error
		if ft == nil {
			d, err = conformData(ctx, r.mem, src, f.dt, f.name)
		} else {
			d, err = conformMapped(ctx, r.mem, src, ft, f.dt, f.name)
		}
		if err != nil {
			release()
			return nil, fmt.Errorf("data file %s: %w", fc.add.Path, err)
		}
		a := array.MakeFromData(d)
		d.Release()
		cols = append(cols, a)
	}
	defer release()
	if !fc.eval {
		return array.NewRecordBatch(r.schema, cols[:r.nOut], int64(n)), nil
	}
	read := array.NewRecordBatch(r.readSc, cols, int64(n))
	defer read.Release()
	mask, err := prog.Eval(ctx, read, func(i int) string {
		return fmt.Sprintf("data file %s row %d", fc.add.Path, span.fileRow(i))
	})
	if err != nil {
		return nil, err
	}
	defer mask.Release()
	out := read
	if len(cols) > r.nOut {
		out = array.NewRecordBatch(r.schema, cols[:r.nOut], int64(n))
		defer out.Release()
	}
	kept, err := expr.FilterBatch(compute.WithAllocator(ctx, r.mem), out, mask)
	if err != nil {
		return nil, err
	}
	if kept.NumRows() == 0 {
		kept.Release()
		return nil, nil
	}
	return kept, nil
}

// releaseData releases the non-nil elements of ds.
func releaseData(ds []arrow.ArrayData) {
	for _, d := range ds {
		if d != nil {
			d.Release()
		}
	}
}

// Next returns the next batch or file end; io.EOF after the last file.
func (s *Scan) Next() (Batch, error) {
	if s.err != nil {
		return Batch{}, s.err
	}
	for {
		if s.cur == nil {
			u, ok := <-s.order
			if !ok {
				if err := s.ctx.Err(); err != nil {
					s.err = err
					return Batch{}, err
				}
				s.err = io.EOF
				return Batch{}, io.EOF
			}
			s.cur = u
		}
		u := s.cur
		rb, ok := <-u.out
		if ok {
			return Batch{Rec: rb.rec, File: u.file, Row: rb.row}, nil
		}
		s.cur = nil
		if u.err != nil {
			s.err = u.err
			return Batch{}, u.err
		}
		if u.last {
			return Batch{File: u.file, Row: u.endRow, Done: true}, nil
		}
	}
}

// Close stops the workers and releases everything read ahead.
func (s *Scan) Close() {
	s.cancel()
	if s.cur != nil {
		for rb := range s.cur.out {
			rb.rec.Release()
		}
		s.cur = nil
	}
	for u := range s.order {
		for rb := range u.out {
			rb.rec.Release()
		}
	}
	s.wg.Wait()
	if s.err == nil {
		s.err = errors.New("scan closed")
	}
}
