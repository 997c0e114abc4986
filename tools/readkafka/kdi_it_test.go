package readkafka_test

// Agreement with kafka-delta-ingest (docs/protocol.md §13): a table kafka-delta-ingest wrote is
// continued by a streamkit group pipeline (read-kafka --consumer-group --progress-table
// --flow F | write-delta), and the other way round, when kafka-delta-ingest's app_id is
// "F-<topic>". TestKDIShapedTable writes kafka-delta-ingest's commits by hand, exactly as its
// source writes them, and runs with the other group tests; TestKDIInterop runs the real
// kafka-delta-ingest binary named by $STREAMKIT_KDI (make interop-kdi builds it) and skips
// without it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/uuid"

	"github.com/streamkit/streamkit/internal/peertest"
)

// kdiSchema is the Delta schema of the rig's rows as kafka-delta-ingest fills it: the JSON
// value's id and, by its transforms "partition: kafka.partition" and "offset: kafka.offset",
// the record's partition and offset, the columns of read-kafka --columns
// 'value.*,partition,offset', with read-kafka's _rescued_data (always null in
// kafka-delta-ingest's rows: no record has such a field).
const kdiSchema = `{"type":"struct","fields":[` +
	`{"name":"id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"partition","type":"integer","nullable":true,"metadata":{}},` +
	`{"name":"offset","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"_rescued_data","type":"string","nullable":true,"metadata":{}}]}`

// kdiCreate writes the table's first commit. kafka-delta-ingest does not create tables (it
// opens an existing one); this is the shape of VERSION_0 in its src/offsets.rs tests.
func kdiCreate(t *testing.T, table string) {
	t.Helper()
	meta, err := json.Marshal(map[string]any{"metaData": map[string]any{
		"id": uuid.NewString(), "format": map[string]any{"provider": "parquet", "options": map[string]string{}},
		"schemaString": kdiSchema, "partitionColumns": []string{}, "configuration": map[string]string{},
		"createdTime": time.Now().UnixMilli(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		`{"commitInfo":{"timestamp":` + fmt.Sprint(time.Now().UnixMilli()) + `,"operation":"CREATE TABLE","operationParameters":{"isManaged":"false","description":null,"partitionBy":"[]","properties":"{}"},"isBlindAppend":true}}`,
		`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`,
		string(meta),
	}
	kdiWriteCommit(t, table, lines)
}

// kdiWriteCommit writes lines as the table's next log version, put-if-absent, and returns it.
func kdiWriteCommit(t *testing.T, table string, lines []string) int64 {
	t.Helper()
	logDir := filepath.Join(table, "_delta_log")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(logDir, "*.json"))
	v := int64(0)
	for _, n := range names {
		var k int64
		if _, err := fmt.Sscanf(filepath.Base(n), "%020d.json", &k); err == nil && k+1 > v {
			v = k + 1
		}
	}
	f, err := os.OpenFile(filepath.Join(logDir, fmt.Sprintf("%020d.json", v)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n")); err != nil {
		t.Fatal(err)
	}
	return v
}

// kdiCommit writes the commit kafka-delta-ingest's IngestProcessor::complete_file makes for
// the rig's records at offsets ranges[p] = [first, last] of each partition p: one Parquet
// file part-00000-<uuid>-c000.snappy.parquet with their rows, and the log lines of
// delta_helpers.rs build_actions and delta-rs's CommitBuilder, in its order: a txn
// {appId: "<app>-<p>", version: last, lastUpdated} per partition (create_txn_action), the
// add, and delta-rs's commitInfo for DeltaOperation::StreamingUpdate. The rig's record at
// (p, o) has id o·parts + p (produce goes round robin).
func kdiCommit(t *testing.T, r *groupRig, app string, ranges map[int32][2]int64) {
	t.Helper()
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "partition", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "offset", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "_rescued_data", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	parts := make([]int32, 0, len(ranges))
	for p := range ranges {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	now := time.Now().UnixMilli()
	var lines []string
	minID, maxID, minOff, maxOff := int64(1<<62), int64(-1), int64(1<<62), int64(-1)
	n := 0
	for _, p := range parts {
		lo, hi := ranges[p][0], ranges[p][1]
		for o := lo; o <= hi; o++ {
			id := o*int64(r.parts) + int64(p)
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.Int32Builder).Append(p)
			b.Field(2).(*array.Int64Builder).Append(o)
			b.Field(3).AppendNull()
			minID, maxID, minOff, maxOff = min(minID, id), max(maxID, id), min(minOff, o), max(maxOff, o)
			n++
		}
		lines = append(lines, fmt.Sprintf(`{"txn":{"appId":"%s-%d","version":%d,"lastUpdated":%d}}`, app, p, hi, now))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	name := "part-00000-" + uuid.NewString() + "-c000.snappy.parquet"
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.table, name), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	stats, _ := json.Marshal(map[string]any{
		"numRecords": n,
		"minValues":  map[string]int64{"id": minID, "partition": int64(parts[0]), "offset": minOff},
		"maxValues":  map[string]int64{"id": maxID, "partition": int64(parts[len(parts)-1]), "offset": maxOff},
		"nullCount":  map[string]int64{"id": 0, "partition": 0, "offset": 0, "_rescued_data": int64(n)},
	})
	add, _ := json.Marshal(map[string]any{"add": map[string]any{
		"path": name, "partitionValues": map[string]string{}, "size": buf.Len(), "modificationTime": now,
		"dataChange": true, "stats": string(stats), "tags": nil, "deletionVector": nil, "baseRowId": nil,
		"defaultRowCommitVersion": nil, "clusteringProvider": nil,
	}})
	lines = append(lines, string(add), fmt.Sprintf(
		`{"commitInfo":{"timestamp":%d,"operation":"STREAMING UPDATE","operationParameters":{"outputMode":"Append","queryId":"%s","epochId":"%d"},"clientVersion":"delta-rs.0.26.2"}}`,
		now, app, now))
	kdiWriteCommit(t, r.table, lines)
}

// kdiResume returns, per partition, the first offset kafka-delta-ingest reads when it is
// assigned the partition of the table (lib.rs reset_state, seek_consumer,
// should_process_offset): with the table's txn version v for "<app>-<p>" (delta-rs's
// get_app_transaction_version; read here by delta-rs's Python binding, a later release than
// the deltalake-core 0.26 kafka-delta-ingest builds with) it seeks to v and skips offsets
// ≤ v, so it reads v + 1; without a txn it starts at auto.offset.reset (earliest: 0 in the
// rig's topics).
func kdiResume(t *testing.T, r *groupRig, app string) map[int32]int64 {
	t.Helper()
	args := []string{r.table}
	for p := int32(0); p < r.parts; p++ {
		args = append(args, fmt.Sprintf("%s-%d", app, p))
	}
	out := peertest.RunPython(t, peertest.Python(t), `
import sys, json
from deltalake import DeltaTable
dt = DeltaTable(sys.argv[1])
print(json.dumps([dt.transaction_version(a) for a in sys.argv[2:]]))
`, args...)
	var vs []*int64
	if err := json.Unmarshal(out, &vs); err != nil {
		t.Fatalf("delta-rs txn versions: %v: %s", err, out)
	}
	next := map[int32]int64{}
	for p, v := range vs {
		next[int32(p)] = 0
		if v != nil {
			next[int32(p)] = *v + 1
		}
	}
	return next
}

// checkTxnShape asserts that every txn action in the table's log has exactly the fields of
// delta-rs's Transaction that kafka-delta-ingest reads (appId, version, lastUpdated) and an
// appId "<app>-<partition>" it looks up: no other appIds, so no epoch-level txn.
func checkTxnShape(t *testing.T, r *groupRig, app string) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(r.table, "_delta_log", "*.json"))
	re := regexp.MustCompile("^" + regexp.QuoteMeta(app) + `-(0|[1-9][0-9]*)$`)
	n := 0
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var a struct {
				Txn map[string]any `json:"txn"`
			}
			if err := json.Unmarshal(line, &a); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if a.Txn == nil {
				continue
			}
			n++
			id, _ := a.Txn["appId"].(string)
			_, isVer := a.Txn["version"].(float64)
			_, isUpd := a.Txn["lastUpdated"].(float64)
			if len(a.Txn) != 3 || !re.MatchString(id) || !isVer || !isUpd {
				t.Errorf("%s: txn %s: want exactly appId %q-<partition>, version and lastUpdated (numbers)", filepath.Base(name), line, app)
			}
		}
	}
	if n == 0 {
		t.Errorf("the table's log holds no txn action")
	}
}

// wantResume asserts that member m's log shows each partition p resumed at from[p] after
// txn from[p] − 1.
func wantResume(t *testing.T, m *member, from map[int32]int64) {
	t.Helper()
	for p, f := range from {
		want := fmt.Sprintf("partition=%d from=%d txn=%d", p, f, f-1)
		if !strings.Contains(m.stderr.String(), want) {
			t.Errorf("member %s did not resume partition %d from the table's txn (want %q in its log):\n%s", m.name, p, want, m.stderr.String())
		}
	}
}

// runUntilNow runs a streamkit member with --until now to its end (exit 0).
func (r *groupRig) runUntilNow(name string) *member {
	r.t.Helper()
	m := r.start(name, "--until now")
	if code := m.wait(r.t, 90*time.Second); code != 0 {
		r.t.Fatalf("member %s: exit %d; stderr:\n%s", name, code, m.stderr.String())
	}
	return m
}

// TestKDIShapedTable: a table with kafka-delta-ingest's commits (written by hand as its source
// writes them; partitions at different offsets, one at version 0) is continued by a streamkit
// group pipeline from each partition's txn + 1 — with app_id "kdi-<topic>" by --flow kdi, and
// with kafka-delta-ingest's default app_id kafka_delta_ingest by --app-id — and
// streamkit's txns are the ones kafka-delta-ingest reads: a kafka-delta-ingest commit made
// from the versions delta-rs reads in streamkit's table is continued by streamkit again. The
// table ends with every record exactly once (streamkit, delta-rs, DuckDB) and every partition's
// txn at its last offset.
func TestKDIShapedTable(t *testing.T) {
	t.Run("flow", func(t *testing.T) {
		r := newGroupRig(t, 4)
		r.flow = "kdi"
		kdiShaped(t, r, "kdi-"+r.topic)
	})
	t.Run("app-id", func(t *testing.T) {
		r := newGroupRig(t, 4)
		r.app = "kafka_delta_ingest"
		kdiShaped(t, r, r.app)
	})
}

// kdiShaped runs TestKDIShapedTable on r with kafka-delta-ingest's app_id app.
func kdiShaped(t *testing.T, r *groupRig, app string) {
	if r.appID(0) != app+"-0" {
		t.Fatalf("streamkit's appId %q is not kafka-delta-ingest's %q", r.appID(0), app+"-0")
	}
	r.produce(400) // offsets 0..99 of each partition
	kdiCreate(t, r.table)
	kdiCommit(t, r, app, map[int32][2]int64{0: {0, 29}, 1: {0, 29}, 2: {0, 29}})
	kdiCommit(t, r, app, map[int32][2]int64{0: {30, 59}, 1: {30, 59}, 3: {0, 0}})
	a := r.runUntilNow("a")
	wantResume(t, a, map[int32]int64{0: 60, 1: 60, 2: 30, 3: 1})
	r.check()
	checkTxnShape(t, r, app)

	r.produce(200) // offsets 100..149
	next := kdiResume(t, r, app)
	ranges := map[int32][2]int64{}
	for p := int32(0); p < r.parts; p++ {
		if next[p] != 100 {
			t.Fatalf("kafka-delta-ingest would resume partition %d at %d in streamkit's table, want 100 (every partition's txns: %v)", p, next[p], next)
		}
		ranges[p] = [2]int64{next[p], 124}
	}
	kdiCommit(t, r, app, ranges)
	b := r.runUntilNow("b")
	wantResume(t, b, map[int32]int64{0: 125, 1: 125, 2: 125, 3: 125})
	r.check()
	r.checkPeers()
	r.checkStateDump()
	checkTxnShape(t, r, app)
}

// kdiBinary is the kafka-delta-ingest binary of $STREAMKIT_KDI; the test skips without it.
func kdiBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv("STREAMKIT_KDI")
	if p == "" {
		t.Skip("set STREAMKIT_KDI to a kafka-delta-ingest binary (make interop-kdi builds one)")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("STREAMKIT_KDI: %v", err)
	}
	return p
}

// startKDI starts `kafka-delta-ingest ingest` on the rig's topic and table with app_id app,
// flushing every 5 seconds (with 1 s, its debug build's commits of about 2 s each made one
// commit per record once they fell behind), filling the partition and offset columns by its transforms.
func (r *groupRig) startKDI(name, bin, app string) *member {
	r.t.Helper()
	script := fmt.Sprintf(`exec "$KDI" ingest %s %s -k %s -g kdi-%s -a %s -o earliest -l 5 -t 'partition: kafka.partition' -t 'offset: kafka.offset'`,
		r.topic, r.table, r.c.Brokers[0], r.group, app)
	return r.launch(name, script, "KDI="+bin, "RUST_LOG=info")
}

// stopKDI waits until the table holds n rows and kills kafka-delta-ingest (it has no clean
// stop; its commits are atomic, so it stops between two).
func (r *groupRig) stopKDI(k *member, n int) {
	r.t.Helper()
	r.waitRows(n, 300*time.Second, k)
	k.signal(syscall.SIGKILL)
	k.wait(r.t, 10*time.Second)
}

// TestKDIInterop (make interop-kdi): the real kafka-delta-ingest and streamkit continue each
// other's tables. (a) kafka-delta-ingest ingests a 4-partition JSON topic into a table for a
// while and is stopped; a streamkit group pipeline with --flow kdi continues it from its txn
// actions; more records are produced; kafka-delta-ingest runs again, then streamkit. (b) The
// other way round: streamkit creates the table, kafka-delta-ingest continues it, streamkit
// again. Each time the table ends with every record exactly once (streamkit, delta-rs, DuckDB)
// and every partition's txn at its last offset.
func TestKDIInterop(t *testing.T) {
	bin := kdiBinary(t)
	t.Run("kdi-first", func(t *testing.T) {
		r := newGroupRig(t, 4)
		r.flow = "kdi"
		app := "kdi-" + r.topic
		kdiCreate(t, r.table)
		r.produce(400)
		r.stopKDI(r.startKDI("kdi1", bin, app), 200)
		r.runUntilNow("a")
		r.check()
		r.produce(400)
		r.stopKDI(r.startKDI("kdi2", bin, app), 800)
		r.produce(200)
		r.runUntilNow("b")
		r.check()
		r.checkPeers()
		checkTxnShape(t, r, app)
	})
	t.Run("streamkit-first", func(t *testing.T) {
		r := newGroupRig(t, 4)
		r.flow = "kdi"
		app := "kdi-" + r.topic
		r.produce(400)
		r.runUntilNow("a")
		r.check()
		r.produce(400)
		r.stopKDI(r.startKDI("kdi1", bin, app), 800)
		r.check()
		r.produce(200)
		r.runUntilNow("b")
		r.check()
		r.checkPeers()
		checkTxnShape(t, r, app)
	})
}
