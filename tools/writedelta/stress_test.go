package writedelta

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/state"
)

// commitWatcher polls a _delta_log directory and remembers the content hash and inode of every
// commit file the first time it sees it; check reports any that changed (a replaced commit).
type commitWatcher struct {
	dir  string
	mu   sync.Mutex
	seen map[string]fileID
	stop chan struct{}
	done chan struct{}
}

type fileID struct {
	sum [32]byte
	ino uint64
}

func watchCommits(dir string) *commitWatcher {
	w := &commitWatcher{dir: dir, seen: map[string]fileID{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			w.scan()
			select {
			case <-w.stop:
				w.scan()
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return w
}

func readID(p string) (fileID, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return fileID{}, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return fileID{}, err
	}
	return fileID{sum: sha256.Sum256(b), ino: st.Sys().(*syscall.Stat_t).Ino}, nil
}

func isCommitName(n string) bool {
	return len(n) == 25 && strings.HasSuffix(n, ".json") && strings.Trim(n[:20], "0123456789") == ""
}

func (w *commitWatcher) scan() {
	ents, _ := os.ReadDir(w.dir)
	for _, e := range ents {
		if !isCommitName(e.Name()) {
			continue
		}
		w.mu.Lock()
		_, ok := w.seen[e.Name()]
		w.mu.Unlock()
		if ok {
			continue
		}
		if id, err := readID(filepath.Join(w.dir, e.Name())); err == nil {
			w.mu.Lock()
			w.seen[e.Name()] = id
			w.mu.Unlock()
		}
	}
}

// finish stops the watcher and returns the commit files that changed since first seen.
func (w *commitWatcher) finish() (seen int, changed []string) {
	close(w.stop)
	<-w.done
	for name, id := range w.seen {
		now, err := readID(filepath.Join(w.dir, name))
		if err != nil || now != id {
			changed = append(changed, name)
		}
	}
	return len(w.seen), changed
}

// feed writes epochs [1, epochs] of rows ids into a running write-delta and ends with pause.
func feed(p *wdProc, mem memory.Allocator, epochs int, ids func(e int) (int, int)) error {
	for e := 1; e <= epochs; e++ {
		from, to := ids(e)
		rec := idBatch(mem, from, to)
		err := p.w.Write(rec)
		rec.Release()
		if err == nil {
			err = p.w.WriteControl(codec.BarrierControl(uint64(e)))
		}
		if err != nil {
			return fmt.Errorf("epoch %d: %v\n%s", e, err, p.stderr.String())
		}
	}
	return p.finish(codec.Pause)
}

// concurrentFlows: 4 write-delta processes with their own flows and checkpoints append 200
// epochs each to one new table at the same time, while `delta optimize` compacts it twice.
// Exactly 800 commits carry a txn, one per (flow, epoch); no commit file is ever replaced;
// every data file on disk is referenced by the log; the rows are exactly the input.
func concurrentFlows(t *testing.T, mem memory.Allocator, dir string) manifestEntry {
	const flows, epochs, rows = 4, 200, 5
	root := filepath.Join(dir, "tables", "concurrent")
	if err := os.MkdirAll(filepath.Join(root, delta.LogDir), 0o755); err != nil {
		t.Fatal(err)
	}
	watcher := watchCommits(filepath.Join(root, delta.LogDir))
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, flows+1)
	for f := 0; f < flows; f++ {
		p := startWD(t, mem, idSchema, root, "--flow", fmt.Sprintf("flow-%d", f), "--checkpoint", filepath.Join(dir, fmt.Sprintf("ck-flow-%d", f)))
		wg.Add(1)
		go func(f int) {
			defer wg.Done()
			errs[f] = feed(p, mem, epochs, func(e int) (int, int) {
				base := (f*epochs + e - 1) * rows
				return base, base + rows
			})
		}(f)
	}
	// Optimize twice while the flows append: it must never conflict with them.
	optimized := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, at := range []int64{250, 550} {
			for {
				vs, _ := delta.NewTable(root, nil).CommitVersions()
				if len(vs) > 0 && vs[len(vs)-1] >= at {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			cmd := exec.Command(peertest.Binary(t), "delta", "optimize", root)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[flows] = fmt.Errorf("delta optimize during appends: %v\n%s", err, out)
				return
			} else if strings.Contains(string(out), "compacted") {
				optimized++
			}
		}
	}()
	wg.Wait()
	elapsed := time.Since(start)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	seen, changed := watcher.finish()
	if len(changed) > 0 {
		t.Errorf("commit files replaced: %v", changed)
	}

	tbl := delta.NewTable(root, nil)
	vs, err := tbl.CommitVersions()
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != seen {
		t.Errorf("the watcher saw %d commit files, the log has %d", seen, len(vs))
	}
	type key struct {
		app string
		v   int64
	}
	txns := map[key]int64{}
	dataCommits, optimizeCommits := 0, 0
	referenced := map[string]bool{}
	for _, v := range vs {
		acts, err := tbl.ReadCommit(v)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range acts {
			switch {
			case a.Txn != nil:
				n++
				k := key{a.Txn.AppID, a.Txn.Version}
				if prev, dup := txns[k]; dup {
					t.Errorf("txn %v committed twice: versions %d and %d", k, prev, v)
				}
				txns[k] = v
			case a.Add != nil:
				p, err := delta.DecodePath(a.Add.Path)
				if err != nil {
					t.Fatal(err)
				}
				referenced[p] = true
			}
		}
		if n > 1 {
			t.Errorf("version %d has %d txn actions", v, n)
		}
		if n == 1 {
			dataCommits++
		}
		if acts[0].CommitInfo != nil && acts[0].CommitInfo.Operation == "OPTIMIZE" {
			optimizeCommits++
		}
	}
	if dataCommits != flows*epochs {
		t.Errorf("%d data commits, want exactly %d", dataCommits, flows*epochs)
	}
	for f := 0; f < flows; f++ {
		for e := 1; e <= epochs; e++ {
			if _, ok := txns[key{fmt.Sprintf("flow-%d", f), int64(e)}]; !ok {
				t.Errorf("flow-%d epoch %d has no commit", f, e)
			}
		}
	}
	if optimizeCommits != optimized || optimized == 0 {
		t.Errorf("%d OPTIMIZE commits, %d optimize runs compacted something", optimizeCommits, optimized)
	}
	onDisk := parquetFiles(t, root)
	for _, f := range onDisk {
		if !referenced[filepath.ToSlash(f)] {
			t.Errorf("data file %s is referenced by no add action", f)
		}
	}
	if len(onDisk) != len(referenced) {
		t.Errorf("%d data files on disk, %d referenced", len(onDisk), len(referenced))
	}
	if got := tableIDs(t, root); !equalIDs(got, seq(0, flows*epochs*rows)) {
		t.Errorf("rows: %d, want %d distinct", len(got), flows*epochs*rows)
	}
	t.Logf("4 flows × 200 epochs: %d versions (%d data commits, %d OPTIMIZE) in %s, %.1f ms per commit",
		len(vs), dataCommits, optimizeCommits, elapsed.Round(time.Millisecond), float64(elapsed.Milliseconds())/float64(len(vs)))
	all := idBatch(mem, 0, flows*epochs*rows)
	defer all.Release()
	exp := writeArrowFile(t, filepath.Join(dir, "concurrent.arrow"), idSchema, all)
	return manifestEntry{Name: "4-concurrent-flows", Table: root, Expected: []string{exp}, Key: "id", Readers: allReaders, MinVersions: flows * epochs}
}

// tableCounter asks a long-running delta_interop.py serve process to read a table with
// delta-rs and DuckDB.
type tableCounter struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

type readerCount struct {
	Version  int64  `json:"version"`
	Rows     int64  `json:"rows"`
	Distinct int64  `json:"distinct"`
	Min      *int64 `json:"min"`
	Max      *int64 `json:"max"`
}

type countResult struct {
	Exists    bool         `json:"exists"`
	Error     string       `json:"error"`
	DeltaLake *readerCount `json:"deltalake"`
	DuckDB    *readerCount `json:"duckdb"`
}

func startCounter(t testing.TB) *tableCounter {
	t.Helper()
	c := &tableCounter{cmd: exec.Command(peertest.Python(t), interopScript(t), "serve")}
	in, err := c.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = os.Stderr
	c.in, c.out = in, bufio.NewReader(out)
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.in.Close(); c.cmd.Wait() })
	return c
}

func (c *tableCounter) count(root string) (countResult, error) {
	var res countResult
	if _, err := fmt.Fprintln(c.in, root); err != nil {
		return res, err
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		return res, err
	}
	err = json.Unmarshal([]byte(line), &res)
	return res, err
}

// sourceRows are the rows scripts/examples/source.py emits for ids [0, n): id, epoch,
// ts = 2024-01-01 + id s, value = id/2, name = user-<id%7>, with rows per epoch.
func sourceRows(t testing.TB, mem memory.Allocator, n, perEpoch int) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "epoch", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Int64Builder).Append(int64(i/perEpoch + 1))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(base + int64(i)*1_000_000))
		b.Field(3).(*array.Float64Builder).Append(float64(i) / 2)
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("user-%d", i%7))
	}
	return b.NewRecordBatch()
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

// killRuns runs `source.py --checkpoint | streamkit write-delta --checkpoint` and kill -9s
// write-delta at a random moment, ≥ STREAMKIT_KILL_RUNS (100) times, restarting both against
// the same checkpoints and input each time; then lets a run finish. After every run the table
// must open in delta-rs and DuckDB with whole epochs, no duplicate and no lost committed row;
// at the end it holds each input row exactly once (Spark checks it with the other tables).
func killRuns(t *testing.T, mem memory.Allocator, dir string) manifestEntry {
	runs := envInt("STREAMKIT_KILL_RUNS", 100)
	const epochs, perEpoch = 2000, 6
	total := int64(epochs * perEpoch)
	root := filepath.Join(dir, "tables", "killed")
	srcCk, wdCk := filepath.Join(dir, "ck-kill", "source"), filepath.Join(dir, "ck-kill", "write-delta")
	py, bin := peertest.Python(t), peertest.Binary(t)
	source := filepath.Join(peertest.Root(t), "scripts", "examples", "source.py")
	counter := startCounter(t)
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("STREAMKIT_KILL_SEED"), 10, 64); err == nil {
		seed = s
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("kill -9 runs: %d, seed %d (STREAMKIT_KILL_SEED)", runs, seed)
	kills, finished := 0, false
	var prev int64
	var maxDelay = 900 * time.Millisecond
	var progress []string
	for run := 1; !finished; run++ {
		if run > runs+200 {
			t.Fatalf("no clean finish after %d runs", run)
		}
		src := exec.Command(py, source, "--epochs", fmt.Sprint(epochs), "--rows", fmt.Sprint(perEpoch),
			"--batch-rows", "4", "--delay", "0.008", "--checkpoint", srcCk)
		sink := exec.Command(bin, "--progress", "off", "write-delta", root, "--checkpoint", wdCk)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var srcErr, sinkErr bytes.Buffer
		src.Stdout, src.Stderr = w, &srcErr
		sink.Stdin, sink.Stderr = r, &sinkErr
		if err := sink.Start(); err != nil {
			t.Fatal(err)
		}
		if err := src.Start(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		w.Close()
		kill := kills < runs
		var timer *time.Timer
		killed := make(chan bool, 1)
		if kill {
			delay := time.Duration(rng.Int64N(int64(maxDelay)))
			timer = time.AfterFunc(delay, func() { killed <- sink.Process.Kill() == nil })
		}
		sinkRes := sink.Wait()
		if timer != nil && !timer.Stop() {
			<-killed
		}
		srcRes := src.Wait()
		var ee *exec.ExitError
		wasKilled := errors.As(sinkRes, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled()
		switch {
		case wasKilled:
			kills++
		case sinkRes != nil:
			t.Fatalf("run %d: write-delta failed: %v\n%s", run, sinkRes, sinkErr.String())
		case srcRes != nil:
			t.Fatalf("run %d: source failed: %v\n%s", run, srcRes, srcErr.String())
		}
		res, err := counter.count(root)
		if err != nil {
			t.Fatalf("run %d: counter: %v", run, err)
		}
		if res.Error != "" {
			t.Fatalf("run %d: the table does not open after kill -9:\n%s", run, res.Error)
		}
		var rows int64
		if res.Exists {
			dl, dd := res.DeltaLake, res.DuckDB
			rows = dl.Rows
			switch {
			case dl.Rows != dl.Distinct || dd.Rows != dd.Distinct:
				t.Fatalf("run %d: duplicate rows: delta-rs %+v, DuckDB %+v", run, *dl, *dd)
			case dl.Rows != dd.Rows:
				t.Fatalf("run %d: delta-rs reads %d rows, DuckDB %d", run, dl.Rows, dd.Rows)
			case dl.Rows%perEpoch != 0:
				t.Fatalf("run %d: %d rows is not a whole number of epochs", run, dl.Rows)
			case dl.Rows < prev:
				t.Fatalf("run %d: committed rows went from %d to %d", run, prev, dl.Rows)
			case dl.Rows > 0 && (*dl.Min != 0 || *dl.Max != dl.Rows-1):
				t.Fatalf("run %d: ids %d..%d for %d rows: an epoch is missing", run, *dl.Min, *dl.Max, dl.Rows)
			}
		} else if prev > 0 {
			t.Fatalf("run %d: the table disappeared", run)
		}
		progress = append(progress, fmt.Sprintf("%d", (rows-prev)/perEpoch))
		prev = rows
		if !wasKilled {
			committed, err := state.Committed(wdCk)
			if err != nil {
				t.Fatal(err)
			}
			finished = committed == epochs && rows == total
		}
	}
	t.Logf("%d kill -9 runs; epochs committed per run: %s", kills, strings.Join(progress, " "))
	if got := tableIDs(t, root); !equalIDs(got, seq(0, int(total))) {
		t.Fatalf("final table: %d ids, want each of 0..%d once", len(got), total-1)
	}
	// Killed runs leave data files they never committed; vacuum removes exactly those.
	live := snapshot(t, root).NumFiles()
	orphans := len(parquetFiles(t, root)) - live
	runBin(t, "delta", "vacuum", root, "--retain", "0h", "--force")
	if n := len(parquetFiles(t, root)); n != live {
		t.Errorf("after vacuum %d data files, %d live", n, live)
	}
	t.Logf("%d uncommitted data files of killed runs removed by vacuum", orphans)
	exp := sourceRows(t, mem, int(total), perEpoch)
	defer exp.Release()
	file := writeArrowFile(t, filepath.Join(dir, "killed.arrow"), exp.Schema(), exp)
	return manifestEntry{Name: "kill-9-runs", Table: root, Expected: []string{file}, Key: "id", Readers: allReaders}
}
