package readfiles_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linkedin/goavro/v2"
)

// TestAvroSchemaMismatch (issue #17 item 9): an Avro container file whose writer schema cannot
// resolve to --schema (user is a record in the file, BIGINT in --schema) used to turn every row
// into a rescued one and exit 0. Now read-files fails naming the file, the column and both
// types; --on-schema-mismatch rescue keeps that behaviour (user null, its values rescued);
// a column that casts (amount, a string read as DOUBLE) is still read.
func TestAvroSchemaMismatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "orders.avro")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := goavro.NewOCFWriter(goavro.OCFConfig{W: f, Schema: `{"type":"record","name":"Order","fields":[
		{"name":"id","type":"long"},
		{"name":"user","type":{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}},
		{"name":"amount","type":"string"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	var recs []any
	for i, name := range []string{"ann", "bob", "cy"} {
		recs = append(recs, map[string]any{"id": int64(i), "user": map[string]any{"name": name}, "amount": "1.5"})
	}
	if err := w.Append(recs); err != nil {
		t.Fatal(err)
	}
	f.Close()
	const schema = `'id BIGINT, user BIGINT, amount DOUBLE'`
	_, stderr, code := shell(t, dir, nil, `"$SK" read-files --progress off --schema `+schema+` orders.avro > /dev/null`)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a writer schema that does not resolve is an error)\n%s", code, stderr)
	}
	for _, want := range []string{path, "column user", "struct<name: utf8>", "int64", "--on-schema-mismatch rescue"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	out, stderr, code := shell(t, dir, nil, `"$SK" read-files --progress off --schema `+schema+` --on-schema-mismatch rescue orders.avro | "$SK" print --format json`)
	if code != 0 {
		t.Fatalf("--on-schema-mismatch rescue: exit %d\n%s", code, stderr)
	}
	lines := nonEmptyLines(out)
	if len(lines) != len(recs) {
		t.Fatalf("%d rows, want %d:\n%s", len(lines), len(recs), out)
	}
	for i, l := range lines {
		var row struct {
			User    *int64
			Amount  float64
			Rescued string `json:"_rescued_data"`
		}
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatal(err)
		}
		name := recs[i].(map[string]any)["user"].(map[string]any)["name"].(string)
		if row.User != nil || row.Amount != 1.5 || !strings.Contains(row.Rescued, `"user":{"name":"`+name+`"}`) {
			t.Errorf("row %d: %s", i, l)
		}
	}
	if _, stderr, code := shell(t, dir, nil, `"$SK" read-files --on-schema-mismatch skip orders.avro`); code != 2 || !strings.Contains(stderr, "--on-schema-mismatch") {
		t.Errorf("--on-schema-mismatch skip: exit %d\n%s", code, stderr)
	}
}
