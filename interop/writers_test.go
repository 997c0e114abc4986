package interop

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/codec/textout"
	"github.com/streamkit/streamkit/internal/arrowtest"
	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/peertest"
)

// edgeSchema is the schema of the round-trip rows, as an Avro schema so that every reader
// (read-files, read-kafka json and avro) is given exactly the writer's Arrow types: doubles,
// floats, strings, timestamp_ntz (local-timestamp-micros), nanosecond instants
// (timestamp-nanos), dates, decimals; nested ones only where the format has nesting.
func edgeSchema(nested bool) string {
	fields := []string{
		`{"name":"id","type":"long"}`,
		`{"name":"f64","type":["null","double"]}`,
		`{"name":"f32","type":["null","float"]}`,
		`{"name":"s","type":["null","string"]}`,
		`{"name":"ntz","type":["null",{"type":"long","logicalType":"local-timestamp-micros"}]}`,
		`{"name":"ns","type":["null",{"type":"long","logicalType":"timestamp-nanos"}]}`,
		`{"name":"us","type":["null",{"type":"long","logicalType":"timestamp-micros"}]}`,
		`{"name":"d","type":["null",{"type":"int","logicalType":"date"}]}`,
		`{"name":"dec","type":["null",{"type":"bytes","logicalType":"decimal","precision":38,"scale":10}]}`,
	}
	if nested {
		fields = append(fields,
			`{"name":"st","type":["null",{"type":"record","name":"inner","fields":[{"name":"x","type":["null","double"]},`+
				`{"name":"y","type":["null","float"]},{"name":"t","type":["null",{"type":"long","logicalType":"local-timestamp-micros"}]}]}]}`,
			`{"name":"l","type":["null",{"type":"array","items":["null","double"]}]}`,
			`{"name":"m","type":["null",{"type":"map","values":["null","double"]}]}`,
		)
	}
	return `{"type":"record","name":"edge","fields":[` + strings.Join(fields, ",") + `]}`
}

// edgeInput returns 9 rows of edge values (arrowtest.EdgeRecord: NaN, ±Inf, −0.0, "" and
// null, nine-digit nanoseconds, pre-1970 and year-10000 timestamps; the last row null) with
// id = 0…8, and the schema file the readers get.
func edgeInput(t *testing.T, nested bool) (arrow.RecordBatch, string) {
	t.Helper()
	text := edgeSchema(nested)
	s, err := schema.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	rec := arrowtest.EdgeRecord(mem, s, 9)
	ids := array.NewInt64Builder(mem)
	for i := 0; i < int(rec.NumRows()); i++ {
		ids.Append(int64(i))
	}
	cols := append([]arrow.Array{ids.NewArray()}, rec.Columns()[1:]...)
	out := array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
	t.Cleanup(out.Release)
	path := filepath.Join(t.TempDir(), "edge.avsc")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return out, path
}

// withEventTime returns rec with a column et (timestamp µs, UTC) of us in every row.
func withEventTime(t *testing.T, rec arrow.RecordBatch, us int64) arrow.RecordBatch {
	t.Helper()
	b := array.NewTimestampBuilder(memory.NewGoAllocator(), &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"})
	defer b.Release()
	for i := 0; i < int(rec.NumRows()); i++ {
		b.Append(arrow.Timestamp(us))
	}
	et := b.NewArray()
	defer et.Release()
	fields := append(rec.Schema().Fields(), arrow.Field{Name: "et", Type: et.DataType()})
	out := array.NewRecordBatch(arrow.NewSchema(fields, nil), append(rec.Columns(), et), rec.NumRows())
	t.Cleanup(out.Release)
	return out
}

// sk runs streamkit, failing the test unless it exits 0.
func sk(t *testing.T, stdin []byte, args ...string) []byte {
	t.Helper()
	out, stderr, code := peertest.Run(t, []string{"STREAMKIT_CHECKPOINT="}, stdin, args...)
	if code != 0 {
		t.Fatalf("streamkit %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return out
}

// sameRows checks that got holds every column of want (by name; in got itself or, for
// read-kafka, in its value struct) with the same values row for row, and that nothing went
// to _rescued_data.
func sameRows(t *testing.T, what []byte, want, got arrow.RecordBatch) {
	t.Helper()
	if got.NumRows() != want.NumRows() {
		t.Fatalf("read back %d rows, wrote %d; the written text:\n%s", got.NumRows(), want.NumRows(), what)
	}
	column := func(name string) arrow.Array {
		if idx := got.Schema().FieldIndices(name); len(idx) > 0 {
			return got.Column(idx[0])
		}
		if idx := got.Schema().FieldIndices("value"); len(idx) > 0 {
			if st, ok := got.Column(idx[0]).(*array.Struct); ok {
				if i, ok := st.DataType().(*arrow.StructType).FieldIdx(name); ok {
					return st.Field(i)
				}
			}
		}
		return nil
	}
	for c, f := range want.Schema().Fields() {
		g := column(f.Name)
		if g == nil {
			t.Errorf("column %s not read back (got schema %s)", f.Name, got.Schema())
			continue
		}
		for r := 0; r < int(want.NumRows()); r++ {
			if !arrowtest.SameValue(want.Column(c), g, r, r) {
				w, _ := textout.AppendText(nil, want.Column(c), r)
				gt, _ := textout.AppendText(nil, g, r)
				t.Errorf("column %s row %d: wrote %s, read back %s (null: %v)", f.Name, r, w, gt, g.IsNull(r))
			}
		}
	}
	if resc := column("_rescued_data"); resc != nil {
		for r := 0; r < resc.Len(); r++ {
			if resc.IsValid(r) {
				t.Errorf("row %d: rescued %s", r, resc.ValueStr(r))
			}
		}
	}
	if t.Failed() {
		t.Logf("the written text:\n%s", what)
	}
}

// TestWritersRoundTrip runs every JSON, CSV and Avro writer of streamkit over real pipes (print
// json and csv, dedup --dropped-output and window --late-output .ndjson, write-kafka json and
// avro) and reads what it wrote back with the matching reader (read-files, read-kafka), given
// the writer's schema: every value must come back unchanged (floats bit for bit) and nothing
// may be rescued (issues #17, #25).
// Kafka cases run on kfake and, when it is up, on the real broker.
func TestWritersRoundTrip(t *testing.T) {
	type writerCase struct {
		name   string
		nested bool
		// roundTrip writes the input with the writer and returns what the matching reader
		// read back (a streamkit stream) and the written text for failure messages.
		roundTrip func(t *testing.T, in []byte, avsc, dir string) (read, text []byte)
	}
	files := func(format string, writer []string, reader ...string) func(t *testing.T, in []byte, avsc, dir string) ([]byte, []byte) {
		return func(t *testing.T, in []byte, avsc, dir string) ([]byte, []byte) {
			text := sk(t, in, writer...)
			path := filepath.Join(dir, "out."+format)
			if err := os.WriteFile(path, text, 0o644); err != nil {
				t.Fatal(err)
			}
			return sk(t, nil, append([]string{"read-files", path, "--stable-after", "0", "--schema", "@" + avsc}, reader...)...), text
		}
	}
	kafkaCase := func(real bool, format string) func(t *testing.T, in []byte, avsc, dir string) ([]byte, []byte) {
		return func(t *testing.T, in []byte, avsc, dir string) ([]byte, []byte) {
			var c *kafkatest.Cluster
			if real {
				c = kafkatest.NewReal(t)
			} else {
				c = kafkatest.NewFake(t)
			}
			topic := c.Topic(t, "roundtrip", 1, nil)
			b := strings.Join(c.Brokers, ",")
			args := []string{"write-kafka", "-b", b, "-t", topic, "--key", "none", "--value-format", format}
			if format == "avro" {
				args = append(args, "--value-schema", "@"+avsc)
			}
			sk(t, in, args...)
			var text []byte
			for _, r := range c.Consume(t, topic, false) {
				text = append(append(text, r.Value...), '\n')
			}
			return sk(t, nil, "read-kafka", "-b", b, "-t", topic, "--until", "now", "--end", "final",
				"--value-format", format, "--value-schema", "@"+avsc), text
		}
	}
	cases := []writerCase{
		{"print json", true, files("ndjson", []string{"print", "--format", "json"})},
		{"print csv", false, files("csv", []string{"print", "--format", "csv"})},
		{"print csv null-value", false, files("csv", []string{"print", "--format", "csv", "--null-value", "NULL"}, "--null-value", "NULL")},
		{"dedup dropped-output ndjson", true, func(t *testing.T, in []byte, avsc, dir string) ([]byte, []byte) {
			// The input twice: dedup drops the second copy into the side output.
			rec := arrowtest.ReadStream(t, in)
			side := filepath.Join(dir, "dropped.ndjson")
			sk(t, arrowtest.Stream(t, rec, rec), "dedup", "--key", "id", "--dropped-output", side)
			text, err := os.ReadFile(side)
			if err != nil {
				t.Fatal(err)
			}
			return sk(t, nil, "read-files", side, "--stable-after", "0", "--schema", "@"+avsc), text
		}},
		{"window late-output ndjson", true, func(t *testing.T, in []byte, avsc, dir string) ([]byte, []byte) {
			// One row at 2030 moves the watermark; every row after it (at 2020) is late.
			rec := arrowtest.ReadStream(t, in)
			first, late := withEventTime(t, rec.NewSlice(0, 1), 1_893_456_000_000_000), withEventTime(t, rec, 1_577_836_800_000_000)
			side := filepath.Join(dir, "late.ndjson")
			sk(t, arrowtest.Stream(t, first, late), "window", "tumbling", "--time", "et", "--size", "1h", "--late-output", side)
			text, err := os.ReadFile(side)
			if err != nil {
				t.Fatal(err)
			}
			// The reader's schema also has et (the comparison looks at the input's columns).
			sc, err := os.ReadFile(avsc)
			if err != nil {
				t.Fatal(err)
			}
			sc = append(bytes.TrimSuffix(sc, []byte("]}")), `,{"name":"et","type":{"type":"long","logicalType":"timestamp-micros"}}]}`...)
			return sk(t, nil, "read-files", side, "--stable-after", "0", "--schema", string(sc)), text
		}},
		{"write-kafka json, kfake", true, kafkaCase(false, "json")},
		{"write-kafka avro, kfake", true, kafkaCase(false, "avro")},
		{"write-kafka json, broker", true, kafkaCase(true, "json")},
		{"write-kafka avro, broker", true, kafkaCase(true, "avro")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, avsc := edgeInput(t, tc.nested)
			read, text := tc.roundTrip(t, arrowtest.Stream(t, want), avsc, t.TempDir())
			sameRows(t, text, want, arrowtest.ReadStream(t, read))
		})
	}
}

// TestStateDumpExportRoundTrip: state-dump's json and csv exports of a dedup state read back
// (read-files, with the schema of its arrow export) as the arrow export holds it; the keys are
// edge values (NaN, ±Inf, "" and null, pre-1970 and year-10000 instants).
func TestStateDumpExportRoundTrip(t *testing.T) {
	want, _ := edgeInput(t, false)
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	in := filepath.Join(dir, "in.arrows")
	if err := os.WriteFile(in, arrowtest.Stream(t, want), 0o644); err != nil {
		t.Fatal(err)
	}
	src := sk(t, nil, "read-files", in, "--stable-after", "0", "--checkpoint", filepath.Join(ck, "read-files"))
	dd := sk(t, src, "dedup", "--key", "s,f64,ntz,us", "--checkpoint", filepath.Join(ck, "dedup"))
	sk(t, dd, "print", "--checkpoint", filepath.Join(ck, "print"))
	export := arrowtest.ReadStream(t, sk(t, nil, "state-dump", ck, "--stage", "dedup", "--format", "arrow"))
	if export.NumRows() != want.NumRows() {
		t.Fatalf("state-dump: %d keys, want %d", export.NumRows(), want.NumRows())
	}
	ddl := schema.DDL(export.Schema())
	for _, format := range []string{"json", "csv"} {
		t.Run(format, func(t *testing.T) {
			text := sk(t, nil, "state-dump", ck, "--stage", "dedup", "--format", format)
			path := filepath.Join(t.TempDir(), "state."+format)
			if err := os.WriteFile(path, text, 0o644); err != nil {
				t.Fatal(err)
			}
			sameRows(t, text, export, arrowtest.ReadStream(t, sk(t, nil, "read-files", path, "--stable-after", "0", "--schema", ddl)))
		})
	}
}

// TestBadRecordsRoundTrip: read-files' --bad-records file keeps each unparseable record's text
// exactly (raw), as read-files reads the file back.
func TestBadRecordsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	lines := []string{`{"a": "x,"y"}`, `{"s":"", "t": "line\` + `nbreak"`, `{"ü": NaN}`, `[1,2`}
	src := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(src, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.ndjson")
	sk(t, nil, "read-files", src, "--stable-after", "0", "--schema", "a string", "--bad-records", bad)
	text, _ := os.ReadFile(bad)
	got := arrowtest.ReadStream(t, sk(t, nil, "read-files", bad, "--stable-after", "0", "--schema", "file string, line bigint, offset bigint, reason string, raw string"))
	raw := got.Column(4).(*array.String)
	if raw.Len() != len(lines) {
		t.Fatalf("%d bad records read back, want %d:\n%s", raw.Len(), len(lines), text)
	}
	for i, l := range lines {
		if raw.IsNull(i) || raw.Value(i) != l {
			t.Errorf("bad record %d: raw %q read back, the record was %q", i, raw.ValueStr(i), l)
		}
	}
}

// TestKafkaBadRecordsRoundTrip: read-kafka's --bad-records file keeps each undecodable value's
// text exactly, as read-files reads the file back (kfake).
func TestKafkaBadRecordsRoundTrip(t *testing.T) {
	c := kafkatest.NewFake(t)
	topic := c.Topic(t, "bad", 1, nil)
	values := []string{`{"a": "x,"y"}`, `{"s":"", "t": "line\nbreak"`, `"NaN`, ``}
	for _, v := range values {
		c.Produce(t, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	bad := filepath.Join(t.TempDir(), "bad.ndjson")
	sk(t, nil, "read-kafka", "-b", strings.Join(c.Brokers, ","), "-t", topic, "--until", "now", "--end", "final",
		"--value-format", "json", "--value-schema", "a string", "--bad-records", bad)
	text, _ := os.ReadFile(bad)
	got := arrowtest.ReadStream(t, sk(t, nil, "read-files", bad, "--stable-after", "0", "--schema", "topic string, partition int, offset bigint, reason string, value string"))
	val := got.Column(4)
	if got.NumRows() == 0 || int(got.NumRows()) > len(values) {
		t.Fatalf("%d bad records read back, produced %d values:\n%s", got.NumRows(), len(values), text)
	}
	t.Logf("%d of %d values were bad records", got.NumRows(), len(values))
	for i := 0; i < int(got.NumRows()); i++ {
		off := got.Column(2).(*array.Int64).Value(i)
		if s, _ := textout.AppendText(nil, val, i); val.IsNull(i) || string(s) != values[off] {
			t.Errorf("bad record at offset %d: value %q read back, the record was %q", off, s, values[off])
		}
	}
}

// TestWriteKafkaPreEpochTimestamp: a timestamp before 1970 (a negative Kafka timestamp; -1
// means none) stops write-kafka naming the row, on the real broker as on kfake; with
// --pre-epoch-timestamp now the record is produced with the producer's clock.
func TestWriteKafkaPreEpochTimestamp(t *testing.T) {
	for _, real := range []bool{false, true} {
		name := "kfake"
		if real {
			name = "broker"
		}
		t.Run(name, func(t *testing.T) {
			var c *kafkatest.Cluster
			if real {
				c = kafkatest.NewReal(t)
			} else {
				c = kafkatest.NewFake(t)
			}
			mem := memory.NewGoAllocator()
			s := arrow.NewSchema([]arrow.Field{
				{Name: "key", Type: arrow.BinaryTypes.String, Nullable: true},
				{Name: "value", Type: arrow.BinaryTypes.String, Nullable: true},
				{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
			}, nil)
			b := array.NewRecordBuilder(mem, s)
			defer b.Release()
			b.Field(0).(*array.StringBuilder).AppendValues([]string{"a", "b", "c"}, nil)
			b.Field(1).(*array.StringBuilder).AppendValues([]string{"1", "2", "3"}, nil)
			b.Field(2).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1_000_000, -1, -86_400_000_000}, nil)
			rec := b.NewRecordBatch()
			defer rec.Release()
			in := arrowtest.Stream(t, rec)
			topic := c.Topic(t, "preepoch", 1, nil)
			brokers := strings.Join(c.Brokers, ",")
			_, stderr, code := peertest.Run(t, []string{"STREAMKIT_CHECKPOINT="}, in, "write-kafka", "-b", brokers, "-t", topic)
			if code != 1 || !strings.Contains(stderr, `row 1 (key "b")`) || !strings.Contains(stderr, "1969-12-31T23:59:59.999999Z") ||
				!strings.Contains(stderr, "--pre-epoch-timestamp") {
				t.Fatalf("write-kafka with a timestamp before 1970: exit %d, want 1 naming row 1 and its timestamp:\n%s", code, stderr)
			}
			if got := c.Consume(t, topic, true); len(got) != 0 {
				t.Errorf("%d records produced from the refused batch, want none", len(got))
			}
			start := time.Now().Add(-time.Minute)
			sk(t, in, "write-kafka", "-b", brokers, "-t", topic, "--pre-epoch-timestamp", "now")
			got := c.Consume(t, topic, true)
			if len(got) != 3 {
				t.Fatalf("%d records, want 3", len(got))
			}
			if !got[0].Timestamp.Equal(time.UnixMilli(1000)) {
				t.Errorf("record 0: timestamp %s, want 1970-01-01T00:00:01Z", got[0].Timestamp)
			}
			for _, r := range got[1:] {
				if r.Timestamp.Before(start) {
					t.Errorf("record %s: timestamp %s, want the producer's clock (after %s)", r.Key, r.Timestamp, start)
				}
			}
		})
	}
}

// TestWriteKafkaFarTimestamp: a timestamp after 2262-04-11 (past int64 nanoseconds, which the
// Kafka client encodes record times through) was produced as a wrong, negative Kafka timestamp
// with exit 0 (10000-01-01 in ms became 1816-03-30). Now write-kafka refuses it before
// producing anything, naming the row and the timestamp, in every unit.
func TestWriteKafkaFarTimestamp(t *testing.T) {
	c := kafkatest.NewFake(t)
	mem := memory.NewGoAllocator()
	at := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for unit, v := range map[arrow.TimeUnit]int64{arrow.Second: at.Unix(), arrow.Millisecond: at.UnixMilli(), arrow.Microsecond: at.UnixMicro()} {
		s := arrow.NewSchema([]arrow.Field{
			{Name: "value", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: "timestamp", Type: &arrow.TimestampType{Unit: unit, TimeZone: "UTC"}, Nullable: true},
		}, nil)
		b := array.NewRecordBuilder(mem, s)
		b.Field(0).(*array.StringBuilder).AppendValues([]string{"ok", "far"}, nil)
		b.Field(1).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{arrow.Timestamp(v / 10000), arrow.Timestamp(v)}, nil)
		rec := b.NewRecordBatch()
		b.Release()
		in := arrowtest.Stream(t, rec)
		rec.Release()
		topic := c.Topic(t, "far-"+unit.String(), 1, nil)
		_, stderr, code := peertest.Run(t, []string{"STREAMKIT_CHECKPOINT="}, in, "write-kafka", "-b", strings.Join(c.Brokers, ","), "-t", topic)
		if code != 1 || !strings.Contains(stderr, "row 1") || !strings.Contains(stderr, "+10000-01-01T00:00:00") {
			t.Errorf("%s: exit %d, want 1 naming row 1 and its timestamp:\n%s", unit, code, stderr)
		}
		if got := c.Consume(t, topic, true); len(got) != 0 {
			t.Errorf("%s: %d records produced from the refused batch (first at %s), want none", unit, len(got), got[0].Timestamp)
		}
	}
}
