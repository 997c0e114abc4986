package writedelta

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/peertest"
)

// flightsSource is vega-datasets' flights-3m.parquet: $STREAMKIT_FLIGHTS, else
// peertest.VegaFile (cached under .cache, fetched with npm pack once); STREAMKIT_FLIGHTS=none
// uses synthetic flights-like rows.
func flightsSource(b testing.TB) string {
	switch p := os.Getenv("STREAMKIT_FLIGHTS"); p {
	case "none":
		return ""
	case "":
		return peertest.VegaFile(b, "flights-3m.parquet")
	default:
		return p
	}
}

// BenchmarkWriteDeltaVsDeltaRS measures Arrow → Delta for the flights schema (5 columns):
// `streamkit write-delta` reading an Arrow IPC stream through a pipe (epochs of 1Mi rows,
// one commit each), and delta-rs write_deltalake on the same Arrow data held in memory, in the
// same run. Rows: $STREAMKIT_BENCH_ROWS (default 3,000,000) of the real flights-3m data. Reported: rows/s by wall clock and per CPU second for both, and their ratios.
//
//	go test -run '^$' -bench WriteDeltaVsDeltaRS -benchtime 3x ./tools/writedelta
func BenchmarkWriteDeltaVsDeltaRS(b *testing.B) {
	py, bin := peertest.Python(b), peertest.Binary(b)
	script := filepath.Join(peertest.Root(b), "scripts", "py", "delta_bench.py")
	rows := envInt("STREAMKIT_BENCH_ROWS", 3_000_000)
	dir := b.TempDir()
	input := filepath.Join(dir, "flights.arrows")
	args := []string{script, "prepare", input, "--rows", fmt.Sprint(rows)}
	if src := flightsSource(b); src != "" {
		args = append(args, "--source", src)
	}
	if out, err := exec.Command(py, args...).CombinedOutput(); err != nil {
		b.Fatalf("prepare: %v\n%s", err, out)
	} else {
		b.Logf("input: %s", strings.TrimSpace(string(out)))
	}
	var toolWall, toolCPU, rsWall, rsCPU float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// streamkit write-delta through a pipe.
		f, err := os.Open(input)
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(bin, "--progress", "off", "write-delta", filepath.Join(dir, fmt.Sprintf("tool-%d", i)))
		stdin, _ := cmd.StdinPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		go func() { io.Copy(stdin, f); stdin.Close() }()
		if err := cmd.Wait(); err != nil {
			b.Fatalf("write-delta: %v\n%s", err, stderr.String())
		}
		toolWall += time.Since(start).Seconds()
		toolCPU += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		f.Close()
		// delta-rs on the same data.
		out, err := exec.Command(py, script, "deltars", filepath.Join(dir, fmt.Sprintf("deltars-%d", i)), input).Output()
		if err != nil {
			b.Fatalf("delta-rs: %v", err)
		}
		var res struct {
			Rows    int     `json:"rows"`
			Seconds float64 `json:"seconds"`
			CPU     float64 `json:"cpu_seconds"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.Rows != rows {
			b.Fatalf("delta-rs result %s: %v", out, err)
		}
		rsWall += res.Seconds
		rsCPU += res.CPU
	}
	b.StopTimer()
	n := float64(rows * b.N)
	b.ReportMetric(n/toolWall, "tool-rows/s")
	b.ReportMetric(n/toolCPU, "tool-rows/cpu-s")
	b.ReportMetric(n/rsWall, "deltars-rows/s")
	b.ReportMetric(n/rsCPU, "deltars-rows/cpu-s")
	b.ReportMetric(rsWall/toolWall, "x-deltars-wall")
	b.ReportMetric(rsCPU/toolCPU, "x-deltars-cpu")
}

// BenchmarkEpochCommit measures the per-epoch overhead of the tool: one op is one epoch
// (barrier) through a pipe into `streamkit write-delta --checkpoint`: an empty epoch commits
// txn + commitInfo; an epoch of 100 rows also writes and fsyncs a data file. Both include the
// commit markers in the checkpoint directory and a classic checkpoint every 10 commits.
//
//	go test -run '^$' -bench EpochCommit -benchtime 500x ./tools/writedelta
func BenchmarkEpochCommit(b *testing.B) {
	for _, rows := range []int{0, 100} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			dir := b.TempDir()
			p := startWD(b, mem, idSchema, filepath.Join(dir, "t"), "--checkpoint", filepath.Join(dir, "ck"))
			rec := idBatch(mem, 0, rows)
			defer rec.Release()
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				if rows > 0 {
					p.rec(rec)
				}
				p.barrier(uint64(i))
			}
			if err := p.finish(codec.Pause); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/epoch")
		})
	}
}
