package statedump

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/source/kafka"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

// kafkaCheckpoint writes a read-kafka checkpoint directory root/name as read-kafka does: the
// offsets WAL of epochs 0..len(wal)-1 (Spark offsets JSON) and commit markers up to committed.
func kafkaCheckpoint(t *testing.T, root, name string, committed uint64, wal ...string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	d, err := state.Open(dir, "read-kafka", name, map[string]string{"isolation": "read_committed"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for n, pos := range wal {
		if err := d.WriteOffsets(uint64(n), []byte(pos)); err != nil {
			t.Fatal(err)
		}
	}
	for n := uint64(1); n <= committed; n++ {
		if err := state.WriteCommit(dir, n, "print"); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// jsonRows runs state-dump in process with --format json and decodes its JSON lines.
func jsonRows(t *testing.T, cfg Config) []map[string]any {
	t.Helper()
	cfg.Format = FormatJSON
	var out bytes.Buffer
	if err := Run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("state-dump %+v: %v", cfg, err)
	}
	return decodeLines(t, out.String())
}

func decodeLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		rows = append(rows, row)
	}
	return rows
}

// partitionRows indexes Kafka rows by "stage topic/partition", the values as text (null: "<nil>").
func partitionRows(rows []map[string]any) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, r := range rows {
		m := map[string]string{}
		for k, v := range r {
			m[k] = fmt.Sprint(v)
		}
		out[fmt.Sprintf("%s %s/%s", m["stage"], m["topic"], m["partition"])] = m
	}
	return out
}

func wantFields(t *testing.T, what string, got map[string]string, want map[string]string) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no row", what)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %s, want %s (row %v)", what, k, got[k], v, got)
		}
	}
}

// TestOffsetsLagFake compares a read-kafka checkpoint with an in-process kfake cluster:
// committed and WAL positions per partition, the log range, the lag from both, a partition the
// checkpoint has not seen, a topic that is gone and records deleted before the position.
func TestOffsetsLagFake(t *testing.T) {
	c := kafkatest.NewFake(t)
	topic := c.Topic(t, "lag", 3, nil)
	var recs []*kgo.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("a")})
	}
	for i := 0; i < 9; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("b")})
	}
	c.Produce(t, recs...)
	// Records of partition 1 before offset 7 are deleted (retention): the committed position 5
	// lies before the log start.
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: topic, Partition: 1, At: 7})
	if r, err := c.Admin.DeleteRecords(context.Background(), del); err != nil || r.Error() != nil {
		t.Fatalf("delete records: %v %v", err, r.Error())
	}
	root := t.TempDir()
	kafkaCheckpoint(t, root, "read-kafka", 1,
		fmt.Sprintf(`{%q:{"0":0,"1":0}}`, topic),
		fmt.Sprintf(`{%q:{"0":4,"1":5},"gone-topic":{"0":3}}`, topic),
		fmt.Sprintf(`{%q:{"0":8,"1":9},"gone-topic":{"0":3}}`, topic))
	// Without --lag: the positions as recorded, no broker contacted.
	rows := partitionRows(jsonRows(t, Config{Dir: root, Offsets: true}))
	wantFields(t, "p0", rows["read-kafka "+topic+"/0"], map[string]string{"committed_epoch": "1", "committed": "4", "wal_epoch": "2", "wal": "8"})
	if _, ok := rows["read-kafka "+topic+"/0"]["lag"]; ok || len(rows) != 3 {
		t.Fatalf("without --lag: %v", rows)
	}
	cfg := Config{Dir: root, Lag: true, Timeout: 20 * time.Second}
	cfg.Conn.Brokers = c.Brokers
	rows = partitionRows(jsonRows(t, cfg))
	wantFields(t, "p0", rows["read-kafka "+topic+"/0"], map[string]string{
		"committed": "4", "wal": "8", "log_start": "0", "log_end": "10", "lag": "6", "wal_lag": "2", "status": StatusOK, "topic_id": "<nil>"})
	wantFields(t, "p1", rows["read-kafka "+topic+"/1"], map[string]string{
		"committed": "5", "wal": "9", "log_start": "7", "log_end": "9", "lag": "2", "wal_lag": "0", "status": StatusDataLoss})
	wantFields(t, "p2", rows["read-kafka "+topic+"/2"], map[string]string{
		"committed": "<nil>", "wal": "<nil>", "log_start": "0", "log_end": "0", "lag": "<nil>", "status": StatusNew})
	wantFields(t, "gone", rows["read-kafka gone-topic/0"], map[string]string{
		"committed": "3", "log_end": "<nil>", "lag": "<nil>", "status": StatusNoTopic})
	if len(rows) != 4 {
		t.Errorf("%d rows, want 4: %v", len(rows), rows)
	}
	// The stage directory itself, and the root with --stage, give the same rows; table and
	// CSV render them.
	cfg.Dir = filepath.Join(root, "read-kafka")
	if got := partitionRows(jsonRows(t, cfg)); len(got) != 4 {
		t.Fatalf("stage dir: %v", got)
	}
	for _, f := range []string{FormatTable, FormatCSV} {
		cfg.Format = f
		var out bytes.Buffer
		if err := Run(context.Background(), cfg, &out); err != nil || !strings.Contains(out.String(), StatusDataLoss) {
			t.Fatalf("%s: %v\n%s", f, err, out.String())
		}
	}
	// Unreachable brokers: an error naming them, after --timeout.
	cfg.Format, cfg.Timeout = FormatJSON, time.Second
	cfg.Conn.Brokers = []string{"127.0.0.1:1"}
	if err := Run(context.Background(), cfg, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("unreachable brokers: %v", err)
	}
	// A SASL mechanism without a password is a usage error.
	cfg.Conn = c.Conn
	cfg.Conn.SASLMechanism, cfg.Conn.SASLUser, cfg.Conn.SASLPasswordEnv = "SCRAM-SHA-256", "app", "STREAMKIT_TEST_NO_SUCH_VAR"
	var ue *stage.UsageError
	if err := Run(context.Background(), cfg, &bytes.Buffer{}); !errors.As(err, &ue) {
		t.Fatalf("no password: %v, want a usage error", err)
	}
}

// TestOffsetsTopicID: the topic ID (KIP-516) a read-kafka position records is shown, and with
// --lag a topic whose ID on the brokers differs (deleted and re-created) has its own status.
func TestOffsetsTopicID(t *testing.T) {
	c := kafkatest.NewFake(t)
	topic := c.Topic(t, "tid", 1, nil)
	c.Produce(t, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("a")})
	md, err := c.Admin.Metadata(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	id := kafka.TopicID(md.Topics[topic].ID)
	other := id
	other[0]++
	root := t.TempDir()
	kafkaCheckpoint(t, root, "same", 1, fmt.Sprintf(`{%q:{"0":0,"topicId":%q}}`, topic, id),
		fmt.Sprintf(`{%q:{"0":1,"topicId":%q}}`, topic, id))
	kafkaCheckpoint(t, root, "old", 1, fmt.Sprintf(`{%q:{"0":0,"topicId":%q}}`, topic, other),
		fmt.Sprintf(`{%q:{"0":1,"topicId":%q}}`, topic, other))
	rows := partitionRows(jsonRows(t, Config{Dir: root, Offsets: true}))
	wantFields(t, "same", rows["same "+topic+"/0"], map[string]string{"committed": "1", "topic_id": id.String()})
	wantFields(t, "old", rows["old "+topic+"/0"], map[string]string{"committed": "1", "topic_id": other.String()})
	cfg := Config{Dir: root, Lag: true, Timeout: 20 * time.Second}
	cfg.Conn.Brokers = c.Brokers
	rows = partitionRows(jsonRows(t, cfg))
	wantFields(t, "same", rows["same "+topic+"/0"], map[string]string{"status": StatusOK, "topic_id": id.String()})
	wantFields(t, "old", rows["old "+topic+"/0"], map[string]string{"status": StatusRecreated})
}

// TestOffsetsFiles: read-files positions — files read by the committed epoch, the file being
// read, the files planned but not read yet, skipped versions — from the files log.
func TestOffsetsFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "read-files")
	d, err := state.Open(dir, "read-files", "read-files", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	entry := func(p, skip string) map[string]any {
		return map[string]any{"path": p, "size": 1, "mtime_ns": 1, "fp": "00", "skip": skip}
	}
	// Two plan records: a.csv b.csv (skipped: no format) c.csv, then d.csv e.csv.
	os.MkdirAll(filepath.Join(dir, "files"), 0o755)
	state.WriteJSON(filepath.Join(dir, "files"), state.EpochName(1)+".json", map[string]any{"seq": 1, "first": 0,
		"entries": []any{entry("/in/a.csv", ""), entry("/in/b.txt", "format"), entry("/in/c.csv", "")}})
	state.WriteJSON(filepath.Join(dir, "files"), state.EpochName(2)+".json", map[string]any{"seq": 2, "first": 3,
		"entries": []any{entry("/in/d.csv", ""), entry("/in/e.csv", "")}})
	if err := d.WriteOffsets(0, []byte(`{"next":0,"row":0,"files":[]}`)); err != nil {
		t.Fatal(err)
	}
	d.WriteOffsets(1, []byte(`{"next":3,"row":0,"files":[{"index":0,"path":"/in/a.csv"},{"index":2,"path":"/in/c.csv"}]}`))
	d.WriteOffsets(2, []byte(`{"next":3,"row":40,"files":[{"index":3,"path":"/in/d.csv"}]}`))
	state.WriteCommit(dir, 1, "print")
	rows := jsonRows(t, Config{Dir: root, Offsets: true})
	if len(rows) != 1 {
		t.Fatalf("rows: %v", rows)
	}
	got := map[string]string{}
	for k, v := range rows[0] {
		got[k] = fmt.Sprint(v)
	}
	wantFields(t, "read-files", got, map[string]string{"committed_epoch": "1", "files_read": "2", "reading": "<nil>",
		"last_file": "/in/c.csv", "wal_epoch": "2", "files_read_wal": "2", "pending": "1", "skipped": "1"})
	// The summary renders the cursor.
	var out bytes.Buffer
	if err := Run(context.Background(), Config{Dir: dir}, &out); err != nil || !strings.Contains(out.String(), "file #3 from row 40, 1 file(s) in the epoch") {
		t.Fatalf("summary: %v\n%s", err, out.String())
	}
	// --offsets on a stage without an offsets WAL is a usage error; --lag without Kafka too.
	op := filepath.Join(root, "dedup")
	od, _ := state.Open(op, "dedup", "dedup", map[string]string{})
	od.Close()
	var ue *stage.UsageError
	if err := Run(context.Background(), Config{Dir: op, Offsets: true}, &out); !errors.As(err, &ue) {
		t.Fatalf("--offsets on an operator: %v", err)
	}
	if err := Run(context.Background(), Config{Dir: root, Lag: true}, &out); !errors.As(err, &ue) {
		t.Fatalf("--lag without read-kafka: %v", err)
	}
}

// TestOffsetsLagRealBroker runs read-kafka (checkpointed, epochs of 10 records) | print
// through the binary against the real broker, produces more, and compares state-dump --offsets
// --lag over PLAINTEXT, SCRAM over SASL_PLAINTEXT and mutual TLS — the flags of read-kafka.
func TestOffsetsLagRealBroker(t *testing.T) {
	c := kafkatest.NewReal(t)
	b := c.Real
	topic := c.Topic(t, "statedump-lag", 2, nil)
	var recs []*kgo.Record
	for i := 0; i < 30; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))})
	}
	c.Produce(t, recs...)
	root := t.TempDir()
	bin := peertest.Binary(t)
	cmd := exec.Command("sh", "-c", fmt.Sprintf("%q --progress=off read-kafka -b %s -t %s --until now --max-records-per-epoch 10 | %q --progress=off print --format json > /dev/null",
		bin, b.Plaintext, topic, bin))
	cmd.Env = append(os.Environ(), "STREAMKIT_CHECKPOINT="+root)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pipeline: %v\n%s", err, out)
	}
	// 7 more records in partition 0 after the run.
	recs = recs[:0]
	for i := 0; i < 7; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("late")})
	}
	c.Produce(t, recs...)
	want := map[string]map[string]string{
		"read-kafka " + topic + "/0": {"committed": "15", "wal": "15", "log_start": "0", "log_end": "22", "lag": "7", "wal_lag": "7", "status": StatusOK},
		"read-kafka " + topic + "/1": {"committed": "15", "wal": "15", "log_start": "0", "log_end": "15", "lag": "0", "wal_lag": "0", "status": StatusOK},
	}
	pw := "STREAMKIT_TEST_SCRAM_PASSWORD"
	pwBytes, err := os.ReadFile(b.SASLPasswordFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, conn := range [][]string{
		{"-b", b.Plaintext},
		{"-b", b.SASL, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", b.SASLUser, "--sasl-password-file", b.SASLPasswordFile},
		{"-b", b.SASL, "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", b.SASLUser, "--sasl-password-env", pw},
		{"-b", b.SSL, "--tls-ca", b.CA, "--tls-cert", b.ClientCert, "--tls-key", b.ClientKey},
	} {
		args := append([]string{"--progress=off", "state-dump", root, "--offsets", "--lag", "--format", "json", "--timeout", "60s"}, conn...)
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), pw+"="+strings.TrimRight(string(pwBytes), "\n"))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("state-dump %v: %v\n%s", conn, err, errb.String())
		}
		rows := partitionRows(decodeLines(t, out.String()))
		if len(rows) != 2 {
			t.Fatalf("%v: rows %v", conn, rows)
		}
		for k, w := range want {
			wantFields(t, fmt.Sprint(conn[1], " ", k), rows[k], w)
		}
	}
	// A wrong password: exit 1, the message names the mechanism, the user and where the
	// password came from, never the password.
	bad := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(bad, []byte("wrong-password-xyz\n"), 0o600)
	_, stderr, code := sk(t, nil, "state-dump", root, "--offsets", "--lag", "--timeout", "20s", "-b", b.SASL,
		"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", b.SASLUser, "--sasl-password-file", bad)
	if code != 1 || !strings.Contains(stderr, "authentication failed") || !strings.Contains(stderr, bad) || strings.Contains(stderr, "wrong-password-xyz") {
		t.Fatalf("wrong password: exit %d: %s", code, stderr)
	}
	// -b without --lag, and --lag without -b, are usage errors.
	if _, stderr, code := sk(t, nil, "state-dump", root, "--offsets", "-b", b.Plaintext); code != 2 {
		t.Fatalf("-b without --lag: exit %d: %s", code, stderr)
	}
	if _, stderr, code := sk(t, nil, "state-dump", root, "--lag"); code != 2 {
		t.Fatalf("--lag without -b: exit %d: %s", code, stderr)
	}
}

// TestOffsetsCorruptReported: a corrupt WAL entry is named (path and reason, exit 1) and the
// positions of the other epochs still show.
func TestOffsetsCorruptReported(t *testing.T) {
	root := t.TempDir()
	dir := kafkaCheckpoint(t, root, "read-kafka", 1, `{"t":{"0":0}}`, `{"t":{"0":4}}`, `{"t":{"0":8}}`)
	bad := filepath.Join(dir, state.OffsetsDir, state.EpochName(2)+".json")
	b, _ := os.ReadFile(bad)
	os.WriteFile(bad, b[:len(b)-5], 0o644)
	var out bytes.Buffer
	err := Run(context.Background(), Config{Dir: root, Offsets: true, Format: FormatJSON}, &out)
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("error %v should name %s", err, bad)
	}
	rows := partitionRows(decodeLines(t, out.String()))
	wantFields(t, "t/0", rows["read-kafka t/0"], map[string]string{"committed_epoch": "1", "committed": "4", "wal_epoch": "1", "wal": "4"})
}

// TestOffsetsDelta: a read-delta stage's committed version against the table's newest: one
// commit appended after the run is one version unread, and the summary renders the versions.
func TestOffsetsDelta(t *testing.T) {
	dir := t.TempDir()
	bin := peertest.Binary(t)
	run := func(script string) {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "STREAMKIT_CHECKPOINT=", "SK="+bin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	run(`"$SK" --progress=off generate --rows 10 | "$SK" --progress=off write-delta lake/t`)
	run(`"$SK" --progress=off read-delta lake/t --checkpoint ck/read-delta | "$SK" --progress=off print --checkpoint ck/print > /dev/null`)
	for _, want := range []string{`"table_version":0,"versions_unread":0`, `"table_version":1,"versions_unread":1`} {
		out, stderr, code := inDir(t, dir, "state-dump", "ck", "--offsets", "--format", "json")
		if code != 0 || !strings.Contains(out, `"stage":"read-delta"`) || !strings.Contains(out, `"committed":"version 1"`) || !strings.Contains(out, want) {
			t.Fatalf("exit %d: %s%s\nwant %s", code, out, stderr, want)
		}
		run(`"$SK" --progress=off generate --rows 5 | "$SK" --progress=off write-delta lake/t`)
	}
	out, _, _ := inDir(t, dir, "state-dump", "ck/read-delta")
	if !strings.Contains(out, "initial snapshot of version 0") || !strings.Contains(out, "  1      yes ") {
		t.Fatalf("summary:\n%s", out)
	}
}
