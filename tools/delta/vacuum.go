package deltacmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/streamkit/streamkit/delta"
	deltasink "github.com/streamkit/streamkit/sink/delta"
)

// VacuumOptions configure Vacuum.
type VacuumOptions struct {
	// Retain keeps removed and unreferenced files younger than this; < 0: the table's
	// delta.deletedFileRetentionDuration (one week by default).
	Retain time.Duration
	// DryRun lists the files that would be deleted without deleting anything.
	DryRun bool
	// Force allows a retention below the table's setting.
	Force bool
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// VacuumResult reports the files Vacuum deleted (or would delete).
type VacuumResult struct {
	Files     []string // relative paths, sorted
	Bytes     int64
	Retention time.Duration
	Deleted   bool // false for a dry run or when there was nothing to delete
}

// Vacuum deletes the files in the table directory that the table no longer needs (Delta's
// VACUUM): every regular file that is neither a live data file nor a removed file whose
// tombstone is younger than the retention, and whose modification time is older than the
// retention. The retention protects files that concurrent writers have written but not yet
// committed and removed files that readers of older versions still need. Never touched:
// `_delta_log`, hidden files and directories (names starting with '.' or '_', except
// partition directories), deletion vector files and symbolic links. A retention below the
// table's delta.deletedFileRetentionDuration is refused unless Force is set. Around the
// deletion, two commitInfo-only commits (operations VACUUM START and VACUUM END) record it, as
// Spark does, without changing the table's data.
func Vacuum(ctx context.Context, root string, opts VacuumOptions) (*VacuumResult, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	tbl := delta.NewTable(root, nil)
	tbl.EngineInfo = "streamkit delta vacuum"
	s, err := tbl.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("vacuum: %w", err)
	}
	if err := s.CheckWrite(); err != nil {
		return nil, fmt.Errorf("vacuum: %w", err)
	}
	tableRetention := s.DeletedFileRetention()
	retain := opts.Retain
	if retain < 0 {
		retain = tableRetention
	}
	if retain < tableRetention && !opts.Force {
		return nil, usagef("vacuum: --retain %s is below the table's delta.deletedFileRetentionDuration (%s): files that concurrent writers have not committed yet, or that readers of older versions need, could be deleted; pass --force to vacuum anyway",
			retain, tableRetention)
	}
	now := opts.Now()
	cutoff := now.Add(-retain)
	keep := map[string]bool{}
	for _, a := range s.Files() {
		p, err := delta.DecodePath(a.Path)
		if err != nil {
			return nil, fmt.Errorf("vacuum: live file %q: %w; refusing to vacuum", a.Path, err)
		}
		keep[p] = true
	}
	for _, r := range s.Tombstones() {
		if r.DeletionTimestamp == nil || time.UnixMilli(*r.DeletionTimestamp).After(cutoff) {
			if p, err := delta.DecodePath(r.Path); err == nil {
				keep[p] = true
			}
		}
	}
	partDir := map[string]bool{}
	for _, c := range s.PartitionColumns() {
		partDir[deltasink.EscapePartitionName(c)+"="] = true
	}
	isPartitionDir := func(name string) bool {
		if i := strings.IndexByte(name, '='); i > 0 {
			return partDir[name[:i+1]]
		}
		return false
	}
	res := &VacuumResult{Retention: retain}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed concurrently
			}
			return err
		}
		if p == root {
			return nil
		}
		name := d.Name()
		hidden := strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
		if d.IsDir() {
			if name == delta.LogDir || (hidden && !isPartitionDir(name)) {
				return filepath.SkipDir
			}
			return nil
		}
		if hidden || !d.Type().IsRegular() || strings.HasPrefix(name, "deletion_vector_") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if keep[rel] {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !info.ModTime().Before(cutoff) {
			return nil
		}
		res.Files = append(res.Files, rel)
		res.Bytes += info.Size()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("vacuum: list %s: %w", root, err)
	}
	sort.Strings(res.Files)
	if opts.DryRun || len(res.Files) == 0 {
		return res, nil
	}
	params := map[string]string{
		"retentionCheckEnabled":    strconv.FormatBool(!opts.Force),
		"specifiedRetentionMillis": strconv.FormatInt(retain.Milliseconds(), 10),
		"defaultRetentionMillis":   strconv.FormatInt(tableRetention.Milliseconds(), 10),
	}
	start, err := tbl.Commit(ctx, delta.CommitRequest{Read: s, Operation: "VACUUM START", OperationParameters: params,
		OperationMetrics: map[string]string{"numFilesToDelete": strconv.Itoa(len(res.Files)), "sizeOfDataToDelete": strconv.FormatInt(res.Bytes, 10)}})
	if err != nil {
		return nil, fmt.Errorf("vacuum: %w", err)
	}
	deleted := 0
	var firstErr error
	for _, f := range res.Files {
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(f))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		deleted++
	}
	status := "COMPLETED"
	if firstErr != nil {
		status = "FAILED"
	}
	_, err = tbl.Commit(ctx, delta.CommitRequest{Read: start.Snapshot, Operation: "VACUUM END",
		OperationParameters: map[string]string{"status": status},
		OperationMetrics:    map[string]string{"numDeletedFiles": strconv.Itoa(deleted), "numVacuumedDirectories": "0"}})
	if firstErr != nil {
		return nil, fmt.Errorf("vacuum: %d of %d files deleted: %w", deleted, len(res.Files), firstErr)
	}
	if err != nil {
		return nil, fmt.Errorf("vacuum: files deleted, but the VACUUM END commit failed: %w", err)
	}
	res.Deleted = true
	return res, nil
}
