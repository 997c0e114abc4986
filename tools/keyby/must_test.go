package keyby

// The "Must be true" list of issue #6 for keyby --shards with dedup, through the binary.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/state"
)

// rowsOf renders every data row of an IPC stream as text; sorted, they are the multiset.
func rowsOf(t *testing.T, stream []byte) []string {
	t.Helper()
	r, err := codec.NewReader(bytes.NewReader(stream), memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var rows []string
	for {
		m, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Batch != nil {
			rows = append(rows, rowTexts(m.Batch)...)
			m.Batch.Release()
		}
	}
	slices.Sort(rows)
	return rows
}

func rowTexts(rec arrow.RecordBatch) []string {
	var out []string
	for r := 0; r < int(rec.NumRows()); r++ {
		var b strings.Builder
		for c, col := range rec.Columns() {
			v := "null"
			if col.IsValid(r) {
				v = fmt.Sprintf("%q", col.ValueStr(r))
			}
			fmt.Fprintf(&b, "%s=%s ", rec.Schema().Field(c).Name, v)
		}
		out = append(out, b.String())
	}
	return out
}

// TestShardedDedupSameRows: keyby --shards 2 -- dedup outputs the same multiset of rows as one
// dedup, on generated rows with duplicate keys, null ids and empty strings in a two-column key;
// each shard writes its dropped rows to its own --dropped-output file, and kept plus dropped
// rows are the input.
func TestShardedDedupSameRows(t *testing.T) {
	in, stderr, code := runBin(t, nil, nil, "generate", "--schema", "id bigint, s string, v bigint",
		"--gen", "id=uniform(0, 3000) nulls=0.02", "--gen", "s=choice(x, '', y) nulls=0.05", "--gen", "v=sequence",
		"--duplicates", "0.2", "--rows", "40000", "--batch-rows", "4096")
	if code != 0 {
		t.Fatalf("generate: exit %d: %s", code, stderr)
	}
	one, stderr, code := runBin(t, nil, in, "dedup", "--key", "id,s")
	if code != 0 {
		t.Fatalf("dedup: exit %d: %s", code, stderr)
	}
	dropped := filepath.Join(t.TempDir(), "dropped.arrow")
	sharded, stderr, code := runBin(t, nil, in, "keyby", "id,s", "--shards", "2", "--", "dedup", "--dropped-output", dropped)
	if code != 0 {
		t.Fatalf("keyby --shards 2 -- dedup: exit %d: %s", code, stderr)
	}
	all := rowsOf(t, sharded)
	for i := 0; i < 2; i++ {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(dropped), fmt.Sprintf("dropped.shard-%d.arrow", i)))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, rowsOf(t, b)...)
	}
	slices.Sort(all)
	if input := rowsOf(t, in); !slices.Equal(all, input) {
		t.Fatalf("kept and dropped rows: %d, input: %d rows; they differ", len(all), len(input))
	}
	want, got := rowsOf(t, one), rowsOf(t, sharded)
	if len(want) < 5000 || len(want) > 20000 {
		t.Fatalf("%d distinct keys: the input does not exercise dedup", len(want))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sharded dedup: %d rows, one dedup: %d rows; they differ", len(got), len(want))
	}
}

// exactlyOnceSink is a committing sink that checks exactly-once (docs/protocol.md §10): it
// makes an epoch's rows durable (here: appends them to rows) on its barrier, skips replayed
// epochs it already made durable, then writes the commit markers downstream-first.
type exactlyOnceSink struct {
	t       *testing.T
	durable uint64   // last epoch made durable
	rows    []string // rows of the durable epochs
	epochs  []uint64 // durable epochs, in order
	skipped int      // replayed epochs received again (and skipped)
	// crashAt simulates a sink that dies after making epoch crashAt durable but before writing
	// its markers: from that epoch on, it writes none (0: never).
	crashAt uint64
	commits chan uint64
}

// consume reads one run of the pipeline's output until its end or a broken stream.
func (s *exactlyOnceSink) consume(r io.Reader) error {
	rd, err := codec.NewReader(r, memory.NewGoAllocator())
	if err != nil {
		return err
	}
	defer rd.Release()
	dirs := codec.Info(rd.Schema()).Checkpoints
	var pending []string
	for {
		m, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err // a truncated stream: the pending epoch is not committed
		}
		if m.Batch != nil {
			pending = append(pending, rowTexts(m.Batch)...)
			m.Batch.Release()
			continue
		}
		if m.Control.Kind != codec.Barrier {
			continue
		}
		n := m.Control.Epoch
		if n > s.durable {
			if n != s.durable+1 {
				s.t.Errorf("epoch %d follows durable epoch %d", n, s.durable)
			}
			s.rows = append(s.rows, pending...)
			s.durable = n
			s.epochs = append(s.epochs, n)
		} else {
			s.skipped++
		}
		pending = nil
		if s.crashAt > 0 && n >= s.crashAt {
			select {
			case s.commits <- n:
			default:
			}
			continue
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := state.WriteCommit(dirs[i], n, "test-sink"); err != nil {
				return err
			}
		}
		select {
		case s.commits <- n:
		default:
		}
	}
}

// pipeline starts `generate … | keyby id --shards 2 -- dedup` with STREAMKIT_CHECKPOINT=root
// and returns the keyby command (stdout piped) and the generate command.
func pipeline(t *testing.T, root string, genArgs []string) (kb, gen *exec.Cmd, kbOut io.ReadCloser, kbErr *bytes.Buffer) {
	t.Helper()
	bin := peertest.Binary(t)
	env := append(os.Environ(), "STREAMKIT_CHECKPOINT="+root)
	gen = exec.Command(bin, genArgs...)
	kb = exec.Command(bin, "keyby", "id", "--shards", "2", "--", "dedup")
	gen.Env, kb.Env = env, env
	var err error
	if kb.Stdin, err = gen.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if kbOut, err = kb.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	kbErr = &bytes.Buffer{}
	kb.Stderr, gen.Stderr = kbErr, io.Discard
	if err := gen.Start(); err != nil {
		t.Fatal(err)
	}
	if err := kb.Start(); err != nil {
		t.Fatal(err)
	}
	return kb, gen, kbOut, kbErr
}

// childPIDs lists the processes whose parent is pid.
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so cut after the last ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// TestKillShardFailsThenRestartExactlyOnce: kill -9 of one dedup child fails `keyby --shards 2
// -- dedup` with that child's exit code (137); restarting the pipeline (a replayable,
// checkpointed source, and a sink that commits and checks exactly-once) recovers: every epoch
// is made durable once, in order, and the committed rows are exactly those of one dedup over
// the whole input.
func TestKillShardFailsThenRestartExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live pipeline for a few seconds")
	}
	gen := []string{"generate", "--schema", "id bigint, v bigint", "--gen", "id=uniform(0, 20000)", "--gen", "v=sequence",
		"--rows", "60000", "--batch-rows", "500", "--epoch-interval", "150ms"}
	live := append(slices.Clone(gen), "--rate", "20000/s")
	in, stderr, code := runBin(t, nil, nil, gen...)
	if code != 0 {
		t.Fatalf("generate: exit %d: %s", code, stderr)
	}
	wantOut, stderr, code := runBin(t, nil, in, "dedup", "--key", "id")
	if code != 0 {
		t.Fatalf("dedup: exit %d: %s", code, stderr)
	}
	want := rowsOf(t, wantOut)

	root := t.TempDir()
	sink := &exactlyOnceSink{t: t, commits: make(chan uint64, 1), crashAt: 4}
	// Run 1: kill -9 one shard once the sink has committed epochs 1-3 and made epoch 4 durable
	// without committing it (so the restart replays an epoch the sink already has).
	kb, genCmd, out, kbErr := pipeline(t, root, live)
	done := make(chan error, 1)
	go func() { done <- sink.consume(out) }()
	deadline := time.After(30 * time.Second)
	for sink.durable < 4 {
		select {
		case <-sink.commits:
		case err := <-done:
			t.Fatalf("pipeline ended before the kill: %v; stderr: %s", err, kbErr)
		case <-deadline:
			t.Fatal("no commits")
		}
	}
	kids := childPIDs(t, kb.Process.Pid)
	if len(kids) != 2 {
		t.Fatalf("keyby has children %v, want 2", kids)
	}
	if err := syscall.Kill(kids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, codec.ErrTruncated) && err != nil {
		t.Logf("sink: %v", err)
	}
	err := kb.Wait()
	genCmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 137 || !strings.Contains(kbErr.String(), "shard") {
		t.Fatalf("keyby after kill -9 of a shard: %v (want exit 137), stderr: %s", err, kbErr)
	}
	killedAt := sink.durable
	if killedAt >= 60000/500 {
		t.Fatalf("the whole input was committed before the kill (epoch %d)", killedAt)
	}

	// Run 2: the same pipeline resumes after the committed epochs.
	sink.crashAt = 0
	kb, genCmd, out, kbErr = pipeline(t, root, live)
	if err := sink.consume(out); err != nil {
		t.Fatalf("sink, run 2: %v; stderr: %s", err, kbErr)
	}
	if err := kb.Wait(); err != nil {
		t.Fatalf("keyby, run 2: %v: %s", err, kbErr)
	}
	if err := genCmd.Wait(); err != nil {
		t.Fatalf("generate, run 2: %v", err)
	}
	if sink.skipped == 0 {
		t.Error("the restart replayed no epoch the sink had made durable")
	}
	slices.Sort(sink.rows)
	if !slices.Equal(sink.rows, want) {
		t.Fatalf("committed %d rows over epochs %v, want the %d rows of one dedup", len(sink.rows), sink.epochs, len(want))
	}
	t.Logf("killed a shard after epoch %d; %d epochs committed exactly once (%d replayed epochs skipped), %d rows",
		killedAt, sink.durable, sink.skipped, len(sink.rows))
}

// sinkShards runs `generate … | keyby k --shards 2 -- write-delta T` with
// STREAMKIT_CHECKPOINT under root: rows rows in epochs of 2000, and the rows as generated.
type sinkShards struct {
	t       *testing.T
	bin     string
	root    string
	table   string
	genArgs []string
	want    []string
}

func newSinkShards(t *testing.T, rows int) *sinkShards {
	if testing.Short() {
		t.Skip("runs a live pipeline")
	}
	root := t.TempDir()
	p := &sinkShards{t: t, bin: peertest.Binary(t), root: root, table: filepath.Join(root, "T"),
		genArgs: []string{"generate", "--schema", "id bigint, k int", "--gen", "id=sequence", "--gen", "k=uniform(0, 3)",
			"--rows", strconv.Itoa(rows), "--batch-rows", "1000", "--max-records-per-epoch", "2000", "--epoch-interval", "5ms", "--progress", "off"}}
	want, stderr, code := runBin(t, nil, nil, p.genArgs...)
	if code != 0 {
		t.Fatalf("generate: exit %d: %s", code, stderr)
	}
	p.want = rowsOf(t, want)
	return p
}

// start starts the pipeline (generate with extra arguments), in a process group of its own
// whose id is generate's pid; keyby's stdin is an OS pipe closed here, so that generate gets
// EPIPE when keyby dies.
func (p *sinkShards) start(extra ...string) (gen, kb *exec.Cmd, kbErr *bytes.Buffer) {
	t := p.t
	env := append(os.Environ(), "STREAMKIT_CHECKPOINT="+filepath.Join(p.root, "ck"))
	gen = exec.Command(p.bin, append(slices.Clone(p.genArgs), extra...)...)
	kb = exec.Command(p.bin, "keyby", "k", "--shards", "2", "--", "write-delta", p.table, "--progress", "off")
	gen.Env, kb.Env = env, env
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	gen.Stdout, kb.Stdin = pw, pr
	kbErr = &bytes.Buffer{}
	kb.Stderr, gen.Stderr = kbErr, io.Discard
	gen.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := gen.Start(); err != nil {
		t.Fatal(err)
	}
	kb.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: gen.Process.Pid}
	if err := kb.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	pw.Close()
	return gen, kb, kbErr
}

// shardCommitted is the newest epoch committed in shard i's checkpoint.
func (p *sinkShards) shardCommitted(i int) uint64 {
	n, err := state.Committed(filepath.Join(p.root, "ck", "write-delta.shard-"+strconv.Itoa(i)))
	if err != nil {
		p.t.Fatal(err)
	}
	return n
}

// awaitShard0 waits (at most 20 s) until shard 0 committed epoch n.
func (p *sinkShards) awaitShard0(n uint64) {
	for deadline := time.Now().Add(20 * time.Second); p.shardCommitted(0) < n && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

// checkTable fails unless the table holds every generated row exactly once.
func (p *sinkShards) checkTable() {
	got, stderr, code := runBin(p.t, nil, nil, "read-delta", p.table, "--progress", "off")
	if code != 0 {
		p.t.Fatalf("read-delta: exit %d: %s", code, stderr)
	}
	if g := rowsOf(p.t, got); !slices.Equal(g, p.want) {
		p.t.Fatalf("the table holds %d rows, want the %d generated rows exactly once", len(g), len(p.want))
	}
}

// TestKillSinkShardRestartExactlyOnce: in `generate | keyby k --shards 2 -- write-delta T`
// the shards commit at their own pace. kill -9 of one shard fails the pipeline; the upstream
// commit markers (written by keyby for the epochs both shards committed) must not be ahead of
// the slower shard, so that the restart replays every epoch it lacks: the table finally holds
// each generated row exactly once. (Each shard wrote the markers itself before, and the faster
// one moved generate's past epochs the other had not committed: rows were lost.)
func TestKillSinkShardRestartExactlyOnce(t *testing.T) {
	p := newSinkShards(t, 300000)
	gen, kb, kbErr := p.start()
	p.awaitShard0(5)
	if kids := childPIDs(t, kb.Process.Pid); len(kids) > 0 {
		syscall.Kill(kids[len(kids)-1], syscall.SIGKILL)
	}
	if err := kb.Wait(); err == nil {
		t.Fatalf("the pipeline ended although a shard was killed: %s", kbErr)
	}
	gen.Wait()
	genCommitted, err := state.Committed(filepath.Join(p.root, "ck", "generate"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if n := p.shardCommitted(i); genCommitted > n {
			t.Fatalf("generate is marked committed at epoch %d, past shard %d's epoch %d", genCommitted, i, n)
		}
	}
	gen, kb, kbErr = p.start()
	if err := kb.Wait(); err != nil {
		t.Fatalf("restart: %v: %s", err, kbErr)
	}
	gen.Wait()
	p.checkTable()
	t.Logf("killed a shard with generate committed at epoch %d; after the restart the table holds the rows once", genCommitted)
}

// TestInterruptSinkShardsTogether: one Ctrl-C (SIGINT to the whole process group) of
// `generate | keyby k --shards 2 -- write-delta T` stops it cleanly: keyby exits 130, the
// shards finish the same epoch (keyby ends their streams after one barrier; they ignore the
// signal themselves), no shard fails, and the restart completes the table exactly once.
func TestInterruptSinkShardsTogether(t *testing.T) {
	p := newSinkShards(t, 200000)
	// Live (--rate) in both runs: generate refuses a restart with another --rate.
	gen, kb, kbErr := p.start("--rate", "200000/s")
	p.awaitShard0(5)
	syscall.Kill(-gen.Process.Pid, syscall.SIGINT) // the whole group, as a terminal does
	kb.Wait()
	gen.Wait()
	if code, log := kb.ProcessState.ExitCode(), kbErr.String(); code != 130 || strings.Contains(log, "failed") || strings.Contains(log, "aborting") {
		t.Fatalf("after one SIGINT keyby exits %d (want 130, no shard failing):\n%s", code, log)
	}
	if a, b := p.shardCommitted(0), p.shardCommitted(1); a != b || a == 0 {
		t.Fatalf("the shards stopped at epochs %d and %d, want the same one", a, b)
	}
	stopped := p.shardCommitted(0)
	gen, kb, kbErr = p.start("--rate", "200000/s")
	if err := kb.Wait(); err != nil {
		t.Fatalf("restart: %v: %s", err, kbErr)
	}
	gen.Wait()
	p.checkTable()
	t.Logf("one SIGINT: both shards stopped after epoch %d; the restart completed the table", stopped)
}

// TestShardedTTLSameRows: keyby --shards N -- dedup --ttl --event-time keeps exactly the rows of
// one dedup. Each shard sees only its rows, so its own watermark would lag the stream's and it
// would forget keys later than one dedup (a break test measured 28 of 296,695 rows missing
// with 2 shards); keyby sends every shard the stream's latest event time after each batch
// (codec.Progress). 30% duplicates within 90k rows, 1% without an event time (they expire
// from the watermark before their batch), 20k-row epochs (expiry at barriers).
func TestShardedTTLSameRows(t *testing.T) {
	in := ttlInput(t)
	for _, ttl := range [][]string{
		{"dedup", "--key", "id", "--ttl", "10m", "--event-time", "ts"},
		{"dedup", "--key", "id", "--ttl", "10m", "--event-time=ts", "--watermark-delay", "30s"},
	} {
		one, stderr, code := runBin(t, []string{"STREAMKIT_CHECKPOINT=" + t.TempDir()}, in, ttl...)
		if code != 0 {
			t.Fatalf("dedup: exit %d: %s", code, stderr)
		}
		want := rowsOf(t, one)
		// Duplicates carry their original's event time, so with the TTL most of them are late
		// (older than the watermark) rather than duplicates: the TTL and the watermark come
		// into play when fewer rows are kept than without a TTL and some are dropped as late.
		all, stderr, code := runBin(t, nil, in, "dedup", "--key", "id")
		if code != 0 {
			t.Fatalf("dedup without TTL: exit %d: %s", code, stderr)
		}
		if n, noTTL := len(rowsOf(t, in)), len(rowsOf(t, all)); len(want) >= noTTL || len(want) <= n/2 {
			t.Fatalf("%v: %d of %d rows kept, %d without a TTL: the TTL does not come into play", ttl, len(want), n, noTTL)
		}
		for _, n := range []string{"2", "3"} {
			out, stderr, code := runBin(t, []string{"STREAMKIT_CHECKPOINT=" + t.TempDir()}, in, append([]string{"keyby", "id", "--shards", n, "--"}, ttl...)...)
			if code != 0 {
				t.Fatalf("keyby --shards %s: exit %d: %s", n, code, stderr)
			}
			if got := rowsOf(t, out); !slices.Equal(got, want) {
				t.Errorf("keyby id --shards %s -- %v: %d rows, one dedup %d", n, ttl, len(got), len(want))
			}
		}
		// Nested shards: the outer keyby passes the stream's progress through the inner one.
		out, stderr, code := runBin(t, []string{"STREAMKIT_CHECKPOINT=" + t.TempDir()}, in, append([]string{"keyby", "id", "--shards", "2", "--", "keyby", "id", "--shards", "2", "--"}, ttl...)...)
		if code != 0 {
			t.Fatalf("nested keyby --shards: exit %d: %s", code, stderr)
		}
		if got := rowsOf(t, out); !slices.Equal(got, want) {
			t.Errorf("nested keyby id --shards 2 -- keyby id --shards 2 -- %v: %d rows, one dedup %d", ttl, len(got), len(want))
		}
		// The child named by the streamkit executable's path is the tool too.
		out, stderr, code = runBin(t, []string{"STREAMKIT_CHECKPOINT=" + t.TempDir()}, in, append([]string{"keyby", "id", "--shards", "2", "--", peertest.Binary(t)}, ttl...)...)
		if code != 0 {
			t.Fatalf("keyby --shards 2 -- streamkit dedup: exit %d: %s", code, stderr)
		}
		if got := rowsOf(t, out); !slices.Equal(got, want) {
			t.Errorf("keyby id --shards 2 -- %s %v: %d rows, one dedup %d", peertest.Binary(t), ttl, len(got), len(want))
		}
	}
}

// ttlInput is TestShardedTTLSameRows' input: 200,000 rows (id, v, ts), 30% duplicates within
// 90,000 rows, 1% without an event time, batches of 5,000, epochs of 20,000.
func ttlInput(t *testing.T) []byte {
	t.Helper()
	gen := []string{"--progress=off", "generate", "--schema", "id bigint, v bigint, ts timestamp",
		"--gen", "id=uniform(0, 100000000)", "--gen", "v=sequence", "--gen", "ts=timestamp(2024-05-01T00:00:00Z, 139/s, 60s) nulls=0.01",
		"--rows", "200000", "--duplicates", "0.3", "--duplicates-within", "90000", "--batch-rows", "5000",
		"--max-records-per-epoch", "20000", "--epoch-interval", "1h"}
	// A checkpoint makes generate cut epochs (barriers), where dedup expires keys.
	in, stderr, code := runBin(t, []string{"STREAMKIT_CHECKPOINT=" + t.TempDir()}, nil, gen...)
	if code != 0 {
		t.Fatalf("generate: exit %d: %s", code, stderr)
	}
	return in
}

// TestShardKeyMustContainRoute: keyby routes by one key, dedup --key by another that does not
// contain it: equal dedup keys would reach different shards and each keep a row (a break test
// measured 81,589 rows against one dedup's 48,284, exit 0). The shard refuses it, naming both
// keys; a key that contains the routing key, or a struct above it, is accepted.
func TestShardKeyMustContainRoute(t *testing.T) {
	in := generated(t, "id bigint, s string, v bigint", "id=uniform(0, 3000)", "s=choice(x, y, z)")
	var stderr string
	var code int
	_, stderr, code = runBin(t, nil, in, "keyby", "id", "--shards", "2", "--", "dedup", "--key", "s")
	if code != 2 || !strings.Contains(stderr, "dedup: --key s does not contain id, by which keyby routes") {
		t.Fatalf("dedup --key s in shards routed by id: exit %d: %s", code, stderr)
	}
	_, stderr, code = runBin(t, nil, in, "keyby", "id", "--shards", "2", "--", "window", "tumbling", "--size", "1h", "--processing-time", "--key", "s")
	if code != 2 || !strings.Contains(stderr, "window: --key s does not contain id") {
		t.Fatalf("window --key s in shards routed by id: exit %d: %s", code, stderr)
	}
	one, stderr, code := runBin(t, nil, in, "dedup", "--key", "s,id")
	if code != 0 {
		t.Fatalf("dedup: exit %d: %s", code, stderr)
	}
	sharded, stderr, code := runBin(t, nil, in, "keyby", "id", "--shards", "2", "--", "dedup", "--key", "s,id")
	if code != 0 {
		t.Fatalf("dedup --key s,id in shards routed by id: exit %d: %s", code, stderr)
	}
	if a, b := rowsOf(t, one), rowsOf(t, sharded); !slices.Equal(a, b) {
		t.Errorf("dedup --key s,id: %d rows sharded, %d in one dedup", len(b), len(a))
	}
}

// Nested shards: keyby a --shards 2 -- keyby b --shards 2 -- dedup --key b would leave equal
// b in different outer shards (a break test counted 8 rows against one dedup's 4, exit 0): the
// inner keyby's key must contain the outer routing key, and is refused otherwise; routing
// by a then by a,b keeps one dedup's rows.
func TestNestedShardsKeyMustContainEveryRoute(t *testing.T) {
	in := generated(t, "a bigint, b string, v bigint", "a=uniform(0, 3000)", "b=choice(w, x, y, z)")
	var stderr string
	var code int
	_, stderr, code = runBin(t, nil, in, "keyby", "a", "--shards", "2", "--", "keyby", "b", "--shards", "2", "--", "dedup", "--key", "b")
	if code != 2 || !strings.Contains(stderr, "keyby: KEY b does not contain a") {
		t.Fatalf("inner keyby b in shards routed by a: exit %d: %s", code, stderr)
	}
	one, stderr, code := runBin(t, nil, in, "dedup", "--key", "a,b")
	if code != 0 {
		t.Fatalf("dedup: exit %d: %s", code, stderr)
	}
	nested, stderr, code := runBin(t, nil, in, "keyby", "a", "--shards", "2", "--", "keyby", "a,b", "--shards", "2", "--", "dedup")
	if code != 0 {
		t.Fatalf("nested keyby a -- keyby a,b -- dedup: exit %d: %s", code, stderr)
	}
	if x, y := rowsOf(t, one), rowsOf(t, nested); !slices.Equal(x, y) {
		t.Errorf("nested shards: %d rows, one dedup --key a,b: %d", len(y), len(x))
	}
}

// dedup --ttl --event-time behind a foreign child command (sh -c) gets no progress from keyby:
// it says so on stderr, rather than silently keeping other rows than one dedup.
func TestForeignTTLShardWarns(t *testing.T) {
	_, stderr, code := runBin(t, nil, input(t, 2, 100), "keyby", "id", "--shards", "2", "--",
		"sh", "-c", `exec "$0" dedup --key id --ttl 10m --event-time epoch --time-unit s`, peertest.Binary(t))
	if code != 0 || !strings.Contains(stderr, "keyby cannot send it the stream's event-time progress") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, stderr, code = runBin(t, nil, input(t, 2, 100), "keyby", "id", "--shards", "2", "--", "dedup", "--key", "id", "--ttl", "10m", "--event-time", "epoch", "--time-unit", "s")
	if code != 0 || strings.Contains(stderr, "progress") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// generated is 20,000 rows of schema (id-like first column, a string, v=sequence) made by
// generate with the two --gen specs, in batches of 4096.
func generated(t *testing.T, schema, gen1, gen2 string) []byte {
	t.Helper()
	in, stderr, code := runBin(t, nil, nil, "generate", "--schema", schema,
		"--gen", gen1, "--gen", gen2, "--gen", "v=sequence", "--rows", "20000", "--batch-rows", "4096")
	if code != 0 {
		t.Fatalf("generate: exit %d: %s", code, stderr)
	}
	return in
}
