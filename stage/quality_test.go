package stage

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestQualityCheck: the share of an epoch's records set aside is counted from the previous
// barrier (not since the start), unparseable records add to the records, the warning comes
// above one half only, and --max-bad-ratio fails strictly above its value.
func TestQualityCheck(t *testing.T) {
	var logs bytes.Buffer
	o := &Options{Tool: "window", Log: slog.New(slog.NewTextHandler(&logs, nil))}
	var r Ratio
	if err := r.Set("0.5"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"-0.1", "1.5", "x", "NaN"} {
		if err := new(Ratio).Set(bad); err == nil {
			t.Errorf("--max-bad-ratio %s accepted", bad)
		}
	}
	s := newStats()
	q := qualityCheck{max: r}
	step := func(in int64, k RejectKind, n int64) error {
		s.RecordsIn.Add(in)
		s.Reject(k, n)
		logs.Reset()
		return q.epoch(o, s, s.Epoch.Add(1))
	}
	if err := step(10, LateRow, 5); err != nil || logs.Len() > 0 { // exactly one half: neither
		t.Fatalf("5 of 10: err %v, log %q", err, logs.String())
	}
	if err := step(10, LateRow, 0); err != nil || logs.Len() > 0 { // counted from the last barrier
		t.Fatalf("0 of 10: err %v, log %q", err, logs.String())
	}
	err := step(2, BadRecord, 3) // 3 unparseable records + 2 rows: 3 of 5
	if err == nil || !strings.Contains(err.Error(), "window: epoch 3: 3 of 5 records set aside (bad_records 3), ratio 0.6 > --max-bad-ratio 0.5") {
		t.Fatalf("3 of 5: err %v", err)
	}
	q.max = Ratio{}
	if err := step(4, BadTimeRow, 3); err != nil || !strings.Contains(logs.String(), "most records of epoch 4 were set aside: 3 of 4 (bad_time_rows 3)") {
		t.Fatalf("without --max-bad-ratio: err %v, log %q", err, logs.String())
	}
	if s.BadRecords.Load() != 11 || s.Rejected(LateRow) != 5 {
		t.Errorf("BadRecords %d, late %d", s.BadRecords.Load(), s.Rejected(LateRow))
	}
}
