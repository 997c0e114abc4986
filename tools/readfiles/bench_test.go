package readfiles_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/peertest"
)

// BenchmarkCSV2GBMaxRSS generates a 2 GB CSV (about 20 M rows of ~100 bytes) in a temporary
// directory (deleted afterwards), reads it with the binary into /dev/null — with an explicit
// schema and with inference — and reports the peak resident memory of the read-files process
// (getrusage ru_maxrss) and its rows/s. Memory must stay bounded by the batch size (< 300 MB).
//
//	go test -run '^$' -bench CSV2GB -benchtime 1x ./tools/readfiles/
func BenchmarkCSV2GBMaxRSS(b *testing.B) {
	bin := peertest.Binary(b)
	dir := b.TempDir()
	p := filepath.Join(dir, "big.csv")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintln(w, "id,user,amount,ts,ok,region,note")
	var size int64
	rows := 0
	for size < 2<<30 {
		n, _ := fmt.Fprintf(w, "%d,user%04d,%d.%02d,2024-03-01T12:%02d:%02d.123Z,%t,eu-west,\"quoted, with comma\"\n",
			rows, rows%10000, rows%1000, rows%100, rows/60%60, rows%60, rows%2 == 0)
		size += int64(n)
		rows++
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	old := time.Now().Add(-time.Hour)
	os.Chtimes(p, old, old)
	defer os.Remove(p)
	b.SetBytes(size)
	for _, args := range [][]string{
		{"--schema", "id long, user string, amount double, ts timestamp, ok boolean, region string, note string"},
		nil, // inferred
	} {
		b.ResetTimer()
		var maxRSS int64
		start := time.Now()
		for i := 0; i < b.N; i++ {
			cmd := exec.Command(bin, append(append([]string{"read-files", "--progress", "off"}, args...), p)...)
			cmd.Stdout = io.Discard
			out, err := cmd.StderrPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			msg, _ := io.ReadAll(out)
			if err := cmd.Wait(); err != nil {
				b.Fatalf("%v\n%s", err, msg)
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			maxRSS = max(maxRSS, ru.Maxrss*1024)
		}
		el := time.Since(start)
		b.ReportMetric(float64(maxRSS)/(1<<20), "maxrss_MB")
		b.ReportMetric(float64(rows)*float64(b.N)/el.Seconds(), "rows/s")
		mode := "schema"
		if args == nil {
			mode = "inferred"
		}
		b.Logf("%s: %d rows, %.2f GB, max RSS %.0f MB, %.1f s", mode, rows, float64(size)/1e9, float64(maxRSS)/(1<<20), el.Seconds()/float64(b.N))
		if maxRSS > 300<<20 {
			b.Errorf("max RSS %d MB ≥ 300 MB", maxRSS>>20)
		}
	}
}
