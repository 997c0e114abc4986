package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
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
	return t.readLastCheckpoint(context.Background())
}

func (t *Table) readLastCheckpoint(ctx context.Context) (*LastCheckpoint, error) {
	b, err := t.store.ReadFile(ctx, logName(LastCheckpointName))
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

// writeCheckpoint writes the classic checkpoint of s (`<version>.checkpoint.parquet`) and then
// `_last_checkpoint`, unless that already points at a newer version. Both are atomic replaces
// ([storage.Store.WriteFile]: temporary file + fsync + rename on a local disk, one PUT on a
// bucket): racing checkpointers write the same content, and a reader sees a whole file or
// none.
func (t *Table) writeCheckpoint(ctx context.Context, s *Snapshot) error {
	rows := s.checkpointRows(t.now().UnixMilli())
	data, numAdds, err := encodeCheckpoint(rows, t.mem)
	if err != nil {
		return fmt.Errorf("write checkpoint %d: %w", s.version, err)
	}
	if err := t.store.WriteFile(ctx, logName(CheckpointFileName(s.version)), data); err != nil {
		return fmt.Errorf("write checkpoint %d: %w", s.version, err)
	}
	if lc, err := t.readLastCheckpoint(ctx); err == nil && lc.Version >= s.version {
		return nil
	}
	lc := LastCheckpoint{Version: s.version, Size: int64(len(rows)), SizeInBytes: int64(len(data)), NumOfAddFiles: &numAdds}
	b, _ := json.Marshal(lc)
	if err := t.store.WriteFile(ctx, logName(LastCheckpointName), b); err != nil {
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
