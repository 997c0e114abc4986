package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/stage"
)

// buildWriteSchema appends the --with constant columns to the input schema and checks that
// every column has a Delta type.
func (w *StreamWriter) buildWriteSchema(in *arrow.Schema, snap *delta.Snapshot) error {
	fields := slices.Clone(in.Fields())
	var tableSc *arrow.Schema
	if snap != nil {
		var err error
		if tableSc, err = snap.ArrowSchema(); err != nil {
			return fmt.Errorf("write-delta: table %s: %w", w.cfg.Table, err)
		}
	}
	for _, c := range w.cfg.With {
		for _, f := range fields {
			if strings.EqualFold(f.Name, c.Name) {
				return stage.Usagef("write-delta: --with %s: the input already has a column %s", c.Name, f.Name)
			}
		}
		typ := arrow.DataType(arrow.BinaryTypes.String)
		if tableSc != nil {
			for _, f := range tableSc.Fields() {
				if strings.EqualFold(f.Name, c.Name) {
					typ = f.Type
				}
			}
		}
		k, err := codec.NewConstant(w.env.Mem, c.Name, c.Value, typ, "table's")
		if err != nil {
			return stage.Usagef("write-delta: %v", err)
		}
		w.aug.Consts = append(w.aug.Consts, k)
		fields = append(fields, arrow.Field{Name: c.Name, Type: typ, Nullable: true})
	}
	var err error
	var conf map[string]string
	if snap != nil {
		conf = snap.Metadata().Configuration
	}
	if w.partitionBy, err = w.resolvePartitionBy(in, fields, conf); err != nil {
		return err
	}
	fields = append(fields, w.promotedFields()...)
	w.aug.Schema = arrow.NewSchema(fields, nil)
	if _, err := delta.FromArrowSchemaFor(w.aug.Schema, w.mappingMode(snap)); err != nil {
		return fmt.Errorf("write-delta: table %s: %w", w.cfg.Table, err)
	}
	return nil
}

// safeProperties are delta.* table properties write-delta may change on an existing table
// (they change no protocol obligation).
var safeProperties = map[string]bool{
	"delta.checkpointInterval":            true,
	"delta.logRetentionDuration":          true,
	"delta.deletedFileRetentionDuration":  true,
	"delta.dataSkippingNumIndexedCols":    true,
	"delta.targetFileSize":                true,
	"delta.checkpoint.writeStatsAsJson":   true,
	"delta.checkpoint.writeStatsAsStruct": true,
	"delta.enableExpiredLogCleanup":       true,
	"delta.isolationLevel":                true,
}

// adopt checks the input against an existing table: protocol, partitioning, schema (diff, or
// evolution with --merge-schema), properties.
func (w *StreamWriter) adopt(s *delta.Snapshot) error {
	root := w.cfg.Table
	meta := s.Metadata()
	if len(w.partitionBy) > 0 && !slices.Equal(w.partitionBy, meta.PartitionColumns) {
		given := strings.Join(w.cfg.PartitionBy, ",")
		if len(w.aug.promoted) > 0 {
			given += " (" + w.describePromoted() + ")"
		}
		return stage.Usagef("write-delta: table %s is partitioned by [%s], not --partition-by %s (the partitioning of an existing table cannot change)",
			root, strings.Join(meta.PartitionColumns, ","), given)
	}
	if w.cfg.Mode == ModeOverwrite && strings.EqualFold(meta.Configuration["delta.appendOnly"], "true") {
		return stage.Usagef("write-delta: table %s is append-only (delta.appendOnly=true): --mode overwrite is not allowed", root)
	}
	inSt, err := delta.FromArrowSchemaFor(w.aug.Schema, meta.ColumnMapping())
	if err != nil {
		return fmt.Errorf("write-delta: table %s: %w", root, err)
	}
	merged, changed, mergeErr := delta.MergeSchema(s.Schema(), w.aug.Schema)
	if mergeErr != nil {
		return fmt.Errorf("write-delta: the input does not fit table %s:\n  %s\n%w",
			root, strings.Join(schemaDiff(s.Schema(), inSt), "\n  "), mergeErr)
	}
	if w.cfg.MergeSchema && relaxNullability(merged, w.aug.Schema.Fields()) {
		changed = true
	}
	if changed && !w.cfg.MergeSchema {
		var lines []string
		for _, l := range schemaDiff(s.Schema(), inSt) {
			if strings.HasPrefix(l, "+") {
				lines = append(lines, l)
			}
		}
		return fmt.Errorf("write-delta: the input has columns that table %s lacks:\n  %s\nuse --merge-schema to add them to the table",
			root, strings.Join(lines, "\n  "))
	}
	newMeta := meta
	var newProto *delta.Protocol
	if changed {
		p := s.Protocol()
		newProto, newMeta = delta.EvolveMetadata(&p, meta, merged)
		w.env.Log.Info("merging the input schema into the table", "table", root,
			"changes", strings.Join(schemaDiff(s.Schema(), inSt), "; "))
	}
	// delta.Table properties.
	var propChanged bool
	conf := map[string]string{}
	for k, v := range newMeta.Configuration {
		conf[k] = v
	}
	for k, v := range w.cfg.Properties {
		if old, ok := conf[k]; ok && old == v {
			continue
		}
		if strings.HasPrefix(k, "delta.") && !safeProperties[k] {
			return stage.Usagef("write-delta: table %s: changing %s of an existing table is not supported (it may need a protocol change); set it when the table is created",
				root, k)
		}
		conf[k] = v
		propChanged = true
	}
	if propChanged {
		m := *newMeta
		m.Configuration = conf
		newMeta = &m
	}
	if changed || propChanged {
		w.pendProto, w.pendMeta = newProto, newMeta
	}
	w.snap = s
	w.meta = newMeta
	return nil
}

// joinCreatedTable loads a table created concurrently by another writer and checks that our
// data files (written for w.createMeta) fit it.
func (w *StreamWriter) joinCreatedTable(ctx context.Context) error {
	root := w.cfg.Table
	s, err := w.table.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("write-delta: table %s was created concurrently, but loading it failed: %w", root, err)
	}
	if err := s.CheckWrite(); err != nil {
		return fmt.Errorf("write-delta: cannot write to table %s: %w", root, err)
	}
	m := s.Metadata()
	if m.SchemaString != w.createMeta.SchemaString || !slices.Equal(m.PartitionColumns, w.createMeta.PartitionColumns) {
		return fmt.Errorf("write-delta: table %s was created concurrently by another writer with another schema or partitioning; restart write-delta to append to it (the epoch is replayed)", root)
	}
	w.env.Log.Info("the table was created concurrently by another writer; appending to it", "table", root, "version", s.Version())
	w.snap, w.meta = s, m
	if !w.grp.on {
		w.txn, w.haveTxn = s.TxnVersion(w.flow)
	}
	return nil
}

// createEmpty creates the table from the stream's schema when the stream carried no epoch.
func (w *StreamWriter) createEmpty(ctx context.Context) error {
	props, _ := encodeJSON(w.createMeta.Configuration)
	parts, _ := encodeJSON(w.createMeta.PartitionColumns)
	res, err := w.table.Commit(ctx, delta.CommitRequest{
		Protocol: w.createProto, Metadata: w.createMeta, Operation: "CREATE TABLE",
		OperationParameters: map[string]string{"isManaged": "false", "partitionBy": parts, "properties": props},
	})
	var ce *delta.ConflictError
	if errors.As(err, &ce) && ce.Kind == delta.ConflictMetadata {
		return nil // created concurrently: there is a table, as wanted
	}
	if err != nil {
		return fmt.Errorf("write-delta: create table: %w", err)
	}
	w.env.Log.Info("created an empty table (the stream carried no rows)", "table", w.cfg.Table)
	return w.committedAt(ctx, res)
}

func encodeJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// committedAt adopts the snapshot after a successful commit.
func (w *StreamWriter) committedAt(ctx context.Context, res *delta.CommitResult) error {
	if res.CheckpointErr != nil {
		w.env.Log.Warn("could not write a Delta checkpoint (the commit itself is durable)", "version", res.Version, "err", res.CheckpointErr)
	}
	if res.LogCleanupErr != nil {
		w.env.Log.Warn("could not clean up expired Delta log files", "version", res.Version, "err", res.LogCleanupErr)
	} else if lc := res.LogCleanup; lc != nil && len(lc.Files) > 0 {
		w.env.Log.Info("deleted expired Delta log files", "files", len(lc.Files), "before_checkpoint", lc.Checkpoint,
			"cutoff", lc.Cutoff.Format(time.RFC3339))
	}
	s := res.Snapshot
	if s == nil {
		var err error
		if s, err = w.table.Snapshot(ctx); err != nil {
			return fmt.Errorf("write-delta: reload table after commit %d: %w", res.Version, err)
		}
	}
	if err := w.bindTable(s.Metadata().ID); err != nil {
		return err
	}
	w.snap = s
	w.meta = s.Metadata()
	w.pendProto, w.pendMeta = nil, nil
	return nil
}

// mappingMode is the column mapping mode of the table written: snap's, or for a table to be
// created the one its --table-property asks for.
func (w *StreamWriter) mappingMode(snap *delta.Snapshot) delta.ColumnMappingMode {
	if snap != nil {
		return snap.Metadata().ColumnMapping()
	}
	return delta.ColumnMappingMode(w.cfg.Properties[delta.ColumnMappingModeKey])
}
