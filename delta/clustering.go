package delta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Clustered tables (PROTOCOL.md "Clustered Table"): the writer feature clustering, with
// domainMetadata, marks a liquid-clustered table whose clustering columns are the domain
// delta.clustering. This package appends to such tables and never clusters files itself: its
// files carry no clusteringProvider, which the protocol allows (unclustered files), and the
// next clustering run of the engine that owns the layout (Spark's OPTIMIZE) clusters them.

// FeatureClustering is the writer feature of clustered tables.
const FeatureClustering = "clustering"

// ClusteringDomain is the system domain holding a clustered table's clustering columns.
const ClusteringDomain = "delta.clustering"

// Domain returns the live domainMetadata action of the named domain; ok is false when the
// table has none (or it was removed).
func (s *Snapshot) Domain(name string) (d DomainMetadata, ok bool) {
	d, ok = s.domains[name]
	return d, ok
}

// ClusteringColumns returns the clustering columns of a clustered table as logical column
// paths (nested fields dot-joined), in clustering order; nil when the table is not clustered
// (no clustering writer feature) or clusters by no column. Under column mapping the domain
// holds physical names; they are mapped back to the schema's names.
func (s *Snapshot) ClusteringColumns() ([]string, error) {
	paths, err := s.clusteringFields()
	if err != nil || paths == nil {
		return nil, err
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		names := make([]string, len(p))
		for i, f := range p {
			names[i] = f.Name
		}
		out = append(out, strings.Join(names, "."))
	}
	return out, nil
}

// clusteringFields resolves the delta.clustering domain's columns to schema field paths.
func (s *Snapshot) clusteringFields() ([][]StructField, error) {
	if !slices.Contains(writerFeaturesOf(s.protocol), FeatureClustering) {
		return nil, nil
	}
	d, ok := s.domains[ClusteringDomain]
	if !ok {
		return nil, nil
	}
	cols, err := parseClusteringColumns(d.Configuration)
	if err != nil {
		return nil, err
	}
	out := make([][]StructField, 0, len(cols))
	for _, c := range cols {
		p := resolvePhysicalPath(s.schema, c)
		if p == nil {
			return nil, fmt.Errorf("%w: clustering column %s (domain %s) is not a column of the table", ErrUnsupportedProtocol, strings.Join(c, "."), ClusteringDomain)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseClusteringColumns reads the configuration of the delta.clustering domain:
// {"clusteringColumns": [...]}, each column a name (PROTOCOL.md's example) or a list of name
// parts of a nested field (what Spark writes: [["a"], ["s", "x"]]).
func parseClusteringColumns(conf string) ([][]string, error) {
	var c struct {
		ClusteringColumns []json.RawMessage `json:"clusteringColumns"`
	}
	if err := json.Unmarshal([]byte(conf), &c); err != nil {
		return nil, fmt.Errorf("domain %s: %w", ClusteringDomain, err)
	}
	out := make([][]string, 0, len(c.ClusteringColumns))
	for _, raw := range c.ClusteringColumns {
		var name string
		if json.Unmarshal(raw, &name) == nil {
			out = append(out, []string{name})
			continue
		}
		var parts []string
		if err := json.Unmarshal(raw, &parts); err != nil || len(parts) == 0 {
			return nil, fmt.Errorf("domain %s: clustering column %s is neither a name nor a list of names", ClusteringDomain, raw)
		}
		out = append(out, parts)
	}
	return out, nil
}

// resolvePhysicalPath finds the nested field whose physical names (column mapping) or names
// are parts; nil when there is none.
func resolvePhysicalPath(st *StructType, parts []string) []StructField {
	var out []StructField
	for i, name := range parts {
		if st == nil {
			return nil
		}
		j := slices.IndexFunc(st.Fields, func(f StructField) bool { return physicalName(f) == name })
		if j < 0 {
			return nil
		}
		f := st.Fields[j]
		out = append(out, f)
		st, _ = f.Type.(*StructType)
		if i == len(parts)-1 {
			return out
		}
	}
	return nil
}

// physicalName is a field's delta.columnMapping.physicalName, else its name.
func physicalName(f StructField) string {
	if raw, ok := f.Metadata["delta.columnMapping.physicalName"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return f.Name
}

// checkClustering verifies what PROTOCOL.md "Writer Requirements for Clustered Table" asks of
// a writer that appends to a clustered table (writer feature clustering) with protocol p,
// metadata m and the read snapshot's domains: the domainMetadata feature is listed, the table
// is not partitioned, and every clustering column gets min/max statistics in the files this
// package writes — it is among the first delta.dataSkippingNumIndexedCols leaf columns and of
// a type with min/max statistics. Otherwise the write is refused naming the column.
func checkClustering(p *Protocol, m *Metadata, domains map[string]DomainMetadata) error {
	features := writerFeaturesOf(p)
	if !slices.Contains(features, FeatureClustering) {
		return nil
	}
	if !slices.Contains(features, FeatureDomainMetadata) {
		return unsupported("writer feature clustering without domainMetadata")
	}
	if len(m.PartitionColumns) > 0 {
		return unsupported("a clustered table (writer feature clustering) that is also partitioned")
	}
	schema, err := m.Schema()
	if err != nil {
		return err
	}
	snap := &Snapshot{protocol: p, metadata: m, schema: schema, domains: domains}
	paths, err := snap.clusteringFields()
	if err != nil {
		return err
	}
	indexed := m.NumIndexedCols()
	for _, path := range paths {
		names := make([]string, len(path))
		for i, f := range path {
			names[i] = f.Name
		}
		col := strings.Join(names, ".")
		leaf := path[len(path)-1]
		if !hasMinMaxStats(leaf.Type) {
			return unsupported("clustering column %s has type %s, for which streamkit writes no min/max statistics (writer feature clustering needs them)", col, leaf.Type)
		}
		if i := leafIndex(schema, path); indexed >= 0 && i >= indexed {
			return unsupported("clustering column %s is leaf column %d, beyond the %d that get statistics (delta.dataSkippingNumIndexedCols); writer feature clustering needs statistics for it", col, i+1, indexed)
		}
	}
	return nil
}

// hasMinMaxStats reports whether the writer's file statistics give min and max for a column
// of type t (sink/delta's stats: numbers, decimals, strings, dates, timestamps).
func hasMinMaxStats(t DataType) bool {
	switch t {
	case TypeByte, TypeShort, TypeInteger, TypeLong, TypeFloat, TypeDouble, TypeString, TypeDate,
		TypeTimestamp, TypeTimestampNTZ:
		return true
	}
	_, ok := t.(DecimalType)
	return ok
}

// leafIndex returns the position of the leaf at path among the schema's statistics leaves in
// schema order (struct fields flattened; arrays, maps and primitives one leaf each), as the
// writer counts them against delta.dataSkippingNumIndexedCols.
func leafIndex(st *StructType, path []StructField) int {
	n := 0
	var walk func(st *StructType, onPath bool, depth int) bool
	walk = func(st *StructType, onPath bool, depth int) bool {
		for _, f := range st.Fields {
			on := onPath && depth < len(path) && f.Name == path[depth].Name
			if inner, ok := f.Type.(*StructType); ok {
				if walk(inner, on, depth+1) {
					return true
				}
				continue
			}
			if on && depth == len(path)-1 {
				return true
			}
			n++
		}
		return false
	}
	walk(st, true, 0)
	return n
}
