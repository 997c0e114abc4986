package delta

import (
	"context"
	"errors"
	"testing"
)

// TestExpectTxn: a commit with per-partition Txns and ExpectTxn lands only when the read
// snapshot holds the expected versions and no concurrent commit touched those appIds; commits
// of other appIds interleave freely (two group members), and a stale writer (a zombie whose
// partition another member committed) is refused, whether its snapshot predates that commit
// (a concurrent commit) or already shows it (the compare fails at once).
func TestExpectTxn(t *testing.T) {
	mem := newMem(t)
	tbl := newTestTable(t, mem)
	ctx := context.Background()
	base := appendFile(t, tbl, nil, &CreateOptions{}, simpleSchema).Snapshot

	commit := func(read *Snapshot, txns []Txn, expect map[string]int64) (*CommitResult, error) {
		return tbl.Commit(ctx, CommitRequest{Read: read, Txns: txns, ExpectTxn: expect})
	}
	// Member A commits partition 0 for the first time, member B partition 1, both from base.
	resA, err := commit(base, []Txn{{AppID: "f-t-0", Version: 9}}, map[string]int64{"f-t-0": NoTxn})
	if err != nil {
		t.Fatal(err)
	}
	resB, err := commit(base, []Txn{{AppID: "f-t-1", Version: 4}}, map[string]int64{"f-t-1": NoTxn})
	if err != nil {
		t.Fatalf("a commit of another appId from the same snapshot: %v", err)
	}
	if v, ok := resB.Snapshot.TxnVersion("f-t-0"); !ok || v != 9 {
		t.Fatalf("snapshot after B: f-t-0 = %d %v, want 9", v, ok)
	}
	// A zombie of partition 0 still reading base: the concurrent commit of A carries its appId.
	_, err = commit(base, []Txn{{AppID: "f-t-0", Version: 20}}, map[string]int64{"f-t-0": NoTxn})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Kind != ConflictTransaction || ce.AppID != "f-t-0" {
		t.Fatalf("zombie from an old snapshot: err = %v, want a ConflictTransaction on f-t-0", err)
	}
	// A zombie whose snapshot already shows the new owner's version 9 but expects 5.
	_, err = commit(resB.Snapshot, []Txn{{AppID: "f-t-0", Version: 20}}, map[string]int64{"f-t-0": 5})
	if !errors.As(err, &ce) || ce.Kind != ConflictTransaction || ce.AppID != "f-t-0" || ce.Version != resB.Version {
		t.Fatalf("zombie from a new snapshot: err = %v, want a ConflictTransaction on f-t-0 at version %d", err, resB.Version)
	}
	// The owner continues from what it committed: A expects 9 (from its own result, older than B's).
	resC, err := commit(resA.Snapshot, []Txn{{AppID: "f-t-0", Version: 15}}, map[string]int64{"f-t-0": 9})
	if err != nil {
		t.Fatalf("the owner's next commit: %v", err)
	}
	got := resC.Snapshot.Txns()
	if got["f-t-0"].Version != 15 || got["f-t-1"].Version != 4 {
		t.Fatalf("txns after the owner's commit: %+v", got)
	}
	// A table read back from the log agrees.
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := snap.TxnVersion("f-t-0"); v != 15 {
		t.Fatalf("log: f-t-0 = %d, want 15", v)
	}
}
