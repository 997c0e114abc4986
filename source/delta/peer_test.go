package delta

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

// Peer tests: tables written in the test run by delta-rs (deltalake) and by Apache Spark with
// delta-spark (testdata/peers.py) are read by the streamkit binary's read-delta, and every
// value must equal delta-rs's own read of the same table (and version / partition filter).

func peerPython(t *testing.T, args ...string) string {
	t.Helper()
	py := peertest.Python(t)
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", "peers.py")}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("peers.py %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// readDeltaTo runs `streamkit read-delta ARGS` and writes its stdout to out.
func readDeltaTo(t *testing.T, out string, args ...string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(peertest.Binary(t), append([]string{"read-delta", "--progress", "off"}, args...)...)
	cmd.Stdout = f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("read-delta %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
}

// compareWithDeltaRs reads each case with read-delta and compares it with delta-rs in one
// Python process. A case is {table spec for peers.py compare, read-delta arguments}.
func compareWithDeltaRs(t *testing.T, dir string, cases [][2]string) {
	t.Helper()
	var args []string
	for i, c := range cases {
		out := filepath.Join(dir, "out"+string(rune('a'+i))+".arrows")
		readDeltaTo(t, out, strings.Split(c[1], "\x00")...)
		args = append(args, c[0], out)
	}
	res := peerPython(t, append([]string{"compare"}, args...)...)
	t.Logf("%s", res)
	if strings.Count(res, "ok ") != len(cases) {
		t.Fatalf("compare: %s", res)
	}
}

func TestPeerDeltaRsTables(t *testing.T) {
	peertest.Python(t)
	dir := t.TempDir()
	names := strings.Fields(peerPython(t, "deltars", dir))
	var cases [][2]string
	for _, n := range names {
		p := filepath.Join(dir, n)
		cases = append(cases, [2]string{p, p})
	}
	p := filepath.Join(dir, "rs_partitioned")
	cases = append(cases,
		[2]string{p + "@0", p + "\x00--version\x000"},
		[2]string{p + "?part=B B", p + "\x00--where\x00part = 'B B'"},
		[2]string{p + "?part=é", p + "\x00--where\x00part in ('é') and day is not null"},
	)
	compareWithDeltaRs(t, dir, cases)
}

func TestPeerSparkTables(t *testing.T) {
	py := peertest.Python(t)
	if err := exec.Command(py, "-c", "import pyspark, delta").Run(); err != nil {
		if os.Getenv("STREAMKIT_REQUIRE_PEERS") == "1" {
			t.Fatalf("pyspark/delta-spark missing: run scripts/peers.sh spark")
		}
		t.Skip("pyspark/delta-spark missing: run scripts/peers.sh spark")
	}
	dir := t.TempDir()
	names := strings.Fields(peerPython(t, "spark", dir))
	if len(names) != 3 {
		t.Fatalf("spark fixtures: %q", names)
	}
	var cases [][2]string
	for _, n := range names {
		p := filepath.Join(dir, n)
		cases = append(cases, [2]string{p, p})
	}
	p := filepath.Join(dir, "spark_checkpointed")
	if _, err := os.Stat(filepath.Join(p, "_delta_log", "00000000000000000010.checkpoint.parquet")); err != nil {
		t.Fatalf("Spark wrote no checkpoint at version 10: %v", err)
	}
	cases = append(cases, [2]string{p + "@4", p + "\x00--version\x004"})
	compareWithDeltaRs(t, dir, cases)
}
