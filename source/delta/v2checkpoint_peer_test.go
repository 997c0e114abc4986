package delta

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/peertest"
)

// v2Peer is the Spark session of testdata/v2ckpt_peers.py: it builds the v2 checkpoint tables
// and reference reads, then answers commands (one JSON line each, one "RESULT" line back).
type v2Peer struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	log string
}

func startV2Peer(t *testing.T, dir string) *v2Peer {
	t.Helper()
	p := &v2Peer{t: t, log: filepath.Join(dir, "spark.log")}
	p.cmd = exec.Command(peertest.Python(t), filepath.Join("testdata", "v2ckpt_peers.py"), "serve", dir)
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = logf
	var stdout io.Reader
	p.in, stdout = peertest.StartPiped(t, p.cmd)
	p.out = bufio.NewReader(stdout)
	t.Cleanup(func() {
		p.in.Write([]byte(`{"cmd":"quit"}` + "\n"))
		p.in.Close()
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			p.cmd.Process.Kill()
			<-done
		}
	})
	return p
}

// result reads the next RESULT line; a failure ends the test.
func (p *v2Peer) result() map[string]any {
	p.t.Helper()
	for {
		line, err := p.out.ReadString('\n')
		if err != nil {
			b, _ := os.ReadFile(p.log)
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			p.t.Fatalf("v2ckpt_peers.py: %v\n%s", err, b)
		}
		if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
			var res map[string]any
			if err := json.Unmarshal([]byte(rest), &res); err != nil {
				p.t.Fatal(err)
			}
			for _, d := range asList(res["done"]) {
				p.t.Log(d)
			}
			if ok, _ := res["ok"].(bool); !ok {
				p.t.Fatalf("v2ckpt_peers.py: %v", res["error"])
			}
			return res
		}
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

func (p *v2Peer) call(cmd map[string]any) map[string]any {
	p.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		p.t.Fatal(err)
	}
	return p.result()
}

// followUntil runs read-delta --follow ARGS into out until it has emitted n records (from its
// --progress json lines), then interrupts it and waits for it to finish the epoch and exit;
// the comparison with the reference then finds any record beyond n.
func followUntil(t *testing.T, out string, n int, args ...string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(peertest.Binary(t), append([]string{"read-delta", "--follow", "--progress", "json", "--epoch-interval", "200ms"}, args...)...)
	cmd.Stdout = f
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reached := make(chan struct{})
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		closed := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			var p struct {
				RecordsOut int `json:"records_out"`
			}
			if json.Unmarshal(sc.Bytes(), &p) == nil && p.RecordsOut >= n && !closed {
				close(reached)
				closed = true
			}
		}
	}()
	select {
	case <-reached:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("read-delta --follow %v: fewer than %d records in 2 minutes\n%s", args, n, log.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	// An interrupted stage finishes its epoch and exits 130, as after Ctrl-C.
	if err := cmd.Wait(); err != nil && cmd.ProcessState.ExitCode() != 130 {
		t.Fatalf("read-delta --follow %v: %v\n%s", args, err, log.String())
	}
}

// TestPeerSparkV2Checkpoints: tables Spark writes with delta.checkpointPolicy=v2 (UUID-named
// checkpoints with a JSON or a Parquet top-level file and sidecars, a classic-named v2 one)
// are read by read-delta (batch, --version, --follow from before the first checkpoint) with
// Spark's rows; then streamkit appends 25 commits, writing its own v2 checkpoints, and Spark,
// DuckDB and read-delta read the whole table, also after streamkit's log cleanup deleted the
// older commits, checkpoints and sidecars. delta-rs is asked too: it refuses v2Checkpoint
// (deltalake 1.6) or must give the same rows. All Spark work runs in one session.
func TestPeerSparkV2Checkpoints(t *testing.T) {
	py := peertest.Python(t)
	if err := exec.Command(py, "-c", "import pyspark, delta").Run(); err != nil {
		if os.Getenv("STREAMKIT_REQUIRE_PEERS") == "1" {
			t.Fatalf("pyspark/delta-spark missing: run scripts/peers.sh spark")
		}
		t.Skip("pyspark/delta-spark missing: run scripts/peers.sh spark")
	}
	bin := peertest.Binary(t)
	dir := t.TempDir()
	peer := startV2Peer(t, dir)
	ready := peer.result()
	counts, _ := ready["counts"].(map[string]any)
	var inputs []string
	for _, f := range asList(ready["inputs"]) {
		inputs = append(inputs, f.(string))
	}
	tbl := func(n string) string { return filepath.Join(dir, n) }
	logDir := func(n string) string { return filepath.Join(dir, n, dl.LogDir) }

	// Spark's _last_checkpoint names its v2 checkpoint and has a checksum computed as ours.
	raw, err := os.ReadFile(filepath.Join(logDir("v2_json"), dl.LastCheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	var lc dl.LastCheckpoint
	if err := json.Unmarshal(raw, &lc); err != nil || lc.V2Checkpoint == nil || lc.Version != 6 {
		t.Fatalf("Spark's _last_checkpoint: %s (%v)", raw, err)
	}
	if sum, err := dl.LastCheckpointChecksum(raw); err != nil || sum != lc.Checksum {
		t.Errorf("checksum of Spark's _last_checkpoint: %q, Spark wrote %q (%v)", sum, lc.Checksum, err)
	}
	sidecars, _ := os.ReadDir(filepath.Join(logDir("v2_json"), dl.SidecarDir))
	var sparkSidecars []string
	for _, e := range sidecars {
		if !strings.HasPrefix(e.Name(), ".") { // Hadoop's .crc files
			sparkSidecars = append(sparkSidecars, e.Name())
		}
	}
	t.Logf("Spark's sidecars: %v", sparkSidecars)
	if len(sparkSidecars) < 2 {
		t.Fatalf("Spark wrote %d sidecars for two checkpoints", len(sparkSidecars))
	}

	out := func(name string) string { return filepath.Join(dir, name+".arrows") }
	var pairs [][2]string
	read := func(key string, args ...string) {
		readDeltaTo(t, out(key), args...)
		pairs = append(pairs, [2]string{key, out(key)})
	}
	for _, n := range []string{"v2_json", "v2_parquet", "v2_json_only_ckpt", "v2_classic_named"} {
		read(n, tbl(n))
	}
	read("v2_json@4", "--version", "4", tbl("v2_json"))
	read("v2_parquet@4", "--version", "4", tbl("v2_parquet"))
	followUntil(t, out("v2_json_follow2"), int(counts["v2_json_follow2"].(float64)), "--starting-version", "2", "--ignore-changes", tbl("v2_json"))
	pairs = append(pairs, [2]string{"v2_json_follow2", out("v2_json_follow2")})
	peer.call(map[string]any{"cmd": "compare", "pairs": pairs})

	// 25 commits by streamkit (versions 8..32): v2 checkpoints at 9, 12, …, 30.
	for _, in := range inputs {
		cmd := exec.Command(bin, "write-delta", "--progress", "off", tbl("v2_json"))
		f, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = f
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("write-delta < %s: %v\n%s", in, err, b)
		}
		f.Close()
	}
	names, err := os.ReadDir(logDir("v2_json"))
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, e := range names {
		n := e.Name()
		if strings.HasSuffix(n, ".checkpoint.parquet") {
			t.Errorf("classic checkpoint %s in a v2 table", n)
		}
		if len(n) > 32 && strings.HasPrefix(n[20:], ".checkpoint.") && strings.HasSuffix(n, ".json") && n[:20] > fmt.Sprintf("%020d", 6) {
			ours = append(ours, n[:20])
		}
	}
	var want []string
	for v := 9; v <= 30; v += 3 {
		want = append(want, fmt.Sprintf("%020d", v))
	}
	if !slices.Equal(ours, want) {
		t.Fatalf("streamkit's UUID-named checkpoints at %v, want %v", ours, want)
	}
	raw, _ = os.ReadFile(filepath.Join(logDir("v2_json"), dl.LastCheckpointName))
	if err := json.Unmarshal(raw, &lc); err != nil || lc.Version != 30 || lc.V2Checkpoint == nil || !strings.HasPrefix(lc.V2Checkpoint.Path, want[len(want)-1]) {
		t.Fatalf("_last_checkpoint after the appends: %s", raw)
	}
	read("final", tbl("v2_json"))
	peer.call(map[string]any{"cmd": "compare", "pairs": pairs[len(pairs)-1:]})
	peer.call(map[string]any{"cmd": "spark", "reads": [][]any{{"final", tbl("v2_json"), nil}, {"final@24", tbl("v2_json"), 24}}})

	// Log cleanup: versions ≤ 26 (their commits, checkpoints and sidecars) five days old; a
	// two-day retention keeps checkpoint 24 and what follows.
	old := time.Now().Add(-5 * 24 * time.Hour)
	for _, d := range []string{logDir("v2_json"), filepath.Join(logDir("v2_json"), dl.SidecarDir)} {
		es, _ := os.ReadDir(d)
		for _, e := range es {
			if n := e.Name(); len(n) > 20 && n[:20] <= fmt.Sprintf("%020d", 26) {
				os.Chtimes(filepath.Join(d, n), old, old)
			}
		}
	}
	if b, err := exec.Command(bin, "delta", "cleanup-log", "--retain", "2d", "--force", tbl("v2_json")).CombinedOutput(); err != nil ||
		!strings.Contains(string(b), "before checkpoint 24") {
		t.Fatalf("delta cleanup-log: %v\n%s", err, b)
	}
	left, _ := os.ReadDir(filepath.Join(logDir("v2_json"), dl.SidecarDir))
	var leftV []string
	for _, e := range left {
		if !strings.HasPrefix(e.Name(), ".") {
			leftV = append(leftV, e.Name()[:20])
		}
	}
	if wantV := []string{want[5], want[6], want[7]}; !slices.Equal(leftV, wantV) {
		t.Fatalf("sidecars after cleanup: %v, want those of versions %v", leftV, wantV)
	}
	if _, err := os.Stat(filepath.Join(logDir("v2_json"), dl.CommitFileName(23))); !os.IsNotExist(err) {
		t.Fatalf("commit 23 not cleaned up: %v", err)
	}
	read("final", tbl("v2_json"))
	read("final@24", "--version", "24", tbl("v2_json"))
	peer.call(map[string]any{"cmd": "compare", "pairs": pairs[len(pairs)-2:]})
	peer.call(map[string]any{"cmd": "spark", "reads": [][]any{{"final", tbl("v2_json"), nil}, {"final@24", tbl("v2_json"), 24}}})
	peer.call(map[string]any{"cmd": "duckdb", "reads": [][]any{{"final", tbl("v2_json")}, {"v2_parquet", tbl("v2_parquet")}}})
	peer.call(map[string]any{"cmd": "deltars", "table": tbl("v2_json"), "key": "final"})
}
