package delta

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/internal/peertest"
)

// widenManifest is what testdata/widen_peers.py spark writes: the widened table and, per
// case, the read-delta arguments, Spark's rows (want) and where read-delta's output goes.
type widenManifest struct {
	Table string      `json:"table"`
	Cases []widenCase `json:"cases"`
}

type widenCase struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	Want string   `json:"want"`
	Out  string   `json:"out"`
}

// TestPeerSparkTypeWidening reads tables that Spark widened column by column (ALTER TABLE …
// CHANGE COLUMN … TYPE, delta.enableTypeWidening) between appends, so their files hold every
// older type: read-delta's rows and Arrow types must equal Spark's read at the latest version,
// at versions before and between the widenings (--version), with --where predicates whose
// statistics were written under the old types, with --follow from version 0 (through the
// ALTER commits), and after backfill --from-delta copied the table.
func TestPeerSparkTypeWidening(t *testing.T) {
	py := peertest.Python(t)
	if err := exec.Command(py, "-c", "import pyspark, delta").Run(); err != nil {
		if os.Getenv("STREAMKIT_REQUIRE_PEERS") == "1" {
			t.Fatalf("pyspark/delta-spark missing: run scripts/peers.sh spark")
		}
		t.Skip("pyspark/delta-spark missing: run scripts/peers.sh spark")
	}
	dir := t.TempDir()
	path := strings.TrimSpace(peerScript(t, "widen_peers.py", "spark", dir))
	var m widenManifest
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var latest *widenCase
	for i := range m.Cases {
		c := &m.Cases[i]
		readDeltaTo(t, c.Out, c.Args...)
		if c.Name == "latest" {
			latest = c
		}
	}
	if latest == nil || len(m.Cases) < 10 {
		t.Fatalf("manifest %s: %d cases, no latest", path, len(m.Cases))
	}
	var want struct{ Rows []string }
	b, _ = os.ReadFile(latest.Want)
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}

	follow := widenCase{Name: "follow", Want: latest.Want, Out: filepath.Join(dir, "follow.arrows")}
	followArrow(t, follow.Out, int64(len(want.Rows)), m.Table, "--follow", "--starting-version", "0", "--poll-interval", "50ms")
	copyTo := filepath.Join(dir, "backfilled")
	cmd := exec.Command(peertest.Binary(t), "backfill", "--progress", "off", "--from-delta", m.Table, "--to", copyTo, "--flow", "copy")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("backfill --from-delta: %v\n%s", err, out)
	}
	backfill := widenCase{Name: "backfill", Want: latest.Want, Out: filepath.Join(dir, "backfill.arrows")}
	readDeltaTo(t, backfill.Out, copyTo)
	m.Cases = append(m.Cases, follow, backfill)

	b, _ = json.Marshal(m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	res := peerScript(t, "widen_peers.py", "compare", path)
	t.Logf("%s", res)
	if strings.Count(res, "ok ") != len(m.Cases) {
		t.Fatalf("compare: %s", res)
	}
}

// followTo runs `streamkit read-delta ARGS` (a --follow read) until it has emitted rows rows,
// writes them as an Arrow IPC stream to out and stops it.
func followArrow(t *testing.T, out string, rows int64, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, peertest.Binary(t), append([]string{"read-delta", "--progress", "off"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		cmd.Wait()
	}()
	rd, err := ipc.NewReader(stdout, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		t.Fatalf("read-delta %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	defer rd.Release()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := ipc.NewWriter(f, ipc.WithSchema(rd.Schema()))
	var n int64
	for n < rows && rd.Next() {
		rec := rd.RecordBatch()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		n += rec.NumRows()
	}
	if n < rows {
		t.Fatalf("read-delta %s: %d rows of %d: %v\n%s", strings.Join(args, " "), n, rows, rd.Err(), stderr.String())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
