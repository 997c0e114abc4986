package writedelta

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/arrowtest"
	"github.com/streamkit/streamkit/internal/peertest"
)

// Helpers for the tests that run the streamkit binary against real readers (delta-rs, DuckDB,
// Spark + delta-spark) through scripts/py/delta_interop.py.

func interopScript(t testing.TB) string {
	return filepath.Join(peertest.Root(t), "scripts", "py", "delta_interop.py")
}

// sparkJars reports whether the Spark peer (scripts/peers.sh spark) is installed; without it
// the Spark checks skip, or fail under STREAMKIT_REQUIRE_PEERS=1.
func requireSpark(t testing.TB) {
	t.Helper()
	dir := os.Getenv("STREAMKIT_SPARK_JARS")
	if dir == "" {
		dir = filepath.Join(peertest.Root(t), ".it", "spark-jars")
	}
	jars, _ := filepath.Glob(filepath.Join(dir, "delta-spark_*.jar"))
	if len(jars) > 0 {
		return
	}
	if os.Getenv("STREAMKIT_REQUIRE_PEERS") == "1" {
		t.Fatalf("test peer missing: Spark + delta-spark jars in %s (run scripts/peers.sh spark)", dir)
	}
	t.Skipf("test peer missing: Spark + delta-spark jars in %s (run scripts/peers.sh spark)", dir)
}

// wdProc is a running `streamkit write-delta` fed by the test through a pipe.
type wdProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     io.WriteCloser
	w      *codec.Writer
	stderr bytes.Buffer
}

func startWD(t testing.TB, mem memory.Allocator, sc *arrow.Schema, args ...string) *wdProc {
	t.Helper()
	p := &wdProc{t: t}
	p.cmd = exec.Command(peertest.Binary(t), append([]string{"--progress", "off", "write-delta"}, args...)...)
	p.cmd.Stderr = &p.stderr
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.w = codec.NewWriter(p.in, replayable(sc, true), mem)
	return p
}

func (p *wdProc) rec(rec arrow.RecordBatch) *wdProc {
	p.t.Helper()
	if err := p.w.Write(rec); err != nil {
		p.t.Fatalf("write to write-delta: %v\n%s", err, p.stderr.String())
	}
	return p
}

func (p *wdProc) barrier(n uint64) *wdProc {
	p.t.Helper()
	if err := p.w.WriteControl(codec.BarrierControl(n)); err != nil {
		p.t.Fatalf("write to write-delta: %v\n%s", err, p.stderr.String())
	}
	return p
}

// finish ends the stream and waits for the process.
func (p *wdProc) finish(k codec.EndKind) error {
	if err := p.w.WriteControl(codec.EndControl(k)); err != nil {
		return fmt.Errorf("%v\n%s", err, p.stderr.String())
	}
	p.w.Close()
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		return fmt.Errorf("write-delta: %v\n%s", err, p.stderr.String())
	}
	return nil
}

// writeDelta runs write-delta with args over epochs: epochs[i] are the batches of epoch i+1
// (each followed by its barrier), then end=final.
func writeDelta(t testing.TB, mem memory.Allocator, sc *arrow.Schema, epochs [][]arrow.RecordBatch, args ...string) {
	t.Helper()
	p := startWD(t, mem, sc, args...)
	for i, recs := range epochs {
		for _, r := range recs {
			p.rec(r)
		}
		p.barrier(uint64(i + 1))
	}
	if err := p.finish(codec.Final); err != nil {
		t.Fatal(err)
	}
}

// writeArrowFile writes recs to an Arrow IPC file (the expected rows for the readers).
func writeArrowFile(t testing.TB, path string, sc *arrow.Schema, recs ...arrow.RecordBatch) string {
	t.Helper()
	arrowtest.WriteFileSchema(t, path, sc, recs...)
	return path
}

func fromJSON(t testing.TB, mem memory.Allocator, sc *arrow.Schema, rows []string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, sc, strings.NewReader("["+strings.Join(rows, ",")+"]"))
	if err != nil {
		t.Fatalf("record from JSON: %v", err)
	}
	return rec
}

// manifestEntry is one table for delta_interop.py check / the Spark server.
type manifestEntry struct {
	Name        string   `json:"name"`
	Table       string   `json:"table"`
	Expected    []string `json:"expected"`
	Key         string   `json:"key"`
	EmptyAsNull []string `json:"empty_as_null,omitempty"`
	Readers     []string `json:"readers"`
	Probe       []string `json:"probe,omitempty"`
	MinVersions int      `json:"min_versions,omitempty"`
}

var allReaders = []string{"deltalake", "duckdb", "spark"}

func writeManifest(t testing.TB, path string, entries []manifestEntry) string {
	t.Helper()
	b, err := json.MarshalIndent(entries, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runPy runs delta_interop.py with args and returns its output.
func runPy(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(peertest.Python(t), append([]string{interopScript(t)}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sparkServer is one Spark + delta-spark session (delta_interop.py spark-server) taking
// commands for the whole test run: Spark starts slowly, so it starts once.
type sparkServer struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	log    string
	ready  bool
	closed bool
}

func startSpark(t testing.TB) *sparkServer {
	t.Helper()
	return startSparkScript(t, interopScript(t))
}

// startSparkScript starts the Spark server of a script that speaks delta_interop.py's
// spark-server protocol (one JSON command a line, "RESULT {json}" answers).
func startSparkScript(t testing.TB, script string) *sparkServer {
	t.Helper()
	s := &sparkServer{t: t, log: filepath.Join(t.TempDir(), "spark.log")}
	s.cmd = exec.Command(peertest.Python(t), script, "spark-server")
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = logf
	var stdout io.Reader
	s.in, stdout = peertest.StartPiped(t, s.cmd)
	s.out = bufio.NewReader(stdout)
	t.Cleanup(s.stop)
	return s
}

func (s *sparkServer) logTail() string {
	b, _ := os.ReadFile(s.log)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

func (s *sparkServer) read() (map[string]any, error) {
	for {
		line, err := s.out.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("spark server: %v\n%s", err, s.logTail())
		}
		if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
			var res map[string]any
			if err := json.Unmarshal([]byte(rest), &res); err != nil {
				return nil, err
			}
			if ok, _ := res["ok"].(bool); !ok {
				return res, fmt.Errorf("spark server: %v", res["error"])
			}
			return res, nil
		}
	}
}

// call sends one command and waits for its result.
func (s *sparkServer) call(cmd map[string]any) (map[string]any, error) {
	if !s.ready {
		start := time.Now()
		if _, err := s.read(); err != nil {
			return nil, err
		}
		s.ready = true
		s.t.Logf("spark session ready after %s", time.Since(start).Round(100*time.Millisecond))
	}
	b, _ := json.Marshal(cmd)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("spark server: %v\n%s", err, s.logTail())
	}
	return s.read()
}

func (s *sparkServer) stop() {
	if s.closed {
		return
	}
	s.closed = true
	if s.ready {
		s.call(map[string]any{"cmd": "quit"})
	}
	s.in.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}
