package formats

import (
	"math/big"

	"bytes"
	"github.com/streamkit/streamkit/codec/csvrow"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/linkedin/goavro/v2"

	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/codec/schema"
)

// readAll reads every batch of path and returns the rows as JSON lines, the batch sizes and
// positions.
type readOut struct {
	rows     string
	schema   string
	sizes    []int64
	first    []int64
	lines    []int64
	offsets  []int64
	badCount int
}

func readFile(t *testing.T, path string, opts Options) readOut {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts.Allocator = mem
	var out readOut
	if opts.OnBadRecord == nil {
		opts.OnBadRecord = func(rescue.BadRecord) error { out.badCount++; return nil }
	}
	r, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out.schema = schema.DDL(r.Schema())
	var b bytes.Buffer
	for {
		batch, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !batch.Record.Schema().Equal(r.Schema()) {
			t.Fatalf("batch schema %v != reader schema %v", batch.Record.Schema(), r.Schema())
		}
		if err := array.RecordToJSON(batch.Record, &b); err != nil {
			t.Fatal(err)
		}
		out.sizes = append(out.sizes, batch.Record.NumRows())
		out.first = append(out.first, batch.FirstRow)
		out.lines = append(out.lines, batch.Lines...)
		out.offsets = append(out.offsets, batch.Offsets...)
		batch.Record.Release()
	}
	out.rows = strings.TrimSpace(b.String())
	return out
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gz(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func zst(t *testing.T, b []byte) []byte {
	w, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	return w.EncodeAll(b, nil)
}

func TestDetectFormat(t *testing.T) {
	tests := []struct {
		path string
		f    Format
		c    Compression
	}{
		{"a/b.csv", CSV, NoCompression},
		{"x.TSV.gz", TSV, Gzip},
		{"x.ndjson.zst", JSON, Zstd},
		{"x.jsonl", JSON, NoCompression},
		{"x.parquet", Parquet, NoCompression},
		{"x.avro", Avro, NoCompression},
		{"x.arrow", ArrowFile, NoCompression},
		{"x.feather", ArrowFile, NoCompression},
		{"x.arrows", ArrowStream, NoCompression},
		{"x.txt", "", NoCompression},
	}
	for _, tt := range tests {
		f, c := DetectFormat(tt.path)
		if f != tt.f || c != tt.c {
			t.Errorf("DetectFormat(%q) = %q, %q; want %q, %q", tt.path, f, c, tt.f, tt.c)
		}
	}
}

func TestTextFormats(t *testing.T) {
	dir := t.TempDir()
	csvData := []byte("id,name,amount\n1,ann,2.5\n2,bob,x\n3,cy,4\n")
	jsonData := []byte("{\"id\":1,\"name\":\"ann\",\"amount\":2.5}\n{\"id\":2,\"name\":\"bob\",\"amount\":\"x\"}\nnot json\n{\"id\":3,\"name\":\"cy\",\"amount\":4}\n")
	s, _ := schema.ParseDDL("id long, name string, amount double")
	wantRows := func(src string) string {
		return `{"_rescued_data":null,"amount":2.5,"id":1,"name":"ann"}
{"_rescued_data":"{\"amount\":\"x\",\"_file\":\"` + src + `\"}","amount":null,"id":2,"name":"bob"}
{"_rescued_data":null,"amount":4,"id":3,"name":"cy"}`
	}
	tests := []struct {
		name string
		data []byte
		opts Options
		bad  int
	}{
		{"a.csv", csvData, Options{}, 0},
		{"a.csv.gz", gz(t, csvData), Options{}, 0},
		{"a.csv.zst", zst(t, csvData), Options{}, 0},
		{"a.tsv", bytes.ReplaceAll(csvData, []byte(","), []byte("\t")), Options{}, 0},
		{"a.json", jsonData, Options{}, 1},
		{"a.ndjson.gz", gz(t, jsonData), Options{}, 1},
		{"misnamed.json", zst(t, jsonData), Options{}, 1}, // compression sniffed from magic bytes
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, dir, tt.name, tt.data)
			tt.opts.Schema = s
			tt.opts.CSV.Header = true
			tt.opts.BatchRows = 2
			got := readFile(t, p, tt.opts)
			if got.rows != wantRows(p) {
				t.Errorf("rows\n%s\nwant\n%s", got.rows, wantRows(p))
			}
			if got.badCount != tt.bad {
				t.Errorf("bad records %d, want %d", got.badCount, tt.bad)
			}
			if want := []int64{2, 1}; !equalInts(got.sizes, want) {
				t.Errorf("batch sizes %v, want %v", got.sizes, want)
			}
			if want := []int64{0, 2}; !equalInts(got.first, want) {
				t.Errorf("first rows %v, want %v", got.first, want)
			}
			wantLines := []int64{2, 3, 4}
			if strings.Contains(tt.name, "json") {
				wantLines = []int64{1, 2, 4}
			}
			if !equalInts(got.lines, wantLines) {
				t.Errorf("lines %v, want %v", got.lines, wantLines)
			}
		})
	}
	// Projection keeps the rescued column; inference when no schema is given.
	p := writeFile(t, dir, "p.csv", csvData)
	got := readFile(t, p, Options{Columns: []string{"name", "id"}, CSV: csvOpts(true)})
	if got.schema != "name string, id int, _rescued_data string" {
		t.Errorf("projected inferred schema: %s", got.schema)
	}
	if !strings.HasPrefix(got.rows, `{"_rescued_data":null,"id":1,"name":"ann"}`) {
		t.Errorf("projected rows: %s", got.rows)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sampleRecord builds a small record with nested columns.
func sampleRecord(mem memory.Allocator) arrow.RecordBatch {
	s, _ := schema.ParseDDL("id bigint, name string, tags array<string>, ts timestamp")
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	for i := 0; i < 5; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(strings.Repeat("x", i))
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append("t")
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1_000_000))
	}
	return b.NewRecordBatch()
}

const sampleRows = `{"id":0,"name":"","tags":["t"],"ts":"1970-01-01T00:00:00Z"}
{"id":1,"name":"x","tags":["t"],"ts":"1970-01-01T00:00:01Z"}
{"id":2,"name":"xx","tags":["t"],"ts":"1970-01-01T00:00:02Z"}
{"id":3,"name":"xxx","tags":["t"],"ts":"1970-01-01T00:00:03Z"}
{"id":4,"name":"xxxx","tags":["t"],"ts":"1970-01-01T00:00:04Z"}`

func TestBinaryFormats(t *testing.T) {
	dir := t.TempDir()
	rec := sampleRecord(memory.NewGoAllocator())
	defer rec.Release()

	var fileBuf, streamBuf, pqBuf bytes.Buffer
	fw, err := ipc.NewFileWriter(&fileBuf, ipc.WithSchema(rec.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(rec)
	fw.Close()
	sw := ipc.NewWriter(&streamBuf, ipc.WithSchema(rec.Schema()))
	sw.Write(rec)
	empty := rec.NewSlice(0, 0) // a zero-row (control-like) batch is skipped
	sw.Write(empty)
	empty.Release()
	sw.Write(rec)
	sw.Close()
	pw, err := pqarrow.NewFileWriter(rec.Schema(), &pqBuf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := pw.Write(rec); err != nil {
		t.Fatal(err)
	}
	pw.Close()

	tests := []struct {
		name  string
		data  []byte
		sizes []int64
		rows  string
	}{
		{"s.arrow", fileBuf.Bytes(), []int64{2, 2, 1}, sampleRows},
		{"s.arrows", streamBuf.Bytes(), []int64{2, 2, 1, 2, 2, 1}, sampleRows + "\n" + sampleRows},
		{"s.arrows.gz", gz(t, streamBuf.Bytes()), []int64{2, 2, 1, 2, 2, 1}, sampleRows + "\n" + sampleRows},
		{"s.parquet", pqBuf.Bytes(), []int64{2, 2, 1}, sampleRows},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, dir, tt.name, tt.data)
			got := readFile(t, p, Options{BatchRows: 2})
			if got.rows != tt.rows {
				t.Errorf("rows\n%s\nwant\n%s", got.rows, tt.rows)
			}
			if !equalInts(got.sizes, tt.sizes) {
				t.Errorf("sizes %v, want %v", got.sizes, tt.sizes)
			}
			if got.lines != nil {
				t.Errorf("binary formats have no lines: %v", got.lines)
			}
			proj := readFile(t, p, Options{Columns: []string{"ts", "id"}})
			if proj.schema != "ts timestamp, id bigint" {
				t.Errorf("projected schema %s", proj.schema)
			}
			if !strings.HasPrefix(proj.rows, `{"id":0,"ts":"1970-01-01T00:00:00Z"}`) {
				t.Errorf("projected rows %s", proj.rows)
			}
		})
	}
	if _, err := Open(writeFile(t, dir, "c.parquet.gz", gz(t, pqBuf.Bytes())), Options{}); err == nil || !strings.Contains(err.Error(), "decompress it first") {
		t.Errorf("compressed parquet: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "s.parquet"), Options{Columns: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown column: %v", err)
	}
}

// TestAvroGoavro writes an OCF with goavro (no Python needed) and reads it back.
func TestAvroGoavro(t *testing.T) {
	codec, err := goavro.NewCodec(`{"type":"record","name":"Order","namespace":"shop","fields":[
	  {"name":"id","type":"long"},
	  {"name":"amount","type":["null","double"]},
	  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
	  {"name":"day","type":{"type":"int","logicalType":"date"}},
	  {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
	  {"name":"tags","type":{"type":"array","items":"string"}},
	  {"name":"attrs","type":{"type":"map","values":"int"}},
	  {"name":"user","type":["null",{"type":"record","name":"User","fields":[{"name":"id","type":"long"}]}]},
	  {"name":"either","type":["int","string"]},
	  {"name":"state","type":{"type":"enum","name":"State","symbols":["NEW","PAID"]}}
	]}`)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := goavro.NewOCFWriter(goavro.OCFConfig{W: &buf, Codec: codec, CompressionName: "deflate"})
	if err != nil {
		t.Fatal(err)
	}
	recs := []any{
		map[string]any{"id": int64(1), "amount": goavro.Union("double", 2.5), "ts": int64(1700000000123), "day": int32(19000),
			"price": bigRat("12.34"), "tags": []any{"a", "b"}, "attrs": map[string]any{"z": int32(1), "a": int32(2)},
			"user": goavro.Union("shop.User", map[string]any{"id": int64(7)}), "either": goavro.Union("string", "s"), "state": "PAID"},
		map[string]any{"id": int64(2), "amount": nil, "ts": int64(0), "day": int32(0),
			"price": bigRat("-1"), "tags": []any{}, "attrs": map[string]any{},
			"user": nil, "either": goavro.Union("int", int32(5)), "state": "NEW"},
	}
	if err := w.Append(recs); err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, t.TempDir(), "o.avro", buf.Bytes())
	got := readFile(t, p, Options{})
	want := `{"amount":2.5,"attrs":[{"key":"a","value":2},{"key":"z","value":1}],"day":"2022-01-08","either":{"member0":null,"member1":"s"},"id":1,"price":"12.34","state":"PAID","tags":["a","b"],"ts":"2023-11-14T22:13:20.123Z","user":{"id":7}}
{"amount":null,"attrs":[],"day":"1970-01-01","either":{"member0":5,"member1":null},"id":2,"price":"-1","state":"NEW","tags":[],"ts":"1970-01-01T00:00:00Z","user":null}`
	if got.rows != want {
		t.Errorf("rows\n%s\nwant\n%s", got.rows, want)
	}
}

func bigRat(s string) *big.Rat {
	r, _ := new(big.Rat).SetString(s)
	return r
}

func csvOpts(header bool) csvrow.Options { return csvrow.Options{Header: header} }

// A file named .gz or .zst whose bytes are not compressed that way (a damaged header, a
// misnamed file) is an error naming it, not a stream of garbage rows.
func TestCompressionNameMismatch(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.csv.gz", "a.csv.zst"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("a,b\n1,2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(p, Options{}); err == nil || !strings.Contains(err.Error(), "does not start like") {
			t.Errorf("Open %s: got %v", name, err)
		}
		f, _ := os.Open(p)
		if _, err := NewReader(f, p, Options{}); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("NewReader %s: got %v", name, err)
		}
		f.Close()
	}
}
