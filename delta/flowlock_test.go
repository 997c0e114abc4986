package delta

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// On a local table Table.LockFlow is LockFlow: an flock on the lock file, which cannot be lost.
func TestLocalTableLockFlow(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "new table")
	tbl := NewTable(root, nil)
	a, err := tbl.LockFlow(ctx, "f/1", 0, FlowHolder{Tool: "write-delta"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Lost() != nil || a.Err() != nil || a.Path() != FlowLockPath(root, "f/1") {
		t.Fatalf("local lock: Lost %v, Err %v, path %s", a.Lost(), a.Err(), a.Path())
	}
	_, err = NewTable(root, nil).LockFlow(ctx, "f/1", 0, FlowHolder{Tool: "backfill"})
	var busy *FlowBusyError
	if !errors.As(err, &busy) || busy.Holder.Tool != "write-delta" || busy.Left != 0 ||
		!strings.HasSuffix(err.Error(), "which holds "+FlowLockPath(root, "f/1")+"; only one writer may run per flow (a second one would skip the other's epochs)") {
		t.Fatalf("second owner: %v", err)
	}
	a.Finish() // no table was made: the lock file and the root LockFlow created go
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("root after Finish: %v", err)
	}
}
