package delta

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	dl "github.com/streamkit/streamkit/delta"
)

// TestLegacyDateTimeRebase: Spark in LEGACY rebase mode (datetimeRebaseModeInWrite, as Spark
// 2.x wrote) stores DATE and INT64 TIMESTAMP values before 1582-10-15 as Julian readings and
// marks the file with org.apache.spark.legacyDateTime; they read as the dates Spark shows
// (0001-01-01, not 0000-12-30; 1500-06-01, not 1500-06-11), at the top level and inside a
// struct, while later values, nulls and files without the key are left as they are. The raw
// values are the ones delta-spark 4.1 wrote for DATE'0001-01-01' and DATE'1500-06-01'. A file
// of Spark before 3.0.0 (org.apache.spark.version), which had no key, is rebased too, as
// Spark's reader does; one of 3.0.1 without the key is not.
func TestLegacyDateTimeRebase(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true}), Nullable: true},
	}, nil)
	rows := `[{"id":1,"d":-719164,"ts":-62135769600000000,"st":{"d":-719164}},` +
		`{"id":2,"d":-171503,"ts":-14817816000000000,"st":{"d":-171503}},` +
		`{"id":3,"d":19723,"ts":1704067200000000,"st":{"d":19723}},` +
		`{"id":4,"d":null,"ts":null,"st":null}]`
	write := func(dir string, kv map[string]string) int64 {
		rec, _, err := array.RecordFromJSON(mem, sc, strings.NewReader(rows))
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Release()
		f, err := os.Create(filepath.Join(dir, "part-0.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		fw, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range kv {
			fw.AppendKeyValueMetadata(k, v)
		}
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(filepath.Join(dir, "part-0.parquet"))
		return fi.Size()
	}
	const schema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},` +
		`{"name":"d","type":"date","nullable":true,"metadata":{}},{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},` +
		`{"name":"st","type":{"type":"struct","fields":[{"name":"d","type":"date","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}`
	rebased := []string{
		`{"d":"0001-01-01","id":1,"st":{"d":"0001-01-01"},"ts":"0001-01-01T00:00:00Z"}`,
		`{"d":"1500-06-01","id":2,"st":{"d":"1500-06-01"},"ts":"1500-06-01T12:00:00Z"}`,
		`{"d":"2024-01-01","id":3,"st":{"d":"2024-01-01"},"ts":"2024-01-01T00:00:00Z"}`,
		`{"d":null,"id":4,"st":null,"ts":null}`}
	asWritten := []string{
		`{"d":"0000-12-30","id":1,"st":{"d":"0000-12-30"},"ts":"0000-12-30T00:00:00Z"}`,
		`{"d":"1500-06-11","id":2,"st":{"d":"1500-06-11"},"ts":"1500-06-11T12:00:00Z"}`,
		`{"d":"2024-01-01","id":3,"st":{"d":"2024-01-01"},"ts":"2024-01-01T00:00:00Z"}`,
		`{"d":null,"id":4,"st":null,"ts":null}`}
	for k, tc := range []struct {
		legacy bool
		want   []string
		kv     map[string]string // more metadata: Spark before 3.0 rebased without the key
	}{
		{false, rebased, map[string]string{sparkVersionKey: "2.4.5"}},
		{false, asWritten, map[string]string{sparkVersionKey: "3.0.1"}},
		{true, []string{
			`{"d":"0001-01-01","id":1,"st":{"d":"0001-01-01"},"ts":"0001-01-01T00:00:00Z"}`,
			`{"d":"1500-06-01","id":2,"st":{"d":"1500-06-01"},"ts":"1500-06-01T12:00:00Z"}`,
			`{"d":"2024-01-01","id":3,"st":{"d":"2024-01-01"},"ts":"2024-01-01T00:00:00Z"}`,
			`{"d":null,"id":4,"st":null,"ts":null}`}, nil},
		{false, []string{
			`{"d":"0000-12-30","id":1,"st":{"d":"0000-12-30"},"ts":"0000-12-30T00:00:00Z"}`,
			`{"d":"1500-06-11","id":2,"st":{"d":"1500-06-11"},"ts":"1500-06-11T12:00:00Z"}`,
			`{"d":"2024-01-01","id":3,"st":{"d":"2024-01-01"},"ts":"2024-01-01T00:00:00Z"}`,
			`{"d":null,"id":4,"st":null,"ts":null}`}, nil},
	} {
		tdir := filepath.Join(dir, fmt.Sprintf("%s-%d", map[bool]string{true: "legacy", false: "corrected"}[tc.legacy], k))
		os.MkdirAll(tdir, 0o755)
		kv := map[string]string{}
		for k, v := range tc.kv {
			kv[k] = v
		}
		if tc.legacy {
			kv[sparkLegacyDateTime] = ""
		}
		size := write(tdir, kv)
		writeCommit(t, tdir, 0, protoV1, metaLine(schema, "[]"), addLine("part-0.parquet", size, "{}"))
		snap, err := dl.NewTable(tdir, mem).Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rd, err := NewReader(dl.NewTable(tdir, nil).Store(), snap.Metadata(), ReadOptions{Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		got := scanAll(t, rd, snap.Files())
		rd.Close()
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("legacy=%v: got\n%s\nwant\n%s", tc.legacy, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}
