package state

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// mutate applies epoch e's deterministic changes to a store.
func mutate(put func(string, counter), del func(string), e uint64) {
	for j := uint64(0); j < 50; j++ {
		put(strconv.FormatUint((e*31+j)%200, 10), counter{N: int64(e*1000 + j), Label: "e" + strconv.FormatUint(e, 10)})
	}
	del(strconv.FormatUint((e*7)%200, 10))
}

// expected is the state after epochs 1..c.
func expected(c uint64) map[string]counter {
	m := map[string]counter{}
	for e := uint64(1); e <= c; e++ {
		mutate(func(k string, v counter) { m[k] = v }, func(k string) { delete(m, k) }, e)
	}
	return m
}

// crashChild is the process that gets killed: it resumes from the committed epoch and writes
// epochs (state, offsets WAL, commit marker, GC) as fast as it can.
func crashChild(dir string) {
	mem := memory.NewGoAllocator()
	d, err := Open(dir, "crash", "crash", map[string]string{"k": "v"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	c, err := d.Committed()
	if err == nil {
		err = DiscardAfter(dir, c)
	}
	s := NewStore[counter](counterCodec{})
	s.SnapshotEvery = 5
	if err == nil {
		_, err = s.Restore(mem, dir, c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	fmt.Println("ready") // the parent times most kills from here (start-up is slow on a loaded machine)
	for e := c + 1; ; e++ {
		mutate(s.Put, s.Delete, e)
		if err := s.Checkpoint(mem, d, e, map[string]uint64{"epoch": e}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(5)
		}
		if err := d.WriteOffsets(e, []byte(fmt.Sprintf(`{"end":%d}`, e*100))); err != nil {
			os.Exit(6)
		}
		if err := WriteCommit(dir, e, "crash-test"); err != nil {
			os.Exit(7)
		}
		if err := d.GC(3); err != nil {
			os.Exit(8)
		}
	}
}

// TestCrashKill9 SIGKILLs a checkpoint-writing child at random moments (≥ 200 times). After
// every kill, every committed file must verify and restore must yield exactly the state of
// the newest committed epoch — never a torn file, never a missing one.
func TestCrashKill9(t *testing.T) {
	if dir := os.Getenv("STATE_CRASH_CHILD"); dir != "" {
		crashChild(dir)
		return
	}
	iterations := 200
	if testing.Short() {
		iterations = 20
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var last uint64
	progressed := 0
	// The kill window after "ready" widens while kills keep landing before the first commit
	// of a run, as they do on a loaded machine where an epoch's fsyncs take longer than 25 ms,
	// and narrows again after progress.
	window := 25 * time.Millisecond
	for i := 0; i < iterations; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashKill9$")
		cmd.Env = append(os.Environ(), "STATE_CRASH_CHILD="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Three kills in four land while epochs are written, timed from the child's "ready";
		// the others anywhere from process start (during open, discard and restore).
		if i%4 != 0 {
			ready := make(chan struct{})
			go func() { bufio.NewReader(out).ReadString('\n'); close(ready) }()
			select {
			case <-ready:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatalf("iteration %d: child not ready within a minute", i)
			}
		}
		if i%4 != 0 {
			time.Sleep(time.Duration(rng.Int63n(int64(window))))
		} else {
			time.Sleep(time.Duration(rng.Intn(25000)) * time.Microsecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Exited() {
			t.Fatalf("iteration %d: child exited by itself (%v), not killed", i, err)
		}
		c, err := Committed(dir)
		if err != nil {
			t.Fatalf("iteration %d: committed: %v", i, err)
		}
		if c < last {
			t.Fatalf("iteration %d: committed epoch went back from %d to %d", i, last, c)
		}
		switch {
		case c > last:
			progressed++
			window = max(25*time.Millisecond, window*4/5)
		case i%4 != 0 && window < time.Second:
			window = window * 3 / 2
		}
		last = c
		if c == 0 {
			continue
		}
		s := NewStore[counter](counterCodec{})
		man, err := s.Restore(mem, dir, c)
		if err != nil {
			t.Fatalf("iteration %d: restore epoch %d: %v", i, c, err)
		}
		if string(man.Extra) != fmt.Sprintf(`{"epoch":%d}`, c) {
			t.Fatalf("iteration %d: manifest extra %s", i, man.Extra)
		}
		got := map[string]counter{}
		s.Range(func(k string, v counter) bool { got[k] = v; return true })
		if fmt.Sprint(got) != fmt.Sprint(expected(c)) {
			t.Fatalf("iteration %d: state of epoch %d differs from the expected one", i, c)
		}
		pos, err := ReadOffsets(dir, c)
		if err != nil || string(pos) != fmt.Sprintf(`{"end":%d}`, c*100) {
			t.Fatalf("iteration %d: offsets of epoch %d: %s %v", i, c, pos, err)
		}
		// Every retained committed file verifies.
		eps, _ := Epochs(dir, CommitsDir)
		for _, e := range eps {
			var rec CommitRecord
			if err := ReadJSON(filepath.Join(dir, CommitsDir, EpochName(e)+".json"), &rec); err != nil || rec.Epoch != e {
				t.Fatalf("iteration %d: commit %d: %v", i, e, err)
			}
		}
	}
	t.Logf("%d kills, committed epoch %d, progress in %d runs, kill window after ready %v", iterations, last, progressed, window)
	if progressed < iterations/10 {
		t.Fatalf("only %d of %d runs committed anything: the kills came too early to test much", progressed, iterations)
	}
}
