package writedelta

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	"github.com/streamkit/streamkit/state"
)

// gatedReader serves data, but before the first read past the first gate bytes it calls
// hook once: with gate = the schema message, hook runs after write-delta opened the table
// and before it sees any row.
type gatedReader struct {
	data []byte
	gate int
	pos  int
	once sync.Once
	hook func()
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if g.pos >= len(g.data) {
		return 0, io.EOF
	}
	end := len(g.data)
	if g.pos < g.gate {
		end = g.gate
	} else {
		g.once.Do(g.hook)
	}
	n := copy(p, g.data[g.pos:end])
	g.pos += n
	return n, nil
}

// A background commit that fails (another writer changed the table's metadata after
// write-delta read it) fails the run with the conflict named, deletes the epoch's data files,
// and leaves no commit marker for it.
func TestBackgroundCommitFailure(t *testing.T) {
	mem := newMem(t)
	root := filepath.Join(t.TempDir(), "t")
	ck := t.TempDir()
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f"}, ck, newStream(t, mem, idSchema).ids(0, 10).barrier(1).end(codec.Pause))
	before := parquetFiles(t, root)

	header := newStream(t, mem, idSchema).eos()
	schemaLen := len(header) - 8 // the stream without its end-of-stream marker
	in := newStream(t, mem, idSchema).ids(10, 20).barrier(2).ids(20, 30).barrier(3).end(codec.Pause)
	if string(in[:schemaLen]) != string(header[:schemaLen]) {
		t.Fatal("streams of one schema differ in their schema message")
	}
	changed := false
	gr := &gatedReader{data: in, gate: schemaLen, hook: func() {
		tbl := delta.NewTable(root, nil)
		s, err := tbl.Snapshot(context.Background())
		if err != nil {
			t.Error(err)
			return
		}
		m := *s.Metadata()
		m.Configuration = map[string]string{"delta.logRetentionDuration": "interval 40 days"}
		if _, err := tbl.Commit(context.Background(), delta.CommitRequest{Read: s, Metadata: &m, Operation: "SET TBLPROPERTIES"}); err != nil {
			t.Error(err)
			return
		}
		changed = true
	}}
	w, err := deltasink.NewStreamWriter(deltasink.StreamConfig{Table: root, Flow: "f"})
	if err != nil {
		t.Fatal(err)
	}
	log, err := runFrom(mem, w, ck, root, gr)
	if !changed {
		t.Fatalf("the metadata change did not run before the rows (log:\n%s)", log)
	}
	if err == nil || !strings.Contains(err.Error(), "another writer changed the table's metadata or protocol") {
		t.Fatalf("got %v\n%s", err, log)
	}
	if !w.Async() {
		t.Fatal("the stage did not switch write-delta to background commits")
	}
	s := snapshot(t, root)
	if s.Version() != 1 {
		t.Fatalf("table at version %d, want 1 (epoch 1 and the property change)", s.Version())
	}
	if txn, _ := s.TxnVersion("f"); txn != 1 {
		t.Fatalf("txn of flow f: %d, want 1", txn)
	}
	if after := parquetFiles(t, root); len(after) != len(before) {
		t.Fatalf("data files: %d before, %d after the failed run (the failed epoch's files must be deleted)", len(before), len(after))
	}
	if c, _ := state.Committed(ck); c != 1 {
		t.Fatalf("checkpoint committed epoch %d, want 1", c)
	}
	// A restart (no more conflict) commits epochs 2 and 3 exactly once.
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f"}, ck, newStream(t, mem, idSchema).ids(10, 20).barrier(2).ids(20, 30).barrier(3).end(codec.Pause))
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 30)) {
		t.Fatalf("ids %v", got)
	}
	if c, _ := state.Committed(ck); c != 3 {
		t.Fatalf("checkpoint committed epoch %d, want 3", c)
	}
}

// The first epoch's background commit creates the table; when another writer created it after
// this one opened, the commit is completed synchronously: this writer joins the table and
// appends, exactly once.
func TestBackgroundCreateLosesToAnotherWriter(t *testing.T) {
	mem := newMem(t)
	root := filepath.Join(t.TempDir(), "t")
	header := newStream(t, mem, idSchema).eos()
	schemaLen := len(header) - 8
	in := newStream(t, mem, idSchema).ids(0, 10).barrier(1).ids(10, 20).barrier(2).end(codec.Pause)
	gr := &gatedReader{data: in, gate: schemaLen, hook: func() {
		// Another flow creates the table while this writer holds no snapshot.
		if _, err := run(t, deltasink.StreamConfig{Table: root, Flow: "other"}, t.TempDir(), newStream(t, mem, idSchema).ids(100, 105).barrier(1).end(codec.Pause)); err != nil {
			t.Error(err)
		}
	}}
	w, err := deltasink.NewStreamWriter(deltasink.StreamConfig{Table: root, Flow: "f"})
	if err != nil {
		t.Fatal(err)
	}
	ck := t.TempDir()
	log, err := runFrom(mem, w, ck, root, gr)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if !w.Async() {
		t.Fatal("the stage did not switch write-delta to background commits")
	}
	s := snapshot(t, root)
	if txn, _ := s.TxnVersion("f"); txn != 2 {
		t.Fatalf("txn of flow f: %d, want 2", txn)
	}
	want := append(seq(0, 20), seq(100, 105)...)
	if got := tableIDs(t, root); !equalIDs(got, want) {
		t.Fatalf("ids %v, want %v", got, want)
	}
	if c, _ := state.Committed(ck); c != 2 {
		t.Fatalf("checkpoint committed epoch %d, want 2", c)
	}
	if len(parquetFiles(t, root)) != len(s.Files()) {
		t.Fatalf("%d data files on disk, %d in the table", len(parquetFiles(t, root)), len(s.Files()))
	}
}
