package dedup

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/state"
)

// s3Rows is the input of the bucket checkpoint tests: generate's ids 0…s3Rows-1 with 30%
// exact duplicates, in epochs of at most 500 rows.
const s3Rows = 6000

// s3Pipeline is `generate | dedup --key id | print --format json` with every stage
// checkpointed under root (a local directory or an s3:// prefix), at rate rows per second
// ("" = as fast as possible). Credentials reach the stages through the environment only.
func s3Pipeline(bin, root, rate string) *exec.Cmd {
	gen := fmt.Sprintf(`"$BIN" generate --schema 'id bigint, v string' --gen id=sequence --gen v=names --seed 7 --duplicates 0.3 --rows %d --max-records-per-epoch 500 --checkpoint "$ROOT/generate"`, s3Rows)
	if rate != "" {
		gen += " --rate " + rate
	}
	line := gen + ` --progress off | "$BIN" dedup --key id --checkpoint "$ROOT/dedup" --progress off | "$BIN" print --format json --checkpoint "$ROOT/print" --progress off`
	cmd := exec.Command("bash", "-o", "pipefail", "-c", line)
	cmd.Env = append(os.Environ(), "BIN="+bin, "ROOT="+root, "STREAMKIT_LEASE_TTL=2s")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// runS3Pipeline runs the pipeline to its end and returns the ids it printed.
func runS3Pipeline(t *testing.T, env []string, bin, root string) []int64 {
	t.Helper()
	cmd := s3Pipeline(bin, root, "")
	cmd.Env = append(cmd.Env, env...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pipeline on %s: %v\n%s", root, err, stderr.String())
	}
	return printedIDs(t, out.Bytes())
}

// printedIDs are the ids of print --format json's lines.
func printedIDs(t *testing.T, b []byte) []int64 {
	t.Helper()
	var ids []int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var row struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("print line %q: %v", sc.Text(), err)
		}
		ids = append(ids, row.ID)
	}
	return ids
}

// stateDump is `state-dump DIR --stage dedup --format json` with the checkpoint's location
// replaced by ROOT, so dumps of a local and a bucket checkpoint compare.
func stateDump(t *testing.T, env []string, root string, args ...string) string {
	t.Helper()
	out, stderr, code := peertest.Run(t, env, nil, append([]string{"state-dump", root}, args...)...)
	if code != 0 {
		t.Fatalf("state-dump %s %v: exit %d: %s", root, args, code, stderr)
	}
	return strings.ReplaceAll(string(out), root, "ROOT")
}

// distinct is the set of ids and whether one repeats.
func distinct(ids []int64) (map[int64]bool, bool) {
	set := map[int64]bool{}
	dup := false
	for _, id := range ids {
		dup = dup || set[id]
		set[id] = true
	}
	return set, dup
}

// TestS3CheckpointResume runs the checkpointed pipeline on a local directory and on an s3://
// prefix of the real test server: both print every id once, a second run on the bucket
// resumes after the committed end (nothing is printed again), and state-dump reads the bucket
// checkpoint in every mode as it reads the local one.
func TestS3CheckpointResume(t *testing.T) {
	env := s3test.Env(t)
	bin := peertest.Binary(t)
	local := t.TempDir()
	bucket := "s3://" + s3test.Bucket(t) + "/ckpt"
	want := runS3Pipeline(t, env, bin, local)
	wantSet, dup := distinct(want)
	if dup || len(want) == 0 || len(want) >= s3Rows {
		t.Fatalf("local run printed %d ids (duplicates: %v) of %d rows", len(want), dup, s3Rows)
	}
	got := runS3Pipeline(t, env, bin, bucket)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("bucket run printed %d ids, the local run %d", len(got), len(want))
	}
	if again := runS3Pipeline(t, env, bin, bucket); len(again) != 0 {
		t.Fatalf("the second run on the bucket printed %d rows again; it should resume after the committed end", len(again))
	}
	// The local checkpoint gets the same second run, so both hold the same epochs.
	if again := runS3Pipeline(t, env, bin, local); len(again) != 0 {
		t.Fatalf("the second run on the local checkpoint printed %d rows again", len(again))
	}
	c, err := state.Committed(bucket + "/dedup")
	if err != nil || c == 0 {
		t.Fatalf("bucket dedup committed %d, %v", c, err)
	}
	for _, args := range [][]string{
		{"--stage", "dedup", "--format", "json"},
		{"--stage", "dedup", "--format", "csv", "--epoch", fmt.Sprint(c - 1)},
		{"--offsets", "--format", "json"},
		{"--stage", "generate", "--offsets", "--format", "json"},
	} {
		l, b := stateDump(t, env, local, args...), stateDump(t, env, bucket, args...)
		if l != b {
			t.Fatalf("state-dump %v differs:\nlocal:  %s\nbucket: %s", args, l, b)
		}
		if args[len(args)-1] == "json" && args[1] == "dedup" && strings.Count(l, "\n") != len(wantSet) {
			t.Fatalf("state-dump %v: %d lines, want %d keys", args, strings.Count(l, "\n"), len(wantSet))
		}
	}
	// The summaries list the same epochs (times, sizes and paths differ).
	epochs := func(root string) string {
		var s struct {
			Committed uint64 `json:"committed_epoch"`
			Epochs    []struct {
				Epoch     uint64 `json:"epoch"`
				Committed bool   `json:"committed"`
				Entries   int64  `json:"entries"`
			} `json:"epochs"`
		}
		if err := json.Unmarshal([]byte(stateDump(t, env, root+"/dedup", "--format", "json")), &s); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%+v", s)
	}
	if l, b := epochs(local), epochs(bucket); l != b || !strings.Contains(l, "Committed:true") {
		t.Fatalf("summaries differ:\nlocal:  %s\nbucket: %s", l, b)
	}
}

// TestS3CheckpointTwoOwners: while a pipeline runs on an s3:// checkpoint, a second dedup on
// the same checkpoint is refused (exit 1, naming the holder); after the first pipeline is
// killed with SIGKILL and its lease (STREAMKIT_LEASE_TTL=2s) has expired, a restart takes
// over, resumes from the last committed epoch, and together the runs print exactly the ids of
// an uninterrupted run.
func TestS3CheckpointTwoOwners(t *testing.T) {
	env := s3test.Env(t)
	bin := peertest.Binary(t)
	want := runS3Pipeline(t, env, bin, t.TempDir())
	wantSet, _ := distinct(want)
	bucket := "s3://" + s3test.Bucket(t) + "/ckpt"
	dedupDir := bucket + "/dedup"

	first := s3Pipeline(bin, bucket, "1500/s") // about 4 s
	first.Env = append(first.Env, env...)
	var out1, err1 bytes.Buffer
	first.Stdout, first.Stderr = &out1, &err1
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- first.Wait() }()
	killed := false
	defer func() {
		if !killed {
			syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	var before uint64
	for before < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the first run committed nothing: %s", err1.String())
		}
		time.Sleep(100 * time.Millisecond)
		before, _ = state.Committed(dedupDir)
	}

	// A second owner while the first runs: refused at once, exit 1, the holder named.
	gen := exec.Command(bin, "generate", "--schema", "id bigint", "--rows", "1", "--progress", "off")
	second := exec.Command(bin, "dedup", "--key", "id", "--checkpoint", dedupDir, "--progress", "off")
	second.Env = append(append(os.Environ(), env...), "STREAMKIT_LEASE_TTL=2s")
	gen.Env = second.Env
	pr, pw, _ := os.Pipe()
	gen.Stdout, second.Stdin = pw, pr
	var err2 bytes.Buffer
	second.Stderr = &err2
	gen.Start()
	pw.Close()
	err := second.Run()
	pr.Close()
	gen.Wait()
	holder := regexp.MustCompile(`checkpoint s3://\S+/ckpt/dedup is locked by process (\d+) on \S+ \(its lease expires \d+s after that process stops\)`)
	if code := second.ProcessState.ExitCode(); err == nil || code != 1 || !holder.MatchString(err2.String()) {
		t.Fatalf("second owner: exit %d, %v: %s", code, err, err2.String())
	}
	if strings.Contains(err2.String(), s3test.Server(t).SecretKey) {
		t.Fatal("the refusal shows the secret key")
	}

	// kill -9 of the whole first pipeline mid-run.
	syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
	<-done
	killed = true
	// dedup restores the epoch its own directory and generate's upstream both committed (the
	// sink writes the markers downstream first, so a kill can leave generate's one behind).
	committed, err := state.Committed(dedupDir)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := state.Committed(bucket + "/generate"); err != nil {
		t.Fatal(err)
	} else if g < committed {
		committed = g
	}
	if len(printedIDs(t, out1.Bytes())) >= len(want) {
		t.Fatalf("the first run finished before it was killed (committed epoch %d)", committed)
	}
	// Right after the kill its lease still holds.
	_, stderr, code := peertest.Run(t, append(env, "STREAMKIT_LEASE_TTL=2s"), nil, "dedup", "--key", "id", "--checkpoint", dedupDir, "--progress", "off")
	if code != 1 || !strings.Contains(stderr, "is locked by process") {
		t.Fatalf("restart within the TTL: exit %d: %s", code, stderr)
	}
	time.Sleep(2500 * time.Millisecond)

	rest := s3Pipeline(bin, bucket, "1500/s") // the rate is an option the checkpoint records
	rest.Env = append(rest.Env, env...)
	var out2, logs bytes.Buffer
	rest.Stdout, rest.Stderr = &out2, &logs
	if err := rest.Run(); err != nil {
		t.Fatalf("restart after the TTL: %v\n%s", err, logs.String())
	}
	resumed := regexp.MustCompile(`restoring from checkpoint.*dir=s3://\S+/ckpt/dedup.*committed_epoch=(\d+)`).FindStringSubmatch(logs.String())
	if resumed == nil || resumed[1] != fmt.Sprint(committed) {
		t.Fatalf("the restart did not resume dedup from epoch %d:\n%s", committed, logs.String())
	}
	// print is at-least-once: an epoch printed but not committed before the kill is printed
	// again; dedup keeps every id once across the runs, and none is lost.
	all := append(printedIDs(t, out1.Bytes()), printedIDs(t, out2.Bytes())...)
	gotSet, _ := distinct(all)
	if len(gotSet) != len(wantSet) {
		t.Fatalf("the runs printed %d distinct ids, an uninterrupted run %d", len(gotSet), len(wantSet))
	}
	for id := range wantSet {
		if !gotSet[id] {
			t.Fatalf("id %d lost", id)
		}
	}
	again, _ := distinct(printedIDs(t, out2.Bytes()))
	for id := range again {
		if gotSet[id] && !wantSet[id] {
			t.Fatalf("id %d printed but not in the input", id)
		}
	}
	// The restarted dedup's state equals an uninterrupted run's.
	local := t.TempDir()
	runS3Pipeline(t, env, bin, local)
	if l, b := stateDump(t, env, local, "--stage", "dedup", "--format", "json"), stateDump(t, env, bucket, "--stage", "dedup", "--format", "json"); l != b {
		t.Fatalf("state after the restart differs from an uninterrupted run's:\nlocal:  %.300s\nbucket: %.300s", l, b)
	}
}
