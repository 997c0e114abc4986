package writedelta

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	"github.com/streamkit/streamkit/stage"
)

// newMem is a checked allocator that must hold nothing when the test ends; run gives it to
// the stage loop of the test t (testMem).
func newMem(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	mems.Store(t, mem)
	t.Cleanup(func() {
		mems.Delete(t)
		mem.AssertSize(t, 0)
	})
	return mem
}

// mems holds the allocator of each running test that called newMem (keyed by its
// testing.TB), so that tests can run in parallel with their own allocators.
var mems sync.Map

// testMem is the allocator newMem made for t, nil (the stage's default) when it made none.
func testMem(t testing.TB) memory.Allocator {
	if m, ok := mems.Load(t); ok {
		return m.(memory.Allocator)
	}
	return nil
}

var idSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// stream builds an Arrow IPC stream with control batches in memory.
type stream struct {
	t   testing.TB
	mem memory.Allocator
	buf bytes.Buffer
	w   *codec.Writer
	sc  *arrow.Schema
}

func newStream(t testing.TB, mem memory.Allocator, sc *arrow.Schema) *stream {
	return newStreamAs(t, mem, sc, replayable(sc, true))
}

// unreplayableStream is newStream for a stream whose epochs are not replayable (a source
// without a checkpoint).
func unreplayableStream(t testing.TB, mem memory.Allocator, sc *arrow.Schema) *stream {
	return newStreamAs(t, mem, sc, replayable(sc, false))
}

// newStreamAs builds a stream of rows of sc whose schema message is wire (sc with metadata).
func newStreamAs(t testing.TB, mem memory.Allocator, sc, wire *arrow.Schema) *stream {
	s := &stream{t: t, mem: mem, sc: sc}
	s.w = codec.NewWriter(&s.buf, wire, mem)
	return s
}

// replayable returns sc with streamkit.replayable set as r says (true: as from a source that
// keeps a checkpoint).
func replayable(sc *arrow.Schema, r bool) *arrow.Schema {
	info := codec.Info(sc)
	info.Replayable = r
	return codec.WithInfo(sc, info)
}

// ids writes one batch of rows id = from..to-1, s = "v<id>".
func (s *stream) ids(from, to int) *stream {
	s.t.Helper()
	rec := idBatch(s.mem, from, to)
	defer rec.Release()
	return s.rec(rec)
}

func (s *stream) rec(rec arrow.RecordBatch) *stream {
	s.t.Helper()
	if err := s.w.Write(rec); err != nil {
		s.t.Fatal(err)
	}
	return s
}

func (s *stream) json(js string) *stream {
	s.t.Helper()
	rec, _, err := array.RecordFromJSON(s.mem, s.sc, strings.NewReader(js))
	if err != nil {
		s.t.Fatal(err)
	}
	defer rec.Release()
	return s.rec(rec)
}

func (s *stream) barrier(n uint64) *stream {
	s.t.Helper()
	if err := s.w.WriteControl(codec.BarrierControl(n)); err != nil {
		s.t.Fatal(err)
	}
	return s
}

// end writes the end batch and the EOS marker and returns the stream bytes.
func (s *stream) end(k codec.EndKind) []byte {
	s.t.Helper()
	if err := s.w.WriteControl(codec.EndControl(k)); err != nil {
		s.t.Fatal(err)
	}
	return s.eos()
}

// eos writes only the EOS marker (a foreign producer).
func (s *stream) eos() []byte {
	s.t.Helper()
	if err := s.w.Close(); err != nil {
		s.t.Fatal(err)
	}
	return s.buf.Bytes()
}

func idBatch(mem memory.Allocator, from, to int) arrow.RecordBatch {
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	sb := array.NewStringBuilder(mem)
	defer sb.Release()
	for i := from; i < to; i++ {
		ib.Append(int64(i))
		sb.Append("v" + strconv.Itoa(i))
	}
	a, b := ib.NewArray(), sb.NewArray()
	defer a.Release()
	defer b.Release()
	return array.NewRecordBatch(idSchema, []arrow.Array{a, b}, int64(to-from))
}

// run runs write-delta over input in-process and returns its log.
func run(t testing.TB, cfg deltasink.StreamConfig, ckpt string, input []byte, tune ...func(*deltasink.StreamWriter)) (string, error) {
	t.Helper()
	w, err := deltasink.NewStreamWriter(cfg)
	if err != nil {
		return "", err
	}
	for _, f := range tune {
		f(w)
	}
	return runFrom(testMem(t), w, ckpt, cfg.Table, bytes.NewReader(input))
}

// runFrom runs w over the stream read from in, with the stage loop as the command does,
// allocating from mem (nil: the stage's default).
func runFrom(mem memory.Allocator, w *deltasink.StreamWriter, ckpt, table string, in io.Reader) (string, error) {
	var log bytes.Buffer
	o := stage.Options{Tool: Tool, Checkpoint: ckpt, StateOptions: map[string]string{"table": table},
		Stdin: in, Stdout: io.Discard, Stderr: &log, NoSignals: true,
		Progress: stage.ProgressOff, Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})), Mem: mem}
	err := stage.RunOperator(context.Background(), o, w)
	return log.String(), err
}

func mustRun(t testing.TB, cfg deltasink.StreamConfig, ckpt string, input []byte) string {
	t.Helper()
	log, err := run(t, cfg, ckpt, input)
	if err != nil {
		t.Fatalf("write-delta: %v\n%s", err, log)
	}
	return log
}

func snapshot(t testing.TB, root string) *delta.Snapshot {
	t.Helper()
	s, err := delta.NewTable(root, nil).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tableIDs reads the id column of every live data file (pqarrow) and returns the ids sorted.
func tableIDs(t testing.TB, root string) []int64 {
	t.Helper()
	s := snapshot(t, root)
	var ids []int64
	for _, a := range s.Files() {
		p, err := delta.DecodePath(a.Path)
		if err != nil {
			t.Fatal(err)
		}
		tbl := readParquet(t, filepath.Join(root, p))
		col := tbl.Column(tbl.Schema().FieldIndices("id")[0])
		for _, ch := range col.Data().Chunks() {
			ids = append(ids, ch.(*array.Int64).Int64Values()...)
		}
		tbl.Release()
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func readParquet(t testing.TB, path string) arrow.Table {
	t.Helper()
	f, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := r.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// parquetFiles lists the .parquet files under root outside _delta_log.
func parquetFiles(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == delta.LogDir {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func seq(from, to int) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, int64(i))
	}
	return out
}

func equalIDs(got, want []int64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
