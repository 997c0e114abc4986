package peertest

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// VegaVersion is the pinned npm package of the real data sets (vega-datasets, BSD-3-Clause;
// see codec/formats/testdata/vega/README.md).
const VegaVersion = "vega-datasets@3.2.1"

// VegaFile returns the path of a vega-datasets 3.2.1 data file: committed under
// codec/formats/testdata/vega when small, else cached under <root>/.cache by `npm pack` (the
// first test that needs it fetches the package once). Without npm the test is skipped (failed
// with STREAMKIT_REQUIRE_PEERS=1).
func VegaFile(t testing.TB, name string) string {
	t.Helper()
	root := Root(t)
	if p := filepath.Join(root, "codec", "formats", "testdata", "vega", name); fileExists(p) {
		return p
	}
	cache := filepath.Join(root, ".cache", "vega-datasets-3.2.1")
	p := filepath.Join(cache, "data", name)
	if fileExists(p) {
		return p
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		missing(t, "npm (to fetch "+VegaVersion+")")
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(npm, "pack", VegaVersion, "--silent", "--pack-destination", cache)
	if out, err := cmd.CombinedOutput(); err != nil {
		missing(t, fmt.Sprintf("npm pack %s: %v: %s", VegaVersion, err, out))
	}
	if err := untarData(filepath.Join(cache, "vega-datasets-3.2.1.tgz"), cache); err != nil {
		t.Fatal(err)
	}
	if !fileExists(p) {
		t.Fatalf("%s not in %s", name, VegaVersion)
	}
	return p
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// untarData extracts package/data/* of an npm tarball into dir/data.
func untarData(tgz, dir string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return err
	}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(h.Name, "package/")
		if !strings.HasPrefix(name, "data/") || strings.Contains(name, "..") || h.Typeflag != tar.TypeReg {
			continue
		}
		tmp := filepath.Join(dir, name+".tmp")
		out, err := os.Create(tmp)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, tr); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
}

// RunPython runs a Python script with the venv interpreter py and returns its stdout; a
// failure fails t with the script's stderr. A script that ends normally leaves through
// os._exit(0) after flushing: delta-rs and pyarrow threads can abort the interpreter's
// shutdown ("terminate called without an active exception", delta-io/delta-rs#2184) after the
// work is done. A raised exception still exits 1 with its traceback.
func RunPython(t testing.TB, py, script string, args ...string) []byte {
	t.Helper()
	script += "\nimport os as _os, sys as _sys\n_sys.stdout.flush()\n_sys.stderr.flush()\n_os._exit(0)\n"
	cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("python: %v\n%s", err, stderr)
	}
	return out
}

// ColStats are the per-column statistics compared with DuckDB.
type ColStats struct {
	Count    int64    `json:"count"` // non-null values
	Sum      *float64 `json:"sum"`   // numeric columns
	Distinct int64    `json:"distinct"`
}

// DuckStats asks DuckDB for the row count and the ColStats of cols; from is a DuckDB table
// expression over the file (read_csv('…'), read_parquet('…') …), or "arrow" to read an Arrow
// IPC file at path through pyarrow.
func DuckStats(t testing.TB, py, path, from string, cols []string) (int64, map[string]ColStats) {
	t.Helper()
	colsJSON, _ := json.Marshal(cols)
	out := RunPython(t, py, `
import sys, json, duckdb
path, frm, cols = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
con = duckdb.connect()
con.sql("set enable_progress_bar = false")  # a slow query would print its bar to stdout
if frm == "arrow":
    import pyarrow.ipc as ipc
    tbl = ipc.open_file(path).read_all()
    con.register("t", tbl)
    frm = "t"
res = {"rows": con.sql(f"select count(*) from {frm}").fetchone()[0], "cols": {}}
for c in cols:
    q = '"' + c.replace('"', '""') + '"'
    typ = con.sql(f"select typeof({q}) from {frm} limit 1").fetchone()[0]
    num = any(k in typ for k in ("INT", "DOUBLE", "FLOAT", "DECIMAL"))
    n, d, s = con.sql(f"select count({q}), count(distinct {q}), {'sum(' + q + ')::double' if num else 'null'} from {frm}").fetchone()
    res["cols"][c] = {"count": n, "distinct": d, "sum": s}
print(json.dumps(res))
`, path, from, string(colsJSON))
	var res struct {
		Rows int64               `json:"rows"`
		Cols map[string]ColStats `json:"cols"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("duckdb output %s: %v", out, err)
	}
	return res.Rows, res.Cols
}
