package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/peertest"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	"github.com/streamkit/streamkit/stage"
)

// FlightsFile is vega-datasets' flights-3m.parquet (3,000,000 rows: a timestamp, two
// integers, two short strings), fetched into <repo>/.cache by the formats peer tests.
func FlightsFile(t testing.TB) string {
	p := filepath.Join(peertest.Root(t), ".cache", "vega-datasets-3.2.1", "data", "flights-3m.parquet")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("flights-3m.parquet not fetched yet (run the codec/formats peer tests): %v", err)
	}
	return p
}

var (
	flightsOnce  sync.Once
	flightsTable string
)

// flightsDelta writes flights-3m into a Delta table once per test process (a temporary
// directory removed at exit of the benchmark binary's TestMain-less run is fine: it lives in
// the OS temp dir).
func flightsDelta(b *testing.B) string {
	src := FlightsFile(b)
	flightsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "streamkit-flights-delta-")
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

// BenchmarkReadDeltaFlights reads the 3M-row flights table through the read-delta source
// (Parquet decode, conformance, ordered parallel scan), reporting rows/s.
func BenchmarkReadDeltaFlights(b *testing.B) {
	benchReadTable(b, flightsDelta(b))
}

// benchReadTable reads the table at dir b.N times through the read-delta source, reporting
// rows/s and the process CPU per read (cpu-ns/op).
func benchReadTable(b *testing.B, dir string) {
	ctx := context.Background()
	b.ResetTimer()
	cpu0 := cpuTime()
	var rows int64
	for i := 0; i < b.N; i++ {
		src, err := NewSource(Config{Table: dir, Version: -1, StartingVersion: -1})
		if err != nil {
			b.Fatal(err)
		}
		env := testEnv(memory.DefaultAllocator)
		env.BatchRows = 64 << 10
		if _, err := src.Open(ctx, env, nil); err != nil {
			b.Fatal(err)
		}
		for {
			rec, err := src.Read(ctx, nil)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if rec != nil {
				rows += rec.NumRows()
				rec.Release()
			}
		}
		src.Close()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkReadDeltaFlightsStage runs the whole read-delta stage (RunSource) over the flights
// table with its Arrow IPC output discarded.
func BenchmarkReadDeltaFlightsStage(b *testing.B) {
	dir := flightsDelta(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		src, err := NewSource(Config{Table: dir, Version: -1, StartingVersion: -1})
		if err != nil {
			b.Fatal(err)
		}
		o := stage.SourceOptions{Options: stage.Options{Tool: "read-delta", Progress: stage.ProgressOff, Stdout: io.Discard, Stderr: io.Discard, NoSignals: true,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, BatchRows: 64 << 10}
		if err := stage.RunSource(context.Background(), o, src); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(3e6*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// flightsDV copies the flights table and gives every file an inline deletion vector of 10% of
// its rows (chosen at random), for BenchmarkReadDeltaFlightsDV.
func flightsDV(b *testing.B) string {
	src := flightsDelta(b)
	dir := b.TempDir()
	tbl := dl.NewTable(src, nil)
	snap, err := tbl.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", src+"/.", dir).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v %s", err, out)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	lines := []string{}
	for _, a := range snap.Files() {
		var st struct{ NumRecords int64 }
		json.Unmarshal([]byte(a.Stats), &st)
		bm := roaring64.New()
		for i := range uint64(st.NumRecords) {
			if rnd.IntN(10) == 0 {
				bm.Add(i)
			}
		}
		var ser bytes.Buffer
		binary.Write(&ser, binary.LittleEndian, uint32(1681511377))
		bm.WriteTo(&ser)
		data := ser.Bytes()
		add := *a
		add.DeletionVector = &dl.DeletionVector{StorageType: "i", PathOrInlineDv: z85(append(data, make([]byte, -len(data)&3)...)),
			SizeInBytes: int32(len(data)), Cardinality: int64(bm.GetCardinality())}
		rm, _ := json.Marshal(map[string]any{"remove": dl.Remove{Path: a.Path, DataChange: true}})
		ad, _ := json.Marshal(map[string]any{"add": add})
		lines = append(lines, string(rm), string(ad))
	}
	proto := `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}`
	writeCommit(b, dir, 1, append([]string{proto}, lines...)...)
	return dir
}

// BenchmarkReadDeltaFlightsDV is BenchmarkReadDeltaFlights over the same files with 10% of
// the rows deleted by deletion vectors (the bound: within 20% of the CPU without).
func BenchmarkReadDeltaFlightsDV(b *testing.B) {
	benchReadTable(b, flightsDV(b))
}

// cpuTime is the process's user + system CPU time so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
