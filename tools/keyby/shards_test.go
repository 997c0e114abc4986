package keyby

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/arrowtest"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

var shardSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "epoch", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// input has `epochs` epochs of `rows` rows; ids repeat across epochs (every id twice overall),
// one null id per epoch.
func input(t *testing.T, epochs, rows int) []byte {
	mem := memory.NewGoAllocator()
	var buf bytes.Buffer
	w := codec.NewWriter(&buf, shardSchema, mem)
	for e := 1; e <= epochs; e++ {
		b := array.NewRecordBuilder(mem, shardSchema)
		for r := 0; r < rows; r++ {
			if r == 0 {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.Int64Builder).Append(int64(((e-1)*rows + r) % (epochs * rows / 2)))
			}
			b.Field(1).(*array.Int64Builder).Append(int64(e))
		}
		rec := b.NewRecordBatch()
		w.Write(rec)
		rec.Release()
		b.Release()
		w.WriteControl(codec.BarrierControl(uint64(e)))
	}
	w.WriteControl(codec.EndControl(codec.Final))
	w.Close()
	return buf.Bytes()
}

func runBin(t *testing.T, env []string, stdin []byte, args ...string) ([]byte, string, int) {
	t.Helper()
	return peertest.Run(t, env, stdin, args...)
}

func TestShardedDedupAlignedBarriers(t *testing.T) {
	root := t.TempDir()
	env := []string{"STREAMKIT_CHECKPOINT=" + root}
	out, stderr, code := runBin(t, env, input(t, 4, 500), "keyby", "id", "--shards", "3", "--", "dedup")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := codec.NewReader(bytes.NewReader(out), memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if got := codec.Info(r.Schema()).Checkpoints; len(got) != 4 || !strings.HasSuffix(got[3], "dedup.shard-2") {
		t.Fatalf("checkpoints in output schema: %q", got)
	}
	seen := map[string]bool{}
	epoch := int64(1)
	var controls []string
	for {
		m, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Control != nil {
			controls = append(controls, m.Control.String())
			if m.Control.Kind == codec.Barrier {
				epoch = int64(m.Control.Epoch) + 1
			}
			continue
		}
		ids := m.Batch.Column(0).(*array.Int64)
		eps := m.Batch.Column(1).(*array.Int64)
		for i := 0; i < ids.Len(); i++ {
			if eps.Value(i) != epoch {
				t.Fatalf("a row of epoch %d arrived after barrier %d", eps.Value(i), epoch-1)
			}
			k := "null"
			if ids.IsValid(i) {
				k = fmt.Sprint(ids.Value(i))
			}
			if seen[k] {
				t.Fatalf("duplicate %s in output", k)
			}
			seen[k] = true
		}
		m.Batch.Release()
	}
	if len(seen) != 998+1 { // ids 0 and 500 fall on the null rows
		t.Fatalf("%d distinct keys out, want 999 (998 ids + null)", len(seen))
	}
	if fmt.Sprint(controls) != "[barrier epoch=1 barrier epoch=2 barrier epoch=3 barrier epoch=4 end final]" {
		t.Fatalf("controls %v", controls)
	}
	for i := 0; i < 3; i++ {
		if _, err := os.Stat(filepath.Join(root, fmt.Sprintf("dedup.shard-%d", i), state.MetadataFile)); err != nil {
			t.Fatalf("shard %d checkpoint: %v", i, err)
		}
	}
	// A restart with another shard count is refused, naming the difference.
	_, stderr, code = runBin(t, env, input(t, 1, 10), "keyby", "id", "--shards", "2", "--", "dedup")
	if code != 2 || !strings.Contains(stderr, `shards: checkpoint has "3", this run has "2"`) {
		t.Fatalf("restart with 2 shards: exit %d: %s", code, stderr)
	}
}

// The same key reaches the same shard in every run: each shard's dedup state holds exactly
// the keys whose hash maps to it.
func TestShardRoutingStable(t *testing.T) {
	for run := 0; run < 2; run++ {
		root := t.TempDir()
		env := []string{"STREAMKIT_CHECKPOINT=" + root}
		out, stderr, code := runBin(t, env, input(t, 2, 200), "keyby", "id", "--shards", "4", "--", "dedup")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		// A committing sink would write commits; do it by hand for every shard dir.
		r, _ := codec.NewReader(bytes.NewReader(out), memory.NewGoAllocator())
		for _, d := range codec.Info(r.Schema()).Checkpoints {
			state.WriteCommit(d, 2, "test")
		}
		r.Release()
		for i := 0; i < 4; i++ {
			dir := filepath.Join(root, fmt.Sprintf("dedup.shard-%d", i))
			st := state.NewStore[int64](tsCodec{})
			if _, err := st.Restore(memory.NewGoAllocator(), dir, 2); err != nil {
				t.Fatal(err)
			}
			st.Range(func(k string, _ int64) bool {
				if sh := codec.Hash64([]byte(k)) % 4; sh != uint64(i) {
					t.Fatalf("key %x in shard %d, hashes to %d", k, i, sh)
				}
				return true
			})
		}
	}
}

type tsCodec struct{}

func (tsCodec) Fields() []arrow.Field {
	return []arrow.Field{{Name: "first_seen", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true}}
}
func (tsCodec) Append(bs []array.Builder, v int64) {}
func (tsCodec) Decode(cols []arrow.Array, i int) (int64, error) {
	return int64(cols[0].(*array.Timestamp).Value(i)), nil
}

func TestFailingShardFailsWithItsExitCode(t *testing.T) {
	_, stderr, code := runBin(t, nil, input(t, 1, 10), "keyby", "id", "--shards", "2", "--", "dedup", "--key", "nope")
	if code != 2 || !strings.Contains(stderr, `no field "nope"`) || !strings.Contains(stderr, "shard") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, stderr, code = runBin(t, nil, input(t, 1, 10), "keyby", "id", "--shards", "2", "--", "sh", "-c", "exit 7")
	if code != 7 {
		t.Fatalf("exit %d, want 7: %s", code, stderr)
	}
}

// Regressions from a new-user test: keyby --shards used to hang for good when its reader went
// away (| head) or a child wrote something other than an Arrow IPC stream.
func TestShardedNeverHangs(t *testing.T) {
	big := input(t, 200, 2000)
	for _, c := range []struct {
		name, pipe string
		code       int
		stderr     string
	}{
		{"reader goes away", "%q keyby id --shards 3 -- dedup --key id | head -c 100 > /dev/null; exit ${PIPESTATUS[0]}", 0, ""},
		{"child writes text", "%q keyby id --shards 3 -- print > /dev/null", 1, "shard"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", fmt.Sprintf(c.pipe, peertest.Binary(t)))
			cmd.Stdin = bytes.NewReader(big)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatal("keyby --shards hung")
			}
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != c.code || !strings.Contains(stderr.String(), c.stderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", code, stderr.String(), c.code, c.stderr)
			}
		})
	}
}

// Children that are sinks (write-delta) write no stream: keyby --shards writes none either
// and succeeds; some children streaming and others not is an error naming both.
func TestShardedSinkChildren(t *testing.T) {
	root := filepath.Join(t.TempDir(), "t")
	out, stderr, code := runBin(t, nil, input(t, 3, 500), "keyby", "id", "--shards", "2", "--", "write-delta", root, "--flow", "D")
	if code != 0 || len(out) != 0 {
		t.Fatalf("sink children: exit %d, %d bytes on stdout\n%s", code, len(out), stderr)
	}
	tbl, _, code := runBin(t, nil, nil, "read-delta", root)
	if code != 0 {
		t.Fatalf("read-delta: exit %d", code)
	}
	rows := len(rowsOf(t, tbl))
	if rows != 1500 {
		t.Errorf("table rows %d, want 1500", rows)
	}
	mixed := fmt.Sprintf(`if [ "$STREAMKIT_SHARD" = 0 ]; then cat > /dev/null; else exec %q dedup --key id; fi`, peertest.Binary(t))
	_, stderr, code = runBin(t, nil, input(t, 3, 500), "keyby", "id", "--shards", "2", "--", "bash", "-c", mixed)
	if code == 0 || !strings.Contains(stderr, "shard 0 wrote no output stream but shard 1 did") {
		t.Fatalf("mixed children: exit %d\n%s", code, stderr)
	}
}

// A streamkit child declares its --event-time, --time-unit and --tz in its first output schema
// (codec.SchemaShardEventTime) as it parses them (both spellings, flags in any order, other
// flags with values), and keyby takes nothing from a foreign command, a tool without the
// flag or arguments the child refuses. Each child runs as shard 0 of a keyby by id would.
func TestChildDeclaresEventTime(t *testing.T) {
	bin := peertest.Binary(t)
	tools := map[string]bool{"dedup": true, "keyby": true}
	env := append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		stage.EnvShard+"=0", stage.EnvShardRoute+"=2 by xxh3-64(id)", stage.EnvShardProgress+"=1")
	in := timedInput(t)
	for _, c := range []struct {
		args []string
		want codec.ShardEventTimeColumn
	}{
		{[]string{"dedup", "--key", "id", "--event-time", "ts", "--ttl", "1h"}, codec.ShardEventTimeColumn{Column: "ts"}},
		{[]string{"dedup", "--log-level", "debug", "--event-time=v.ts", "--time-unit", "ms", "--tz", "UTC"}, codec.ShardEventTimeColumn{Column: "v.ts", Unit: "ms", TZ: "UTC"}},
		{[]string{"dedup", "--key", "id"}, codec.ShardEventTimeColumn{}},
		{[]string{"dedup", "--event-time", "ts", "--no-such-flag"}, codec.ShardEventTimeColumn{}},
		{[]string{"keyby", "id"}, codec.ShardEventTimeColumn{}},
		{[]string{"keyby", "id", "--shards", "2", "--", "dedup", "--event-time", "ts"}, codec.ShardEventTimeColumn{Column: "ts"}},
		{[]string{"keyby", "id", "--shards", "2", "--", "sh", "-c", "dedup --event-time ts"}, codec.ShardEventTimeColumn{}},
		{[]string{"sh", "-c", filepath.Base(bin) + " dedup --event-time ts"}, codec.ShardEventTimeColumn{}},
	} {
		argv := c.args
		if tools[argv[0]] {
			argv = append([]string{bin}, argv...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env, cmd.Stdin = env, bytes.NewReader(in)
		out, _ := cmd.Output() // a failing child writes no stream: it declares nothing
		var readers []*codec.Reader
		if r, err := codec.NewReader(bytes.NewReader(out), memory.NewGoAllocator()); err == nil {
			defer r.Release()
			readers = []*codec.Reader{r}
		}
		s := &Sharded{Cmd: c.args, Tools: tools}
		if got, err := s.declaredEventTime(readers); err != nil || got != c.want {
			t.Errorf("%q: got %+v (%v), want %+v", c.args, got, err, c.want)
		}
	}
}

// timedInput is one row of (id, ts timestamp, v struct{ts int64 ms}) and end=final.
func timedInput(t *testing.T) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "v", Type: arrow.StructOf(arrow.Field{Name: "ts", Type: arrow.PrimitiveTypes.Int64})},
	}, nil)
	rec, _, err := array.RecordFromJSON(mem, sc, strings.NewReader(`[{"id":1,"ts":"2024-05-01T00:00:00Z","v":{"ts":1714521600000}}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	return arrowtest.Stream(t, rec)
}

// The first child to fail is the cause: shard 1 is killed (-9) first, shard 0 exits 1 later
// (as a healthy shard does once keyby cuts its input); the command reports shard 1's 137,
// whatever the children's order (a break test saw shard 0's exit 1 reported instead).
func TestChildFailureFirstToExit(t *testing.T) {
	s := &Sharded{Key: []string{"id"}, N: 2, Tools: map[string]bool{},
		Cmd: []string{"sh", "-c", `if [ "$STREAMKIT_SHARD" = 1 ]; then kill -9 $$; fi; sleep 0.3; exit 1`}}
	children := startExited(t, s)
	var ce *stage.ChildExitError
	if err := s.childFailure(children, errors.New("symptom")); !errors.As(err, &ce) || ce.Code != 137 || !strings.Contains(err.Error(), "shard 1") {
		t.Fatalf("got %v, want shard 1's exit 137", err)
	}
}

// keyby's own input cut short (the upstream process died) is reported as keyby's stdin, not
// as the failure of a shard whose input keyby then had to cut.
func TestTruncatedInputNamesStdin(t *testing.T) {
	in := input(t, 4, 500)
	_, stderr, code := runBin(t, nil, in[:len(in)/2], "keyby", "id", "--shards", "2", "--", "dedup")
	if code != 1 || !strings.Contains(stderr, "keyby: stdin") || strings.Contains(stderr, "failed: exit status") {
		t.Errorf("truncated input: exit %d:\n%s", code, stderr)
	}
}

// A shard that failed by itself before keyby cut the shards' input is the cause, even when it
// was reaped after a shard that failed because of the cut (a break test saw the wrong shard
// named 6 times in 285 under load): shard 1 exits 1 at once, shard 0 later; their reaping
// order is swapped by hand.
func TestChildFailureBeforeCut(t *testing.T) {
	s := &Sharded{Key: []string{"id"}, N: 2, Tools: map[string]bool{},
		Cmd: []string{"sh", "-c", `if [ "$STREAMKIT_SHARD" = 0 ]; then sleep 0.3; fi; exit 1`}}
	children := startExited(t, s)
	children[0].order, children[1].order = children[1].order, children[0].order
	s.cutAt = children[1].exitAt.Add(time.Millisecond)
	var ce *stage.ChildExitError
	if err := s.childFailure(children, errors.New("symptom")); !errors.As(err, &ce) || !strings.Contains(err.Error(), "shard 1") {
		t.Fatalf("got %v, want shard 1", err)
	}
}

// startExited starts s's children, closes their input and waits for them to exit.
func startExited(t *testing.T, s *Sharded) []*child {
	t.Helper()
	children, err := s.start(stage.Options{Stderr: io.Discard}, shardSchema, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range children {
		c.stdin.Close()
		<-c.exited
	}
	return children
}
