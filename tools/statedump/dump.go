package statedump

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/sink/print"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

// dumpBatchRows is the size of the record batches of an Arrow dump.
const dumpBatchRows = 1 << 16

// retries bounds how often a dump of the committed epoch starts over when the running stage
// garbage-collects a file of it while it is read.
const retries = 5

// dumpState reconstructs, filters and emits the keyed state of the stage directory at path.
func dumpState(cfg Config, path string, out io.Writer) error {
	mem := cfg.Mem
	if len(cfg.Diff) == 2 {
		return diff(mem, cfg, path, out)
	}
	rec, err := selectState(mem, cfg, path, false)
	if err != nil {
		return err
	}
	defer rec.Release()
	return emit(cfg, rec, out)
}

// selectState is the keyed state of the stage directory at path, filtered by --key and
// --expiring; with shard, an empty state is returned as it is (a shard that holds no key has
// no key columns to filter on).
func selectState(mem memory.Allocator, cfg Config, path string, shard bool) (arrow.RecordBatch, error) {
	rec, man, err := keyedAt(mem, path, cfg.Epoch)
	if err != nil {
		return nil, err
	}
	if shard && rec.NumRows() == 0 {
		return rec, nil
	}
	if cfg.Key != "" {
		f, err := filterKey(mem, rec, cfg.Key)
		rec.Release()
		if err != nil {
			return nil, err
		}
		rec = f
	}
	if cfg.Expiring > 0 {
		f, err := expiring(mem, cfg, path, rec, man)
		rec.Release()
		if err != nil {
			return nil, err
		}
		rec = f
	}
	return rec, nil
}

// ColShard is the column that dumpShards adds: the shard (keyby --shards) holding the row.
const ColShard = "_shard"

// dumpShards emits the state of a stage run as shards of keyby --shards (the directories
// paths, shard i at index i) as one table, each row with its shard in ColShard (first).
func dumpShards(cfg Config, paths []string, out io.Writer) error {
	if len(cfg.Diff) == 2 {
		return stage.Usagef("state-dump: --diff compares the epochs of one stage; name a shard with --stage %s", state.Base(paths[0]))
	}
	mem := cfg.Mem
	// --key _shard=i picks a shard (the column exists only in this dump).
	first := 0
	if v, ok := strings.CutPrefix(cfg.Key, ColShard+"="); ok {
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 || i >= len(paths) {
			return stage.Usagef("state-dump: --key %s: want a shard from 0 to %d", cfg.Key, len(paths)-1)
		}
		first, paths, cfg.Key = i, paths[i:i+1], ""
	}
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for i, p := range paths {
		rec, err := selectState(mem, cfg, p, true)
		if err != nil {
			return err
		}
		b := array.NewInt32Builder(mem)
		for range rec.NumRows() {
			b.Append(int32(first + i))
		}
		shard := b.NewArray()
		b.Release()
		fields := append([]arrow.Field{{Name: ColShard, Type: arrow.PrimitiveTypes.Int32}}, rec.Schema().Fields()...)
		md := rec.Schema().Metadata()
		parts = append(parts, array.NewRecordBatch(arrow.NewSchema(fields, &md), append([]arrow.Array{shard}, rec.Columns()...), rec.NumRows()))
		shard.Release()
		rec.Release()
	}
	// A shard that holds no key has no key columns in its state: only shards with keys count
	// (all of them empty: the first stands for all).
	var use []arrow.RecordBatch
	for i, p := range parts {
		if p.NumRows() == 0 {
			continue
		}
		if len(use) > 0 && !p.Schema().Equal(use[0].Schema()) {
			return fmt.Errorf("state-dump: shard %d (%s) has another state schema than the others: %v vs %v", i, paths[i], p.Schema(), use[0].Schema())
		}
		use = append(use, p)
	}
	if len(use) == 0 {
		use = parts[:1]
	}
	all, err := concatRecords(mem, use)
	if err != nil {
		return err
	}
	defer all.Release()
	return emit(cfg, all, out)
}

// concatRecords is one batch of the rows of recs (of one schema), in order.
func concatRecords(mem memory.Allocator, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	s := recs[0].Schema()
	cols := make([]arrow.Array, s.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	for j := range cols {
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(j)
		}
		var err error
		if cols[j], err = array.Concatenate(parts, mem); err != nil {
			return nil, fmt.Errorf("state-dump: %w", err)
		}
	}
	return array.NewRecordBatch(s, cols, n), nil
}

// keyedAt is keyed at epoch n, or at the committed epoch when n is 0. A file that vanishes
// while it is read (the running stage collected the epoch) makes it start over on the then
// committed epoch; an explicit epoch that is gone is an error.
func keyedAt(mem memory.Allocator, path string, n uint64) (arrow.RecordBatch, state.Manifest, error) {
	for try := 0; ; try++ {
		epoch := n
		if epoch == 0 {
			c, err := state.Committed(path)
			if err != nil {
				return nil, state.Manifest{}, fmt.Errorf("state-dump: %w", err)
			}
			if c == 0 {
				return nil, state.Manifest{}, fmt.Errorf("state-dump: %s has no committed epoch yet; give --epoch N to read an uncommitted one", path)
			}
			epoch = c
		}
		rec, man, err := keyed(mem, path, epoch)
		if err == nil || n != 0 || try == retries || !errors.Is(err, os.ErrNotExist) {
			switch {
			case err == nil:
			case errors.Is(err, os.ErrNotExist):
				err = fmt.Errorf("state-dump: %w (epoch %d was garbage-collected while it was read)", err, epoch)
			case !strings.HasPrefix(err.Error(), "state-dump:"):
				err = fmt.Errorf("state-dump: %w", err)
			}
			return rec, man, err
		}
	}
}

// stageMeta reads the metadata.json of the stage directory at path (zero when unreadable).
func stageMeta(path string) state.Metadata {
	var meta state.Metadata
	state.ReadJSON(state.Join(path, state.MetadataFile), &meta)
	return meta
}

// keyNames returns the key column names of a stage (its "key" option, comma-separated) and
// how many key parts to show: key parts beyond the named key columns identify an entry within
// the key (a window's start and end, a count window's slice) and the state columns carry them
// already, by name, so only the key columns' parts are kept — for a window also when it has
// no key columns; a stage that names no key shows every part (-1).
func keyNames(meta state.Metadata) ([]string, int) {
	var names []string
	if k := meta.Options["key"]; k != "" {
		names = strings.Split(k, ",")
	}
	if meta.Tool == "window" || len(names) > 0 {
		return names, len(names)
	}
	return names, -1
}

// keyed reconstructs the state of epoch n with the key decoded into typed columns (named by
// the stage's key option) followed by the value columns.
func keyed(mem memory.Allocator, path string, n uint64) (arrow.RecordBatch, state.Manifest, error) {
	t, err := state.Reconstruct(mem, path, n)
	if err != nil {
		return nil, state.Manifest{}, err
	}
	defer t.Release()
	rec, err := withKeys(mem, path, t)
	return rec, t.Manifest, err
}

// withKeys returns the rows of t with the _op and _key columns replaced by the decoded key
// columns.
func withKeys(mem memory.Allocator, path string, t *state.Table) (arrow.RecordBatch, error) {
	names, parts := keyNames(stageMeta(path))
	kf, ka, err := decodeKeys(mem, t.Rec.Column(1).(*array.Binary), names, parts)
	if err != nil {
		return nil, fmt.Errorf("state-dump: decode keys of %s: %w", path, err)
	}
	fields := append([]arrow.Field(nil), kf...)
	cols := append([]arrow.Array(nil), ka...)
	taken := map[string]bool{}
	for _, f := range kf {
		taken[f.Name] = true
	}
	for i := 2; i < int(t.Rec.NumCols()); i++ {
		f := t.Rec.Schema().Field(i)
		if taken[f.Name] {
			f.Name = "state_" + f.Name
		}
		fields = append(fields, f)
		c := t.Rec.Column(i)
		c.Retain()
		cols = append(cols, c)
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, t.Rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}

// filterKey keeps rows whose column (a key column or value column) renders as value.
func filterKey(mem memory.Allocator, rec arrow.RecordBatch, expr string) (arrow.RecordBatch, error) {
	name, want, ok := strings.Cut(expr, "=")
	if !ok {
		return nil, stage.Usagef("state-dump: --key wants path=value, got %q", expr)
	}
	idx := rec.Schema().FieldIndices(strings.TrimSpace(name))
	if len(idx) == 0 {
		var names []string
		for _, f := range rec.Schema().Fields() {
			names = append(names, f.Name)
		}
		return nil, stage.Usagef("state-dump: --key: no column %q (have: %s)", name, strings.Join(names, ", "))
	}
	col := rec.Column(idx[0])
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	for i := 0; i < col.Len(); i++ {
		b.Append(col.IsValid(i) && col.ValueStr(i) == want)
	}
	return filter(mem, rec, b)
}

func filter(mem memory.Allocator, rec arrow.RecordBatch, b *array.BooleanBuilder) (arrow.RecordBatch, error) {
	mask := b.NewBooleanArray()
	defer mask.Release()
	return compute.FilterRecordBatch(compute.WithAllocator(context.Background(), mem), rec, mask, compute.DefaultFilterOptions())
}

// expiring keeps the keys that expire within cfg.Expiring of the stage's current watermark:
// dedup keys whose first_seen + ttl falls before it (first_seen + ttl-processing before Now
// + the duration for processing-time TTLs), window entries whose window_end + allowed
// lateness does (the window is then purged).
func expiring(mem memory.Allocator, cfg Config, path string, rec arrow.RecordBatch, man state.Manifest) (arrow.RecordBatch, error) {
	meta := stageMeta(path)
	col, ttlOpt := "first_seen", "ttl"
	if meta.Tool == "window" || len(rec.Schema().FieldIndices("window_end")) > 0 {
		col, ttlOpt = "window_end", "allowed-lateness"
	}
	ttl, _ := time.ParseDuration(meta.Options[ttlOpt])
	var ref int64 // µs: the watermark, or the wall clock for processing-time TTLs
	if pt, _ := time.ParseDuration(meta.Options["ttl-processing"]); col == "first_seen" && ttl <= 0 && pt > 0 {
		ttl, ref = pt, cfg.Now().UnixMicro()
	} else {
		wm, ok := watermarkUS(man.Extra)
		if !ok {
			return nil, fmt.Errorf("state-dump: %s has no watermark at epoch %d; --expiring needs one", path, man.Epoch)
		}
		ref = wm
	}
	if col == "first_seen" && ttl <= 0 {
		return nil, fmt.Errorf("state-dump: --expiring: %s has no ttl (its keys never expire)", path)
	}
	idx := rec.Schema().FieldIndices(col)
	if len(idx) == 0 {
		return nil, fmt.Errorf("state-dump: --expiring: the state of %s has no %s column", path, col)
	}
	ts, ok := rec.Column(idx[0]).(*array.Timestamp)
	if !ok {
		return nil, fmt.Errorf("state-dump: --expiring: %s is not a timestamp column", col)
	}
	unit := ts.DataType().(*arrow.TimestampType).Unit
	limit := ref + cfg.Expiring.Microseconds()
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	for i := 0; i < ts.Len(); i++ {
		at := ts.Value(i).ToTime(unit).UnixMicro() + ttl.Microseconds()
		b.Append(ts.IsValid(i) && at <= limit)
	}
	return filter(mem, rec, b)
}

// watermarkUS returns the watermark (µs) an operator recorded in a manifest's extra: dedup's
// {"watermark_us": n}, window's {"watermark": {"current": n}}. None (math.MinInt64, or absent)
// is false.
func watermarkUS(extra json.RawMessage) (int64, bool) {
	var x struct {
		Dedup  *int64 `json:"watermark_us"`
		Window *struct {
			Current *int64 `json:"current"`
		} `json:"watermark"`
	}
	if len(extra) == 0 || json.Unmarshal(extra, &x) != nil {
		return 0, false
	}
	var v *int64
	switch {
	case x.Dedup != nil:
		v = x.Dedup
	case x.Window != nil:
		v = x.Window.Current
	}
	if v == nil || *v < -1<<60 || *v > 1<<60 {
		return 0, false
	}
	return *v, true
}

// diff lists keys added, removed and changed between epochs A and B: a change column, then
// the key and state columns of B (of A for removed keys), in key order.
func diff(mem memory.Allocator, cfg Config, path string, out io.Writer) error {
	ta, err := state.Reconstruct(mem, path, cfg.Diff[0])
	if err != nil {
		return fmt.Errorf("state-dump: %w", err)
	}
	defer ta.Release()
	tb, err := state.Reconstruct(mem, path, cfg.Diff[1])
	if err != nil {
		return fmt.Errorf("state-dump: %w", err)
	}
	defer tb.Release()
	a, err := withKeys(mem, path, ta)
	if err != nil {
		return err
	}
	defer a.Release()
	b, err := withKeys(mem, path, tb)
	if err != nil {
		return err
	}
	defer b.Release()
	if !a.Schema().Equal(b.Schema()) {
		return fmt.Errorf("state-dump: --diff: the state schema changed between epochs %d and %d", cfg.Diff[0], cfg.Diff[1])
	}
	rowText := func(rec arrow.RecordBatch, i int) string {
		var sb strings.Builder
		for c := 2; c < int(rec.NumCols()); c++ {
			sb.WriteString(rec.Column(c).ValueStr(i))
			sb.WriteByte(0)
		}
		return sb.String()
	}
	// Both tables are sorted by _key: merge them.
	ka, kb := ta.Rec.Column(1).(*array.Binary), tb.Rec.Column(1).(*array.Binary)
	kinds := array.NewStringBuilder(mem)
	defer kinds.Release()
	take := array.NewInt64Builder(mem) // index into a ++ b
	defer take.Release()
	na := int64(a.NumRows())
	i, j := 0, 0
	for i < ka.Len() || j < kb.Len() {
		var c int
		switch {
		case i == ka.Len():
			c = 1
		case j == kb.Len():
			c = -1
		default:
			c = strings.Compare(ka.ValueString(i), kb.ValueString(j))
		}
		switch {
		case c < 0:
			kinds.Append("removed")
			take.Append(int64(i))
			i++
		case c > 0:
			kinds.Append("added")
			take.Append(na + int64(j))
			j++
		default:
			if rowText(ta.Rec, i) != rowText(tb.Rec, j) {
				kinds.Append("changed")
				take.Append(na + int64(j))
			}
			i++
			j++
		}
	}
	idx := take.NewInt64Array()
	defer idx.Release()
	kindArr := kinds.NewArray()
	defer kindArr.Release()
	ctx := compute.WithAllocator(context.Background(), mem)
	fields := []arrow.Field{{Name: "change", Type: arrow.BinaryTypes.String}}
	cols := []arrow.Array{kindArr}
	defer func() {
		for _, c := range cols[1:] {
			c.Release()
		}
	}()
	for c := 0; c < int(a.NumCols()); c++ {
		whole, err := array.Concatenate([]arrow.Array{a.Column(c), b.Column(c)}, mem)
		if err != nil {
			return err
		}
		col, err := compute.TakeArray(ctx, whole, idx)
		whole.Release()
		if err != nil {
			return err
		}
		fields = append(fields, a.Schema().Field(c))
		cols = append(cols, col)
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(idx.Len()))
	defer rec.Release()
	return emit(cfg, rec, out)
}

// emit prints rec in cfg.Format or streams it as Arrow IPC (batches of at most dumpBatchRows
// rows, then end=final).
func emit(cfg Config, rec arrow.RecordBatch, out io.Writer) error {
	if cfg.Format == FormatArrow {
		w := codec.NewWriter(out, rec.Schema(), cfg.Mem)
		for off := int64(0); off < rec.NumRows() || off == 0; off += dumpBatchRows {
			part := rec.NewSlice(off, min(off+dumpBatchRows, rec.NumRows()))
			err := w.Write(part)
			part.Release()
			if err != nil {
				return err
			}
			if rec.NumRows() == 0 {
				break
			}
		}
		if err := w.WriteControl(codec.EndControl(codec.Final)); err != nil {
			return err
		}
		return w.Close()
	}
	p, err := print.New(print.Config{Format: cfg.Format, Color: cfg.Color}, out)
	if err != nil {
		return err
	}
	p.Start(rec.Schema())
	if rec.NumRows() == 0 && cfg.Format == FormatTable {
		fmt.Fprintln(out, "(no keys)")
	}
	if err := p.Process(context.Background(), rec, nil); err != nil {
		return err
	}
	return p.Close()
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
