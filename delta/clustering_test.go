package delta

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestClusteringChecks(t *testing.T) {
	schema := `{"type":"struct","fields":[` +
		`{"name":"id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"s","type":{"type":"struct","fields":[{"name":"a","type":"string","nullable":true,"metadata":{}},{"name":"x","type":"integer","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},` +
		`{"name":"flag","type":"boolean","nullable":true,"metadata":{}},` +
		`{"name":"Ren","type":"date","nullable":true,"metadata":{"delta.columnMapping.physicalName":"col-7f3a"}}]}`
	proto := &Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{FeatureClustering, FeatureDomainMetadata}}
	meta := func(conf map[string]string, parts ...string) *Metadata {
		if conf == nil {
			conf = map[string]string{}
		}
		return &Metadata{Format: Format{Provider: "parquet"}, SchemaString: schema, Configuration: conf, PartitionColumns: parts}
	}
	dom := func(cols string) map[string]DomainMetadata {
		return map[string]DomainMetadata{ClusteringDomain: {Domain: ClusteringDomain, Configuration: `{"clusteringColumns":` + cols + `}`}}
	}
	for _, c := range []struct {
		name    string
		p       *Protocol
		m       *Metadata
		domains map[string]DomainMetadata
		want    string // "" accepted
		cols    []string
	}{
		{"Spark's nested lists", proto, meta(nil), dom(`[["id"],["s","x"]]`), "", []string{"id", "s.x"}},
		{"names, physical name", proto, meta(nil), dom(`["s","col-7f3a"]`), "clustering column s has type struct", nil},
		{"physical name", proto, meta(nil), dom(`["col-7f3a"]`), "", []string{"Ren"}},
		{"no columns", proto, meta(nil), dom(`[]`), "", []string{}},
		{"no domain", proto, meta(nil), nil, "", nil},
		{"not a column", proto, meta(nil), dom(`[["nope"]]`), "clustering column nope", nil},
		{"boolean", proto, meta(nil), dom(`[["flag"]]`), "clustering column flag has type boolean", nil},
		{"beyond the indexed", proto, meta(map[string]string{"delta.dataSkippingNumIndexedCols": "2"}), dom(`[["id"],["s","x"]]`), "clustering column s.x is leaf column 3, beyond the 2", nil},
		{"all indexed", proto, meta(map[string]string{"delta.dataSkippingNumIndexedCols": "-1"}), dom(`[["col-7f3a"]]`), "", []string{"Ren"}},
		{"within the indexed", proto, meta(map[string]string{"delta.dataSkippingNumIndexedCols": "2"}), dom(`[["s","a"]]`), "", []string{"s.a"}},
		{"partitioned", proto, meta(nil, "id"), dom(`[["s","a"]]`), "also partitioned", nil},
		{"no domainMetadata", &Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{FeatureClustering}}, meta(nil), dom(`[["id"]]`), "without domainMetadata", nil},
		{"bad config", proto, meta(nil), dom(`[1]`), "neither a name nor a list", nil},
		{"not clustered", &Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{FeatureDomainMetadata}}, meta(nil), dom(`[["flag"]]`), "", nil},
	} {
		err := checkClustering(c.p, c.m, c.domains)
		if c.want != "" {
			malformed := strings.Contains(c.want, "neither") // a broken domain, not a feature
			if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrUnsupportedProtocol) == malformed {
				t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: refused: %v", c.name, err)
		}
		st, _ := c.m.Schema()
		s := &Snapshot{protocol: c.p, metadata: c.m, schema: st, domains: c.domains}
		got, err := s.ClusteringColumns()
		if err != nil || !slices.Equal(got, c.cols) || (got == nil) != (c.cols == nil) {
			t.Errorf("%s: ClusteringColumns = %q, %v; want %q", c.name, got, err, c.cols)
		}
	}
}

// TestClusteringConcurrentChange: an append that read a clustered table meets a concurrent
// commit (hand-written, as Spark's ALTER TABLE … CLUSTER BY writes it: commitInfo and a
// delta.clustering domainMetadata) that changed the clustering columns. The requirements on
// the append are checked again against the winner's columns: columns it gives statistics, or
// CLUSTER BY NONE, let it land at the next version (as delta-spark's blind append does), with
// the winner's columns in the snapshot after it; a column it writes no statistics for (a
// boolean, a leaf beyond delta.dataSkippingNumIndexedCols) fails it with ConflictDomain, as
// does a concurrent metaData change with ConflictMetadata.
func TestClusteringConcurrentChange(t *testing.T) {
	ctx := context.Background()
	schema := `{"type":"struct","fields":[` +
		`{"name":"id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"name","type":"string","nullable":true,"metadata":{}},` +
		`{"name":"flag","type":"boolean","nullable":true,"metadata":{}},` +
		`{"name":"late","type":"integer","nullable":true,"metadata":{}}]}`
	meta := Metadata{ID: "3c1f0d6e-0000-4000-8000-000000000001", Format: Format{Provider: "parquet"}, SchemaString: schema,
		PartitionColumns: []string{}, Configuration: map[string]string{"delta.dataSkippingNumIndexedCols": "3"}}
	domain := func(cols string) Action {
		return Action{DomainMetadata: &DomainMetadata{Domain: ClusteringDomain, Configuration: `{"clusteringColumns":` + cols + `}`}}
	}
	info := func(op string) Action {
		return Action{CommitInfo: &CommitInfo{Timestamp: 1, Operation: op, OperationParameters: map[string]string{}}}
	}
	put := func(tbl *Table, version int64, actions ...Action) {
		t.Helper()
		data, err := encodeActions(actions)
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.store.PutIfAbsent(ctx, logName(CommitFileName(version)), data); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		winner []Action
		kind   ConflictKind // 0: committed
		want   string       // in the error
		cols   []string     // clustering columns after the append
	}{
		{"other column", []Action{info("CLUSTER BY"), domain(`[["name"]]`)}, 0, "", []string{"name"}},
		{"cluster by none", []Action{info("CLUSTER BY"), domain(`[]`)}, 0, "", []string{}},
		{"unrelated domain", []Action{info("WRITE"), {DomainMetadata: &DomainMetadata{Domain: "app.x", Configuration: "{}"}}}, 0, "", []string{"id"}},
		{"boolean column", []Action{info("CLUSTER BY"), domain(`[["flag"]]`)}, ConflictDomain, "clustering column flag has type boolean", nil},
		{"unindexed column", []Action{info("CLUSTER BY"), domain(`[["id"],["late"]]`)}, ConflictDomain, "clustering column late is leaf column 4, beyond the 3", nil},
		{"metadata", []Action{info("SET TBLPROPERTIES"), {MetaData: &meta}}, ConflictMetadata, "metadata changed", nil},
	} {
		tbl := newTestTable(t, newMem(t))
		m := meta
		put(tbl, 0, info("CREATE TABLE"),
			Action{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{FeatureClustering, FeatureDomainMetadata}}},
			Action{MetaData: &m}, domain(`[["id"]]`))
		read, err := tbl.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		put(tbl, 1, c.winner...)
		res, err := tbl.Commit(ctx, CommitRequest{Read: read, Adds: []Add{{Path: "part-00001.parquet",
			PartitionValues: map[string]*string{}, Size: 512, ModificationTime: 1, DataChange: true, Stats: `{"numRecords":2}`}}})
		if c.kind != 0 {
			var ce *ConflictError
			if !errors.As(err, &ce) || ce.Kind != c.kind || ce.Version != 1 || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: err = %v, want a conflict (kind %d) with version 1 saying %q", c.name, err, c.kind, c.want)
			}
			if _, err := tbl.store.Stat(ctx, logName(CommitFileName(2))); err == nil {
				t.Errorf("%s: version 2 was written", c.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got, err := res.Snapshot.ClusteringColumns()
		if res.Version != 2 || err != nil || !slices.Equal(got, c.cols) {
			t.Errorf("%s: version %d, clustering columns %q, %v; want version 2, %q", c.name, res.Version, got, err, c.cols)
		}
	}
}
