package delta

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSQLType(t *testing.T) {
	st, err := ParseSchema(`{"type":"struct","fields":[
		{"name":"a","type":"long","nullable":true,"metadata":{}},
		{"name":"b","type":{"type":"array","elementType":"short","containsNull":true},"nullable":true,"metadata":{}},
		{"name":"c","type":{"type":"map","keyType":"string","valueType":"byte","valueContainsNull":true},"nullable":true,"metadata":{}},
		{"name":"d","type":{"type":"struct","fields":[{"name":"x y","type":"integer","nullable":false,"metadata":{}},{"name":"z","type":"decimal(10,2)","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
		{"name":"e","type":"timestamp_ntz","nullable":true,"metadata":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bigint", "array<smallint>", "map<string,tinyint>", "struct<`x y`:int NOT NULL,z:decimal(10,2)>", "timestamp_ntz"}
	for i, f := range st.Fields {
		if got := SQLType(f.Type); got != want[i] {
			t.Errorf("%s: %s, want %s", f.Name, got, want[i])
		}
	}
}

// InspectSnapshot loads a table whose reader feature Snapshot refuses; CheckRead still names it.
func TestInspectSnapshotUnsupportedReader(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(root, LogDir)
	if err := os.MkdirAll(log, 0o755); err != nil {
		t.Fatal(err)
	}
	commit := `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["variantType"],"writerFeatures":["variantType"]}}
{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"v\",\"type\":\"variant\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{}}}
{"add":{"path":"a.parquet","partitionValues":{},"size":5,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":2}"}}
`
	if err := os.WriteFile(filepath.Join(log, CommitFileName(0)), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl := NewTable(root, nil)
	if _, err := tbl.Snapshot(context.Background()); !errors.Is(err, ErrUnsupportedProtocol) {
		t.Fatalf("Snapshot: %v, want ErrUnsupportedProtocol", err)
	}
	s, err := tbl.InspectSnapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := s.Files()[0].StatsNumRecords(); s.NumFiles() != 1 || !ok || n != 2 || SQLType(s.Schema().Fields[0].Type) != "variant" {
		t.Fatalf("snapshot: %d files, %d %v", s.NumFiles(), n, ok)
	}
	if err := s.CheckRead(); !errors.Is(err, ErrUnsupportedProtocol) {
		t.Fatalf("CheckRead: %v", err)
	}
	if _, ok := (&Add{Stats: `{"minValues":{}}`}).StatsNumRecords(); ok {
		t.Fatal("stats without numRecords counted")
	}
}
