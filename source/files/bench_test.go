package files

// Benchmarks of the whole source path as read-files runs it: list, plan, open, decode,
// conform, and the stage writing Arrow IPC to stdout (io.Discard here). Run per core with
//
//	go test -run '^$' -bench . -cpu 1 ./source/files/
//
// rows/s is reported as rows/s.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/csvrow"
	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/stage"
)

// benchFile writes n records of about 100 bytes as NDJSON or CSV (with a header).
func benchFile(b *testing.B, dir, name string, n int, csv bool) string {
	b.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if csv {
		fmt.Fprintln(w, "id,user,amount,ts,ok,region")
	}
	for i := 0; i < n; i++ {
		if csv {
			fmt.Fprintf(w, "%d,user%04d,%d.%02d,2024-03-01T12:%02d:%02d.123Z,%t,eu-west\n", i, i%10000, i%1000, i%100, i/60%60, i%60, i%2 == 0)
		} else {
			fmt.Fprintf(w, `{"id":%d,"user":"user%04d","amount":%d.%02d,"ts":"2024-03-01T12:%02d:%02d.123Z","ok":%t,"region":"eu-west"}`+"\n",
				i, i%10000, i%1000, i%100, i/60%60, i%60, i%2 == 0)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	old := time.Now().Add(-time.Hour)
	os.Chtimes(p, old, old)
	return p
}

// runBench runs the source over cfg into io.Discard (Arrow IPC) and returns the rows.
func runBench(b *testing.B, cfg Config) int64 {
	b.Helper()
	src, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	o := stage.SourceOptions{Options: stage.Options{Tool: "read-files", Stdout: io.Discard, Stderr: io.Discard, Progress: stage.ProgressOff,
		NoSignals: true, Log: discardLog(), Mem: memory.NewGoAllocator()}, BatchRows: 1 << 16}
	if err := stage.RunSource(context.Background(), o, src); err != nil {
		b.Fatal(err)
	}
	return src.rows
}

func benchRows(b *testing.B, cfg Config, want int64) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	var rows int64
	for i := 0; i < b.N; i++ {
		if n := runBench(b, cfg); want > 0 && n != want {
			b.Fatalf("rows %d, want %d", n, want)
		} else {
			rows += n
		}
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkNDJSON(b *testing.B) {
	const n = 500_000
	p := benchFile(b, b.TempDir(), "x.ndjson", n, false)
	fi, _ := os.Stat(p)
	b.SetBytes(fi.Size())
	sc, _ := schema.ParseDDL("id long, user string, amount double, ts timestamp, ok boolean, region string")
	benchRows(b, Config{Patterns: []string{p}, Schema: sc}, n)
}

func BenchmarkCSV(b *testing.B) {
	const n = 500_000
	p := benchFile(b, b.TempDir(), "x.csv", n, true)
	fi, _ := os.Stat(p)
	b.SetBytes(fi.Size())
	sc, _ := schema.ParseDDL("id long, user string, amount double, ts timestamp, ok boolean, region string")
	benchRows(b, Config{Patterns: []string{p}, Schema: sc, CSV: csvrow.Options{Header: true}}, n)
}

// BenchmarkParquetFlights3M reads vega-datasets' flights-3m.parquet (3,000,000 rows, 5
// columns) into Arrow IPC.
func BenchmarkParquetFlights3M(b *testing.B) {
	p := peertest.VegaFile(b, "flights-3m.parquet")
	fi, _ := os.Stat(p)
	b.SetBytes(fi.Size())
	benchRows(b, Config{Patterns: []string{p}}, 3_000_000)
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
