package backfill

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/peertest"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	"github.com/streamkit/streamkit/source/files"
)

// flightsFile is vega-datasets' flights-3m.parquet (3,000,000 rows), fetched into
// <repo>/.cache by the formats peer tests.
func flightsFile(b testing.TB) string {
	p := filepath.Join(peertest.Root(b), ".cache", "vega-datasets-3.2.1", "data", "flights-3m.parquet")
	if _, err := os.Stat(p); err != nil {
		b.Skipf("flights-3m.parquet not fetched yet (run the codec/formats peer tests): %v", err)
	}
	return p
}

var (
	flightsOnce  sync.Once
	flightsTable string
)

// flightsDelta is flights-3m as a Delta table (one commit), created once per process.
func flightsDelta(b *testing.B) string {
	src := flightsFile(b)
	flightsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "streamkit-backfill-flights-")
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		pf, err := file.OpenParquetFile(src, false, file.WithReadProps(parquet.NewReaderProperties(nil)))
		if err != nil {
			b.Fatal(err)
		}
		defer pf.Close()
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		sc, _ := fr.Schema()
		p, m, err := dl.NewTableMetadata(sc, dl.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		w, err := deltasink.NewDataWriter(dl.NewTable(dir, nil).Store(), m, deltasink.WriterOptions{})
		if err != nil {
			b.Fatal(err)
		}
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		for rr.Next() {
			if err := w.Write(rr.RecordBatch()); err != nil {
				b.Fatal(err)
			}
		}
		rr.Release()
		adds, err := w.Close()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := dl.NewTable(dir, nil).Commit(ctx, dl.CommitRequest{Protocol: p, Metadata: m, Adds: adds}); err != nil {
			b.Fatal(err)
		}
		flightsTable = dir
	})
	if flightsTable == "" {
		b.Fatal("flights table not created")
	}
	return flightsTable
}

func benchCfg(src, dst, flow string) Config {
	return Config{FromDelta: src, FromVersion: -1, To: dst, Flow: flow, Progress: "off",
		Stdout: io.Discard, Stderr: io.Discard, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// BenchmarkBackfillFlights backfills the 3M flights rows from a Delta table into an empty
// table (plain), from flights-3m.parquet itself (--from, through source/files), and with
// --dedup (key: all five columns) into a table that already holds the 3M rows (every row is
// a key hit), reporting rows/s and the ratio of the dedup and plain times.
func BenchmarkBackfillFlights(b *testing.B) {
	src := flightsDelta(b)
	ctx := context.Background()
	var plain, dedup time.Duration
	b.Run("plain", func(b *testing.B) {
		plain = 0
		for i := 0; i < b.N; i++ {
			dst := b.TempDir()
			start := time.Now()
			if err := Run(ctx, benchCfg(src, dst, "flights")); err != nil {
				b.Fatal(err)
			}
			plain += time.Since(start)
		}
		plain /= time.Duration(b.N)
		b.ReportMetric(3e6/plain.Seconds(), "rows/s")
	})
	b.Run("parquet-file-plain", func(b *testing.B) {
		var el time.Duration
		for i := 0; i < b.N; i++ {
			cfg := benchCfg("", b.TempDir(), "flights")
			cfg.SetFiles(files.Config{}, []string{flightsFile(b)}) // read-files' defaults: nothing to set for Parquet
			start := time.Now()
			if err := Run(ctx, cfg); err != nil {
				b.Fatal(err)
			}
			el += time.Since(start)
		}
		b.ReportMetric(3e6*float64(b.N)/el.Seconds(), "rows/s")
	})
	b.Run("dedup-3M-target", func(b *testing.B) {
		dst := b.TempDir()
		if err := Run(ctx, benchCfg(src, dst, "first")); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		dedup = 0
		for i := 0; i < b.N; i++ {
			cfg := benchCfg(src, dst, "flights")
			cfg.Dedup, cfg.Rerun = true, true
			start := time.Now()
			if err := Run(ctx, cfg); err != nil {
				b.Fatal(err)
			}
			dedup += time.Since(start)
		}
		dedup /= time.Duration(b.N)
		b.ReportMetric(3e6/dedup.Seconds(), "rows/s")
		if plain > 0 {
			b.ReportMetric(dedup.Seconds()/plain.Seconds(), "x_plain")
		}
	})
}
