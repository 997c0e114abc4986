package delta

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/uuid"
)

// LastCheckpointName is the name, in `_delta_log`, of the pointer file to the newest
// checkpoint (PROTOCOL.md "Last Checkpoint File").
const LastCheckpointName = "_last_checkpoint"

// LastCheckpoint is the content of `_delta_log/_last_checkpoint` (PROTOCOL.md "Last
// Checkpoint File Schema"): Size is the number of actions (rows) in the checkpoint (for a v2
// checkpoint: in its top-level file and sidecars), SizeInBytes its size. Parts is absent for
// single-file checkpoints; V2Checkpoint and Checksum are present when the checkpoint is a
// UUID-named v2 one (as delta-spark writes them, LastCheckpointInfo.scala).
type LastCheckpoint struct {
	Version          int64             `json:"version"`                    // checkpointed table version
	Size             int64             `json:"size"`                       // actions (rows) in the checkpoint
	Parts            *int              `json:"parts,omitempty"`            // multi-part checkpoints only
	SizeInBytes      int64             `json:"sizeInBytes,omitempty"`      // checkpoint file(s) size
	NumOfAddFiles    *int64            `json:"numOfAddFiles,omitempty"`    // add actions in the checkpoint
	CheckpointSchema json.RawMessage   `json:"checkpointSchema,omitempty"` // schema of the checkpoint files (not written)
	V2Checkpoint     *LastCheckpointV2 `json:"v2Checkpoint,omitempty"`     // the UUID-named checkpoint
	Tags             map[string]string `json:"tags,omitempty"`             // free-form metadata
	// Checksum is the MD5 hex digest of the canonical form of the other fields (PROTOCOL.md
	// "JSON checksum"); see [LastCheckpointChecksum].
	Checksum string `json:"checksum,omitempty"`
}

// LastCheckpointV2 describes a UUID-named v2 checkpoint in `_last_checkpoint`: Path is its
// file name in `_delta_log`, SizeInBytes and ModificationTime (ms since the epoch) those of
// that top-level file. NonFileActions, when present, are all the checkpoint's actions other
// than add, remove and sidecar (protocol, metaData, txn, domainMetadata, checkpointMetadata),
// one JSON action object each; SidecarFiles, when present, all its sidecar actions (empty:
// none). Writers leave either out when it would be long.
type LastCheckpointV2 struct {
	Path             string            `json:"path"`
	SizeInBytes      int64             `json:"sizeInBytes"`
	ModificationTime int64             `json:"modificationTime"`
	NonFileActions   []json.RawMessage `json:"nonFileActions,omitempty"`
	SidecarFiles     *[]SidecarFile    `json:"sidecarFiles,omitempty"`
}

// CheckpointMetadata is the checkpointMetadata action, exactly one in every v2 spec
// checkpoint (PROTOCOL.md "Checkpoint Metadata"): the checkpointed Version and optional
// Tags (sidecarNumActions, sidecarSizeInBytes, numOfAddFiles, sidecarFileSchema; values are
// strings).
type CheckpointMetadata struct {
	Version int64             `json:"version"`
	Tags    map[string]string `json:"tags,omitempty"`
}

// SidecarFile is the sidecar action of a v2 spec checkpoint (PROTOCOL.md "Sidecar File
// Information"): Path is the URI-encoded name of a Parquet file in `_delta_log/_sidecars`
// holding some of the checkpoint's add and remove actions; SizeInBytes its size and
// ModificationTime its modification time in ms since the epoch.
type SidecarFile struct {
	Path             string            `json:"path"`
	SizeInBytes      int64             `json:"sizeInBytes"`
	ModificationTime int64             `json:"modificationTime"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// lastCheckpointInline bounds the non-file actions and sidecar actions copied into
// `_last_checkpoint` (delta-spark's lastCheckpoint.nonFileActions.threshold and
// lastCheckpoint.sidecars.threshold, 30 each): more are left out, so readers read the
// top-level file.
const lastCheckpointInline = 30

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

// sidecarSchema is the schema of the sidecar files of v2 checkpoints: the add and remove
// columns of the checkpoint schema only (PROTOCOL.md "Sidecar Files").
var sidecarSchema = arrow.NewSchema([]arrow.Field{
	checkpointSchema.Field(checkpointSchema.FieldIndices("add")[0]),
	checkpointSchema.Field(checkpointSchema.FieldIndices("remove")[0]),
}, nil)

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

// usesV2Checkpoints reports whether checkpoints of s follow the v2 spec (PROTOCOL.md "V2
// Checkpoint Table Feature"): the table has the v2Checkpoint feature and
// delta.checkpointPolicy=v2. With the feature but policy classic, checkpoints stay classic
// (V1 spec), as delta-spark writes them.
func (s *Snapshot) usesV2Checkpoints() bool {
	p := s.protocol
	return strings.EqualFold(s.metadata.Configuration["delta.checkpointPolicy"], "v2") &&
		slices.Contains(p.ReaderFeatures, FeatureV2Checkpoint) && slices.Contains(p.WriterFeatures, FeatureV2Checkpoint)
}

// writeCheckpoint writes the checkpoint of s and then `_last_checkpoint`, unless that already
// points at a newer version: a classic checkpoint (`<version>.checkpoint.parquet`), or, when
// the table uses v2 checkpoints, a UUID-named one ([Table.writeV2Checkpoint]). Every file is
// an atomic replace ([storage.Store.WriteFile]: temporary file + fsync + rename on a local
// disk, one PUT on a bucket): racing checkpointers write the same content (or, for v2, files
// of different names), and a reader sees a whole file or none.
func (t *Table) writeCheckpoint(ctx context.Context, s *Snapshot) error {
	rows := s.checkpointRows(t.now().UnixMilli())
	var lc *LastCheckpoint
	if s.usesV2Checkpoints() {
		var err error
		if lc, err = t.writeV2Checkpoint(ctx, s, rows); err != nil {
			return fmt.Errorf("write checkpoint %d: %w", s.version, err)
		}
	} else {
		data, numAdds, err := encodeCheckpoint(rows, t.mem, checkpointSchema)
		if err != nil {
			return fmt.Errorf("write checkpoint %d: %w", s.version, err)
		}
		if err := t.store.WriteFile(ctx, logName(CheckpointFileName(s.version)), data); err != nil {
			return fmt.Errorf("write checkpoint %d: %w", s.version, err)
		}
		lc = &LastCheckpoint{Version: s.version, Size: int64(len(rows)), SizeInBytes: int64(len(data)), NumOfAddFiles: &numAdds}
	}
	if old, err := t.readLastCheckpoint(ctx); err == nil && old.Version >= s.version {
		return nil
	}
	b, err := encodeLastCheckpoint(lc)
	if err != nil {
		return fmt.Errorf("write last checkpoint %d: %w", s.version, err)
	}
	if err := t.store.WriteFile(ctx, logName(LastCheckpointName), b); err != nil {
		return fmt.Errorf("write last checkpoint %d: %w", s.version, err)
	}
	return nil
}

// writeV2Checkpoint writes rows, the checkpoint of s, as a UUID-named v2 spec checkpoint
// (PROTOCOL.md "V2 Spec", "UUID-named checkpoint") the way delta-spark does by default: the
// add and remove actions in one sidecar Parquet file
// `_delta_log/_sidecars/<version>.checkpoint.0000000001.0000000001.<uuid>.parquet` (none when
// there are no file actions), then the top-level JSON file `<version>.checkpoint.<uuid>.json`
// holding the checkpointMetadata action, the sidecar action and the other actions. The sidecar
// is written first, so a top-level file never names a missing one. It returns the
// `_last_checkpoint` content for it, with the non-file and sidecar actions inlined when they
// are few.
func (t *Table) writeV2Checkpoint(ctx context.Context, s *Snapshot, rows []Action) (*LastCheckpoint, error) {
	var files, others []Action
	for _, r := range rows {
		if r.Add != nil || r.Remove != nil {
			files = append(files, r)
		} else {
			others = append(others, r)
		}
	}
	sidecars := []SidecarFile{}
	var numAdds, sidecarBytes int64
	if len(files) > 0 {
		data, n, err := encodeCheckpoint(files, t.mem, sidecarSchema)
		if err != nil {
			return nil, err
		}
		numAdds, sidecarBytes = n, int64(len(data))
		name := fmt.Sprintf("%020d.checkpoint.%010d.%010d.%s.parquet", s.version, 1, 1, uuid.New())
		mod, err := t.writeLogFile(ctx, SidecarDir+"/"+name, data)
		if err != nil {
			return nil, err
		}
		sidecars = append(sidecars, SidecarFile{Path: name, SizeInBytes: sidecarBytes, ModificationTime: mod})
	}
	meta := &CheckpointMetadata{Version: s.version, Tags: map[string]string{
		"sidecarNumActions":  strconv.Itoa(len(files)),
		"sidecarSizeInBytes": strconv.FormatInt(sidecarBytes, 10),
		"numOfAddFiles":      strconv.FormatInt(numAdds, 10),
	}}
	lines := []v2CheckpointLine{{CheckpointMetadata: meta}}
	for i := range sidecars {
		lines = append(lines, v2CheckpointLine{Sidecar: &sidecars[i]})
	}
	for _, a := range others {
		lines = append(lines, v2CheckpointLine{Action: a})
	}
	top, err := encodeLines(lines)
	if err != nil {
		return nil, err
	}
	name := V2CheckpointFileName(s.version, uuid.New(), "json")
	mod, err := t.writeLogFile(ctx, name, bytes.Join(top, nil))
	if err != nil {
		return nil, err
	}
	v2 := &LastCheckpointV2{Path: name, ModificationTime: mod}
	for _, l := range top {
		v2.SizeInBytes += int64(len(l))
	}
	if len(others)+1 <= lastCheckpointInline {
		// delta-spark's order: the snapshot's non-file actions, then checkpointMetadata.
		for _, l := range top[1+len(sidecars):] {
			v2.NonFileActions = append(v2.NonFileActions, bytes.TrimSuffix(l, []byte("\n")))
		}
		v2.NonFileActions = append(v2.NonFileActions, bytes.TrimSuffix(top[0], []byte("\n")))
	}
	if len(sidecars) <= lastCheckpointInline {
		v2.SidecarFiles = &sidecars
	}
	return &LastCheckpoint{Version: s.version, Size: int64(len(files) + len(lines)), SizeInBytes: sidecarBytes + v2.SizeInBytes,
		NumOfAddFiles: &numAdds, V2Checkpoint: v2}, nil
}

// writeLogFile writes data as `_delta_log/<name>` (an atomic replace) and returns its
// modification time in ms since the epoch (the store's clock; the table's clock when the
// store cannot say).
func (t *Table) writeLogFile(ctx context.Context, name string, data []byte) (int64, error) {
	if err := t.store.WriteFile(ctx, logName(name), data); err != nil {
		return 0, err
	}
	if in, err := t.store.Stat(ctx, logName(name)); err == nil && !in.ModTime.IsZero() {
		return in.ModTime.UnixMilli(), nil
	}
	return t.now().UnixMilli(), nil
}

// encodeLines renders JSON checkpoint lines, each terminated by '\n', as commits are
// ([encodeActions]).
func encodeLines(lines []v2CheckpointLine) ([][]byte, error) {
	out := make([][]byte, 0, len(lines))
	for i := range lines {
		normalizeAction(&lines[i].Action)
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&lines[i]); err != nil {
			return nil, fmt.Errorf("encode checkpoint action: %w", err)
		}
		out = append(out, b.Bytes())
	}
	return out, nil
}

// encodeLastCheckpoint renders lc; a v2 one gets its checksum, as delta-spark writes it.
func encodeLastCheckpoint(lc *LastCheckpoint) ([]byte, error) {
	c := *lc
	c.Checksum = ""
	b, err := json.Marshal(c)
	if err != nil || c.V2Checkpoint == nil {
		return b, err
	}
	if c.Checksum, err = LastCheckpointChecksum(b); err != nil {
		return nil, err
	}
	return json.Marshal(c)
}

// LastCheckpointChecksum returns the checksum of a `_last_checkpoint` JSON document
// (PROTOCOL.md "JSON checksum"): the MD5 hex digest of its canonical form, in which every
// leaf value becomes path=value (object keys and string values quoted and percent-encoded
// except for A-Z a-z 0-9 - . _ ~, array positions as numbers, path segments joined by +),
// the pairs sorted and joined by commas, and the top-level checksum field left out. Numbers
// keep their JSON text.
func LastCheckpointChecksum(doc []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return "", fmt.Errorf("last checkpoint checksum: %w", err)
	}
	var pairs []string
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				walk(c, append(path, canonicalString(k)))
			}
		case []any:
			for i, c := range x {
				walk(c, append(path, strconv.Itoa(i)))
			}
		default:
			p := strings.Join(path, "+")
			if p == `"checksum"` {
				return
			}
			var val string
			switch y := x.(type) {
			case string:
				val = canonicalString(y)
			case json.Number:
				val = y.String()
			case bool:
				val = strconv.FormatBool(y)
			default:
				val = "null"
			}
			pairs = append(pairs, p+"="+val)
		}
	}
	walk(root, nil)
	sort.Strings(pairs)
	sum := md5.Sum([]byte(strings.Join(pairs, ",")))
	return hex.EncodeToString(sum[:]), nil
}

// canonicalString quotes s for [LastCheckpointChecksum]: every UTF-8 byte outside
// A-Z a-z 0-9 - . _ ~ as %XX (upper-case hex).
func canonicalString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// encodeCheckpoint renders checkpoint rows as a Parquet file (snappy) of schema sc
// ([checkpointSchema], or [sidecarSchema] for file actions only); a row whose action has no
// column in sc is an error.
func encodeCheckpoint(rows []Action, mem memory.Allocator, sc *arrow.Schema) ([]byte, int64, error) {
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	var numAdds int64
	cols := map[string]*array.StructBuilder{}
	var all []*array.StructBuilder
	for i, f := range sc.Fields() {
		cols[f.Name] = b.Field(i).(*array.StructBuilder)
		all = append(all, cols[f.Name])
	}
	txnB, addB, remB, metaB, protB, domB := cols["txn"], cols["add"], cols["remove"], cols["metaData"], cols["protocol"], cols["domainMetadata"]
	for _, r := range rows {
		if c := actionColumn(r); c != "" && cols[c] == nil {
			return nil, 0, fmt.Errorf("checkpoint schema has no column for a %s action", c)
		}
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
	fw, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
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

// actionColumn is the checkpoint column of a's kind ("" for a kind checkpoints do not hold).
func actionColumn(a Action) string {
	switch {
	case a.Txn != nil:
		return "txn"
	case a.Add != nil:
		return "add"
	case a.Remove != nil:
		return "remove"
	case a.MetaData != nil:
		return "metaData"
	case a.Protocol != nil:
		return "protocol"
	case a.DomainMetadata != nil:
		return "domainMetadata"
	}
	return ""
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
