package writedelta

import (
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// gated reads b[:cut], then blocks until open is closed, then reads the rest: a stream whose
// barrier arrives after something else happened.
type gated struct {
	b    []byte
	cut  int
	off  int
	open chan struct{}
}

func (g *gated) Read(p []byte) (int, error) {
	if g.off == g.cut {
		<-g.open
	}
	end := len(g.b)
	if g.off < g.cut {
		end = g.cut
	}
	if g.off == len(g.b) {
		return 0, io.EOF
	}
	n := copy(p, g.b[g.off:end])
	g.off += n
	return n, nil
}

// TestGroupMovedPartitionStaleSnapshot: a member's sink read the table before the partition's
// previous owner committed it; the partition then moves to this member, whose source read the
// newer txn at the assignment. The first commit compares with the table as the source read it
// (the sink brings its snapshot up to date), so it is accepted, not refused as a zombie's.
func TestGroupMovedPartitionStaleSnapshot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "table")
	cfg := deltasink.StreamConfig{Table: root}
	mustRun(t, cfg, "", groupStream(t, root).part("t/0", 0, 10).progress(1, `{"t/0":{"txn":null,"next":10}}`).end(codec.Pause))
	a := groupStream(t, root).part("t/1", 105, 108)
	cut := a.buf.Len()
	g := &gated{b: a.progress(1, `{"t/1":{"txn":4,"next":8}}`).end(codec.Pause), cut: cut, open: make(chan struct{})}
	w, err := deltasink.NewStreamWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		log string
		err error
	}
	done := make(chan result, 1)
	go func() {
		log, err := runFrom(testMem(t), w, "", root, g)
		done <- result{log, err}
	}()
	time.Sleep(500 * time.Millisecond) // a's sink has read the schema and the table
	mustRun(t, cfg, "", groupStream(t, root).part("t/1", 100, 105).progress(1, `{"t/1":{"txn":null,"next":5}}`).end(codec.Pause))
	close(g.open)
	if r := <-done; r.err != nil {
		t.Fatalf("the new owner's first commit: %v\n%s", r.err, r.log)
	}
	if got := txnsOf(t, root); got["g-t-0"] != 9 || got["g-t-1"] != 7 {
		t.Fatalf("txns = %v, want g-t-0 9, g-t-1 7", got)
	}
	want := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 101, 102, 103, 104, 105, 106, 107}
	if got := tableIDs(t, root); !slices.Equal(got, want) {
		t.Fatalf("ids = %v, want %v", got, want)
	}
}
