package schema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/codec/describe"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
)

// schema FILE reads an Arrow IPC stream object of a bucket of the real S3 server by URL, as
// it reads stdin; a URL that names no object is a usage error.
func TestS3StreamFile(t *testing.T) {
	s3test.Server(t)
	ctx := context.Background()
	dir := "s3://" + s3test.Bucket(t) + "/in"
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	var buf bytes.Buffer
	mem := memory.NewGoAllocator()
	w := codec.NewWriter(&buf, sc, mem)
	b := array.NewInt64Builder(mem)
	b.AppendValues([]int64{1, 2, 3}, nil)
	col := b.NewArray()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, 3)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	col.Release()
	b.Release()
	w.WriteControl(codec.BarrierControl(1))
	w.WriteControl(codec.EndControl(codec.Final))
	w.Close()
	if err := st.WriteFile(ctx, "s.arrows", buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := Command()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run(dir+"/s.arrows", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep describe.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Source != dir+"/s.arrows" || len(rep.Fields) != 1 || rep.Fields[0].Type != "bigint" || rep.Stream == nil ||
		rep.Stream.Rows != 3 || rep.Stream.Barriers != 1 || rep.Stream.End != "final" {
		t.Fatalf("report %+v %+v", rep, rep.Stream)
	}
	var ue *stage.UsageError
	if _, err := run("s3://" + s3test.Bucket(t)); !errors.As(err, &ue) {
		t.Fatalf("a bucket without an object: %v, want a usage error", err)
	}
	if _, err := run(dir + "/missing.arrows"); err == nil || errors.As(err, &ue) {
		t.Fatalf("a missing object: %v, want a runtime error", err)
	}
}
