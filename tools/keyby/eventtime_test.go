package keyby

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/tools/dedup"
)

// futureDedup names a streamkit tool this test binary plays as a child of keyby --shards: dedup
// --key id --ttl TTL --event-time COL, given as `future-dedup COL TTL`, a form of its time
// column that no flag parsing in keyby could read.
const futureDedup = "future-dedup"

func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == futureDedup {
		os.Exit(runFutureDedup(os.Args[2], os.Args[3]))
	}
	os.Exit(m.Run())
}

func runFutureDedup(column, ttl string) int {
	d, err := time.ParseDuration(ttl)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return stage.ExitUsage
	}
	op, err := dedup.New(dedup.Config{Key: []string{"id"}, EventTime: column, TTL: d})
	if err == nil {
		err = stage.RunOperator(context.Background(), stage.Options{Tool: "dedup", Stateful: true, Progress: stage.ProgressOff, Stderr: io.Discard}, op)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return stage.ExitCode(err)
}

// A streamkit child whose event-time column keyby cannot read from its arguments still gets
// the stream's progress: keyby learns the column from the child's first output schema
// (codec.SchemaShardEventTime), so the shards keep exactly one dedup's rows, as in
// TestShardedTTLSameRows (without progress a shard's watermark lags and it keeps other rows).
func TestChildEventTimeFromSchema(t *testing.T) {
	in := ttlInput(t)
	one, stderr, code := runBin(t, nil, in, "dedup", "--key", "id", "--ttl", "10m", "--event-time", "ts")
	if code != 0 {
		t.Fatalf("dedup: exit %d: %s", code, stderr)
	}
	want := rowsOf(t, one)
	var out, errs bytes.Buffer
	s := &Sharded{Key: []string{"id"}, N: 2, Cmd: []string{futureDedup, "ts", "10m"}, Tools: map[string]bool{futureDedup: true}}
	o := stage.Options{Tool: "keyby", Stdin: bytes.NewReader(in), Stdout: &out, Stderr: &errs, Shard: &stage.ShardEnv{}}
	if err := s.Run(context.Background(), o); err != nil {
		t.Fatalf("keyby id --shards 2 -- %s ts 10m: %v\n%s", futureDedup, err, errs.String())
	}
	if got := rowsOf(t, out.Bytes()); !slices.Equal(got, want) {
		t.Errorf("keyby id --shards 2 -- %s ts 10m: %d rows, one dedup %d", futureDedup, len(got), len(want))
	}
}
