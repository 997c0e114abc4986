package delta

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// readCheckpoint reads the checkpoint file(s) names of `_delta_log` and applies their actions
// to s.
func (s *Snapshot) readCheckpoint(ctx context.Context, names []string) error {
	for _, name := range names {
		if err := s.readCheckpointFile(ctx, logName(name)); err != nil {
			return fmt.Errorf("read checkpoint %s: %w", name, err)
		}
	}
	return nil
}

// readCheckpointFile reads one checkpoint Parquet file through the store: ranged reads of
// its footer and column chunks (io.ReaderAt), as from a local file.
func (s *Snapshot) readCheckpointFile(ctx context.Context, name string) error {
	f, err := s.store.Open(ctx, name)
	if err != nil {
		return err
	}
	mem := s.mem
	pf, err := file.NewParquetReader(f, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		f.Close()
		return err
	}
	defer pf.Close() // closes f
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 8192}, mem)
	if err != nil {
		return err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
		actions, err := checkpointActions(rr.RecordBatch())
		if err != nil {
			return err
		}
		if err := s.apply(actions); err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil {
		return err
	}
	return nil
}

// sv is a struct column accessed by field name.
type sv struct {
	a   *array.Struct
	idx map[string]int
}

func structView(arr arrow.Array) *sv {
	a, ok := arr.(*array.Struct)
	if !ok {
		return nil
	}
	st := a.DataType().(*arrow.StructType)
	v := &sv{a: a, idx: map[string]int{}}
	for i, f := range st.Fields() {
		v.idx[f.Name] = i
	}
	return v
}

func (v *sv) valid(i int) bool { return v != nil && v.a.IsValid(i) }

func (v *sv) f(name string) arrow.Array {
	if j, ok := v.idx[name]; ok {
		return v.a.Field(j)
	}
	return nil
}

func getStr(arr arrow.Array, i int) *string {
	if arr == nil || arr.IsNull(i) {
		return nil
	}
	var s string
	switch a := arr.(type) {
	case *array.String:
		s = a.Value(i)
	case *array.LargeString:
		s = a.Value(i)
	case *array.Binary:
		s = string(a.Value(i))
	default:
		return nil
	}
	s = string([]byte(s)) // detach from the Arrow buffer
	return &s
}

func getStrV(arr arrow.Array, i int) string {
	if p := getStr(arr, i); p != nil {
		return *p
	}
	return ""
}

func getI64(arr arrow.Array, i int) *int64 {
	if arr == nil || arr.IsNull(i) {
		return nil
	}
	var v int64
	switch a := arr.(type) {
	case *array.Int64:
		v = a.Value(i)
	case *array.Int32:
		v = int64(a.Value(i))
	default:
		return nil
	}
	return &v
}

func getBool(arr arrow.Array, i int) *bool {
	if arr == nil || arr.IsNull(i) {
		return nil
	}
	a, ok := arr.(*array.Boolean)
	if !ok {
		return nil
	}
	v := a.Value(i)
	return &v
}

func getStrMap(arr arrow.Array, i int) map[string]*string {
	a, ok := arr.(*array.Map)
	if !ok || a.IsNull(i) {
		return nil
	}
	lo, hi := a.ValueOffsets(i)
	out := make(map[string]*string, hi-lo)
	for j := lo; j < hi; j++ {
		k := getStr(a.Keys(), int(j))
		if k == nil {
			continue
		}
		out[*k] = getStr(a.Items(), int(j))
	}
	return out
}

func getStrMapV(arr arrow.Array, i int) map[string]string {
	m := getStrMap(arr, i)
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

func getStrList(arr arrow.Array, i int) []string {
	a, ok := arr.(array.ListLike)
	if !ok || a.IsNull(i) {
		return nil
	}
	lo, hi := a.ValueOffsets(i)
	out := []string{}
	for j := lo; j < hi; j++ {
		if s := getStr(a.ListValues(), int(j)); s != nil {
			out = append(out, *s)
		}
	}
	return out
}

func getDV(arr arrow.Array, i int) *DeletionVector {
	v := structView(arr)
	if !v.valid(i) {
		return nil
	}
	st := getStr(v.f("storageType"), i)
	if st == nil || *st == "" {
		return nil
	}
	dv := &DeletionVector{StorageType: *st, PathOrInlineDv: getStrV(v.f("pathOrInlineDv"), i)}
	if o := getI64(v.f("offset"), i); o != nil {
		x := int32(*o)
		dv.Offset = &x
	}
	if sz := getI64(v.f("sizeInBytes"), i); sz != nil {
		dv.SizeInBytes = int32(*sz)
	}
	if c := getI64(v.f("cardinality"), i); c != nil {
		dv.Cardinality = *c
	}
	dv.MaxRowIndex = getI64(v.f("maxRowIndex"), i)
	return dv
}

// checkpointActions converts one batch of checkpoint rows to actions. Missing columns and
// fields read as null.
func checkpointActions(rec arrow.RecordBatch) ([]Action, error) {
	cols := map[string]*sv{}
	for i, f := range rec.Schema().Fields() {
		cols[f.Name] = structView(rec.Column(i))
	}
	n := int(rec.NumRows())
	out := make([]Action, 0, n)
	for i := 0; i < n; i++ {
		if v := cols["add"]; v.valid(i) {
			a := &Add{Path: getStrV(v.f("path"), i), PartitionValues: getStrMap(v.f("partitionValues"), i),
				Stats: getStrV(v.f("stats"), i), Tags: getStrMapV(v.f("tags"), i),
				DeletionVector: getDV(v.f("deletionVector"), i), BaseRowID: getI64(v.f("baseRowId"), i),
				DefaultRowCommitVersion: getI64(v.f("defaultRowCommitVersion"), i),
				ClusteringProvider:      getStr(v.f("clusteringProvider"), i)}
			if a.PartitionValues == nil {
				a.PartitionValues = map[string]*string{}
			}
			if p := getI64(v.f("size"), i); p != nil {
				a.Size = *p
			}
			if p := getI64(v.f("modificationTime"), i); p != nil {
				a.ModificationTime = *p
			}
			if p := getBool(v.f("dataChange"), i); p != nil {
				a.DataChange = *p
			}
			if a.Path == "" {
				return nil, fmt.Errorf("row %d: add without path", i)
			}
			out = append(out, Action{Add: a})
		}
		if v := cols["remove"]; v.valid(i) {
			r := &Remove{Path: getStrV(v.f("path"), i), DeletionTimestamp: getI64(v.f("deletionTimestamp"), i),
				ExtendedFileMetadata: getBool(v.f("extendedFileMetadata"), i),
				PartitionValues:      getStrMap(v.f("partitionValues"), i), Size: getI64(v.f("size"), i),
				DeletionVector: getDV(v.f("deletionVector"), i), BaseRowID: getI64(v.f("baseRowId"), i),
				DefaultRowCommitVersion: getI64(v.f("defaultRowCommitVersion"), i)}
			if p := getBool(v.f("dataChange"), i); p != nil {
				r.DataChange = *p
			}
			out = append(out, Action{Remove: r})
		}
		if v := cols["txn"]; v.valid(i) {
			t := &Txn{AppID: getStrV(v.f("appId"), i), LastUpdated: getI64(v.f("lastUpdated"), i)}
			if p := getI64(v.f("version"), i); p != nil {
				t.Version = *p
			}
			out = append(out, Action{Txn: t})
		}
		if v := cols["metaData"]; v.valid(i) {
			m := &Metadata{ID: getStrV(v.f("id"), i), Name: getStr(v.f("name"), i), Description: getStr(v.f("description"), i),
				SchemaString: getStrV(v.f("schemaString"), i), PartitionColumns: getStrList(v.f("partitionColumns"), i),
				Configuration: getStrMapV(v.f("configuration"), i), CreatedTime: getI64(v.f("createdTime"), i)}
			if fv := structView(v.f("format")); fv.valid(i) {
				m.Format = Format{Provider: getStrV(fv.f("provider"), i), Options: getStrMapV(fv.f("options"), i)}
			}
			if m.Configuration == nil {
				m.Configuration = map[string]string{}
			}
			out = append(out, Action{MetaData: m})
		}
		if v := cols["protocol"]; v.valid(i) {
			p := &Protocol{ReaderFeatures: getStrList(v.f("readerFeatures"), i), WriterFeatures: getStrList(v.f("writerFeatures"), i)}
			if x := getI64(v.f("minReaderVersion"), i); x != nil {
				p.MinReaderVersion = int(*x)
			}
			if x := getI64(v.f("minWriterVersion"), i); x != nil {
				p.MinWriterVersion = int(*x)
			}
			out = append(out, Action{Protocol: p})
		}
		if v := cols["domainMetadata"]; v.valid(i) {
			d := &DomainMetadata{Domain: getStrV(v.f("domain"), i), Configuration: getStrV(v.f("configuration"), i)}
			if p := getBool(v.f("removed"), i); p != nil {
				d.Removed = *p
			}
			out = append(out, Action{DomainMetadata: d})
		}
	}
	return out, nil
}
