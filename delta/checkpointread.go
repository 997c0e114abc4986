package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// v2Parts collects what a v2 spec checkpoint's top-level file says beyond the actions it
// holds itself (PROTOCOL.md "V2 Spec"): its checkpointMetadata and sidecar actions.
type v2Parts struct {
	meta     *CheckpointMetadata
	sidecars []SidecarFile
}

func (p *v2Parts) add(meta *CheckpointMetadata, sc *SidecarFile) error {
	if meta != nil {
		if p.meta != nil {
			return errors.New("more than one checkpointMetadata action")
		}
		p.meta = meta
	}
	if sc != nil {
		p.sidecars = append(p.sidecars, *sc)
	}
	return nil
}

// readCheckpoint reads the checkpoint of version v made of the files names of `_delta_log`
// (one file, or every part of a multi-part checkpoint) and applies its actions to s. A
// top-level file is Parquet, or JSON for a UUID-named checkpoint "v.checkpoint.<uuid>.json".
// A v2 spec checkpoint (PROTOCOL.md "V2 Spec") has one checkpointMetadata action, required
// of a UUID-named one and naming version v; the add and remove actions of its sidecar
// actions' files (`_delta_log/_sidecars/<name>`) are applied too. An error (a missing
// sidecar, a malformed file) leaves the caller to fall back to an older checkpoint.
func (s *Snapshot) readCheckpoint(ctx context.Context, v int64, names []string) error {
	var v2 v2Parts
	if err := s.readTopLevel(ctx, names, &v2, false); err != nil {
		return err
	}
	if len(names) == 1 && len(names[0]) > 21 && isV2CheckpointName(names[0][21:]) && v2.meta == nil {
		return fmt.Errorf("read checkpoint %s: a UUID-named checkpoint without a checkpointMetadata action", names[0])
	}
	if v2.meta != nil && v2.meta.Version != v {
		return fmt.Errorf("read checkpoint %s: checkpointMetadata names version %d", names[0], v2.meta.Version)
	}
	for _, sc := range v2.sidecars {
		name, err := sidecarName(sc.Path)
		if err != nil {
			return fmt.Errorf("read checkpoint %s: %w", names[0], err)
		}
		if err := s.readParquetActions(ctx, logName(SidecarDir+"/"+name), nil, false); err != nil {
			return fmt.Errorf("read checkpoint %s: sidecar %s: %w", names[0], name, err)
		}
	}
	return nil
}

// sidecarRefs returns the names, in `_delta_log/_sidecars`, of the sidecar files the
// checkpoint files names reference (s is scratch). A file that is gone (a concurrent cleanup)
// references none.
func (s *Snapshot) sidecarRefs(ctx context.Context, names []string) ([]string, error) {
	var v2 v2Parts
	if err := s.readTopLevel(ctx, names, &v2, true); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(v2.sidecars))
	for _, sc := range v2.sidecars {
		name, err := sidecarName(sc.Path)
		if err != nil {
			return nil, fmt.Errorf("read checkpoint %s: %w", names[0], err)
		}
		out = append(out, name)
	}
	return out, nil
}

// sidecarName returns the file name, in `_delta_log/_sidecars`, of a sidecar action's path:
// a URI-encoded file name, or a path or URI whose last directories are
// `_delta_log/_sidecars` (sidecars always live in the table's own sidecar directory). Names
// that could point elsewhere are refused with [ErrUnsafePath].
func sidecarName(path string) (string, error) {
	p, err := url.PathUnescape(path)
	if err != nil {
		return "", fmt.Errorf("sidecar path %q: %w", path, err)
	}
	name := p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		name = p[i+1:]
		if !strings.HasSuffix(p[:i], "/"+LogDir+"/"+SidecarDir) && p[:i] != LogDir+"/"+SidecarDir {
			return "", fmt.Errorf("sidecar path %q: %w: not in %s/%s", path, ErrUnsafePath, LogDir, SidecarDir)
		}
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "\\\x00") {
		return "", fmt.Errorf("sidecar path %q: %w", path, ErrUnsafePath)
	}
	return name, nil
}

// v2CheckpointLine is one line of a JSON (v2 spec) checkpoint: an action, or one of the
// checkpoint-only actions, which never appear in commits (PROTOCOL.md "Action
// Reconciliation").
type v2CheckpointLine struct {
	Action
	CheckpointMetadata *CheckpointMetadata `json:"checkpointMetadata,omitempty"`
	Sidecar            *SidecarFile        `json:"sidecar,omitempty"`
}

// readCheckpointJSON reads a JSON top-level checkpoint file whole (one request on a bucket)
// and applies its actions to s.
func (s *Snapshot) readCheckpointJSON(ctx context.Context, name string, v2 *v2Parts) error {
	b, err := s.store.ReadFile(ctx, name)
	if err != nil {
		return err
	}
	var actions []Action
	err = scanJSONLines(bytes.NewReader(b), func(line []byte) error {
		var l v2CheckpointLine
		if err := json.Unmarshal(line, &l); err != nil {
			return err
		}
		if l.Action != (Action{}) {
			actions = append(actions, l.Action)
		}
		return v2.add(l.CheckpointMetadata, l.Sidecar)
	})
	if err != nil {
		return err
	}
	return s.apply(actions)
}

// readTopLevel reads the checkpoint files names of `_delta_log` (JSON or Parquet, see
// readParquetActions) into s and v2. forRefs reads only what may name sidecars, and skips
// files that are gone (a concurrent cleanup).
func (s *Snapshot) readTopLevel(ctx context.Context, names []string, v2 *v2Parts, forRefs bool) error {
	for _, name := range names {
		var err error
		if strings.HasSuffix(name, ".json") {
			err = s.readCheckpointJSON(ctx, logName(name), v2)
		} else {
			err = s.readParquetActions(ctx, logName(name), v2, forRefs)
		}
		if err != nil && !(forRefs && errors.Is(err, fs.ErrNotExist)) {
			return fmt.Errorf("read checkpoint %s: %w", name, err)
		}
	}
	return nil
}

// readParquetActions reads one checkpoint Parquet file through the store: ranged reads of its
// footer and column chunks (io.ReaderAt), as from a local file. v2 collects its
// checkpointMetadata and sidecar actions; nil for a sidecar file, which may hold file actions
// only. withSidecarsOnly reads nothing from a file without a sidecar column (a V1 spec
// checkpoint).
func (s *Snapshot) readParquetActions(ctx context.Context, name string, v2 *v2Parts, withSidecarsOnly bool) error {
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
	if withSidecarsOnly {
		if sc, err := fr.Schema(); err != nil || len(sc.FieldIndices("sidecar")) == 0 {
			return err
		}
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
		actions, err := checkpointActions(rr.RecordBatch(), v2)
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

// checkpointActions converts one batch of checkpoint rows to actions, and hands the
// checkpointMetadata and sidecar rows of a v2 spec checkpoint to v2 (nil: such rows are an
// error, as in a sidecar file). Missing columns and fields read as null.
func checkpointActions(rec arrow.RecordBatch, v2 *v2Parts) ([]Action, error) {
	cols := map[string]*sv{}
	for i, f := range rec.Schema().Fields() {
		cols[f.Name] = structView(rec.Column(i))
	}
	n := int(rec.NumRows())
	out := make([]Action, 0, n)
	cmV, scV := cols["checkpointMetadata"], cols["sidecar"]
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
		if err := checkpointOnlyActions(cmV, scV, i, v2); err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
	}
	return out, nil
}

// checkpointOnlyActions hands the checkpointMetadata (column cmV) and sidecar (column scV)
// action of row i, if any, to v2; nil v2 refuses them.
func checkpointOnlyActions(cmV, scV *sv, i int, v2 *v2Parts) error {
	var meta *CheckpointMetadata
	var sc *SidecarFile
	if v := cmV; v.valid(i) {
		meta = &CheckpointMetadata{Tags: getStrMapV(v.f("tags"), i)}
		if p := getI64(v.f("version"), i); p != nil {
			meta.Version = *p
		}
	}
	if v := scV; v.valid(i) {
		sc = &SidecarFile{Path: getStrV(v.f("path"), i), Tags: getStrMapV(v.f("tags"), i)}
		if p := getI64(v.f("sizeInBytes"), i); p != nil {
			sc.SizeInBytes = *p
		}
		if p := getI64(v.f("modificationTime"), i); p != nil {
			sc.ModificationTime = *p
		}
		if sc.Path == "" {
			return errors.New("sidecar without path")
		}
	}
	if meta == nil && sc == nil {
		return nil
	}
	if v2 == nil {
		return errors.New("a checkpointMetadata or sidecar action in a sidecar file")
	}
	return v2.add(meta, sc)
}
