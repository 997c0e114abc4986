package backfill

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LockDir is the directory, inside the target table, holding one lock file per backfill flow
// (a name starting with "_" is ignored by Delta readers and VACUUM).
const LockDir = "_streamkit/locks"

// flowLock is an exclusive flock(2) on <target>/_streamkit/locks/backfill-<flow>.lock, held
// for the whole run so two cron runs of the same flow never overlap; the holder's PID is
// written into the file (informational).
type flowLock struct {
	f    *os.File
	path string
}

// lockFlow takes the flow's lock, waiting up to wait (0: fail at once) for a running holder.
func lockFlow(ctx context.Context, target, flow string, wait time.Duration) (*flowLock, error) {
	dir := filepath.Join(target, filepath.FromSlash(LockDir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("backfill: lock flow %s: %w", flow, err)
	}
	p := filepath.Join(dir, "backfill-"+url.PathEscape(flow)+".lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("backfill: lock flow %s: %w", flow, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("backfill: lock %s: %w", p, err)
		}
		if !time.Now().Before(deadline) {
			pid, _ := os.ReadFile(p)
			f.Close()
			holder := "another process"
			if s := strings.TrimSpace(string(pid)); s != "" {
				holder = "process " + s
			}
			return nil, fmt.Errorf("backfill: flow %q is already running (%s holds %s); not starting a second run (use --lock-wait to wait for it)", flow, holder, p)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return &flowLock{f: f, path: p}, nil
}

func (l *flowLock) release() {
	if l != nil {
		l.f.Close()
	}
}
