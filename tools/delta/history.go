package deltacmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/tools/cli"
)

// Commit is one entry of a table's history (one JSON commit file).
type Commit struct {
	Version             int64             `json:"version"`
	Timestamp           time.Time         `json:"timestamp"`
	Operation           string            `json:"operation"`
	OperationParameters map[string]string `json:"operationParameters,omitempty"`
	OperationMetrics    map[string]string `json:"operationMetrics,omitempty"`
	ReadVersion         *int64            `json:"readVersion,omitempty"`
	IsBlindAppend       bool              `json:"isBlindAppend"`
	EngineInfo          string            `json:"engineInfo,omitempty"`
	Txns                []Flow            `json:"txn,omitempty"`
	Adds                int               `json:"addedFiles"`
	Removes             int               `json:"removedFiles"`
	Protocol            bool              `json:"protocolChange,omitempty"`
	Metadata            bool              `json:"metadataChange,omitempty"`
}

// Flow is the progress of one application (txn appId): the newest version it committed.
type Flow struct {
	AppID       string     `json:"appId"`
	Version     int64      `json:"version"`
	LastUpdated *time.Time `json:"lastUpdated,omitempty"`
}

// History is what `delta history` reports.
type History struct {
	Table   string   `json:"table"` // the table root: local directory or redacted URL
	Version int64    `json:"version"`
	Oldest  int64    `json:"oldestCommit"` // older commit files were cleaned up
	Commits []Commit `json:"commits"`      // newest first
	Flows   []Flow   `json:"flows"`        // latest txn per appId, by appId
}

// ReadHistory reads the commit files of the table at loc (a local path, a file:// URI or a
// bucket URL, see [cli.OpenStore]), newest first (at most limit; 0: all), and the latest txn of
// every flow.
func ReadHistory(ctx context.Context, loc string, limit int) (*History, error) {
	st, err := cli.OpenStore(ctx, loc, false)
	if err != nil {
		return nil, err
	}
	tbl := delta.OpenTable(st, nil)
	s, err := tbl.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	vs, err := tbl.CommitVersions()
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	h := &History{Table: tbl.Root(), Version: s.Version(), Oldest: -1, Commits: []Commit{}, Flows: []Flow{}}
	// Only the contiguous run of commits ending at the snapshot version is history.
	var run []int64
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i] > s.Version() {
			continue
		}
		if len(run) > 0 && vs[i] != run[len(run)-1]-1 {
			break
		}
		run = append(run, vs[i])
	}
	if len(run) > 0 {
		h.Oldest = run[len(run)-1]
	}
	for _, v := range run {
		if limit > 0 && len(h.Commits) >= limit {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		acts, err := tbl.ReadCommit(v)
		if errors.Is(err, fs.ErrNotExist) {
			break // cleaned up meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		c := Commit{Version: v}
		for _, a := range acts {
			switch {
			case a.CommitInfo != nil:
				ci := a.CommitInfo
				c.Timestamp = time.UnixMilli(ci.Timestamp).UTC()
				c.Operation = ci.Operation
				c.OperationParameters = ci.OperationParameters
				c.OperationMetrics = ci.OperationMetrics
				c.ReadVersion = ci.ReadVersion
				c.IsBlindAppend = ci.IsBlindAppend
				c.EngineInfo = ci.EngineInfo
			case a.Txn != nil:
				c.Txns = append(c.Txns, Flow{AppID: a.Txn.AppID, Version: a.Txn.Version})
			case a.Add != nil:
				c.Adds++
			case a.Remove != nil:
				c.Removes++
			case a.Protocol != nil:
				c.Protocol = true
			case a.MetaData != nil:
				c.Metadata = true
			}
		}
		h.Commits = append(h.Commits, c)
	}
	h.Flows = flows(s)
	return h, nil
}
