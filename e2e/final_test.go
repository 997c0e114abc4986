package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/peertest"
)

// TestEndFinalRerunWritesWindowsOnce: a checkpointed pipeline that ends with end=final fires its
// open windows inside the last committed epoch (the source sends the end-of-time watermark
// before the last barrier), so the next run of the same pipeline — a cron job, or a restart after
// a crash that followed the commit — finds nothing left to fire. Before that fix the windows
// fired after the last barrier, write-delta committed them as an epoch no upstream stage had
// checkpointed, and every rerun wrote the last windows again:
//
//	export STREAMKIT_CHECKPOINT=ckpt
//	streamkit read-files in.csv --end final | streamkit window tumbling --size 1h --time ts --tz UTC --key origin --agg count | streamkit write-delta t
//	(the same again: the last hour of every origin was in t twice)
func TestEndFinalRerunWritesWindowsOnce(t *testing.T) {
	bin := peertest.Binary(t)
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("ts,origin\n")
	for h := 0; h < 5; h++ {
		for _, o := range []string{"ATL", "ORD", "SFO"} {
			fmt.Fprintf(&csv, "2001-01-01T%02d:10:00Z,%s\n", h, o)
		}
	}
	in, table := filepath.Join(dir, "in.csv"), filepath.Join(dir, "t")
	os.WriteFile(in, []byte(csv.String()), 0o644)
	stages := []stageSpec{
		{"read-files", []string{"read-files", in, "--end", "final"}},
		{"window", []string{"window", "tumbling", "--size", "1h", "--time", "ts", "--tz", "UTC", "--key", "origin", "--agg", "count"}},
		{"write-delta", []string{"write-delta", table}},
	}
	for run := 1; run <= 3; run++ {
		p := startPipeline(t, bin, filepath.Join(dir, "ckpt"), filepath.Join(dir, fmt.Sprintf("run%d", run)), stages)
		p.wait(t, 2*time.Minute)
		p.requireSuccess(t, fmt.Sprintf("run %d", run))
	}
	out, err := exec.Command("sh", "-c", fmt.Sprintf("%q read-delta %q --progress off | %q print --format csv --progress off", bin, table, bin)).Output()
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(out)), "\n")[1:]
	seen := map[string]int{}
	for _, r := range rows {
		f := strings.Split(r, ",")
		seen[f[0]+" "+f[2]]++
	}
	if len(rows) != 15 || len(seen) != 15 {
		t.Fatalf("%d rows for %d windows after three runs (want 15 once each):\n%s", len(rows), len(seen), out)
	}
}
