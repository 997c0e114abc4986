package writedelta

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	"github.com/streamkit/streamkit/stage"
)

// Invalid --table-property values are refused naming the property, the value and the form.
func TestTablePropertiesValidated(t *testing.T) {
	root := filepath.Join(t.TempDir(), "t")
	for _, c := range []struct{ k, v, want string }{
		{"delta.deletedFileRetentionDuration", "banana", `delta.deletedFileRetentionDuration="banana": want an interval such as "interval 7 days"`},
		{"delta.checkpointInterval", "0", `delta.checkpointInterval="0": want a positive integer`},
		{"delta.logRetentionDuration", "-1 days", `delta.logRetentionDuration="-1 days": the interval must not be negative`},
		{"delta.appendOnly", "maybe", `delta.appendOnly="maybe": want true or false`},
		{"delta.checkpointIntervall", "5", "unknown Delta property delta.checkpointIntervall=5 (Spark refuses it too); check the spelling, or allow arbitrary delta.* properties explicitly (--allow-arbitrary-properties accepts it)"},
	} {
		_, err := deltasink.NewStreamWriter(deltasink.StreamConfig{Table: root, Properties: map[string]string{c.k: c.v}})
		var ue *stage.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%s: %v\nwant %q", c.k, c.v, err, c.want)
		}
	}
	mem := newMem(t)
	w, err := deltasink.NewStreamWriter(deltasink.StreamConfig{Table: root, Flow: "f", AllowArbitraryProperties: true,
		Properties: map[string]string{"delta.myOwnSetting": "x", "delta.appendonly": "true", "team": "core"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, w.Config(), "", newStream(t, mem, idSchema).ids(0, 3).barrier(1).end(codec.Final)); err != nil {
		t.Fatal(err)
	}
	conf := snapshot(t, root).Metadata().Configuration
	if conf["delta.myOwnSetting"] != "x" || conf["delta.appendOnly"] != "true" || conf["team"] != "core" || len(conf) != 3 {
		t.Errorf("configuration %v", conf)
	}
	// A changed value on the existing table is validated too.
	_, err = run(t, deltasink.StreamConfig{Table: root, Flow: "f", Properties: map[string]string{"delta.logRetentionDuration": "interval 2 months"}}, "",
		newStream(t, mem, idSchema).end(codec.Final))
	if err == nil || !strings.Contains(err.Error(), "months and years are not accepted") {
		t.Errorf("months: %v", err)
	}
}

// --partition-by value.region names the promoted column after the leaf, or after the dot path
// when the leaf is taken; bad paths are usage errors.
func TestNestedPartitionNaming(t *testing.T) {
	mem := newMem(t)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "value", Type: arrow.StructOf(
			arrow.Field{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		), Nullable: true},
	}, nil)
	in := func() []byte {
		return newStream(t, mem, sc).json(`[{"region":"top","value":{"region":"eu","tags":[]}},{"region":"x","value":null}]`).barrier(1).end(codec.Final)
	}
	root := filepath.Join(t.TempDir(), "t")
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f", PartitionBy: []string{"value.region"}}, "", in())
	s := snapshot(t, root)
	if pc := s.PartitionColumns(); len(pc) != 1 || pc[0] != "value_region" {
		t.Fatalf("partition columns %v", pc)
	}
	vals := map[string]bool{}
	for _, a := range s.Files() {
		v := "<null>"
		if p := a.PartitionValues["value_region"]; p != nil {
			v = *p
		}
		vals[v] = true
	}
	if !vals["eu"] || !vals["<null>"] || len(vals) != 2 {
		t.Errorf("partition values %v (a null struct gives a null value)", vals)
	}
	for _, c := range []struct{ pb, want string }{
		{"value.nope", `no field "value.nope"`},
		{"value.tags", "partition column \"tags\" has type array<string>"},
	} {
		_, err := run(t, deltasink.StreamConfig{Table: filepath.Join(t.TempDir(), "t"), Flow: "f", PartitionBy: []string{c.pb}}, "", in())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--partition-by %s: %v", c.pb, err)
		}
	}
	// An existing table partitioned otherwise: the message shows the promotion.
	_, err := run(t, deltasink.StreamConfig{Table: root, Flow: "f", PartitionBy: []string{"region"}}, "", in())
	if err == nil || !strings.Contains(err.Error(), "is partitioned by [value_region], not --partition-by region") {
		t.Errorf("other partitioning: %v", err)
	}
}

// A fresh checkpoint directory for a flow the table already holds epochs of (written before
// flow locks recorded an owner, or by a run without a checkpoint) is refused: its epochs
// would be skipped.
func TestFreshCheckpointForExistingFlow(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "t")
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f"}, "", newStream(t, mem, idSchema).ids(0, 2).barrier(1).ids(2, 3).barrier(2).end(codec.Final))
	os.RemoveAll(filepath.Join(root, "_streamkit")) // a table from before the flow lock
	in := func() []byte { return newStream(t, mem, idSchema).ids(3, 6).barrier(1).end(codec.Final) }
	_, err := run(t, deltasink.StreamConfig{Table: root, Flow: "f"}, filepath.Join(dir, "ck"), in())
	var ue *stage.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `already holds epochs up to 2 for flow "f"`) {
		t.Fatalf("fresh checkpoint: %v", err)
	}
	// --flow-takeover with epochs the table already holds for the flow: refused at the first
	// such barrier (skipping would lose its rows).
	_, err = run(t, deltasink.StreamConfig{Table: root, Flow: "f", FlowTakeover: true}, filepath.Join(dir, "ck2"), in())
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `--flow-takeover: epoch 1 of this run is not above the txn version 2 that table `+root+` holds for flow "f"`) {
		t.Fatalf("takeover with old epochs: %v", err)
	}
	// Epochs past the flow's txn version: taken over and written.
	log := mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f", FlowTakeover: true}, filepath.Join(dir, "ck2"),
		newStream(t, mem, idSchema).ids(3, 6).barrier(3).end(codec.Final))
	if strings.Contains(log, "already committed") {
		t.Errorf("takeover: epoch 3 skipped:\n%s", log)
	}
	if got := len(tableIDs(t, root)); got != 6 {
		t.Errorf("rows after takeover: %d, want 6", got)
	}
	rec, err := os.ReadFile(delta.FlowLockPath(root, "f"))
	if err != nil || !strings.Contains(string(rec), filepath.Join(dir, "ck2")) {
		t.Errorf("lock record %s %v", rec, err)
	}
}

// Without a checkpoint, a --flow the table already holds epochs of is refused at start: the
// run's epochs restart at 1 and would be skipped as already committed (rows silently lost).
func TestNoCheckpointExistingFlowRefused(t *testing.T) {
	mem := newMem(t)
	root := filepath.Join(t.TempDir(), "t")
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "ingest"}, "", newStream(t, mem, idSchema).ids(1, 3).barrier(1).end(codec.Final))
	_, err := run(t, deltasink.StreamConfig{Table: root, Flow: "ingest"}, "", newStream(t, mem, idSchema).ids(3, 5).barrier(1).end(codec.Final))
	var ue *stage.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `flow "ingest" already committed epoch 1 to table `+root) ||
		!strings.Contains(err.Error(), "--checkpoint") {
		t.Fatalf("second run without checkpoint: %v", err)
	}
	// Another flow name appends.
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "ingest2"}, "", newStream(t, mem, idSchema).ids(3, 5).barrier(1).end(codec.Final))
	if got := len(tableIDs(t, root)); got != 4 {
		t.Errorf("rows: %d, want 4", got)
	}
	// --flow-takeover without a checkpoint: refused at the first barrier not above the txn version.
	_, err = run(t, deltasink.StreamConfig{Table: root, Flow: "ingest", FlowTakeover: true}, "", newStream(t, mem, idSchema).ids(5, 7).barrier(1).end(codec.Final))
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "epoch 1 of this run is not above the txn version 1") {
		t.Fatalf("takeover without checkpoint: %v", err)
	}
}
