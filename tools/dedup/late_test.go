package dedup

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/peertest"
)

// bash runs script with bash -o pipefail in dir ($SK is the streamkit binary) and returns
// stdout, stderr and the exit code.
func bash(t *testing.T, dir string, env []string, script string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "SK="+peertest.Binary(t)), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// writeFiles writes name → content under dir with increasing modification times.
func writeFiles(t *testing.T, dir string, files ...[2]string) {
	t.Helper()
	base := time.Now().Add(-time.Hour)
	for i, f := range files {
		p := filepath.Join(dir, f[0])
		if err := os.WriteFile(p, []byte(f[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
}

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
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, in,
		[2]string{"1.ndjson", `{"id":1,"row":"a","ts":"2024-05-01T10:00:00Z"}` + "\n"},
		[2]string{"2.ndjson", `{"id":2,"row":"c","ts":"2024-05-01T12:00:00Z"}` + "\n"},
		[2]string{"3.ndjson", `{"id":1,"row":"e","ts":"2024-05-01T10:05:00Z"}` + "\n" + `{"id":1,"row":"g","ts":"2024-05-01T12:30:00Z"}` + "\n"},
	)
	for _, c := range []struct{ name, dedup, dropped string }{
		{"dedup", "$SK dedup", "dropped.ndjson"},
		{"keyby --shards 2 -- dedup", "$SK keyby id --shards 2 -- dedup", "dropped.shard-*.ndjson"},
	} {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			script := `$SK read-files "` + in + `/*.ndjson" --schema 'id bigint, row string, ts timestamp' --max-files-per-epoch 1 | ` +
				c.dedup + ` --key id --ttl 1h --event-time ts --dropped-output dropped.ndjson | $SK print --format json`
			out, stderr, code := bash(t, work, []string{"STREAMKIT_CHECKPOINT=" + filepath.Join(work, "ckpt")}, script)
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
		})
	}
}
