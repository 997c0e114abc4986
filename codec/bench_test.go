package codec

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// benchSchema is a flights-like 5-column schema: timestamp, two ints, two short strings.
var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "date", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "delay", Type: arrow.PrimitiveTypes.Int64},
	{Name: "distance", Type: arrow.PrimitiveTypes.Int64},
	{Name: "origin", Type: arrow.BinaryTypes.String},
	{Name: "destination", Type: arrow.BinaryTypes.String},
}, nil)

const benchRows = 64 * 1024

func benchRecord(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, benchSchema)
	defer b.Release()
	airports := []string{"SFO", "LAX", "JFK", "ORD", "ATL", "SEA", "DEN", "BOS"}
	for i := 0; i < benchRows; i++ {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1_600_000_000_000_000 + int64(i)*60_000_000))
		b.Field(1).(*array.Int64Builder).Append(int64(i%120 - 20))
		b.Field(2).(*array.Int64Builder).Append(int64(100 + i%3000))
		b.Field(3).(*array.StringBuilder).Append(airports[i%8])
		b.Field(4).(*array.StringBuilder).Append(airports[(i/8)%8])
	}
	return b.NewRecordBatch()
}

// pipeWriterChild writes $CODEC_BENCH_BATCHES copies of benchRecord to stdout.
func pipeWriterChild(n int) {
	mem := memory.NewGoAllocator()
	rec := benchRecord(mem)
	TunePipe(os.Stdout)
	w := NewWriter(os.Stdout, benchSchema, mem)
	for i := 0; i < n; i++ {
		if err := w.Write(rec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if i%16 == 15 {
			w.WriteControl(BarrierControl(uint64(i/16 + 1)))
		}
	}
	w.WriteControl(EndControl(Final))
	w.Close()
	os.Exit(0)
}

func TestMain(m *testing.M) {
	if v := os.Getenv("CODEC_BENCH_BATCHES"); v != "" {
		n, _ := strconv.Atoi(v)
		pipeWriterChild(n)
	}
	os.Exit(m.Run())
}

// countingReader counts bytes crossing the pipe.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// BenchmarkPipeTwoProcesses encodes in a child process and decodes here, through an OS pipe:
// the cost of one hop between two streamkit stages. Reports MB/s and rows/s.
func BenchmarkPipeTwoProcesses(b *testing.B) {
	batches := b.N
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CODEC_BENCH_BATCHES="+strconv.Itoa(batches))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	if f, ok := out.(*os.File); ok {
		TunePipe(f)
	}
	cr := &countingReader{r: out}
	r, err := NewReader(cr, mem)
	if err != nil {
		b.Fatal(err)
	}
	rows := int64(0)
	for {
		m, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if m.Batch != nil {
			rows += m.Batch.NumRows()
			m.Batch.Release()
		}
	}
	r.Release()
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start).Seconds()
	if rows != int64(batches)*benchRows {
		b.Fatalf("rows %d, want %d", rows, int64(batches)*benchRows)
	}
	b.ReportMetric(float64(cr.n)/el/1e6, "MB/s")
	b.ReportMetric(float64(rows)/el/1e6, "Mrows/s")
	b.SetBytes(cr.n / int64(batches))
}

// BenchmarkEncodeDecode measures the codec alone, in memory.
func BenchmarkEncodeDecode(b *testing.B) {
	mem := memory.NewGoAllocator()
	rec := benchRecord(mem)
	defer rec.Release()
	pr, pw := io.Pipe()
	go func() {
		w := NewWriter(pw, benchSchema, mem)
		for i := 0; i < b.N; i++ {
			w.Write(rec)
		}
		w.WriteControl(EndControl(Final))
		w.Close()
		pw.Close()
	}()
	r, err := NewReader(pr, mem)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Release()
	for {
		m, err := r.Next()
		if err == io.EOF {
			break
		}
		if m.Batch != nil {
			m.Batch.Release()
		}
	}
	b.ReportMetric(float64(b.N*benchRows)/b.Elapsed().Seconds()/1e6, "Mrows/s")
}
