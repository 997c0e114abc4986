package expect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

var rowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// rows builds a batch of rowSchema from "id,amount" pairs; "-" is null.
func rows(pairs ...string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.NewGoAllocator(), rowSchema)
	defer b.Release()
	for _, p := range pairs {
		f := strings.Split(p, ",")
		for c, v := range f {
			ib := b.Field(c).(*array.Int64Builder)
			if v == "-" {
				ib.AppendNull()
				continue
			}
			var n int64
			fmt.Sscan(v, &n)
			ib.Append(n)
		}
	}
	return b.NewRecordBatch()
}

// stream encodes batches and barriers ("|n") as an IPC stream ending with end=pause.
func stream(t *testing.T, items ...any) []byte {
	var buf bytes.Buffer
	w := codec.NewWriter(&buf, rowSchema, memory.NewGoAllocator())
	for _, it := range items {
		var err error
		switch it := it.(type) {
		case uint64:
			err = w.WriteControl(codec.BarrierControl(it))
		case arrow.RecordBatch:
			err = w.Write(it)
			it.Release()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteControl(codec.EndControl(codec.Pause)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustExpectations(t *testing.T, specs ...string) []Expectation {
	var es []Expectation
	for _, s := range specs {
		a, v, _ := strings.Cut(s, " ")
		e, err := ParseExpectation(Action(a), v)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return es
}

// run runs expect over in and returns its output rows ("id,amount" and "|n" per barrier) and
// the operator.
func run(t *testing.T, cfg Config, ckpt string, in []byte) ([]string, *Expect, error) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	x, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = stage.RunOperator(context.Background(), stage.Options{Tool: "expect", Checkpoint: ckpt, Stdin: bytes.NewReader(in),
		Stdout: &out, Stderr: io.Discard, NoSignals: true, Progress: stage.ProgressOff, Mem: mem}, x)
	if err != nil {
		return nil, x, err
	}
	rd, rerr := codec.NewReader(&out, memory.NewGoAllocator())
	if rerr != nil {
		t.Fatal(rerr)
	}
	defer rd.Release()
	var got []string
	for {
		m, err := rd.Next()
		if err == io.EOF {
			return got, x, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Control != nil {
			if m.Control.Kind == codec.Barrier {
				got = append(got, fmt.Sprintf("|%d", m.Control.Epoch))
			}
			continue
		}
		for r := 0; r < int(m.Batch.NumRows()); r++ {
			got = append(got, m.Batch.Column(0).ValueStr(r)+","+m.Batch.Column(1).ValueStr(r))
		}
		m.Batch.Release()
	}
}

func counts(q DataQuality) string {
	var parts []string
	for _, m := range q.Expectations {
		parts = append(parts, fmt.Sprintf("%s %d/%d", m.Name, m.PassedRecords, m.FailedRecords))
	}
	return fmt.Sprintf("%s dropped %d", strings.Join(parts, " "), q.DroppedRecords)
}

// TestDropCountRestore: rows failing a drop expectation are dropped and written to
// --dropped-output with the names they failed; every expectation counts every row (NULL
// passes); the counters of the committed epoch survive a restart, and an epoch replayed after
// it is counted once.
func TestDropCountRestore(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ck")
	cfg := Config{Dataset: "orders", DroppedOutput: filepath.Join(dir, "dropped.arrow"),
		Expectations: mustExpectations(t, "warn has_id: id IS NOT NULL", "drop amount_ok: amount >= 0", "drop id_pos: id > 0", "warn nothing: NULL")}
	in := stream(t, rows("1,10", "-,5", "-3,-1", "4,-"), uint64(1), rows("5,-2", "6,6"), uint64(2))
	got, x, err := run(t, cfg, ckpt, in)
	if err != nil {
		t.Fatal(err)
	}
	want := "1,10 (null),5 4,(null) |1 6,6 |2"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("output %s, want %s", g, want)
	}
	if g, w := counts(x.report(false)), "has_id 5/1 amount_ok 4/2 id_pos 5/1 nothing 6/0 dropped 2"; g != w {
		t.Errorf("totals %s, want %s", g, w)
	}
	if g, w := counts(x.last.Load().DataQuality), "has_id 2/0 amount_ok 1/1 id_pos 2/0 nothing 2/0 dropped 1"; g != w {
		t.Errorf("epoch 2: %s, want %s", g, w)
	}
	b, _ := json.Marshal(x.ProgressJSON())
	for _, w := range []string{`"dropped_records":2`, `{"name":"has_id","dataset":"orders","action":"warn","passed_records":5,"failed_records":1}`, `"last_epoch":{"epoch":2`} {
		if !bytes.Contains(b, []byte(w)) {
			t.Errorf("progress JSON %s lacks %s", b, w)
		}
	}
	if g, w := x.ProgressText(), "expect has_id failed 1, amount_ok failed 2, id_pos failed 1, nothing failed 0 (dropped 2)"; g != w {
		t.Errorf("status line %q, want %q", g, w)
	}
	if g, w := droppedRows(t, cfg.DroppedOutput), `-3,-1,["amount_ok","id_pos"] 5,-2,["amount_ok"]`; g != w {
		t.Errorf("dropped output %s, want %s", g, w)
	}

	// A restart after epoch 2 (committed by hand, as a sink would) with epoch 3 and a replay
	// of nothing: the totals go on from epoch 2's.
	writeCommit(t, ckpt, 2)
	os.Remove(cfg.DroppedOutput) // resumed from its recorded size: must exist
	if _, _, err := run(t, cfg, ckpt, stream(t, rows("7,7"), uint64(3))); err == nil || !strings.Contains(err.Error(), "resume") {
		t.Fatalf("restart without the dropped-output file: %v, want a resume error", err)
	}
	cfg.DroppedOutput = ""
	_, x, err = run(t, cfg, ckpt, stream(t, rows("7,7", "8,-8"), uint64(3)))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := counts(x.report(false)), "has_id 7/1 amount_ok 5/3 id_pos 7/1 nothing 8/0 dropped 3"; g != w {
		t.Errorf("after a restart from epoch 2: %s, want %s", g, w)
	}
	// Epoch 3 was not committed: a restart replays it and counts it once.
	_, x, err = run(t, cfg, ckpt, stream(t, rows("7,7", "8,-8"), uint64(3)))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := counts(x.report(false)), "has_id 7/1 amount_ok 5/3 id_pos 7/1 nothing 8/0 dropped 3"; g != w {
		t.Errorf("after replaying epoch 3: %s, want %s", g, w)
	}
	// Other expectations are refused.
	cfg.Expectations = mustExpectations(t, "warn has_id: id > 0")
	if _, _, err = run(t, cfg, ckpt, stream(t, uint64(3))); err == nil || stage.ExitCode(err) != stage.ExitUsage || !strings.Contains(err.Error(), "expectations:") {
		t.Fatalf("restart with other expectations: %v, want a usage error", err)
	}
}

// writeCommit writes the commit marker of epoch n into the stage directory, as a sink does.
func writeCommit(t *testing.T, dir string, n uint64) {
	if err := state.WriteCommit(dir, n, "test"); err != nil {
		t.Fatal(err)
	}
}

// droppedRows reads a --dropped-output Arrow IPC file as "id,amount,names" rows.
func droppedRows(t *testing.T, path string) string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := codec.NewReader(f, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	var out []string
	for {
		m, err := rd.Next()
		if err == io.EOF {
			return strings.Join(out, " ")
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Batch == nil {
			continue
		}
		for r := 0; r < int(m.Batch.NumRows()); r++ {
			names, _ := json.Marshal(m.Batch.Column(2).GetOneForMarshal(r))
			out = append(out, m.Batch.Column(0).ValueStr(r)+","+m.Batch.Column(1).ValueStr(r)+","+string(names))
		}
		m.Batch.Release()
	}
}

// TestFailNamesRowAndValues: --expect-or-fail fails at the earliest violating row of the
// batch, naming the expectation, the row's position (here: epoch and row index, as the input
// has no position columns) and the referenced columns' values; nothing of the batch is
// emitted, and the barrier of its epoch is never forwarded.
func TestFailNamesRowAndValues(t *testing.T) {
	cfg := Config{Expectations: mustExpectations(t, "fail late: amount < 100", "fail pos: id > 0 OR amount IS NULL")}
	_, _, err := run(t, cfg, "", stream(t, rows("1,1"), uint64(1), rows("2,2", "-3,5", "4,200"), uint64(2)))
	var fe *FailError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v, want a FailError", err)
	}
	if fe.Name != "pos" || fe.Pos != "epoch 2, row 1" || strings.Join(fe.Values, " ") != "id=-3 amount=5" || fe.Epoch != 2 {
		t.Errorf("FailError %+v", fe)
	}
	if stage.ExitCode(err) != stage.ExitError {
		t.Errorf("exit code %d", stage.ExitCode(err))
	}
	if !strings.Contains(err.Error(), "failing before epoch 2 commits") {
		t.Errorf("message %q", err)
	}
}

// TestParseExpectation: the forms of 'NAME: PREDICATE' accepted and refused.
func TestParseExpectation(t *testing.T) {
	for _, c := range []struct {
		in, name, pred, err string
	}{
		{"valid_id: id > 0", "valid_id", "id > 0", ""},
		{"  valid id.v-2 :ts > TIMESTAMP '2024-01-01 00:00:00'", "valid id.v-2", "ts > TIMESTAMP '2024-01-01 00:00:00'", ""},
		{"id > 0", "", "", "want 'NAME: PREDICATE'"},
		{"ts > TIMESTAMP '2024-01-01 00:00:00'", "", "", "want 'NAME: PREDICATE'"},
		{": id > 0", "", "", "want 'NAME: PREDICATE'"},
		{"x:", "", "", "has no condition"},
		{"x: id >", "", "", "syntax error"},
	} {
		e, err := ParseExpectation(Warn, c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || stage.ExitCode(err) != stage.ExitUsage {
				t.Errorf("%q: %v, want a usage error with %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || e.Name != c.name || e.Predicate != c.pred {
			t.Errorf("%q: %+v, %v", c.in, e, err)
		}
	}
	if err := checkNames(mustExpectations(t, "warn a: x", "drop A: y")); err == nil || !strings.Contains(err.Error(), "unique") {
		t.Errorf("duplicate names: %v", err)
	}
}

// TestDroppedOutputBeforeFirstCommit: a run that crashed before any epoch committed appended
// dropped rows; the restart replays the epochs and cuts the file back to what it held when the
// checkpoint first opened it (rows of an earlier run without a checkpoint stay), so each row
// is in it once.
func TestDroppedOutputBeforeFirstCommit(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ck")
	side := filepath.Join(dir, "dropped.ndjson")
	if err := os.WriteFile(side, []byte("{\"earlier\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{DroppedOutput: side, Expectations: mustExpectations(t, "drop amount_ok: amount >= 0")}
	in := func() []byte { return stream(t, rows("1,-1", "2,2"), uint64(1), rows("3,-3"), uint64(2)) }
	for range 2 { // no sink commits: both runs start from nothing
		if _, _, err := run(t, cfg, ckpt, in()); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(side)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"earlier\":1}\n" +
		`{"id":1,"amount":-1,"_failed_expectations":["amount_ok"]}` + "\n" +
		`{"id":3,"amount":-3,"_failed_expectations":["amount_ok"]}` + "\n"
	if string(b) != want {
		t.Fatalf("dropped output after a rerun from nothing:\n%s\nwant\n%s", b, want)
	}
	// Epoch 1 committed: the next run resumes from its recorded size.
	writeCommit(t, ckpt, 1)
	if _, _, err := run(t, cfg, ckpt, stream(t, rows("3,-3"), uint64(2))); err != nil {
		t.Fatal(err)
	}
	if b, _ = os.ReadFile(side); string(b) != want {
		t.Fatalf("dropped output after a restart from epoch 1:\n%s\nwant\n%s", b, want)
	}
}
