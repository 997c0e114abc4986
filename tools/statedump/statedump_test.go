package statedump

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/state"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "user", Type: arrow.BinaryTypes.String},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// stream: epochs of "user" values numbered from 1; end=pause.
func stream(epochs ...[]string) []byte { return streamFrom(1, epochs...) }

// streamFrom numbers its epochs from first (a source resuming after first-1).
func streamFrom(first uint64, epochs ...[]string) []byte {
	mem := memory.NewGoAllocator()
	var buf bytes.Buffer
	w := codec.NewWriter(&buf, schema, mem)
	n := int64(0)
	for e, users := range epochs {
		b := array.NewRecordBuilder(mem, schema)
		for _, u := range users {
			b.Field(0).(*array.StringBuilder).Append(u)
			n++
			b.Field(1).(*array.Int64Builder).Append(n)
		}
		rec := b.NewRecordBatch()
		w.Write(rec)
		rec.Release()
		b.Release()
		w.WriteControl(codec.BarrierControl(first + uint64(e)))
	}
	w.WriteControl(codec.EndControl(codec.Pause))
	w.Close()
	return buf.Bytes()
}

func sk(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	out, stderr, code := peertest.Run(t, []string{"NO_COLOR=1"}, stdin, args...)
	return string(out), stderr, code
}

// pipeline runs dedup --key user | print --format json with a checkpoint root.
func pipeline(t *testing.T, root string, in []byte) {
	t.Helper()
	cmd := exec.Command("sh", "-c", fmt.Sprintf("%q dedup --key user | %q print --format json > /dev/null", peertest.Binary(t), peertest.Binary(t)))
	cmd.Env = append(os.Environ(), "STREAMKIT_CHECKPOINT="+root)
	cmd.Stdin = bytes.NewReader(in)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pipeline: %v\n%s", err, out)
	}
}

func dumpUsers(t *testing.T, args ...string) []string {
	out, stderr, code := sk(t, nil, args...)
	if code != 0 {
		t.Fatalf("state-dump %v: exit %d: %s", args, code, stderr)
	}
	var users []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		users = append(users, fmt.Sprint(row["user"]))
	}
	sort.Strings(users)
	return users
}

func TestDumpDedupState(t *testing.T) {
	root := t.TempDir()
	pipeline(t, root, stream([]string{"ann", "bob", "ann"}, []string{"cy", "bob"}, []string{"dee"}))
	// The root lists both stages.
	out, _, code := sk(t, nil, "state-dump", root, "--format", "json")
	if code != 0 || strings.Count(out, `"stage"`) != 2 || !strings.Contains(out, `"stage":"dedup","tool":"dedup","committed_epoch":3`) {
		t.Fatalf("root listing: %s", out)
	}
	// The stage summary names the key option and three committed epochs with key counts.
	out, _, _ = sk(t, nil, "state-dump", filepath.Join(root, "dedup"), "--format", "json")
	var sum state.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Meta.Options["key"] != "user" || sum.Committed != 3 || len(sum.Epochs) != 3 || *sum.Epochs[2].Entries != 4 {
		t.Fatalf("summary: %s", out)
	}
	if got := dumpUsers(t, "state-dump", root, "--stage", "dedup", "--format", "json"); fmt.Sprint(got) != "[ann bob cy dee]" {
		t.Fatalf("state at epoch 3: %v", got)
	}
	if got := dumpUsers(t, "state-dump", root, "--stage", "dedup", "--epoch", "1", "--format", "json"); fmt.Sprint(got) != "[ann bob]" {
		t.Fatalf("state at epoch 1: %v", got)
	}
	if got := dumpUsers(t, "state-dump", root, "--stage", "dedup", "--format", "json", "--key", "user=cy"); fmt.Sprint(got) != "[cy]" {
		t.Fatalf("--key: %v", got)
	}
	out, _, _ = sk(t, nil, "state-dump", root, "--stage", "dedup", "--format", "csv", "--diff", "1,3")
	if out != "change,user,first_seen\nadded,cy,\nadded,dee,\n" {
		t.Fatalf("--diff 1,3:\n%s", out)
	}

	// The dump predicts the stage: a restarted dedup drops exactly the dumped keys.
	dumped := dumpUsers(t, "state-dump", root, "--stage", "dedup", "--format", "json")
	probe := []string{"ann", "bob", "cy", "dee", "eve", "fay"}
	cmd := exec.Command(peertest.Binary(t), "dedup", "--key", "user")
	cmd.Env = append(os.Environ(), "STREAMKIT_CHECKPOINT="+root)
	cmd.Stdin = bytes.NewReader(streamFrom(4, probe)) // epochs 1-3 are committed
	raw, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	r, err := codec.NewReader(bytes.NewReader(raw), memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for {
		m, err := r.Next()
		if err != nil {
			break
		}
		if m.Batch != nil {
			u := m.Batch.Column(0).(*array.String)
			for i := 0; i < u.Len(); i++ {
				kept[u.Value(i)] = true
			}
			m.Batch.Release()
		}
	}
	r.Release()
	for _, u := range probe {
		inDump := sort.SearchStrings(dumped, u) < len(dumped) && dumped[sort.SearchStrings(dumped, u)] == u
		if inDump == kept[u] {
			t.Fatalf("user %s: in dump %v, kept by the restarted stage %v", u, inDump, kept[u])
		}
	}
}

func TestCorruptFileReportedOtherEpochsDump(t *testing.T) {
	root := t.TempDir()
	pipeline(t, root, stream([]string{"a"}, []string{"b"}, []string{"c"}))
	bad := filepath.Join(root, "dedup", "state", state.EpochName(3)+".changelog.arrow")
	b, _ := os.ReadFile(bad)
	os.WriteFile(bad, b[:len(b)/2], 0o644)
	_, stderr, code := sk(t, nil, "state-dump", root, "--stage", "dedup")
	if code != 1 || !strings.Contains(stderr, bad) {
		t.Fatalf("exit %d, stderr %q should name %s", code, stderr, bad)
	}
	if got := dumpUsers(t, "state-dump", root, "--stage", "dedup", "--epoch", "2", "--format", "json"); fmt.Sprint(got) != "[a b]" {
		t.Fatalf("epoch 2 still dumps: %v", got)
	}
	// A damaged manifest is reported in the summary, with the other epochs listed.
	man := filepath.Join(root, "dedup", "state", state.EpochName(2)+".json")
	os.WriteFile(man, []byte(`{"crc32c":"00000000","data":{}}`), 0o644)
	out, _, code := sk(t, nil, "state-dump", filepath.Join(root, "dedup"))
	if code != 1 || !strings.Contains(out, man) || !strings.Contains(out, "checksum mismatch") || !strings.Contains(out, "\n  3 ") {
		t.Fatalf("summary exit %d:\n%s", code, out)
	}
}

func TestUsage(t *testing.T) {
	root := t.TempDir()
	pipeline(t, root, stream([]string{"a"}))
	for _, args := range [][]string{
		{"state-dump", root, "--stage", "nope"},
		{"state-dump", root, "--stage", "dedup", "--format", "xml"},
		{"state-dump", root, "--stage", "dedup", "--diff", "1"},
		{"state-dump", root, "--stage", "dedup", "--key", "nokey"},
	} {
		if _, stderr, code := sk(t, nil, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, stderr)
		}
	}
}

// A stage run as shards of keyby --shards (dedup.shard-0, dedup.shard-1) is dumped as one
// table with a _shard column, --key finds a key in whichever shard holds it, and --diff asks
// for one shard.
func TestDumpShardedStage(t *testing.T) {
	dir, bin := checkpointRun(t, `"$0" --progress=off generate --schema 'id bigint, v bigint' --gen 'id=uniform(0, 60)' --gen v=sequence --rows 400 --batch-rows 50 | "$0" --progress=off keyby id --shards 2 -- dedup >/dev/null`)
	rows := jsonDump(t, dir, "ckpt", "--stage", "dedup", "--epoch", "1")
	shardOf := map[string]string{}
	for _, r := range rows {
		id, sh := fmt.Sprint(r["id"]), fmt.Sprint(r["_shard"])
		if prev, dup := shardOf[id]; dup {
			t.Fatalf("id %s in shards %s and %s", id, prev, sh)
		}
		shardOf[id] = sh
	}
	shards := map[string]int{}
	for _, sh := range shardOf {
		shards[sh]++
	}
	if len(shardOf) < 40 || len(shards) != 2 {
		t.Fatalf("%d keys over shards %v", len(shardOf), shards)
	}
	for id, sh := range shardOf {
		got := jsonDump(t, dir, "ckpt", "--stage", "dedup", "--epoch", "1", "--key", "id="+id)
		if len(got) != 1 || fmt.Sprint(got[0]["_shard"]) != sh {
			t.Fatalf("--key id=%s: %v, want one row of shard %s", id, got, sh)
		}
		break
	}
	one := 0
	for _, r := range jsonDump(t, dir, "ckpt", "--stage", "dedup", "--epoch", "1", "--key", "_shard=1") {
		if fmt.Sprint(r["_shard"]) != "1" {
			t.Fatalf("--key _shard=1: %v", r)
		}
		one++
	}
	if one != shards["1"] {
		t.Fatalf("--key _shard=1: %d rows, shard 1 holds %d", one, shards["1"])
	}
	// A reader that goes away at once (true reads nothing): state-dump ends quietly, exit 0,
	// whatever it writes.
	for _, args := range []string{"ckpt --stage dedup --epoch 1 --format csv", "ckpt --stage dedup --epoch 1 --format arrow", "ckpt/dedup.shard-0 --format json"} {
		head := exec.Command("bash", "-c", `set -o pipefail; "$0" --progress=off state-dump $1 | true`, bin, args)
		head.Dir = dir
		if out, err := head.CombinedOutput(); err != nil || len(out) > 0 {
			t.Fatalf("state-dump %s | true: %v: %s", args, err, out)
		}
	}
	if _, stderr, code := inDir(t, dir, "state-dump", "ckpt", "--stage", "dedup", "--diff", "1", "--diff", "1"); code != 2 || !strings.Contains(stderr, "name a shard with --stage dedup.shard-0") {
		t.Fatalf("--diff on a sharded stage: exit %d: %s", code, stderr)
	}
}

// A shard that holds no key (every row has id 7, so one of two shards keeps the only key) does
// not stop the dump of the others (a break test saw "another state schema").
func TestDumpShardedStageOneShardEmpty(t *testing.T) {
	dir, _ := checkpointRun(t, `"$0" --progress=off generate --schema 'id bigint, v bigint' --gen 'id=constant(7)' --gen v=sequence --rows 400 --batch-rows 50 | "$0" --progress=off keyby id --shards 2 -- dedup >/dev/null`)
	rows := jsonDump(t, dir, "ckpt", "--stage", "dedup", "--epoch", "1")
	if len(rows) != 1 || fmt.Sprint(rows[0]["id"]) != "7" {
		t.Fatalf("want the one key id=7, got %v", rows)
	}
	if rows := jsonDump(t, dir, "ckpt", "--stage", "dedup", "--epoch", "1", "--key", "id=8"); len(rows) != 0 {
		t.Fatalf("--key id=8: %v", rows)
	}
}

// A dedup keyed by a struct (--key user) shows its key as the struct's JSON text, in every
// format, and --key finds it by that text (a break test saw Go's formatting of the bytes,
// "[123 34 105 ...]").
func TestDumpStructKeyReadable(t *testing.T) {
	dir, _ := checkpointRun(t, `"$0" --progress=off generate --schema 'user struct<id:bigint, name:string>, v bigint' --gen 'user.id=uniform(0, 5)' --gen 'user.name=choice(a, b)' --gen v=sequence --rows 400 --batch-rows 50 | "$0" --progress=off dedup --key user >/dev/null`)
	rows := jsonDump(t, dir, "ckpt", "--stage", "dedup", "--epoch", "1")
	if len(rows) < 5 {
		t.Fatalf("%d keys", len(rows))
	}
	for _, r := range rows {
		var u struct {
			ID   *int64 `json:"id"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(fmt.Sprint(r["user"])), &u); err != nil || u.ID == nil || u.Name == "" {
			t.Fatalf("key %v is not the struct's JSON text: %v", r["user"], err)
		}
	}
	key := fmt.Sprint(rows[0]["user"])
	if got := jsonDump(t, dir, "ckpt", "--stage", "dedup", "--epoch", "1", "--key", "user="+key); len(got) != 1 {
		t.Fatalf("--key user=%s: %v", key, got)
	}
}

// checkpointRun runs the shell pipeline script ($0 is the streamkit binary) in a new directory
// with STREAMKIT_CHECKPOINT=ckpt, and returns the directory and the binary.
func checkpointRun(t *testing.T, script string) (dir, bin string) {
	t.Helper()
	dir, bin = t.TempDir(), peertest.Binary(t)
	cmd := exec.Command("sh", "-c", script, bin)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "STREAMKIT_CHECKPOINT=ckpt")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return dir, bin
}
