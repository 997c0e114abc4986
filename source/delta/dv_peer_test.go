package delta

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/peertest"
)

// dvPeer is the Python process of testdata/dv_peers.py: one Spark session for the whole test.
type dvPeer struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *bytes.Buffer
}

func startDVPeer(t *testing.T, dir string) *dvPeer {
	t.Helper()
	py := peertest.Python(t)
	if err := exec.Command(py, "-c", "import pyspark, delta").Run(); err != nil {
		if os.Getenv("STREAMKIT_REQUIRE_PEERS") == "1" {
			t.Fatalf("pyspark/delta-spark missing: run scripts/peers.sh spark")
		}
		t.Skip("pyspark/delta-spark missing: run scripts/peers.sh spark")
	}
	p := &dvPeer{t: t, stderr: &bytes.Buffer{}}
	p.cmd = exec.Command(py, filepath.Join("testdata", "dv_peers.py"), dir)
	p.cmd.Stderr = p.stderr
	var stdout io.Reader
	p.in, stdout = peertest.StartPiped(t, p.cmd)
	p.out = bufio.NewScanner(stdout)
	t.Cleanup(func() {
		p.in.Close()
		p.cmd.Wait()
	})
	return p
}

// ask sends one command and returns its answer lines (without the closing "done").
func (p *dvPeer) ask(cmd ...string) []string {
	p.t.Helper()
	fmt.Fprintln(p.in, strings.Join(cmd, " "))
	var lines []string
	for p.out.Scan() {
		if l := p.out.Text(); l == "done" {
			return lines
		} else {
			lines = append(lines, l)
		}
	}
	p.t.Fatalf("dv_peers.py %s: no answer\n%s\n%s", cmd[0], strings.Join(lines, "\n"), p.stderr.String())
	return nil
}

// compare checks a read-delta output against an expected rows file.
func (p *dvPeer) compare(expect, out string) {
	p.t.Helper()
	res := p.ask("compare", expect, out)
	if len(res) != 1 || !strings.HasPrefix(res[0], "ok ") {
		p.t.Errorf("%s: %s", out, strings.Join(res, "\n"))
	} else {
		p.t.Log(res[0])
	}
}

func countLines(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// TestPeerSparkDeletionVectors: Spark writes a table with deletion vectors (DELETE, UPDATE,
// MERGE, DELETE again on files that have a vector) and its copies with the vectors inline and
// at absolute paths; read-delta (latest, every --version, --where, --follow with and without
// --skip-change-commits) and backfill --from-delta must give Spark's rows. Then write-delta
// appends to the table until streamkit writes a checkpoint, and Spark's read from that
// checkpoint (the commits before it removed) must keep the deleted rows deleted.
func TestPeerSparkDeletionVectors(t *testing.T) {
	dir := t.TempDir()
	p := startDVPeer(t, dir)
	made := p.ask("make")
	t.Logf("%s", strings.Join(made, "\n"))
	var versions int
	stats := strings.Join(made, "\n")
	for _, l := range made {
		fmt.Sscanf(l, "versions %d", &versions)
	}
	if versions != 7 {
		t.Fatalf("Spark made %d versions, want 7", versions)
	}
	// On-disk vectors from Spark's DML, and the copies' inline and absolute ones.
	for _, want := range []string{`kinds={"u": `, `dv_inline kinds={"i": `, `dv_abs kinds={"p": `} {
		if !strings.Contains(stats, want) {
			t.Fatalf("fixture storage types: want %s in\n%s", want, stats)
		}
	}
	var maxCard, maxGroups int
	for _, l := range made {
		if strings.HasPrefix(l, "stats kinds=") {
			fmt.Sscanf(l[strings.Index(l, "maxcard="):], "maxcard=%d maxrowgroups=%d", &maxCard, &maxGroups)
		}
	}
	if maxCard < 4096 || maxGroups < 2 {
		t.Fatalf("fixture: largest vector %d rows (want ≥ 4096, a bitmap container), most row groups %d (want several)", maxCard, maxGroups)
	}
	tbl := filepath.Join(dir, "dv")
	expect := func(name string) string { return filepath.Join(dir, "expect", name+".json") }
	out := func(name string) string { return filepath.Join(dir, name+".arrows") }

	for v := 0; v <= versions; v++ {
		o := out(fmt.Sprintf("v%d", v))
		readDeltaTo(t, o, tbl, "--version", fmt.Sprint(v))
		p.compare(expect(fmt.Sprintf("dv@%d", v)), o)
	}
	readDeltaTo(t, out("latest"), tbl, "--batch-rows", "37", "--workers", "3")
	p.compare(expect(fmt.Sprintf("dv@%d", versions)), out("latest"))
	for _, name := range []string{"dv_inline", "dv_abs"} {
		readDeltaTo(t, out(name), filepath.Join(dir, name))
		p.compare(expect(name), out(name))
	}

	// --where prunes row groups by statistics; the vectors' indexes stay file positions.
	where := "id >= 700 AND id < 11000"
	p.ask("spark", tbl, "where", where)
	readDeltaTo(t, out("where"), tbl, "--where", where)
	p.compare(expect("where"), out("where"))

	// Following from version 0: the first commit that puts vectors on files fails the stream,
	// naming it; --skip-change-commits reads only the appends, as Spark's skipChangeCommits.
	_, stderr, code := peertest.Run(t, nil, nil, "read-delta", "--progress", "off", "--follow", "--starting-version", "0", tbl)
	if code != 1 || !strings.Contains(stderr, "version 3 of") || !strings.Contains(stderr, "--skip-change-commits") {
		t.Errorf("follow over a DELETE: exit %d, %s", code, stderr)
	}
	followTo(t, out("skip"), countLines(t, expect("dv_skip")), "--follow", "--starting-version", "0", "--skip-change-commits", "--poll-interval", "50ms", tbl)
	p.compare(expect("dv_skip"), out("skip"))

	// backfill --from-delta copies the live rows only.
	target := filepath.Join(dir, "backfilled")
	if _, stderr, code := peertest.Run(t, nil, nil, "backfill", "--progress", "off", "--from-delta", tbl, "--to", target, "--flow", "dv"); code != 0 {
		t.Fatalf("backfill: exit %d: %s", code, stderr)
	}
	readDeltaTo(t, out("backfilled"), target)
	p.compare(expect(fmt.Sprintf("dv@%d", versions)), out("backfilled"))

	// delta vacuum keeps the vector files live files use (Spark and read-delta read the table
	// after it); delta optimize rewrites the files without their deleted rows, and a vacuum
	// after it deletes the vector files nothing uses any more.
	vac := filepath.Join(dir, "dv_vacuum")
	copyDir(t, tbl, vac)
	runTool(t, "delta", "vacuum", "--retain", "0h", "--force", vac)
	if n := len(dvFiles(t, vac)); n == 0 || n == len(dvFiles(t, tbl)) {
		t.Errorf("vacuum left %d of %d deletion vector files (want the used ones only)", n, len(dvFiles(t, tbl)))
	}
	opt := filepath.Join(dir, "dv_optimize")
	copyDir(t, tbl, opt)
	runTool(t, "delta", "optimize", opt)
	runTool(t, "delta", "vacuum", "--retain", "0h", "--force", opt)
	if n := len(dvFiles(t, opt)); n != 0 {
		t.Errorf("after optimize and vacuum %d deletion vector files are left", n)
	}
	for _, name := range []string{"dv_vacuum", "dv_optimize"} {
		p.ask("spark", filepath.Join(dir, name), name)
		p.compare(expect(name), out(fmt.Sprintf("v%d", versions)))
		readDeltaTo(t, out(name), filepath.Join(dir, name))
		p.compare(expect(fmt.Sprintf("dv@%d", versions)), out(name))
	}
	snap, err := dl.NewTable(opt, nil).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range snap.Files() {
		if a.DeletionVector != nil {
			t.Errorf("after optimize, %s still has a deletion vector", a.Path)
		}
	}

	// write-delta appends to the table; its commit at version 10 writes a checkpoint that
	// must carry every vector.
	ck := filepath.Join(dir, "dv_ckpt")
	rows, err := os.ReadFile(filepath.Join(dir, "append.arrows"))
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for ; ; runs++ {
		if _, err := os.Stat(filepath.Join(ck, "_delta_log", "00000000000000000010.checkpoint.parquet")); err == nil {
			break
		} else if runs == 3 {
			t.Fatalf("streamkit wrote no checkpoint at version 10")
		}
		if _, stderr, code := peertest.Run(t, nil, rows, "write-delta", "--progress", "off", ck); code != 0 {
			t.Fatalf("write-delta: exit %d: %s", code, stderr)
		}
	}
	for v := 0; v < 10; v++ {
		os.Remove(filepath.Join(ck, "_delta_log", fmt.Sprintf("%020d.json", v)))
	}
	p.ask("spark", ck, "ckpt")
	readDeltaTo(t, out("ckpt"), ck)
	p.compare(expect("ckpt"), out("ckpt"))
	before := countLines(t, expect("dv_ckpt_before"))
	if n := countLines(t, expect("ckpt")); n != before+50*runs {
		t.Errorf("Spark reads %d rows after streamkit's checkpoint, want %d + %d appended", n, before, 50*runs)
	}
}

// runTool runs streamkit ARGS, which must succeed.
func runTool(t *testing.T, args ...string) {
	t.Helper()
	if _, stderr, code := peertest.Run(t, nil, nil, append(args, "--progress", "off")...); code != 0 {
		t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
}

// dvFiles lists the deletion vector files of the table at dir.
func dvFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "deletion_vector_") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// copyDir copies the directory tree src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp %s: %v %s", src, err, out)
	}
}

// followTo runs read-delta ARGS into out until it has emitted want rows (records_out of its
// --progress json lines), then interrupts it.
func followTo(t *testing.T, out string, want int, args ...string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(peertest.Binary(t), append([]string{"read-delta", "--progress", "json"}, args...)...)
	cmd.Stdout = f
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	go func() {
		var log strings.Builder
		stopped := false
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			var p struct {
				Rows int `json:"records_out"`
			}
			if json.Unmarshal(sc.Bytes(), &p) == nil && p.Rows >= want && !stopped {
				cmd.Process.Signal(syscall.SIGINT)
				stopped = true
			}
		}
		done <- log.String()
	}()
	select {
	case log := <-done:
		cmd.Wait()
		if !strings.Contains(log, fmt.Sprintf(`"records_out":%d,`, want)) {
			t.Fatalf("read-delta %s: never reached %d rows:\n%s", strings.Join(args, " "), want, log)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("read-delta %s: no %d rows in 2 minutes:\n%s", strings.Join(args, " "), want, <-done)
	}
}
