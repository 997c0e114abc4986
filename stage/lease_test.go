package stage

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/state"
)

// TestLostLeaseStopsSink: the stages keep their checkpoints on the real S3 test server; once
// the sink's lease is taken over by another process after epoch 1 committed, the sink fails at
// the next barrier and commits nothing more.
func TestLostLeaseStopsSink(t *testing.T) {
	s3test.Server(t)
	t.Setenv("STREAMKIT_LEASE_TTL", "600ms")
	root := "s3://" + s3test.Bucket(t) + "/ckpt"
	recDir := state.Join(root, "rec")
	src := &countSource{total: 200}
	stolen := false
	src.onRead = func(n int64) {
		if n < 20 || stolen {
			return
		}
		stolen = true
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if c, _ := state.Committed(recDir); c >= 1 {
				break
			}
		}
		// Another process takes the next lease generations of the sink's directory; the
		// sink's next renewal (every 200 ms) finds its generation taken.
		st, err := state.StoreAt(recDir)
		if err != nil {
			t.Error(err)
			return
		}
		ctx := context.Background()
		ents, _ := st.ReadDir(ctx, state.LeaseFile)
		var last int64
		for _, e := range ents {
			fmt.Sscanf(e.Name, "%d.json", &last)
		}
		for g := last + 1; g <= last+4; g++ {
			st.PutIfAbsent(ctx, fmt.Sprintf("%s/%020d.json", state.LeaseFile, g),
				[]byte(fmt.Sprintf(`{"owner":"other","host":"h","pid":1,"renewedMs":%d,"ttlMs":60000}`, time.Now().UnixMilli())))
		}
		// A renewal that times out (200 ms each on a loaded machine) only counts as lost
		// after a whole TTL: give it a few.
		time.Sleep(3 * time.Second)
	}
	rec := &recorder{}
	_, oerr := pipeline(t, root, src, rec, nil)
	if oerr == nil || !strings.Contains(oerr.Error(), "lost its lease") {
		t.Fatalf("sink after losing its lease: %v (%q)", oerr, rec.lines)
	}
	if c, err := state.Committed(recDir); c != 1 || err != nil {
		t.Fatalf("sink committed %d, %v; want 1 (nothing after the loss)", c, err)
	}
	if contains(rec.lines, "barrier 2") {
		t.Fatalf("the sink processed barrier 2 after losing its lease: %q", rec.lines)
	}
}
