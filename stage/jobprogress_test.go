package stage

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestJobProgressStopTwice: backfill --plan stops its progress before the deferred Stop; the
// second Stop is a no-op (it used to close a closed channel: a panic with --progress json).
func TestJobProgressStopTwice(t *testing.T) {
	var buf bytes.Buffer
	p := StartJobProgress(&buf, ProgressJSON, "backfill", 10)
	p.Read.Add(4)
	p.Written.Add(3)
	p.Skipped.Add(1)
	p.SetPhase("committing")
	p.Stop()
	p.Stop()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d reports, want the final one: %q", len(lines), buf.String())
	}
	var got struct {
		Phase                      string
		RowsRead, RowsWritten, Dup int64
		Total                      int64
		Final                      bool
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	got.Phase, got.Final = m["phase"].(string), m["final"].(bool)
	got.RowsRead, got.RowsWritten = int64(m["rows_read"].(float64)), int64(m["rows_written"].(float64))
	got.Dup, got.Total = int64(m["duplicates_skipped"].(float64)), int64(m["total_rows"].(float64))
	if got.Phase != "committing" || !got.Final || got.RowsRead != 4 || got.RowsWritten != 3 || got.Dup != 1 || got.Total != 10 {
		t.Fatalf("final report %s", lines[0])
	}
	off := StartJobProgress(&buf, ProgressOff, "backfill", 0)
	off.Stop()
	off.Stop()
}
