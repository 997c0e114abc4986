package window

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

// Hourly and daily tumbling windows and 2-hour sliding windows (slide 1 h) over the 3M real
// flights, by origin: count, avg(delay), max(delay), equal to DuckDB's GROUP BY over the same
// Parquet file.
func TestFlightsEqualDuckDB(t *testing.T) {
	if testing.Short() {
		t.Skip("real-data comparison")
	}
	py := peertest.Python(t)
	bin := peertest.Binary(t)
	parquet := peertest.VegaFile(t, "flights-3m.parquet")
	script, _ := filepath.Abs("testdata/compare_duckdb.py")
	for _, c := range []struct {
		name        string
		args        string
		size, slide int
	}{
		{"hourly", "tumbling --size 1h", 1, 1},
		{"daily", "tumbling --size 24h", 24, 24},
		{"sliding", "sliding --size 2h --slide 1h", 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.arrows")
			// --watermark-delay 24h: the file is ordered by date only roughly; no flight may
			// come late, which the script checks (every row on_time, none missing).
			pipe := fmt.Sprintf("%q read-files %q | %q window %s --time date --tz UTC --watermark-delay 24h --key origin --agg 'count, avg(delay), max(delay)' > %q",
				bin, parquet, bin, c.args, out)
			cmd := exec.Command("bash", "-o", "pipefail", "-c", pipe)
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", pipe, err, b)
			}
			res, err := exec.Command(py, script, out, parquet, fmt.Sprint(c.size), fmt.Sprint(c.slide)).CombinedOutput()
			if err != nil || !strings.HasPrefix(string(res), "ok ") {
				t.Fatalf("compare with DuckDB: %v\n%s", err, res)
			}
			t.Logf("%s: %s", c.name, strings.TrimSpace(string(res)))
		})
	}
}
