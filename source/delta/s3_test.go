package delta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/s3test"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	"github.com/streamkit/streamkit/storage"
)

// countingStore counts the ranged reads of the files opened through it: on a bucket every
// ReadAt is one ranged GET.
type countingStore struct {
	storage.Store
	reads, bytes atomic.Int64
}

func (c *countingStore) Open(ctx context.Context, name string) (storage.File, error) {
	f, err := c.Store.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, c: c}, nil
}

type countingFile struct {
	storage.File
	c *countingStore
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.c.reads.Add(1)
	f.c.bytes.Add(int64(len(p)))
	return f.File.ReadAt(p, off)
}

var s3Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	{Name: "p", Type: arrow.BinaryTypes.String},
}, nil)

// s3Batch is rows [from, from+n) of the test table: partition p is id%2.
func s3Batch(mem memory.Allocator, from, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, s3Schema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%d", i%1000))
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 7)
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprint(i % 2))
	}
	return b.NewRecordBatch()
}

// TestS3DataFiles writes data files into a bucket table through the sink's DataWriter and reads
// them back through the Reader, against the real S3 server: the objects have the logged sizes,
// the rows come back, and the Parquet column chunks are fetched in coalesced ranged GETs, not
// one GET per column chunk (counted). An aborted writer leaves no object behind.
func TestS3DataFiles(t *testing.T) {
	s3test.Server(t)
	bucket := s3test.Bucket(t)
	ctx := context.Background()
	mem := newMem(t)
	st, err := storage.Open(ctx, "s3://"+bucket+"/tables/t", storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, meta, err := dl.NewTableMetadata(s3Schema, dl.CreateOptions{PartitionColumns: []string{"p"}})
	if err != nil {
		t.Fatal(err)
	}
	// Small row groups: many column chunks per file, as a 128 MiB file has.
	w, err := deltasink.NewDataWriter(st, meta, deltasink.WriterOptions{Allocator: mem, RowGroupSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	const rows, batch = 1_000_000, 50_000
	for from := 0; from < rows; from += batch {
		rec := s3Batch(mem, from, batch)
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	adds, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(adds) != 2 {
		t.Fatalf("%d data files, want one per partition", len(adds))
	}
	naive := 0 // ReadAts arrow-go makes without the prefetcher: footer (2) + one per column chunk
	refs := make([]FileRef, len(adds))
	for i := range adds {
		a := &adds[i]
		rel, _ := dl.DecodePath(a.Path)
		in, err := st.Stat(ctx, rel)
		if err != nil || in.Size != a.Size {
			t.Fatalf("object %s: %+v %v, add.size %d", rel, in, err, a.Size)
		}
		f, err := st.Open(ctx, rel)
		if err != nil {
			t.Fatal(err)
		}
		pf, err := file.NewParquetReader(f)
		if err != nil {
			t.Fatal(err)
		}
		naive += 2 + pf.NumRowGroups()*pf.MetaData().Schema.NumColumns()
		pf.Close()
		refs[i] = FileRef{Add: a, End: -1}
	}
	cs := &countingStore{Store: st}
	r, err := NewReader(cs, meta, ReadOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sc := r.Scan(ctx, refs)
	var n, sum int64
	parts := map[string]int64{}
	for {
		b, err := sc.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.Rec == nil {
			continue
		}
		ids := b.Rec.Column(0).(*array.Int64)
		ps := b.Rec.Column(3).(*array.String)
		for i := 0; i < ids.Len(); i++ {
			sum += ids.Value(i)
			parts[ps.Value(i)]++
			if want := fmt.Sprint(ids.Value(i) % 2); ps.Value(i) != want {
				t.Fatalf("row %d in partition %s", ids.Value(i), ps.Value(i))
			}
		}
		n += b.Rec.NumRows()
		b.Rec.Release()
	}
	sc.Close()
	if n != rows || sum != int64(rows)*(rows-1)/2 || parts["0"] != rows/2 || parts["1"] != rows/2 {
		t.Fatalf("read %d rows (sum %d, partitions %v)", n, sum, parts)
	}
	var size int64
	for _, a := range adds {
		size += a.Size
	}
	reads := cs.reads.Load()
	t.Logf("%d data files, %d bytes: %d ranged GETs of %d bytes in all (%d without coalescing)", len(adds), size, reads, cs.bytes.Load(), naive)
	// Per file: the tail, then one range per work unit (up to unitRows rows) of its row groups.
	perFile := int64(1 + (rows/2+unitRows-1)/unitRows + 1)
	if max := int64(len(adds)) * perFile; reads > max || reads*10 > int64(naive) {
		t.Fatalf("%d ranged GETs for %d files (want at most %d; %d uncoalesced)", reads, len(adds), max, naive)
	}

	// Abort removes what the writer wrote, rolled files included.
	w, err = deltasink.NewDataWriter(st.Sub("aborted"), meta, deltasink.WriterOptions{Allocator: mem, TargetFileSize: 64 << 10, RowGroupSize: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	rec := s3Batch(mem, 0, 50_000)
	err = w.Write(rec)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Files()) == 0 {
		t.Fatal("no file rolled before Abort")
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	left := 0
	if err := st.Walk(ctx, "aborted", func(storage.Info) error { left++; return nil }); err != nil || left != 0 {
		t.Fatalf("%d objects left after Abort (%v)", left, err)
	}
}

// TestResolveURLPath: on a bucket table, URL paths in add actions are read only inside the
// table root (s3a:// as s3://), and local absolute paths never.
func TestResolveURLPath(t *testing.T) {
	root := "s3://bucket/tables/t"
	for logged, want := range map[string]string{
		"s3://bucket/tables/t/p=1/part-0.parquet":      "p=1/part-0.parquet",
		"s3a://bucket/tables/t/p%3Da%20b/x.parquet":    "p=a b/x.parquet",
		"S3://bucket/tables/t/x.parquet":               "x.parquet",
		"s3://bucket/tables/t2/x.parquet":              "",
		"s3://bucket/tables/x.parquet":                 "",
		"s3://other/tables/t/x.parquet":                "",
		"gs://bucket/tables/t/x.parquet":               "",
		"s3://bucket/tables/t/../u/x.parquet":          "",
		"s3://bucket/tables/t/_delta_log/0.json":       "",
		"/tables/t/x.parquet":                          "",
		"file:///tables/t/x.parquet":                   "",
		"s3://bucket/tables/t/p=1/%2E%2E/x.parquet":    "",
		"p=1/part-0.parquet":                           "p=1/part-0.parquet",
		"s3://bucket/tables/t//x.parquet":              "",
		"s3://bucket/tables/t/a%5Cb.parquet":           "",
		"s3://bucket/tables/t/p=1/part-0.parquet?x=%0": "",
	} {
		got, err := resolvePath(root, logged)
		if want == "" {
			if !errors.Is(err, dl.ErrUnsafePath) && err == nil {
				t.Errorf("resolvePath(%q) = %q, want refused", logged, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("resolvePath(%q) = %q, %v; want %q", logged, got, err, want)
		}
	}
}
