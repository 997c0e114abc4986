package filter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/arrowtest"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: arrow.NewMetadata([]string{"comment"}, []string{"who"})},
}, func() *arrow.Metadata {
	m := arrow.NewMetadata([]string{"owner", codec.SchemaKey, codec.SchemaEventTime}, []string{"team-a", "id", "name"})
	return &m
}())

// stream encodes items as an IPC stream: "1 2 null 4" is a data batch of ids (name "n<id>"),
// "p=orders/3 1 2" a batch tagged with its source partition, "|n" barrier n, "@<sec>" a
// watermark; it ends with end=pause.
func stream(t *testing.T, items ...string) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	var buf bytes.Buffer
	w := codec.NewWriter(&buf, schema, mem)
	for _, it := range items {
		switch {
		case strings.HasPrefix(it, "|"):
			var n uint64
			fmt.Sscanf(it, "|%d", &n)
			w.WriteControl(codec.BarrierControl(n))
			continue
		case strings.HasPrefix(it, "@"):
			var s int64
			fmt.Sscanf(it, "@%d", &s)
			w.WriteControl(codec.WatermarkControl(time.Unix(s, 0).UTC()))
			continue
		}
		b := array.NewRecordBuilder(mem, schema)
		part := ""
		for _, v := range strings.Fields(it) {
			if p, ok := strings.CutPrefix(v, "p="); ok {
				part = p
				continue
			}
			if v == "null" {
				b.Field(0).AppendNull()
				b.Field(1).AppendNull()
				continue
			}
			var id int64
			fmt.Sscanf(v, "%d", &id)
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("n%d", id))
		}
		rec := b.NewRecordBatch()
		if part != "" {
			rec = codec.WithPartition(rec, part)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		b.Release()
	}
	w.WriteControl(codec.EndControl(codec.Pause))
	w.Close()
	return buf.Bytes()
}

// run runs filter over in and returns the output schema and the output as one item per
// message: the ids of a batch ("p=orders/3 1 2" when it is tagged), "|n", "@sec", "end".
func run(t *testing.T, cfg Config, ckpt string, in []byte) (*arrow.Schema, []string, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer arrowtest.AssertFreed(t, mem)
	f, err := New(cfg)
	if err != nil {
		return nil, nil, err
	}
	var out bytes.Buffer
	err = stage.RunOperator(context.Background(), stage.Options{Tool: "filter", Checkpoint: ckpt, Stdin: bytes.NewReader(in),
		Stdout: &out, Stderr: io.Discard, NoSignals: true, Progress: stage.ProgressOff, Mem: mem,
		StateOptions: map[string]string{"dropped-output": cfg.DroppedOutput}}, f)
	if err != nil {
		return nil, nil, err
	}
	var got []string
	sch := arrowtest.EachMessage(t, &out, func(m codec.Message) {
		if c := m.Control; c != nil {
			switch c.Kind {
			case codec.Barrier:
				got = append(got, fmt.Sprintf("|%d", c.Epoch))
			case codec.Watermark:
				got = append(got, fmt.Sprintf("@%d", c.Watermark.Unix()))
			case codec.End:
				got = append(got, "end")
			}
			return
		}
		got = append(got, ids(m.Batch))
	})
	return sch, got, nil
}

func ids(rec arrow.RecordBatch) string {
	var s []string
	if p, ok := codec.BatchPartition(rec); ok {
		s = append(s, "p="+p)
	}
	col := rec.Column(0).(*array.Int64)
	for i := range col.Len() {
		if col.IsNull(i) {
			s = append(s, "null")
		} else {
			s = append(s, fmt.Sprint(col.Value(i)))
		}
	}
	return strings.Join(s, " ")
}

func TestFilterKeepsTrueRowsAndPassesControls(t *testing.T) {
	in := stream(t, "1 2 3 null 5", "@100", "p=orders/3 4 6 7", "|1", "1 3", "8 9", "|2")
	sch, got, err := run(t, Config{Predicate: "id % 2 = 0 OR id > 6"}, "", in)
	if err != nil {
		t.Fatal(err)
	}
	// NULL drops the row (null % 2 = 0 is NULL); a batch without a kept row emits nothing;
	// the partition tag stays on the kept rows.
	want := "[2 @100 p=orders/3 4 6 7 |1 8 9 |2 end]"
	if fmt.Sprint(got) != want {
		t.Errorf("got %v, want %s", got, want)
	}
	if !sch.Equal(schema) || !sch.Metadata().Equal(schema.Metadata()) || !sch.Field(1).Metadata.Equal(schema.Field(1).Metadata) {
		t.Errorf("output schema %v, want the input's %v", sch, schema)
	}
}

// A NULL predicate keeps no row, as in Spark (where NULL).
func TestNullPredicate(t *testing.T) {
	dir := t.TempDir()
	side := filepath.Join(dir, "dropped.ndjson")
	for _, pred := range []string{"NULL", "CAST(NULL AS BOOLEAN)", "id = NULL"} {
		_, got, err := run(t, Config{Predicate: pred, DroppedOutput: side}, "", stream(t, "1 2", "|1", "3"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "[|1 end]"; fmt.Sprint(got) != want {
			t.Errorf("%s: got %v, want %s", pred, got, want)
		}
	}
	if got, want := droppedIDs(t, side), "1 2 3 1 2 3 1 2 3"; got != want {
		t.Errorf("dropped %q, want %q", got, want)
	}
}

func TestFilterErrors(t *testing.T) {
	// a predicate that does not parse: before any input
	_, err := New(Config{Predicate: "id >"})
	if !errors.As(err, new(*stage.UsageError)) || !strings.Contains(err.Error(), "expected an expression, found end of expression\n  id >\n      ^") {
		t.Errorf("parse error: %v (%T), want a usage error with a caret", err, err)
	}
	for _, c := range []struct {
		pred, msg string
		code      int
	}{
		{"idd > 1", "unknown column `idd` (did you mean `id`?)", stage.ExitUsage},
		{"lowr(name) = 'a'", "unknown function lowr", stage.ExitUsage},
		{"id + 1", "a filter condition must be boolean", stage.ExitUsage},
		{"10 / (id - 3) > 1", "[DIVIDE_BY_ZERO] division by zero in / (divide) at orders/3, epoch 2, row 1", stage.ExitError},
		{"CAST(name AS INT) > 1", "[CAST_INVALID_INPUT]", stage.ExitError},
	} {
		_, _, err := run(t, Config{Predicate: c.pred}, "", stream(t, "1 2", "|1", "p=orders/3 2 3 4", "|2"))
		if err == nil || !strings.Contains(err.Error(), c.msg) || stage.ExitCode(err) != c.code {
			t.Errorf("%s: got %v (exit %d), want %q (exit %d)", c.pred, err, stage.ExitCode(err), c.msg, c.code)
		}
	}
}

// --dropped-output with a checkpoint holds every dropped row of the committed epochs exactly
// once across a restart that replays an uncommitted epoch.
func TestDroppedOutputExactlyOncePerEpoch(t *testing.T) {
	for _, ext := range []string{".ndjson", ".arrow"} {
		t.Run(ext, func(t *testing.T) {
			dir := t.TempDir()
			ckpt := filepath.Join(dir, "ckpt")
			side := filepath.Join(dir, "dropped"+ext)
			cfg := Config{Predicate: "id > 2", DroppedOutput: side}
			// run 1: epochs 1 and 2; only epoch 1 gets committed by the (imagined) sink.
			if _, _, err := run(t, cfg, ckpt, stream(t, "1 3 null", "|1", "2 4", "|2")); err != nil {
				t.Fatal(err)
			}
			if err := state.WriteCommit(ckpt, 1, "test"); err != nil {
				t.Fatal(err)
			}
			// run 2 replays epoch 2 and reads epoch 3.
			_, got, err := run(t, cfg, ckpt, stream(t, "2 4", "|2", "0 5", "|3"))
			if err != nil {
				t.Fatal(err)
			}
			if want := "[4 |2 5 |3 end]"; fmt.Sprint(got) != want {
				t.Errorf("output %v, want %s", got, want)
			}
			if got, want := droppedIDs(t, side), "1 null 2 0"; got != want {
				t.Errorf("dropped rows %q, want %q (each once)", got, want)
			}
		})
	}
}

// droppedIDs reads the ids of a side output file.
func droppedIDs(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if strings.HasSuffix(path, ".ndjson") {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			v, _, _ := strings.Cut(strings.TrimPrefix(line, `{"id":`), ",")
			out = append(out, v)
		}
		return strings.Join(out, " ")
	}
	arrowtest.EachMessage(t, bytes.NewReader(b), func(m codec.Message) {
		if m.Batch != nil {
			out = append(out, ids(m.Batch))
		}
	})
	return strings.Join(out, " ")
}
