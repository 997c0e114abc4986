package backfill

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/streamkit/streamkit/delta"
)

// lockFlow takes the flow's lock in the target table (Table.LockFlow: the same
// <target>/_streamkit/flows/<flow>.lock write-delta takes, since both commit txn actions with
// appId = flow), waiting up to wait (0: fail at once) for a running holder. It is held for the
// whole run, so two cron runs of the same flow never overlap.
func lockFlow(ctx context.Context, target *delta.Table, flow string, wait time.Duration) (*delta.FlowLock, error) {
	l, err := target.LockFlow(ctx, flow, wait, delta.FlowHolder{Tool: "backfill"})
	var busy *delta.FlowBusyError
	if errors.As(err, &busy) {
		return nil, fmt.Errorf("backfill: flow %q is already running (%v); not starting a second run (use --lock-wait to wait for it)", flow, err)
	}
	if err != nil {
		return nil, fmt.Errorf("backfill: %w", err)
	}
	return l, nil
}
