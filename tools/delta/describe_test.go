package deltacmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/storage"
)

// runDescribe runs `delta describe ARGS --format json` in-process and decodes its output.
func runDescribe(t *testing.T, args ...string) *Detail {
	t.Helper()
	cmd := Command()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(append(append([]string{"describe"}, args...), "--format", "json"))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("describe %v: %v", args, err)
	}
	var d Detail
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatalf("describe %v: %v\n%s", args, err, out.String())
	}
	return &d
}

// A table written through the sink's data writer: files, bytes and rows are those of the
// snapshot's add actions, the partitioning and the flow's epoch those committed.
func TestDescribeCountsFilesRowsAndFlows(t *testing.T) {
	root := filepath.Join(t.TempDir(), "t")
	makeTable(t, root, 3, 10)
	s := snap(t, root)
	var size int64
	for _, a := range s.Files() {
		size += a.Size
	}
	d := runDescribe(t, root)
	if d.Version != 2 || d.NumFiles != s.NumFiles() || d.SizeInBytes != size || d.NumRecords == nil || *d.NumRecords != 30 ||
		d.FilesWithoutStats != 0 || !slices.Equal(d.PartitionColumns, []string{"day", "region"}) {
		t.Fatalf("detail %+v", d)
	}
	if len(d.Flows) != 1 || d.Flows[0].AppID != "flow-a" || d.Flows[0].Version != 3 || d.Flows[0].LastUpdated == nil {
		t.Fatalf("flows %+v", d.Flows)
	}
	var types []string
	for _, c := range d.Columns {
		types = append(types, c.Name+" "+c.Type+" "+c.DeltaType+" "+c.ArrowType+fmt.Sprint(c.Partition))
	}
	want := []string{"id bigint long int64false", "day date date date32true", "region string string utf8true"}
	if !slices.Equal(types, want) {
		t.Fatalf("columns %q, want %q", types, want)
	}
	if d.LastOperation == "" || d.LastModified == nil || d.CreatedAt == nil || d.Readable != "" || d.Writable != "" {
		t.Fatalf("detail %+v", d)
	}
}

// describe on a bucket URL of the real S3 server: location as given, the flow's epoch, the
// table property, rows unknown while files have no stats; the snapshot comes from the
// checkpoint at version 5 and commit 6.
func TestDescribeS3(t *testing.T) {
	s3test.Server(t)
	ctx := context.Background()
	url := "s3://" + s3test.Bucket(t) + "/lake/orders"
	st, err := storage.Open(ctx, url, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tbl := delta.OpenTable(st, nil)
	p, m, err := delta.NewTableMetadata(schema, delta.CreateOptions{Configuration: map[string]string{"delta.checkpointInterval": "5"}})
	if err != nil {
		t.Fatal(err)
	}
	var s *delta.Snapshot
	for v := int64(0); v <= 6; v++ {
		req := delta.CommitRequest{Read: s, Txn: &delta.Txn{AppID: "flow-a", Version: v},
			Adds: []delta.Add{{Path: fmt.Sprintf("part-%d.parquet", v), PartitionValues: map[string]*string{}, Size: 10, DataChange: true}}}
		if v == 6 {
			req.Adds[0].Stats = `{"numRecords":4}`
		}
		if s == nil {
			req.Protocol, req.Metadata = p, m
		}
		res, err := tbl.Commit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		s = res.Snapshot
	}
	d := runDescribe(t, url)
	if d.Location != url || d.Version != 6 || d.NumFiles != 7 || d.SizeInBytes != 70 || d.NumRecords != nil || d.FilesWithoutStats != 6 ||
		d.Properties["delta.checkpointInterval"] != "5" || len(d.Flows) != 1 || d.Flows[0].Version != 6 {
		t.Fatalf("detail %+v", d)
	}
}

// Tables written by delta-rs with features streamkit neither reads nor writes (variantType,
// deletionVectors, changeDataFeed) are described all the same: protocol and features as
// delta-rs reports them, rows from its statistics, and which feature stops read-delta.
func TestDescribeDeltaRSTable(t *testing.T) {
	py := peertest.Python(t)
	root := filepath.Join(t.TempDir(), "t")
	out := peertest.RunPython(t, py, `
import sys, json, pyarrow as pa
from deltalake import write_deltalake, DeltaTable
t = pa.table({"id": pa.array(range(10), pa.int64()), "region": ["eu", "us"] * 5, "tags": pa.array([["a"]] * 10, pa.list_(pa.string()))})
write_deltalake(sys.argv[1], t, partition_by=["region"], configuration={"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"})
write_deltalake(sys.argv[1], t.slice(0, 3), mode="append")
dt = DeltaTable(sys.argv[1])
p = dt.protocol()
print(json.dumps({"version": dt.version(), "reader": p.min_reader_version, "writer": p.min_writer_version,
    "readerFeatures": p.reader_features or [], "writerFeatures": p.writer_features or [],
    "files": len(dt.file_uris()), "rows": 13}))  # delta-rs reads no table with deletionVectors: the rows written
`, root)
	var want struct {
		Version, Reader, Writer, Files, Rows int64
		ReaderFeatures, WriterFeatures       []string
	}
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	d := runDescribe(t, root)
	if d.Version != want.Version || int64(d.MinReaderVersion) != want.Reader || int64(d.MinWriterVersion) != want.Writer ||
		!slices.Equal(d.ReaderFeatures, want.ReaderFeatures) || !slices.Equal(d.WriterFeatures, want.WriterFeatures) ||
		int64(d.NumFiles) != want.Files || d.NumRecords == nil || *d.NumRecords != want.Rows {
		t.Fatalf("describe %+v\ndelta-rs %+v", d, want)
	}
	if !slices.Contains(d.TableFeatures, "deletionVectors") || d.Properties["delta.enableChangeDataFeed"] != "true" ||
		!slices.Equal(d.PartitionColumns, []string{"region"}) {
		t.Fatalf("describe %+v", d)
	}
	for _, f := range want.ReaderFeatures {
		if f == "variantType" && !strings.Contains(d.Readable, "variantType") {
			t.Fatalf("readable %q: want the variantType reader feature named", d.Readable)
		}
	}
}

// A table Spark (delta-spark) wrote with column mapping and deletion vectors, then deleted rows
// from (which writes a deletion vector) and appended to with a streaming-style txn: describe
// lists the features, the column mapping metadata, the rows Spark counts, and the txn, and
// finds the table readable and writable (both features are implemented).
func TestDescribeSparkTable(t *testing.T) {
	py := peertest.Python(t)
	root := filepath.Join(t.TempDir(), "t")
	scripts, err := filepath.Abs(filepath.Join("..", "..", "scripts", "py"))
	if err != nil {
		t.Fatal(err)
	}
	out := peertest.RunPython(t, py, `
import sys, json
sys.path.insert(0, sys.argv[2])
import spark_delta
s = spark_delta.session(app_name="describe")
p = sys.argv[1]
s.sql(f"CREATE TABLE delta.`+"`{p}`"+` (id BIGINT, region STRING COMMENT 'where') USING delta PARTITIONED BY (region) "
      "TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.enableDeletionVectors' = 'true')")
s.range(0, 20).selectExpr("id", "IF(id % 2 = 0, 'eu', 'us') AS region").coalesce(1).write.format("delta").mode("append").save(p)
s.sql(f"DELETE FROM delta.`+"`{p}`"+` WHERE id < 5")
s.range(20, 23).selectExpr("id", "'eu' AS region").write.format("delta").mode("append").option("txnAppId", "spark-flow").option("txnVersion", 4).save(p)
d = s.sql(f"DESCRIBE DETAIL delta.`+"`{p}`"+`").collect()[0]
print(json.dumps({"rows": s.read.format("delta").load(p).count(), "numFiles": d.numFiles, "sizeInBytes": d.sizeInBytes,
    "features": sorted(d.tableFeatures), "reader": d.minReaderVersion, "writer": d.minWriterVersion}))
s.stop()
`, root, scripts)
	var want struct {
		Rows, NumFiles, SizeInBytes int64
		Features                    []string
		Reader, Writer              int
	}
	if err := json.Unmarshal(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:], &want); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	d := runDescribe(t, root)
	if d.NumRecords == nil || *d.NumRecords != want.Rows || int64(d.NumFiles) != want.NumFiles || d.SizeInBytes != want.SizeInBytes ||
		!slices.Equal(d.TableFeatures, want.Features) || d.MinReaderVersion != want.Reader || d.MinWriterVersion != want.Writer {
		t.Fatalf("describe %+v\nSpark %+v", d, want)
	}
	if d.FilesWithDeletionVectors == 0 || d.DeletedRows != 5 || d.Readable != "" || d.Writable != "" || d.Properties["delta.columnMapping.mode"] != "name" {
		t.Fatalf("describe %+v", d)
	}
	if len(d.Columns) != 2 || string(d.Columns[1].Metadata["comment"]) != `"where"` || d.Columns[1].Metadata["delta.columnMapping.physicalName"] == nil {
		t.Fatalf("columns %+v", d.Columns)
	}
	if len(d.Flows) != 1 || d.Flows[0].AppID != "spark-flow" || d.Flows[0].Version != 4 {
		t.Fatalf("flows %+v", d.Flows)
	}
}
