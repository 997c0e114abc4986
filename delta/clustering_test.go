package delta

import (
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
