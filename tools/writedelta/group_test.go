package writedelta

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	deltasink "github.com/streamkit/streamkit/sink/delta"
)

// groupStream is a consumer-group member's stream into table root (docs/protocol.md §13).
func groupStream(t *testing.T, root string) *stream {
	mem := newMem(t)
	wire := codec.WithGroup(replayable(idSchema, false), codec.GroupInfo{Group: "g", Flow: "g", Table: root})
	return newStreamAs(t, mem, idSchema, wire)
}

// part writes rows id = from..to-1 tagged with source partition name.
func (s *stream) part(name string, from, to int) *stream {
	s.t.Helper()
	rec := codec.WithPartition(idBatch(s.mem, from, to), name)
	defer rec.Release()
	return s.rec(rec)
}

// progress writes barrier n carrying offsets (streamkit.offsets).
func (s *stream) progress(n uint64, offsets string) *stream {
	s.t.Helper()
	c := codec.BarrierControl(n)
	c.Offsets = offsets
	if err := s.w.WriteControl(c); err != nil {
		s.t.Fatal(err)
	}
	return s
}

func txnsOf(t *testing.T, root string) map[string]int64 {
	out := map[string]int64{}
	for app, tx := range snapshot(t, root).Txns() {
		out[app] = tx.Version
	}
	return out
}

// TestGroupTxnPerPartition: a group member's epochs commit their rows with one txn per listed
// partition {<flow>-<topic>-<partition>, next − 1}, also for an epoch whose rows were all
// dropped upstream (progress only), and nothing for an epoch that lists none; a second member
// continues another partition in the same table. A zombie — a member whose barrier expects an
// older txn than the table holds — is refused: write-delta fails naming the partition, and
// neither its rows nor its txn are in the table.
func TestGroupTxnPerPartition(t *testing.T) {
	root := filepath.Join(t.TempDir(), "table")
	cfg := deltasink.StreamConfig{Table: root}
	a := groupStream(t, root).part("t/0", 0, 10).part("t/1", 100, 105).
		progress(1, `{"t/0":{"txn":null,"next":10},"t/1":{"txn":null,"next":5}}`).
		progress(2, `{"t/0":{"txn":9,"next":12}}`). // offsets 10, 11: rows filtered out upstream
		progress(3, "").end(codec.Pause)
	mustRun(t, cfg, "", a)
	want := map[string]int64{"g-t-0": 11, "g-t-1": 4}
	if got := txnsOf(t, root); len(got) != 2 || got["g-t-0"] != 11 || got["g-t-1"] != 4 {
		t.Fatalf("txns = %v, want %v", got, want)
	}
	if v := snapshot(t, root).Version(); v != 1 {
		t.Fatalf("table version %d, want 1 (epoch 1 creates it, epoch 2 commits progress only, epoch 3 nothing)", v)
	}
	b := groupStream(t, root).part("t/1", 105, 108).progress(1, `{"t/1":{"txn":4,"next":8}}`).end(codec.Pause)
	mustRun(t, cfg, "", b)

	zombie := groupStream(t, root).part("t/0", 200, 206).progress(1, `{"t/0":{"txn":5,"next":16}}`).end(codec.Pause)
	log, err := run(t, cfg, "", zombie)
	if err == nil || !strings.Contains(err.Error(), `appId "g-t-0" has txn version 11 in the table, not 5`) || !strings.Contains(err.Error(), "zombie") {
		t.Fatalf("zombie: err = %v, want the refused commit naming g-t-0 and both versions\n%s", err, log)
	}
	wantIDs := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 101, 102, 103, 104, 105, 106, 107}
	if got := tableIDs(t, root); !slices.Equal(got, wantIDs) {
		t.Fatalf("ids = %v, want %v", got, wantIDs)
	}
	if got := txnsOf(t, root); got["g-t-0"] != 11 || got["g-t-1"] != 7 {
		t.Fatalf("txns after the zombie = %v, want g-t-0 11, g-t-1 7", got)
	}
}

// TestGroupRefusals: a group's stream is refused with a checkpoint, into another table than
// its progress table, with another --flow, and when an epoch holds rows of a partition its
// barrier does not list, or rows without a partition; nothing is committed.
func TestGroupRefusals(t *testing.T) {
	root := filepath.Join(t.TempDir(), "table")
	cfg := deltasink.StreamConfig{Table: root}
	ok := func() []byte {
		return groupStream(t, root).part("t/0", 0, 3).progress(1, `{"t/0":{"txn":null,"next":3}}`).end(codec.Pause)
	}
	for _, c := range []struct {
		name, want string
		cfg        deltasink.StreamConfig
		ckpt       string
		in         []byte
	}{
		{"checkpoint", "run write-delta without --checkpoint", cfg, filepath.Join(t.TempDir(), "ck"), ok()},
		{"other table", "keeps its progress in table " + root, deltasink.StreamConfig{Table: root + "2"}, "", ok()},
		{"other flow", `writes flow "g", not --flow "h"`, deltasink.StreamConfig{Table: root, Flow: "h"}, "", ok()},
		{"unlisted partition", "holds rows of source partitions t/1, but its barrier carries no progress for them",
			cfg, "", groupStream(t, root).part("t/0", 0, 3).part("t/1", 3, 4).progress(1, `{"t/0":{"txn":null,"next":3}}`).end(codec.Pause)},
		{"untagged rows", "names no source partition", cfg, "", groupStream(t, root).ids(0, 3).progress(1, `{"t/0":{"txn":null,"next":3}}`).end(codec.Pause)},
	} {
		t.Run(c.name, func(t *testing.T) {
			log, err := run(t, c.cfg, c.ckpt, c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q\n%s", err, c.want, log)
			}
			if _, serr := delta.NewTable(root, nil).Snapshot(t.Context()); serr == nil {
				t.Fatalf("a table was created at %s", root)
			}
		})
	}
}
