package interop

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestNullKeyForms runs key columns holding null in every physical form through the tools
// (issue #17 item 5): pyarrow (interop/testdata/nullkeys.py) writes the same 400 rows with the
// key s plain, dictionary-encoded (a dictionary per batch; a null is a null index or a null
// slot; the first batches the issue's: ["x", null] index 1, then [""] index 0), run-end encoded
// and string_view. Null must be one key in all of them and differ from "": DuckDB over the
// same input (decoded by pyarrow) is the oracle for dedup's first row per key (also through
// keyby --shards 3, which must route both nulls to one shard), window's GROUP BY hour, s,
// window's count(s) and count_distinct(s) GROUP BY hour, p, the keys state-dump shows, and the Delta tables write-delta makes of those outputs (DuckDB's
// DISTINCT and GROUP BY over delta_scan), of the input partitioned by a dictionary column
// with null slots (partition values and null counts in the log), and of a backfill with
// --dedup-cols s from the dictionary stream.
func TestNullKeyForms(t *testing.T) {
	p := needPeers(t)
	dir := t.TempDir()
	script := filepath.Join(filepath.Dir(p.arrowgen), "nullkeys.py")
	if out, err := exec.Command(p.python, script, "gen", dir).CombinedOutput(); err != nil {
		t.Fatalf("nullkeys.py gen: %v\n%s", err, out)
	}
	in := func(form string) string { return filepath.Join(dir, form+".arrow") }
	out := func(name string) string { return filepath.Join(dir, name) }
	window := []string{"window", "tumbling", "--size", "1h", "--time", "ts", "--key", "s", "--agg", "count"}
	var checks [][]string // for nullkeys.py check, run once at the end (one DuckDB start)
	oracle := func(args ...string) { checks = append(checks, args) }

	// dedup: the input keeps the null row and the "" row.
	toFile(t, in("dict"), out("dedup.arrow"), p.sk("dedup", "--key", "s"))
	toFile(t, in("dict"), out("keyby-dedup.arrow"), p.sk("keyby", "s", "--shards", "3", "--", "dedup"))
	toFile(t, in("plain"), out("plain-dedup.arrow"), p.sk("dedup", "--key", "s"))
	oracle("dedup", in("dict"), out("dedup.arrow"), out("keyby-dedup.arrow"))
	oracle("dedup", in("plain"), out("plain-dedup.arrow"))

	// window: one null group per window in every form.
	for _, form := range []string{"plain", "dict", "ree", "view"} {
		toFile(t, in(form), out("window-"+form+".arrow"), p.sk(window...))
		oracle("window", in(form), out("window-"+form+".arrow"))
	}
	toFile(t, in("dict"), out("keyby-window.arrow"), p.sk(append([]string{"keyby", "s", "--shards", "2", "--"}, window...)...))
	oracle("window", in("dict"), out("keyby-window.arrow"))

	// window aggregates: a null slot is a null value (count(s) and count_distinct(s) skip
	// it), and a key p with null slots and null indices.
	for _, form := range []string{"dict", "slot", "view"} {
		toFile(t, in(form), out("aggs-"+form+".arrow"), p.sk("window", "tumbling", "--size", "1h", "--time", "ts", "--key", "p",
			"--agg", "count, count(s), count_distinct(s)"))
		oracle("aggs", in(form), out("aggs-"+form+".arrow"))
	}

	// state-dump: a null held in a dictionary slot is the key null, and --key s= (the key "")
	// matches only "".
	for _, form := range []string{"slot", "dict"} {
		ck := out("ck-" + form)
		toFile(t, in(form), os.DevNull, p.sk("dedup", "--key", "s", "--checkpoint", filepath.Join(ck, "dedup")), p.sk("print"))
		toFile(t, "", out("keys-"+form+".json"), p.sk("state-dump", ck, "--stage", "dedup", "--format", "json"))
		oracle("keys", in(form), out("keys-"+form+".json"))
		toFile(t, "", out("empty-"+form+".json"), p.sk("state-dump", ck, "--stage", "dedup", "--format", "json", "--key", "s="))
		b, err := os.ReadFile(out("empty-" + form + ".json"))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"slot": "", "dict": `{"s":"","first_seen":null}` + "\n"}[form]
		if string(b) != want {
			t.Errorf("%s: state-dump --key s=: %q, want %q", form, b, want)
		}
	}

	// write-delta: the dedup and window outputs, and the input partitioned by p and v.p.
	toFile(t, in("dict"), os.DevNull, p.sk("dedup", "--key", "s"), p.sk("write-delta", out("t-dedup")))
	oracle("delta-dedup", in("dict"), out("t-dedup"))
	toFile(t, in("dict"), os.DevNull, p.sk(window...), p.sk("write-delta", out("t-window")))
	oracle("delta-window", in("dict"), out("t-window"))
	toFile(t, in("dict"), os.DevNull, p.sk("write-delta", out("t-part"), "--partition-by", "p,v.p"))
	oracle("delta-partition", in("dict"), out("t-part"))
	// backfill --dedup-cols s into a table holding slot.arrow's keys (null, "x", "y"): of the
	// dictionary stream only the first "" row is new.
	toFile(t, in("slot"), os.DevNull, p.sk("dedup", "--key", "s"), p.sk("write-delta", out("t-backfill")))
	toFile(t, "", os.DevNull, p.sk("backfill", "--from", in("dict"), "--format", "arrows", "--to", out("t-backfill"), "--flow", "bf", "--dedup-cols", "s"))
	oracle("delta-backfill", out("t-backfill"), in("slot"), in("dict"))
	runChecks(t, p, script, checks)
}

// toFile runs argvs as a pipeline reading the file from (none: empty input) and writes its
// output to the file to; every process must exit 0.
func toFile(t *testing.T, from, to string, argvs ...[]string) {
	t.Helper()
	var stdin io.Reader
	if from != "" {
		f, err := os.Open(from)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		stdin = f
	}
	got, exits := run(t, stdin, argvs...)
	wantCodes(t, exits, make([]int, len(argvs))...)
	if err := os.WriteFile(to, got, 0o644); err != nil {
		t.Fatal(err)
	}
}

// runChecks runs the checks of nullkeys.py in one process and fails t for each that does not
// report ok.
func runChecks(t *testing.T, p peers, script string, checks [][]string) {
	t.Helper()
	plan, err := json.Marshal(checks)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p.python, script, "check", string(plan))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("nullkeys.py check: %v\n%s", err, stderr.Bytes())
	}
	var res []json.RawMessage
	if err := json.Unmarshal(b, &res); err != nil || len(res) != len(checks) {
		t.Fatalf("nullkeys.py check: %d results for %d checks (%v): %s", len(res), len(checks), err, b)
	}
	for i, r := range res {
		var ok struct {
			OK bool `json:"ok"`
		}
		if err := json.Unmarshal(r, &ok); err != nil {
			t.Fatalf("nullkeys.py check %v: %v: %s", checks[i], err, r)
		}
		name := checks[i][0]
		for _, a := range checks[i][1:] {
			name += " " + filepath.Base(a)
		}
		if !ok.OK {
			t.Errorf("%s: %s", name, r)
		} else {
			t.Logf("%s: %s", name, r)
		}
	}
}
