package deltacmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
)

// delta history and cleanup-log on a table in a bucket of the real S3 server, by URL; a URL
// with an unknown scheme is a usage error.
func TestS3HistoryCleanupLog(t *testing.T) {
	s3test.Server(t)
	ctx := context.Background()
	url := "s3://" + s3test.Bucket(t) + "/lake/orders"
	st, err := storage.Open(ctx, url, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tbl := delta.OpenTable(st, nil)
	p, m, err := delta.NewTableMetadata(schema, delta.CreateOptions{Configuration: map[string]string{"delta.checkpointInterval": "5"}})
	if err != nil {
		t.Fatal(err)
	}
	var s *delta.Snapshot
	for v := int64(0); v <= 7; v++ { // checkpoint 5
		req := delta.CommitRequest{Read: s, Txn: &delta.Txn{AppID: "flow-a", Version: v},
			Adds: []delta.Add{{Path: fmt.Sprintf("part-%d.parquet", v), PartitionValues: map[string]*string{}, Size: 1, DataChange: true}}}
		if s == nil {
			req.Protocol, req.Metadata = p, m
		}
		res, err := tbl.Commit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		s = res.Snapshot
	}
	run := func(args ...string) (string, error) {
		cmd := Command()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run("history", url, "--format", "json", "--limit", "3")
	if err != nil {
		t.Fatal(err)
	}
	var h History
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatal(err)
	}
	if h.Table != url || h.Version != 7 || len(h.Commits) != 3 || h.Commits[0].Version != 7 || h.Oldest != 0 ||
		len(h.Flows) != 1 || h.Flows[0].AppID != "flow-a" || h.Flows[0].Version != 7 {
		t.Fatalf("history %+v", h)
	}
	if out, err := run("cleanup-log", url, "--dry-run"); err != nil || !strings.Contains(out, "nothing to delete: no checkpoint older than the cut-off") {
		t.Fatalf("cleanup-log within retention: %q %v", out, err)
	}
	// Five days on, with a two-day retention, the log before checkpoint 5 has expired.
	later := func() time.Time { return time.Now().Add(5 * 24 * time.Hour) }
	res, err := CleanupLog(ctx, url, CleanupLogOptions{Retain: 48 * time.Hour, Force: true, Now: later})
	want := []string{delta.CommitFileName(0), delta.CommitFileName(1), delta.CommitFileName(2), delta.CommitFileName(3), delta.CommitFileName(4)}
	if err != nil || res.Checkpoint != 5 || !slices.Equal(res.Files, want) {
		t.Fatalf("cleanup-log: %+v %v", res, err)
	}
	out, err = run("history", url)
	if err != nil || !strings.Contains(out, "table "+url+", version 7 (commits before 5 were cleaned up)") || strings.Count(out, "WRITE") != 3 {
		t.Fatalf("history after cleanup: %q %v", out, err)
	}
	var ue *stage.UsageError
	for _, args := range [][]string{{"history", "ftp://host/t"}, {"cleanup-log", "s3://"}} {
		if _, err := run(args...); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
