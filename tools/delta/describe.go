package deltacmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/tabtext"
	"github.com/streamkit/streamkit/tools/cli"
)

// Detail is what `delta describe` reports: Spark's DESCRIBE DETAIL (location, id, format,
// partitioning, protocol and features, properties, files and bytes) with the columns of
// DESCRIBE TABLE, the rows of the files' statistics, the latest commit of DESCRIBE HISTORY and
// every flow's committed epoch (its txn action). Field names follow DESCRIBE DETAIL's where it
// has one (location, createdAt, lastModified, numFiles, sizeInBytes, tableFeatures).
type Detail struct {
	Location    string  `json:"location"` // the table root: local directory or redacted URL
	ID          string  `json:"id"`
	Name        *string `json:"name,omitempty"`
	Description *string `json:"description,omitempty"`
	Format      string  `json:"format"`
	Version     int64   `json:"version"`
	// CreatedAt is metaData.createdTime; nil when the writer left it out.
	CreatedAt *time.Time `json:"createdAt,omitempty"`
	// LastModified is the time of the latest commit (its commitInfo.timestamp, else the
	// commit file's modification time); LastOperation its operation.
	LastModified  *time.Time `json:"lastModified,omitempty"`
	LastOperation string     `json:"lastOperation,omitempty"`
	// Columns are the table's columns (partition columns included), in schema order.
	Columns          []Column          `json:"columns"`
	PartitionColumns []string          `json:"partitionColumns"`
	MinReaderVersion int               `json:"minReaderVersion"`
	MinWriterVersion int               `json:"minWriterVersion"`
	ReaderFeatures   []string          `json:"readerFeatures"`
	WriterFeatures   []string          `json:"writerFeatures"`
	TableFeatures    []string          `json:"tableFeatures"` // the union of both, sorted
	Properties       map[string]string `json:"properties"`
	NumFiles         int               `json:"numFiles"`
	SizeInBytes      int64             `json:"sizeInBytes"`
	// NumRecords is the sum of the live files' numRecords statistics less their deletion
	// vectors' cardinality; nil (unknown) when some file has no numRecords statistic.
	NumRecords *int64 `json:"numRecords"`
	// FilesWithoutStats counts live files whose statistics give no numRecords.
	FilesWithoutStats int `json:"filesWithoutStats"`
	// FilesWithDeletionVectors counts live files with a deletion vector; DeletedRows is the
	// sum of their cardinalities (rows deleted but still in the files).
	FilesWithDeletionVectors int   `json:"filesWithDeletionVectors"`
	DeletedRows              int64 `json:"deletedRows"`
	// Readable is "" when streamkit reads the table's data (read-delta), else why not;
	// Writable the same for write-delta.
	Readable string `json:"unreadable,omitempty"`
	Writable string `json:"unwritable,omitempty"`
	Flows    []Flow `json:"flows"` // latest txn per appId, by appId

	// ClusteringColumns are a liquid-clustered table's clustering columns (the domain
	// delta.clustering, as logical names, nested ones dot-joined); omitted when the table is
	// not clustered, empty when it clusters by no column.
	ClusteringColumns []string `json:"clusteringColumns,omitempty"`
}

// Column is one column of a Delta table.
type Column struct {
	Name string `json:"name"`
	// Type is the Spark SQL type (bigint, array<string>; delta.SQLType); DeltaType the
	// schema's own spelling (long); ArrowType the Arrow type streamkit reads it as, "" when it
	// has none (variant).
	Type      string `json:"type"`
	DeltaType string `json:"deltaType"`
	ArrowType string `json:"arrowType,omitempty"`
	Nullable  bool   `json:"nullable"`
	Partition bool   `json:"partition,omitempty"`
	// Metadata is the column's metadata (comment, delta.columnMapping.id and physicalName,
	// delta.generationExpression …), values as the log has them (JSON); omitted when none.
	Metadata map[string]json.RawMessage `json:"metadata,omitempty"`
}

func describeSpec() cli.Spec {
	var format string
	return cli.Spec{
		Use:   "describe TABLE",
		Short: "Show a Delta table's schema, partitioning, protocol, properties, size and flows",
		Long: `describe prints what Spark's DESCRIBE DETAIL and DESCRIBE HISTORY together say about TABLE
at its latest version: location, id, format, version and the time and operation of the latest
commit, creation time, the columns (Spark SQL type, Delta type, Arrow type, nullability,
column metadata such as comments and column mapping ids), partition columns, the clustering
columns of a liquid-clustered table, protocol (reader and writer versions, reader and writer
features), table properties, the number of live files, their bytes and rows, and the
committed epoch of every flow (the txn actions: appId, version, lastUpdated), as 'delta
history' lists them.

Rows are the sum of the files' numRecords statistics, less the rows their deletion vectors
delete; when a file has no statistics the row count is unknown and says so. describe reads
only the log: a table with features streamkit does not read or write (variantType, row
tracking …) is described all the same, and the lines "not readable" and "not writable"
say which feature stops read-delta or write-delta.

TABLE is a local path, a file:// URI or a bucket URL (s3://, gs://, az://, abfss://).
--format json prints one JSON document for jq, with DESCRIBE DETAIL's field names where it has
one.`,
		Examples: []string{
			"# Schema, size and flows of a table\nstreamkit delta describe ./lake/orders",
			"# The number of rows, for a script\nstreamkit delta describe s3://bucket/lake/orders --format json | jq .numRecords",
		},
		Args: cli.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usagef("delta describe: --format must be text or json, got %q", format)
			}
			st, err := openTable(cmd.Context(), "describe", args[0], false)
			if err != nil {
				return err
			}
			d, err := Describe(cmd.Context(), delta.OpenTable(st, nil))
			if err != nil {
				return err
			}
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false) // array<string>, not array\u003cstring\u003e
				return enc.Encode(d)
			}
			return printDetail(cmd.OutOrStdout(), d)
		},
		Flags: func(f *pflag.FlagSet) {
			f.StringVar(&format, "format", "text", "output format: text or json")
			cli.Choices(f, "format", "text", "json")
		},
	}
}

// Describe reads the latest snapshot of tbl into a Detail. It reads only the log (never a
// data file), so it describes tables with any feature; a missing table wraps
// delta.ErrNotATable.
func Describe(ctx context.Context, tbl *delta.Table) (*Detail, error) {
	s, err := tbl.InspectSnapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("describe: %w", err)
	}
	meta, p := s.Metadata(), s.Protocol()
	d := &Detail{
		Location: tbl.Root(), ID: meta.ID, Name: meta.Name, Description: meta.Description,
		Format: meta.Format.Provider, Version: s.Version(),
		PartitionColumns: append([]string{}, s.PartitionColumns()...),
		MinReaderVersion: p.MinReaderVersion, MinWriterVersion: p.MinWriterVersion,
		ReaderFeatures: append([]string{}, p.ReaderFeatures...), WriterFeatures: append([]string{}, p.WriterFeatures...),
		Properties: maps.Clone(meta.Configuration), Columns: []Column{},
		Flows: flows(s),
	}
	if d.Properties == nil {
		d.Properties = map[string]string{}
	}
	set := map[string]bool{}
	for _, f := range append(append([]string{}, p.ReaderFeatures...), p.WriterFeatures...) {
		set[f] = true
	}
	d.TableFeatures = append([]string{}, slices.Sorted(maps.Keys(set))...)
	if meta.CreatedTime != nil {
		t := time.UnixMilli(*meta.CreatedTime).UTC()
		d.CreatedAt = &t
	}
	if err := lastCommit(tbl, s.Version(), d); err != nil {
		return nil, fmt.Errorf("describe: %w", err)
	}
	d.columns(s)
	if cc, err := s.ClusteringColumns(); err == nil && cc != nil {
		d.ClusteringColumns = cc // an unresolvable column shows as "not writable"
	}
	var rows int64
	for _, a := range s.Files() {
		d.NumFiles++
		d.SizeInBytes += a.Size
		n, ok := a.StatsNumRecords()
		if !ok {
			d.FilesWithoutStats++
		}
		rows += n
		if dv := a.DeletionVector; dv != nil {
			d.FilesWithDeletionVectors++
			d.DeletedRows += dv.Cardinality
		}
	}
	if d.FilesWithoutStats == 0 {
		rows -= d.DeletedRows
		d.NumRecords = &rows
	}
	if err := s.CheckRead(); err != nil {
		d.Readable = featureError(err)
	}
	if err := s.CheckWrite(); err != nil {
		d.Writable = featureError(err)
	}
	return d, nil
}

// featureError is the reason of a CheckRead/CheckWrite error: what follows "unsupported
// Delta protocol: " when it says so (the table is named on the line already).
func featureError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, delta.ErrUnsupportedProtocol.Error()+": "); i >= 0 {
		msg = msg[i+len(delta.ErrUnsupportedProtocol.Error())+2:]
	}
	return msg
}

// lastCommit sets d's LastModified and LastOperation from the commit of version v: its
// commitInfo, else the commit file's modification time. A commit file that is gone (log
// cleanup; a table read from a checkpoint) leaves them unset.
func lastCommit(tbl *delta.Table, v int64, d *Detail) error {
	acts, err := tbl.ReadCommit(v)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, a := range acts {
		if ci := a.CommitInfo; ci != nil {
			d.LastOperation = ci.Operation
			if ci.Timestamp != 0 {
				t := time.UnixMilli(ci.Timestamp).UTC()
				d.LastModified = &t
			}
		}
	}
	return nil
}

// columns fills d.Columns from s's schema.
func (d *Detail) columns(s *delta.Snapshot) {
	sc := s.Schema()
	if sc == nil {
		return
	}
	arrowTypes := map[string]string{}
	if as, err := s.ArrowSchema(); err == nil {
		for _, f := range as.Fields() {
			arrowTypes[f.Name] = f.Type.String()
		}
	}
	part := map[string]bool{}
	for _, c := range d.PartitionColumns {
		part[c] = true
	}
	for _, f := range sc.Fields {
		c := Column{Name: f.Name, Type: delta.SQLType(f.Type), DeltaType: f.Type.String(), ArrowType: arrowTypes[f.Name],
			Nullable: f.Nullable, Partition: part[f.Name]}
		if len(f.Metadata) > 0 {
			c.Metadata = maps.Clone(f.Metadata)
		}
		d.Columns = append(d.Columns, c)
	}
}

// flows lists the latest txn of every appId of s, by appId.
func flows(s *delta.Snapshot) []Flow {
	out := []Flow{}
	for id, t := range s.Txns() {
		f := Flow{AppID: id, Version: t.Version}
		if t.LastUpdated != nil {
			lu := time.UnixMilli(*t.LastUpdated).UTC()
			f.LastUpdated = &lu
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AppID < out[j].AppID })
	return out
}

const timeLayout = "2006-01-02T15:04:05.000Z"

func printDetail(w io.Writer, d *Detail) error {
	tw := tabtext.New(w)
	line := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	line("location", "%s", d.Location)
	line("id", "%s", d.ID)
	if d.Name != nil {
		line("name", "%s", *d.Name)
	}
	if d.Description != nil {
		line("description", "%s", *d.Description)
	}
	line("format", "%s", d.Format)
	last := ""
	if d.LastModified != nil {
		last = ", committed " + d.LastModified.Format(timeLayout)
	}
	if d.LastOperation != "" {
		last += " (" + d.LastOperation + ")"
	}
	line("version", "%d%s", d.Version, last)
	if d.CreatedAt != nil {
		line("created", "%s", d.CreatedAt.Format(timeLayout))
	}
	line("partitioned by", "%s", orNone(strings.Join(d.PartitionColumns, ", ")))
	if d.ClusteringColumns != nil {
		line("clustered by", "%s", orNone(strings.Join(d.ClusteringColumns, ", ")))
	}
	line("protocol", "reader %d, writer %d", d.MinReaderVersion, d.MinWriterVersion)
	if d.MinReaderVersion >= 3 {
		line("reader features", "%s", orNone(strings.Join(d.ReaderFeatures, ", ")))
	}
	if d.MinWriterVersion >= 7 {
		line("writer features", "%s", orNone(strings.Join(d.WriterFeatures, ", ")))
	}
	if len(d.Properties) == 0 {
		line("properties", "-")
	}
	for _, k := range slices.Sorted(maps.Keys(d.Properties)) {
		line("property", "%s=%s", k, d.Properties[k])
	}
	line("files", "%d (%d bytes)", d.NumFiles, d.SizeInBytes)
	switch {
	case d.NumRecords == nil:
		line("rows", "unknown (%d of %d file(s) have no numRecords statistics)", d.FilesWithoutStats, d.NumFiles)
	case d.FilesWithDeletionVectors > 0:
		line("rows", "%d (not counting %d rows deleted by the deletion vectors of %d file(s))", *d.NumRecords, d.DeletedRows, d.FilesWithDeletionVectors)
	default:
		line("rows", "%d", *d.NumRecords)
	}
	if d.Readable != "" {
		line("not readable", "%s", d.Readable)
	}
	if d.Writable != "" {
		line("not writable", "%s", d.Writable)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	tw = tabtext.New(w)
	fmt.Fprintln(tw, "COLUMN\tTYPE\tNULLABLE\tARROW TYPE\tNOTES")
	for _, c := range d.Columns {
		var notes []string
		if c.Partition {
			notes = append(notes, "partition")
		}
		for _, k := range slices.Sorted(maps.Keys(c.Metadata)) {
			v := string(c.Metadata[k])
			var str string
			if json.Unmarshal(c.Metadata[k], &str) == nil {
				v = str // comment=who, not comment="who"
			}
			notes = append(notes, k+"="+v)
		}
		at := c.ArrowType
		if at == "" {
			at = "-"
		}
		nullable := "yes"
		if !c.Nullable {
			nullable = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, c.Type, nullable, at, strings.Join(notes, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Flows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	return printFlows(w, d.Flows)
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
