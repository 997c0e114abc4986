package delta

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/delta"
)

func TestMergeSchemaAndEvolve(t *testing.T) {
	mem := newMem(t)
	tbl := newTestTable(t, mem)
	r := simpleRec(t, mem, 1)
	defer r.Release()
	s := appendBatches(t, tbl, nil, &delta.CreateOptions{}, simpleSchema, WriterOptions{Allocator: mem}, nil, r).Snapshot
	in := arrow.NewSchema([]arrow.Field{
		{Name: "ID", Type: arrow.PrimitiveTypes.Int32},
		{Name: "part", Type: arrow.BinaryTypes.LargeString},
		{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32})},
	}, nil)
	merged, changed, err := delta.MergeSchema(s.Schema(), in)
	if err != nil || !changed {
		t.Fatalf("merge: %v %v", changed, err)
	}
	if got := merged.String(); got != "struct<id:long,part:string,v:double,ntz:timestamp_ntz,st:struct<a:integer>>" {
		t.Errorf("merged %s", got)
	}
	np, nm := delta.EvolveMetadata(&delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, s.Metadata(), merged)
	if np == nil || np.MinWriterVersion != 7 || strings.Join(np.WriterFeatures, ",") != "appendOnly,invariants,timestampNtz" {
		t.Errorf("protocol %+v", np)
	}
	res, err := tbl.Commit(context.Background(), delta.CommitRequest{Read: s, Protocol: np, Metadata: nm, Operation: "SET TBLPROPERTIES"})
	if err != nil {
		t.Fatal(err)
	}
	rec := recFromJSON(t, mem, in, `[{"ID":2,"part":"x","ntz":5,"st":{"a":1}}]`)
	defer rec.Release()
	s2 := appendBatches(t, tbl, res.Snapshot, nil, nil, WriterOptions{Allocator: mem}, nil, rec).Snapshot
	if s2.NumFiles() != 2 || s2.Protocol().MinReaderVersion != 3 {
		t.Errorf("after evolution: %d files, %+v", s2.NumFiles(), s2.Protocol())
	}
	if _, _, err := delta.MergeSchema(s.Schema(), arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String}}, nil)); err == nil || !strings.Contains(err.Error(), "column v") {
		t.Errorf("retype accepted: %v", err)
	}
	if _, changed, _ := delta.MergeSchema(s.Schema(), simpleSchema); changed {
		t.Errorf("same schema reported as changed")
	}
}
