package delta

import (
	"context"
	"errors"
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
