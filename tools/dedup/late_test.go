package dedup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/state"
)

// rowNames is the "row" member of every JSON line of out, in order.
func rowNames(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		i := strings.Index(l, `"row":"`)
		if i < 0 {
			t.Fatalf("no row in %q", l)
		}
		got = append(got, l[i+7:i+8])
	}
	return got
}

// TestTTLLateRowsDropped (issue #25 item 1): dedup --ttl --event-time let a row older than the
// watermark in after its key had expired (e: 10:05, 2 hours behind), and then dropped a real
// row (g: 12:30, after e's expiry) as e's duplicate; every stage exited 0. As Spark's
// dropDuplicatesWithinWatermark, rows older than the watermark are late: they go to
// --dropped-output and are counted, and the output is a, c, g — through one dedup and through
// keyby --shards 2 -- dedup (whose shards learn the stream's progress from keyby).
func TestTTLLateRowsDropped(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	peertest.WriteFiles(t, in,
		"1.ndjson", `{"id":1,"row":"a","ts":"2024-05-01T10:00:00Z"}`+"\n",
		"2.ndjson", `{"id":2,"row":"c","ts":"2024-05-01T12:00:00Z"}`+"\n",
		"3.ndjson", `{"id":1,"row":"e","ts":"2024-05-01T10:05:00Z"}`+"\n"+`{"id":1,"row":"g","ts":"2024-05-01T12:30:00Z"}`+"\n",
	)
	for _, c := range []struct{ name, dedup, dropped string }{
		{"dedup", "$SK dedup", "dropped.ndjson"},
		{"keyby --shards 2 -- dedup", "$SK keyby id --shards 2 -- dedup", "dropped.shard-*.ndjson"},
	} {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			script := `$SK read-files "` + in + `/*.ndjson" --schema 'id bigint, row string, ts timestamp' --max-files-per-epoch 1 | ` +
				c.dedup + ` --key id --ttl 1h --event-time ts --dropped-output dropped.ndjson | $SK print --format json`
			out, stderr, code := peertest.Pipeline(t, work, []string{"STREAMKIT_CHECKPOINT=" + filepath.Join(work, "ckpt")}, script)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if got, want := rowNames(t, out), []string{"a", "c", "g"}; !slices.Equal(got, want) {
				t.Errorf("rows %v, want %v (Spark's dropDuplicatesWithinWatermark)", got, want)
			}
			files, _ := filepath.Glob(filepath.Join(work, c.dropped))
			var dropped []string
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				dropped = append(dropped, rowNames(t, string(b))...)
			}
			if !slices.Equal(dropped, []string{"e"}) {
				t.Errorf("--dropped-output holds %v, want the late row e", dropped)
			}
			if !strings.Contains(stderr, "late_rows_dropped=1") {
				t.Errorf("the late row is not counted on stderr: %s", stderr)
			}
			// Past --max-bad-ratio the epoch with the late row fails before it commits.
			work = t.TempDir()
			script = strings.Replace(script, "--dropped-output dropped.ndjson", "--max-bad-ratio 0.4", 1)
			out, stderr, code = peertest.Pipeline(t, work, []string{"STREAMKIT_CHECKPOINT=" + filepath.Join(work, "ckpt")}, script)
			if want := "dedup: epoch 3: 1 of 2 records set aside (dropped_late_rows 1), ratio 0.5 > --max-bad-ratio 0.4"; code != 1 || !strings.Contains(stderr, want) {
				t.Errorf("--max-bad-ratio 0.4: exit %d, want 1 and %q: %s", code, want, stderr)
			}
			_ = out // print shows rows as they come (at-least-once); what counts is the commit
			if c, err := state.Committed(filepath.Join(work, "ckpt", "print")); err != nil || c != 2 {
				t.Errorf("--max-bad-ratio 0.4: print committed epoch %d (%v), want 2", c, err)
			}
		})
	}
}
