package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// LastCheckpointName is the name, in `_delta_log`, of the pointer file to the newest
// checkpoint (PROTOCOL.md "Last Checkpoint File").
const LastCheckpointName = "_last_checkpoint"

// LastCheckpoint is the content of `_delta_log/_last_checkpoint` (PROTOCOL.md "Last
// Checkpoint File Schema"): Size is the number of actions (rows) in the checkpoint,
// SizeInBytes its file size. Parts is absent for single-file checkpoints.
type LastCheckpoint struct {
	Version       int64  `json:"version"`                 // checkpointed table version
	Size          int64  `json:"size"`                    // actions (rows) in the checkpoint
	Parts         *int   `json:"parts,omitempty"`         // multi-part checkpoints only
	SizeInBytes   int64  `json:"sizeInBytes,omitempty"`   // checkpoint file size
	NumOfAddFiles *int64 `json:"numOfAddFiles,omitempty"` // add actions in the checkpoint
}

// ReadLastCheckpoint reads `_delta_log/_last_checkpoint` of the table (an error wrapping
// fs.ErrNotExist when there is none). Snapshot loading does not need it: it lists the log.
func (t *Table) ReadLastCheckpoint() (*LastCheckpoint, error) {
	b, err := os.ReadFile(filepath.Join(t.root, LogDir, LastCheckpointName))
	if err != nil {
		return nil, fmt.Errorf("read last checkpoint %s: %w", t.root, err)
	}
	var lc LastCheckpoint
	if err := json.Unmarshal(b, &lc); err != nil {
		return nil, fmt.Errorf("read last checkpoint %s: %w", t.root, err)
	}
	return &lc, nil
}

// Checkpoint Parquet schema (PROTOCOL.md "Checkpoint Schema", V1 spec): one column per action
// kind, every field optional, partitionValues/tags/configuration as map<string,string>,
// add.stats as a JSON string. No stats_parsed / partitionValues_parsed is written.
var (
	ckStrMap = arrow.MapOfFields(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "value", Type: arrow.BinaryTypes.String, Nullable: true})
	ckStrList = arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true})
	ckDV      = arrow.StructOf(
		nf("storageType", arrow.BinaryTypes.String),
		nf("pathOrInlineDv", arrow.BinaryTypes.String),
		nf("offset", arrow.PrimitiveTypes.Int32),
		nf("sizeInBytes", arrow.PrimitiveTypes.Int32),
		nf("cardinality", arrow.PrimitiveTypes.Int64),
		nf("maxRowIndex", arrow.PrimitiveTypes.Int64),
	)
	checkpointSchema = arrow.NewSchema([]arrow.Field{
		nf("txn", arrow.StructOf(
			nf("appId", arrow.BinaryTypes.String),
			nf("version", arrow.PrimitiveTypes.Int64),
			nf("lastUpdated", arrow.PrimitiveTypes.Int64))),
		nf("add", arrow.StructOf(
			nf("path", arrow.BinaryTypes.String),
			nf("partitionValues", ckStrMap),
			nf("size", arrow.PrimitiveTypes.Int64),
			nf("modificationTime", arrow.PrimitiveTypes.Int64),
			nf("dataChange", arrow.FixedWidthTypes.Boolean),
			nf("stats", arrow.BinaryTypes.String),
			nf("tags", ckStrMap),
			nf("deletionVector", ckDV),
			nf("baseRowId", arrow.PrimitiveTypes.Int64),
			nf("defaultRowCommitVersion", arrow.PrimitiveTypes.Int64),
			nf("clusteringProvider", arrow.BinaryTypes.String))),
		nf("remove", arrow.StructOf(
			nf("path", arrow.BinaryTypes.String),
			nf("deletionTimestamp", arrow.PrimitiveTypes.Int64),
			nf("dataChange", arrow.FixedWidthTypes.Boolean),
			nf("extendedFileMetadata", arrow.FixedWidthTypes.Boolean),
			nf("partitionValues", ckStrMap),
			nf("size", arrow.PrimitiveTypes.Int64),
			nf("deletionVector", ckDV),
			nf("baseRowId", arrow.PrimitiveTypes.Int64),
			nf("defaultRowCommitVersion", arrow.PrimitiveTypes.Int64))),
		nf("metaData", arrow.StructOf(
			nf("id", arrow.BinaryTypes.String),
			nf("name", arrow.BinaryTypes.String),
			nf("description", arrow.BinaryTypes.String),
			nf("format", arrow.StructOf(
				nf("provider", arrow.BinaryTypes.String),
				nf("options", ckStrMap))),
			nf("schemaString", arrow.BinaryTypes.String),
			nf("partitionColumns", ckStrList),
			nf("configuration", ckStrMap),
			nf("createdTime", arrow.PrimitiveTypes.Int64))),
		nf("protocol", arrow.StructOf(
			nf("minReaderVersion", arrow.PrimitiveTypes.Int32),
			nf("minWriterVersion", arrow.PrimitiveTypes.Int32),
			nf("readerFeatures", ckStrList),
			nf("writerFeatures", ckStrList))),
		nf("domainMetadata", arrow.StructOf(
			nf("domain", arrow.BinaryTypes.String),
			nf("configuration", arrow.BinaryTypes.String),
			nf("removed", arrow.FixedWidthTypes.Boolean))),
	}, nil)
)

func nf(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true}
}

// checkpointRows lists the actions a checkpoint of s holds, in order: protocol, metaData,
// txns, domains, adds (dataChange=false) and the unexpired tombstones (dataChange=false),
// with no commitInfo (PROTOCOL.md "Checkpoints").
func (s *Snapshot) checkpointRows(nowMs int64) []Action {
	cfg := configOf(s.metadata)
	out := []Action{{Protocol: s.protocol}, {MetaData: s.metadata}}
	appIDs := make([]string, 0, len(s.txns))
	for id := range s.txns {
		appIDs = append(appIDs, id)
	}
	sort.Strings(appIDs)
	for _, id := range appIDs {
		t := s.txns[id]
		out = append(out, Action{Txn: &t})
	}
	domains := make([]string, 0, len(s.domains))
	for d := range s.domains {
		domains = append(domains, d)
	}
	sort.Strings(domains)
	for _, d := range domains {
		dm := s.domains[d]
		out = append(out, Action{DomainMetadata: &dm})
	}
	for _, a := range s.Files() {
		c := *a
		c.DataChange = false
		out = append(out, Action{Add: &c})
	}
	cutoff := nowMs - cfg.tombstoneRetention.Milliseconds()
	for _, r := range s.Tombstones() {
		if r.DeletionTimestamp != nil && *r.DeletionTimestamp < cutoff {
			continue
		}
		c := *r
		c.DataChange = false
		c.Stats, c.Tags = "", nil
		out = append(out, Action{Remove: &c})
	}
	return out
}

// writeCheckpoint writes the classic checkpoint of s (`<version>.checkpoint.parquet`, temp
// file + rename: racing checkpointers write the same content) and then `_last_checkpoint`,
// unless that already points at a newer version.
func (t *Table) writeCheckpoint(s *Snapshot) error {
	rows := s.checkpointRows(t.now().UnixMilli())
	data, numAdds, err := encodeCheckpoint(rows, t.mem)
	if err != nil {
		return fmt.Errorf("write checkpoint %d: %w", s.version, err)
	}
	dir := filepath.Join(t.root, LogDir)
	if err := replaceTemp.Replace(dir, CheckpointFileName(s.version), data); err != nil {
		return fmt.Errorf("write checkpoint %d: %w", s.version, err)
	}
	if lc, err := t.ReadLastCheckpoint(); err == nil && lc.Version >= s.version {
		return nil
	}
	lc := LastCheckpoint{Version: s.version, Size: int64(len(rows)), SizeInBytes: int64(len(data)), NumOfAddFiles: &numAdds}
	b, _ := json.Marshal(lc)
	if err := replaceTemp.Replace(dir, LastCheckpointName, b); err != nil {
		return fmt.Errorf("write last checkpoint %d: %w", s.version, err)
	}
	return nil
}

// encodeCheckpoint renders checkpoint rows as a Parquet file (snappy).
func encodeCheckpoint(rows []Action, mem memory.Allocator) ([]byte, int64, error) {
	b := array.NewRecordBuilder(mem, checkpointSchema)
	defer b.Release()
	var numAdds int64
	txnB := b.Field(0).(*array.StructBuilder)
	addB := b.Field(1).(*array.StructBuilder)
	remB := b.Field(2).(*array.StructBuilder)
	metaB := b.Field(3).(*array.StructBuilder)
	protB := b.Field(4).(*array.StructBuilder)
	domB := b.Field(5).(*array.StructBuilder)
	all := []*array.StructBuilder{txnB, addB, remB, metaB, protB, domB}
	for _, r := range rows {
		var which *array.StructBuilder
		switch {
		case r.Txn != nil:
			which = txnB
			txnB.Append(true)
			appendStr(txnB.FieldBuilder(0), &r.Txn.AppID)
			appendI64(txnB.FieldBuilder(1), &r.Txn.Version)
			appendI64(txnB.FieldBuilder(2), r.Txn.LastUpdated)
		case r.Add != nil:
			which = addB
			numAdds++
			a := r.Add
			addB.Append(true)
			appendStr(addB.FieldBuilder(0), &a.Path)
			appendStrMapPtr(addB.FieldBuilder(1), a.PartitionValues, true)
			appendI64(addB.FieldBuilder(2), &a.Size)
			appendI64(addB.FieldBuilder(3), &a.ModificationTime)
			addB.FieldBuilder(4).(*array.BooleanBuilder).Append(a.DataChange)
			appendOptStr(addB.FieldBuilder(5), a.Stats)
			appendStrMap(addB.FieldBuilder(6), a.Tags)
			appendDV(addB.FieldBuilder(7), a.DeletionVector)
			appendI64(addB.FieldBuilder(8), a.BaseRowID)
			appendI64(addB.FieldBuilder(9), a.DefaultRowCommitVersion)
			appendStr(addB.FieldBuilder(10), a.ClusteringProvider)
		case r.Remove != nil:
			which = remB
			x := r.Remove
			remB.Append(true)
			appendStr(remB.FieldBuilder(0), &x.Path)
			appendI64(remB.FieldBuilder(1), x.DeletionTimestamp)
			remB.FieldBuilder(2).(*array.BooleanBuilder).Append(x.DataChange)
			if x.ExtendedFileMetadata != nil {
				remB.FieldBuilder(3).(*array.BooleanBuilder).Append(*x.ExtendedFileMetadata)
			} else {
				remB.FieldBuilder(3).AppendNull()
			}
			appendStrMapPtr(remB.FieldBuilder(4), x.PartitionValues, x.PartitionValues != nil)
			appendI64(remB.FieldBuilder(5), x.Size)
			appendDV(remB.FieldBuilder(6), x.DeletionVector)
			appendI64(remB.FieldBuilder(7), x.BaseRowID)
			appendI64(remB.FieldBuilder(8), x.DefaultRowCommitVersion)
		case r.MetaData != nil:
			which = metaB
			m := r.MetaData
			metaB.Append(true)
			appendStr(metaB.FieldBuilder(0), &m.ID)
			appendStr(metaB.FieldBuilder(1), m.Name)
			appendStr(metaB.FieldBuilder(2), m.Description)
			fb := metaB.FieldBuilder(3).(*array.StructBuilder)
			fb.Append(true)
			appendStr(fb.FieldBuilder(0), &m.Format.Provider)
			opts := m.Format.Options
			if opts == nil {
				opts = map[string]string{}
			}
			appendStrMap(fb.FieldBuilder(1), opts)
			appendStr(metaB.FieldBuilder(4), &m.SchemaString)
			appendStrList(metaB.FieldBuilder(5), m.PartitionColumns, true)
			conf := m.Configuration
			if conf == nil {
				conf = map[string]string{}
			}
			appendStrMap(metaB.FieldBuilder(6), conf)
			appendI64(metaB.FieldBuilder(7), m.CreatedTime)
		case r.Protocol != nil:
			which = protB
			p := r.Protocol
			protB.Append(true)
			protB.FieldBuilder(0).(*array.Int32Builder).Append(int32(p.MinReaderVersion))
			protB.FieldBuilder(1).(*array.Int32Builder).Append(int32(p.MinWriterVersion))
			appendStrList(protB.FieldBuilder(2), p.ReaderFeatures, p.MinReaderVersion >= 3)
			appendStrList(protB.FieldBuilder(3), p.WriterFeatures, p.MinWriterVersion >= 7)
		case r.DomainMetadata != nil:
			which = domB
			d := r.DomainMetadata
			domB.Append(true)
			appendStr(domB.FieldBuilder(0), &d.Domain)
			appendStr(domB.FieldBuilder(1), &d.Configuration)
			domB.FieldBuilder(2).(*array.BooleanBuilder).Append(d.Removed)
		default:
			continue
		}
		for _, sb := range all {
			if sb != which {
				sb.AppendNull()
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithAllocator(mem), parquet.WithCreatedBy("streamkit"))
	fw, err := pqarrow.NewFileWriter(checkpointSchema, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		return nil, 0, err
	}
	if err := fw.Write(rec); err != nil {
		fw.Close()
		return nil, 0, err
	}
	if err := fw.Close(); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), numAdds, nil
}

func appendStr(b array.Builder, s *string) {
	if s == nil {
		b.AppendNull()
		return
	}
	b.(*array.StringBuilder).Append(*s)
}

func appendOptStr(b array.Builder, s string) {
	if s == "" {
		b.AppendNull()
		return
	}
	b.(*array.StringBuilder).Append(s)
}

func appendI64(b array.Builder, v *int64) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.(*array.Int64Builder).Append(*v)
}

func appendStrMap(b array.Builder, m map[string]string) {
	if m == nil {
		b.AppendNull()
		return
	}
	p := make(map[string]*string, len(m))
	for k, v := range m {
		v := v
		p[k] = &v
	}
	appendStrMapPtr(b, p, true)
}

func appendStrMapPtr(b array.Builder, m map[string]*string, present bool) {
	mb := b.(*array.MapBuilder)
	if !present {
		mb.AppendNull()
		return
	}
	mb.Append(true)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kb := mb.KeyBuilder().(*array.StringBuilder)
	ib := mb.ItemBuilder().(*array.StringBuilder)
	for _, k := range keys {
		kb.Append(k)
		if v := m[k]; v != nil {
			ib.Append(*v)
		} else {
			ib.AppendNull()
		}
	}
}

func appendStrList(b array.Builder, l []string, present bool) {
	lb := b.(*array.ListBuilder)
	if !present {
		lb.AppendNull()
		return
	}
	lb.Append(true)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	for _, s := range l {
		vb.Append(s)
	}
}

func appendDV(b array.Builder, dv *DeletionVector) {
	sb := b.(*array.StructBuilder)
	if dv == nil {
		sb.AppendNull()
		return
	}
	sb.Append(true)
	sb.FieldBuilder(0).(*array.StringBuilder).Append(dv.StorageType)
	sb.FieldBuilder(1).(*array.StringBuilder).Append(dv.PathOrInlineDv)
	if dv.Offset != nil {
		sb.FieldBuilder(2).(*array.Int32Builder).Append(*dv.Offset)
	} else {
		sb.FieldBuilder(2).AppendNull()
	}
	sb.FieldBuilder(3).(*array.Int32Builder).Append(dv.SizeInBytes)
	sb.FieldBuilder(4).(*array.Int64Builder).Append(dv.Cardinality)
	appendI64(sb.FieldBuilder(5), dv.MaxRowIndex)
}

// readCheckpoint reads the checkpoint file(s) names in dir and applies their actions to s.
func readCheckpoint(dir string, names []string, s *Snapshot, mem memory.Allocator) error {
	for _, name := range names {
		if err := readCheckpointFile(filepath.Join(dir, name), s, mem); err != nil {
			return fmt.Errorf("read checkpoint %s: %w", name, err)
		}
	}
	return nil
}

func readCheckpointFile(path string, s *Snapshot, mem memory.Allocator) error {
	pf, err := file.OpenParquetFile(path, false, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 8192}, mem)
	if err != nil {
		return err
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
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
