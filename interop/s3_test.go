package interop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/internal/arrowtest"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/storage"
)

// s3Rows is the batch of rows [from, to) of the bucket tests: a partition column, a
// timestamp, a struct and a list, and with extra a column "note" that older rows lack.
func s3Rows(from, to int, extra bool) arrow.RecordBatch {
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "region", Type: arrow.BinaryTypes.String},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "info", Type: arrow.StructOf(
			arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Int32})},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}
	if extra {
		fields = append(fields, arrow.Field{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true})
	}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), arrow.NewSchema(fields, nil))
	defer b.Release()
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append([]string{"eu", "us", "a b/c"}[i%3])
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 4)
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(i) * time.Second).UnixMicro()))
		sb := b.Field(4).(*array.StructBuilder)
		sb.Append(true)
		if i%5 == 0 {
			sb.FieldBuilder(0).AppendNull()
		} else {
			sb.FieldBuilder(0).(*array.StringBuilder).Append(fmt.Sprintf("n%d", i%17))
		}
		sb.FieldBuilder(1).(*array.Int32Builder).Append(int32(i % 100))
		lb := b.Field(5).(*array.ListBuilder)
		if i%7 == 0 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for k := 0; k < i%3; k++ {
				lb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprintf("t%d", k))
			}
		}
		if extra {
			b.Field(6).(*array.StringBuilder).Append(fmt.Sprintf("note %d", i))
		}
	}
	return b.NewRecordBatch()
}

// bucketRun is one streamkit command against the test server.
type bucketRun struct {
	t   *testing.T
	env []string
	dir string
}

// sk runs streamkit args with stdin and wants exit code 0; it returns stdout.
func (b *bucketRun) sk(stdin []byte, args ...string) []byte {
	b.t.Helper()
	out, stderr, code := peertest.Run(b.t, b.env, stdin, args...)
	if code != 0 {
		b.t.Fatalf("streamkit %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return out
}

// jsonRows is the sorted JSON lines `streamkit print --format json` makes of stream.
func (b *bucketRun) jsonRows(stream []byte) []string {
	b.t.Helper()
	out := strings.Split(strings.TrimSpace(string(b.sk(stream, "print", "--format", "json"))), "\n")
	if len(out) == 1 && out[0] == "" {
		out = nil
	}
	slices.Sort(out)
	return out
}

// table is read-delta's rows of uri (with args), as sorted JSON lines.
func (b *bucketRun) table(uri string, args ...string) []string {
	b.t.Helper()
	return b.jsonRows(b.sk(nil, append([]string{"read-delta", uri}, args...)...))
}

func (b *bucketRun) same(what string, got, want []string) {
	b.t.Helper()
	if !slices.Equal(got, want) {
		n := min(len(got), len(want), 3)
		b.t.Fatalf("%s: %d rows, want %d\n got  %v\n want %v", what, len(got), len(want), got[:n], want[:n])
	}
}

// TestS3DeltaTables runs the Delta tools through the binary on s3:// tables of the real S3
// server: write-delta of a partitioned, nested stream and read-delta back, the same rows for
// delta-rs and DuckDB reading the bucket (and for delta-rs's own copy of the input), a second
// flow's append and time travel to version 0, --follow seeing a later append, --merge-schema
// evolution, delta optimize and vacuum, overwrite mode, backfill --to and --from-delta, and
// the refusals of a missing bucket and wrong credentials, which leave nothing behind.
func TestS3DeltaTables(t *testing.T) {
	srv := s3test.Server(t)
	bucket := s3test.Bucket(t)
	b := &bucketRun{t: t, env: srv.Env(), dir: t.TempDir()}
	uri := "s3://" + bucket + "/lake/t"
	first, second := s3Rows(0, 3000, false), s3Rows(3000, 4000, false)
	defer first.Release()
	defer second.Release()
	in1, in2 := arrowtest.Stream(t, first), arrowtest.Stream(t, second)
	want1 := b.jsonRows(in1)
	want12 := slices.Sorted(slices.Values(append(b.jsonRows(in2), want1...)))

	// Create, partitioned by a column with characters that need escaping; read it back.
	b.sk(in1, "write-delta", uri, "--partition-by", "region", "--flow", "f1")
	b.same("read-delta after the first write", b.table(uri), want1)

	// delta-rs and DuckDB read the bucket table; delta-rs's own table of the same rows agrees.
	file1 := filepath.Join(b.dir, "first.arrow")
	arrowtest.WriteFile(t, file1, first)
	ref := "s3://" + bucket + "/ref"
	res := s3test.RunTables(t, s3test.Read(s3test.DeltaRS, uri), s3test.Read(s3test.DuckDB, uri),
		s3test.Write(s3test.DeltaRS, ref, file1, "", "region"), s3test.Read(s3test.DeltaRS, ref))
	if len(res[0].Rows) != len(want1) || !slices.Equal(res[0].Rows, res[3].Rows) || !slices.Equal(res[1].Rows, res[0].Rows) {
		t.Fatalf("readers disagree: delta-rs %d rows, DuckDB %d, delta-rs's own table %d (want %d)",
			len(res[0].Rows), len(res[1].Rows), len(res[3].Rows), len(want1))
	}
	if res[0].Version != 0 {
		t.Fatalf("delta-rs read version %d, want 0", res[0].Version)
	}

	// --follow streams the snapshot, then the rows of a later append by another flow.
	outFile := filepath.Join(b.dir, "follow.jsonl")
	follow := exec.Command("bash", "-o", "pipefail", "-c", `"$SK" read-delta --follow --poll-interval 100ms "$1" | "$SK" print --format json > "$2"`, "follow", uri, outFile)
	follow.Env = append(append(os.Environ(), "SK="+peertest.Binary(t)), b.env...)
	follow.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-follow.Process.Pid, syscall.SIGKILL)
		follow.Wait()
	}()
	b.sk(in2, "write-delta", uri, "--flow", "f2")
	deadline := time.Now().Add(60 * time.Second)
	var seen []string
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(outFile)
		if seen = strings.Split(strings.TrimSpace(string(data)), "\n"); len(seen) >= len(want12) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	slices.Sort(seen)
	b.same("read-delta --follow", seen, want12)

	// Time travel.
	b.same("read-delta --version 0", b.table(uri, "--version", "0"), want1)
	b.same("read-delta latest", b.table(uri), want12)

	// Schema evolution: refused without --merge-schema (nothing committed), added with it.
	evolved := s3Rows(4000, 4100, true)
	defer evolved.Release()
	in3 := arrowtest.Stream(t, evolved)
	if _, stderr, code := peertest.Run(t, b.env, in3, "write-delta", uri, "--flow", "f3"); code == 0 || !strings.Contains(stderr, "--merge-schema") {
		t.Fatalf("a new column without --merge-schema: exit %d\n%s", code, stderr)
	}
	b.same("after the refused write", b.table(uri), want12)
	b.sk(in3, "write-delta", uri, "--flow", "f3", "--merge-schema")
	evolvedRows := b.table(uri)
	if len(evolvedRows) != len(want12)+100 || !strings.Contains(evolvedRows[len(evolvedRows)-1], `"note":`) {
		t.Fatalf("after --merge-schema: %d rows, last %s", len(evolvedRows), evolvedRows[len(evolvedRows)-1])
	}
	b.same("version 1, before the evolution", b.table(uri, "--version", "1"), want12)

	// optimize compacts the small files of the three appends; vacuum deletes the removed ones.
	out := string(b.sk(nil, "delta", "optimize", uri))
	if !strings.Contains(out, "compacted") {
		t.Fatalf("delta optimize: %s", out)
	}
	b.same("after optimize", b.table(uri), evolvedRows)
	before := countObjects(t, uri)
	out = string(b.sk(nil, "delta", "vacuum", uri, "--retain", "0h", "--force"))
	var deleted int
	if _, err := fmt.Sscanf(out, "deleted %d files", &deleted); err != nil || deleted == 0 || countObjects(t, uri) != before-deleted {
		t.Fatalf("delta vacuum: %q (%d objects before, %d after)", out, before, countObjects(t, uri))
	}
	b.same("after vacuum", b.table(uri), evolvedRows)
	if rows := s3test.ReadTable(t, uri, s3test.DeltaRS)[s3test.DeltaRS].Rows; len(rows) != len(evolvedRows) {
		t.Fatalf("delta-rs after optimize and vacuum: %d rows, want %d", len(rows), len(evolvedRows))
	}

	// backfill from the bucket table into another one, and from it to a local table.
	bf := "s3://" + bucket + "/lake/bf"
	b.sk(nil, "backfill", "--from-delta", uri, "--to", bf, "--flow", "copy", "--progress", "off")
	b.same("backfill --to s3://", b.table(bf), evolvedRows)
	local := filepath.Join(b.dir, "local")
	b.sk(nil, "backfill", "--from-delta", bf, "--to", local, "--flow", "copy", "--progress", "off")
	b.same("backfill --from-delta s3://", b.table(local), evolvedRows)

	// Overwrite mode replaces the contents.
	b.sk(in2, "write-delta", uri, "--flow", "f4", "--mode", "overwrite", "--merge-schema")
	got := b.table(uri, "--columns", "id,region,amount,ts,info,tags")
	b.same("after --mode overwrite", got, b.jsonRows(in2))

	// Refusals: a missing bucket, wrong credentials. Exit 1, a clear message, nothing written.
	missing := "s3://no-such-bucket-streamkit-interop/t"
	if _, stderr, code := peertest.Run(t, b.env, in1, "write-delta", missing); code != 1 || !strings.Contains(stderr, "does not exist") {
		t.Fatalf("missing bucket: exit %d\n%s", code, stderr)
	}
	wrong := append(slices.Clone(b.env), "AWS_SECRET_ACCESS_KEY=wrong-secret-value")
	fresh := "s3://" + bucket + "/refused"
	for _, args := range [][]string{{"write-delta", fresh}, {"read-delta", uri}, {"delta", "optimize", uri}, {"backfill", "--from-delta", uri, "--to", fresh, "--flow", "x"}} {
		_, stderr, code := peertest.Run(t, wrong, in1, args...)
		if code != 1 || !strings.Contains(stderr, "access denied") || strings.Contains(stderr, "wrong-secret-value") {
			t.Fatalf("%v with wrong credentials: exit %d\n%s", args, code, stderr)
		}
	}
	if n, err := storage.Open(context.Background(), fresh, storage.Options{}); err != nil {
		t.Fatal(err)
	} else if ents, err := n.ReadDir(context.Background(), ""); err != nil || len(ents) != 0 {
		t.Fatalf("%d objects left under %s by refused runs (%v)", len(ents), fresh, err)
	}
	if n := countObjects(t, fresh); n != 0 {
		t.Fatalf("%d objects left under %s by refused runs", n, fresh)
	}
}

// countObjects is the number of objects under the bucket URL uri, outside _delta_log and
// _streamkit (data files, and anything a run leaves behind).
func countObjects(t *testing.T, uri string) int {
	t.Helper()
	s, err := storage.Open(context.Background(), uri, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s.Walk(context.Background(), "", func(in storage.Info) error {
		if !strings.HasPrefix(in.Name, "_delta_log/") && !strings.HasPrefix(in.Name, "_streamkit/") {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}
