package delta

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestNotATable(t *testing.T) {
	tbl := NewTable(t.TempDir(), nil)
	if _, err := tbl.Snapshot(context.Background()); !errors.Is(err, ErrNotATable) {
		t.Errorf("err = %v", err)
	}
	if ok, err := tbl.Exists(); ok || err != nil {
		t.Errorf("Exists = %v, %v", ok, err)
	}
}

func TestAppendOnlyRefusesOverwrite(t *testing.T) {
	mem := newMem(t)
	tbl := newTestTable(t, mem)
	res := appendFile(t, tbl, nil, &CreateOptions{Configuration: map[string]string{"delta.appendOnly": "true"}}, simpleSchema)
	if _, err := tbl.Commit(context.Background(), CommitRequest{Read: res.Snapshot, Mode: Overwrite}); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("overwrite of append-only table: %v", err)
	}
}
