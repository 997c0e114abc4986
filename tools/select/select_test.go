package selecttool

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/expr"
	"github.com/streamkit/streamkit/internal/arrowtest"
	"github.com/streamkit/streamkit/stage"
)

var userType = arrow.StructOf(
	arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	arrow.Field{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
)

func inSchema(key, eventTime string) *arrow.Schema {
	keys, vals := []string{"owner"}, []string{"team-a"}
	if key != "" {
		keys, vals = append(keys, codec.SchemaKey), append(vals, key)
	}
	if eventTime != "" {
		keys, vals = append(keys, codec.SchemaEventTime), append(vals, eventTime)
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: arrow.NewMetadata([]string{"comment"}, []string{"order id"})},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "user", Type: userType, Nullable: true},
	}, &md)
}

// The declared key and event-time columns follow their columns through the select list.
func TestOutputSchemaFollowsDeclaredColumns(t *testing.T) {
	for _, c := range []struct {
		list, key, eventTime   string
		wantKey, wantEventTime string
		renamed, dropped       int
	}{
		{"*", "id", "ts", "id", "ts", 0, 0},
		{"id, ts, id + 1 AS next", "id", "ts", "id", "ts", 0, 0},
		{"id AS order_id, ts AS t", "id", "ts", "order_id", "t", 2, 0},
		{"id, id AS again", "id", "", "id", "", 0, 0}, // the same name wins
		{"* EXCEPT (ts)", "id", "ts", "id", "", 0, 1},
		{"id + 0 AS id, ts", "id", "ts", "", "ts", 0, 1},     // computed: no longer the same column
		{"user, ts", "user.region,id", "ts", "", "ts", 0, 1}, // one key column gone: the key goes
		{"user, id, ts", "user.region,id", "ts", "user.region,id", "ts", 0, 0},
		{"user.*, ts", "user.region", "ts", "region", "ts", 1, 0},
		{"user AS u, ts", "user.region", "", "u.region", "", 1, 0},
		{"user.region", "user.region", "", "region", "", 1, 0},
	} {
		in := inSchema(c.key, c.eventTime)
		p, err := expr.CompileSelect(c.list, in, expr.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.list, err)
		}
		out, notes := OutputSchema(in, p)
		info := codec.Info(out)
		if got := strings.Join(info.Key, ","); got != c.wantKey || info.EventTime != c.wantEventTime {
			t.Errorf("%q (key %q, event time %q): got key %q, event time %q; want %q, %q", c.list, c.key, c.eventTime, got, info.EventTime, c.wantKey, c.wantEventTime)
		}
		if len(notes.Renamed) != c.renamed || len(notes.Dropped) != c.dropped {
			t.Errorf("%q: notes %+v, want %d renamed, %d dropped", c.list, notes, c.renamed, c.dropped)
		}
		if v, _ := out.Metadata().GetValue("owner"); v != "team-a" {
			t.Errorf("%q: other metadata lost: %v", c.list, out.Metadata())
		}
	}
}

// run runs select over in (batches of ids; "|n" barriers; "p=NAME" tags a batch) and
// returns the output schema, its rows as text and the stderr log.
func run(t *testing.T, list string, in *arrow.Schema, items ...string) (*arrow.Schema, []string, string, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer arrowtest.AssertFreed(t, mem)
	var inBuf bytes.Buffer
	w := codec.NewWriter(&inBuf, in, memory.NewGoAllocator())
	for _, it := range items {
		if n, ok := strings.CutPrefix(it, "|"); ok {
			var e uint64
			fmt.Sscan(n, &e)
			w.WriteControl(codec.BarrierControl(e))
			continue
		}
		b := array.NewRecordBuilder(memory.NewGoAllocator(), in)
		part := ""
		for _, v := range strings.Fields(it) {
			if p, ok := strings.CutPrefix(v, "p="); ok {
				part = p
				continue
			}
			var id int64
			fmt.Sscan(v, &id)
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(id * 1e6))
			sb := b.Field(2).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int64Builder).Append(id * 10)
			sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprintf("r%d", id))
		}
		rec := b.NewRecordBatch()
		b.Release()
		if part != "" {
			rec = codec.WithPartition(rec, part)
		}
		w.Write(rec)
		rec.Release()
	}
	w.WriteControl(codec.EndControl(codec.Final))
	w.Close()
	s, err := New(list)
	if err != nil {
		return nil, nil, "", err
	}
	var out, logs bytes.Buffer
	err = stage.RunOperator(context.Background(), stage.Options{Tool: "select", Stdin: &inBuf, Stdout: &out, Stderr: io.Discard,
		Log: slog.New(slog.NewTextHandler(&logs, nil)), NoSignals: true, Progress: stage.ProgressOff, Mem: mem}, s)
	if err != nil {
		return nil, nil, logs.String(), err
	}
	var rows []string
	sch := arrowtest.EachMessage(t, &out, func(m codec.Message) {
		if m.Control != nil {
			if m.Control.Kind == codec.Barrier {
				rows = append(rows, fmt.Sprintf("|%d", m.Control.Epoch))
			}
			return
		}
		if p, ok := codec.BatchPartition(m.Batch); ok {
			rows = append(rows, "p="+p)
		}
		for i := range int(m.Batch.NumRows()) {
			var cells []string
			for _, c := range m.Batch.Columns() {
				cells = append(cells, c.ValueStr(i))
			}
			rows = append(rows, strings.Join(cells, ","))
		}
	})
	return sch, rows, logs.String(), nil
}

func TestSelectEvaluates(t *testing.T) {
	in := inSchema("id", "ts")
	sch, rows, logs, err := run(t, "id AS order_id, user.region, id * 2 AS twice, upper(user.region) AS R", in, "1 2", "|1", "p=orders/3 3")
	if err != nil {
		t.Fatal(err)
	}
	if want := "[1,r1,2,R1 2,r2,4,R2 |1 p=orders/3 3,r3,6,R3]"; fmt.Sprint(rows) != want {
		t.Errorf("rows %v, want %s", rows, want)
	}
	if got := sch.Field(0).Metadata; !got.Equal(in.Field(0).Metadata) {
		t.Errorf("field metadata of a renamed column: %v, want %v", got, in.Field(0).Metadata)
	}
	info := codec.Info(sch)
	if strings.Join(info.Key, ",") != "order_id" || info.EventTime != "" {
		t.Errorf("key %v, event time %q; want order_id and none", info.Key, info.EventTime)
	}
	if n := strings.Count(logs, "level=WARN"); n != 1 || !strings.Contains(logs, "streamkit.event_time=ts") {
		t.Errorf("want one warning about the event time, got:\n%s", logs)
	}
}

func TestSelectRuntimeErrorNamesTheRow(t *testing.T) {
	_, _, _, err := run(t, "id, 10 div (id - 4) AS x", inSchema("", ""), "1 2", "|1", "p=orders/3 3 4")
	want := "select: [DIVIDE_BY_ZERO] division by zero in div at orders/3, epoch 2, row 1 (in id, 10 div (id - 4) AS x)"
	if err == nil || err.Error() != want || stage.ExitCode(err) != stage.ExitError {
		t.Errorf("got %v (exit %d), want %q (exit 1)", err, stage.ExitCode(err), want)
	}
}
