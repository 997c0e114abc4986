package readfiles_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

// TestNotUTF8 (issue #17 item 8): CSV and NDJSON files with text that is not valid UTF-8 (a
// Latin-1 CSV, a JSON string with stray bytes). read-files used to rewrite it with U+FFFD, with
// _rescued_data null, nothing in --bad-records and no warning. Now every field's bytes come
// back exactly (the column, or base64 under <field>_base64 in _rescued_data), and each file
// gets one warning with its row count. Oracles on the same files: DuckDB reading the CSV as
// Latin-1 (bytes = code points), Python's json with surrogateescape for the NDJSON.
func TestNotUTF8(t *testing.T) {
	py := peertest.Python(t)
	dir := t.TempDir()
	csvData := "id,name\n1,ok\n2,bad\xff\xfeutf8\n3,caf\xe9\n4,plain\n"
	jsonData := "{\"id\":5,\"name\":\"bad\xff\xfeutf8\"}\n{\"id\":6,\"name\":\"fine\"}\n{\"id\":7,\"name\":\"x\\ny\xc3\"}\n"
	for name, data := range map[string]string{"a.csv": csvData, "b.ndjson": jsonData} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The oracles: id → name's bytes (base64, so JSON carries them).
	want := map[string]string{}
	out := peertest.RunPython(t, py, `
import sys, json, base64, duckdb
d = sys.argv[1]
out = {}
for i, n in duckdb.sql("select id, name from read_csv('"+d+"/a.csv', header=true, encoding='latin-1', all_varchar=true)").fetchall():
    out[i] = base64.b64encode(n.encode('latin-1')).decode()
for line in open(d+"/b.ndjson", "rb"):
    r = json.loads(line.decode('utf-8', 'surrogateescape'))
    out[str(r["id"])] = base64.b64encode(r["name"].encode('utf-8', 'surrogateescape')).decode()
print(json.dumps(out))
`, dir)
	if err := json.Unmarshal(out, &want); err != nil || len(want) != 7 {
		t.Fatalf("oracle %s: %v", out, err)
	}
	stdout, stderr, code := shell(t, dir, nil, `"$SK" read-files --progress off --stable-after 0 --schema 'id string, name string' a.csv b.ndjson | "$SK" print --format json`)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	got := map[string]string{}
	lines := nonEmptyLines(stdout)
	for _, l := range lines {
		var row struct {
			ID, Name *string
			Rescued  *string `json:"_rescued_data"`
		}
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatal(err)
		}
		switch {
		case row.Name != nil && row.Rescued == nil:
			got[*row.ID] = base64.StdEncoding.EncodeToString([]byte(*row.Name))
		case row.Name == nil && row.Rescued != nil:
			var r map[string]string
			if err := json.Unmarshal([]byte(*row.Rescued), &r); err != nil {
				t.Fatalf("row %s: rescued %q: %v", *row.ID, *row.Rescued, err)
			}
			raw, err := base64.StdEncoding.DecodeString(r["name_base64"])
			if err != nil {
				t.Fatalf("row %s: %v", *row.ID, err)
			}
			if strings.HasSuffix(r["_file"], ".ndjson") { // the verbatim JSON value
				raw = jsonBytes(t, raw)
			}
			got[*row.ID] = base64.StdEncoding.EncodeToString(raw)
		default:
			t.Errorf("row %s: name %v with rescued %v", *row.ID, row.Name, row.Rescued)
		}
	}
	if len(lines) != len(want) {
		t.Errorf("%d rows, the oracles read %d", len(lines), len(want))
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("id %s: name bytes %s, oracle %s", id, got[id], w)
		}
	}
	for _, f := range []string{"a.csv", "b.ndjson"} {
		if n := strings.Count(stderr, "not valid UTF-8"); n != 2 || !strings.Contains(stderr, filepath.Join(dir, f)+" rows=2") {
			t.Errorf("want one warning per file with rows=2 (%s), got %d warnings:\n%s", f, n, stderr)
		}
	}
}

// jsonBytes decodes the JSON string literal lit (quotes included) into its bytes, keeping
// bytes that are not UTF-8 as they are (escapes other than \n, \t, \", \\ are not needed here).
func jsonBytes(t *testing.T, lit []byte) []byte {
	t.Helper()
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		t.Fatalf("not a JSON string: %q", lit)
	}
	r := strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\"`, `"`, `\\`, `\`)
	return []byte(r.Replace(string(lit[1 : len(lit)-1])))
}

// TestNotUTF8Binary (issue #17 item 8): Parquet and Arrow IPC files written by pyarrow whose
// string column holds bytes that are not UTF-8 (pyarrow does not check them when it builds an
// array from buffers). read-files used to pass them on, so the stream's utf8 column failed
// pyarrow's full validation. Now the value is null, its bytes base64 in _rescued_data, and the
// stream validates.
func TestNotUTF8Binary(t *testing.T) {
	py := peertest.Python(t)
	dir := t.TempDir()
	peertest.RunPython(t, py, `
import sys, pyarrow as pa, pyarrow.parquet as pq
d = sys.argv[1]
offs = pa.array([0, 2, 11], pa.int32()).buffers()[1]
s = pa.Array.from_buffers(pa.string(), 2, [None, offs, pa.py_buffer(b"okbad\xff\xfeutf8")])
t = pa.table({"id": pa.array([1, 2]), "s": s})
pq.write_table(t, d + "/u.parquet")
with pa.OSFile(d + "/u.arrow", "wb") as f:
    w = pa.ipc.new_file(f, t.schema); w.write_table(t); w.close()
`, dir)
	for _, f := range []string{"u.parquet", "u.arrow"} {
		_, stderr, code := shell(t, dir, nil, `"$SK" read-files --progress off --stable-after 0 `+f+` > `+f+`.arrows`)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", f, code, stderr)
		}
		out := peertest.RunPython(t, py, `
import sys, json, pyarrow as pa
t = pa.ipc.open_stream(open(sys.argv[1], "rb")).read_all()
t.validate(full=True)
print(json.dumps(t.to_pylist()))
`, filepath.Join(dir, f+".arrows"))
		var rows []struct {
			S       *string
			Rescued *string `json:"_rescued_data"`
		}
		if err := json.Unmarshal(out, &rows); err != nil || len(rows) != 2 {
			t.Fatalf("%s: %s %v", f, out, err)
		}
		if rows[0].S == nil || *rows[0].S != "ok" || rows[1].S != nil || rows[1].Rescued == nil ||
			!strings.Contains(*rows[1].Rescued, `"s_base64":"`+base64.StdEncoding.EncodeToString([]byte("bad\xff\xfeutf8"))+`"`) {
			t.Errorf("%s: %s", f, out)
		}
		if !strings.Contains(stderr, "not valid UTF-8") {
			t.Errorf("%s: no warning:\n%s", f, stderr)
		}
	}
}
