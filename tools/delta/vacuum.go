package deltacmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/streamkit/streamkit/delta"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	"github.com/streamkit/streamkit/storage"
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
// partition directories) and symbolic links. Deletion vector files (deletion_vector_*.bin) are
// kept while a live file's vector, or the vector of a removed file whose tombstone is younger
// than the retention, is stored in them; others are deleted like data files. A retention below the
// table's delta.deletedFileRetentionDuration is refused unless Force is set. Around the
// deletion, two commitInfo-only commits (operations VACUUM START and VACUUM END) record it, as
// Spark does, without changing the table's data.
//
// The table is rooted at store st (a local directory or a bucket prefix), listed with
// [storage.Store.Walk] below each top-level directory that may hold data files, and files are
// deleted with [storage.Store.Remove].
func Vacuum(ctx context.Context, st storage.Store, opts VacuumOptions) (*VacuumResult, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	root := st.Location()
	tbl := delta.OpenTable(st, nil)
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
	keepDV := func(dv *delta.DeletionVector) error {
		if dv == nil {
			return nil
		}
		name, ok, err := dv.FileInTable(st)
		if ok {
			keep[name] = true
		}
		return err
	}
	for _, a := range s.Files() {
		p, err := delta.DecodePath(a.Path)
		if err != nil {
			return nil, fmt.Errorf("vacuum: live file %q: %w; refusing to vacuum", a.Path, err)
		}
		keep[p] = true
		if err := keepDV(a.DeletionVector); err != nil {
			return nil, fmt.Errorf("vacuum: live file %q: %w; refusing to vacuum", a.Path, err)
		}
	}
	for _, r := range s.Tombstones() {
		if r.DeletionTimestamp == nil || time.UnixMilli(*r.DeletionTimestamp).After(cutoff) {
			if p, err := delta.DecodePath(r.Path); err == nil {
				keep[p] = true
			}
			if err := keepDV(r.DeletionVector); err != nil {
				return nil, fmt.Errorf("vacuum: removed file %q: %w; refusing to vacuum", r.Path, err)
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
	// skip reports whether the object at rel may never be vacuumed: inside _delta_log or a
	// hidden directory (other than a partition directory), or itself hidden.
	skip := func(rel string) bool {
		segs := strings.Split(rel, "/")
		for _, d := range segs[:len(segs)-1] {
			if d == delta.LogDir || ((strings.HasPrefix(d, ".") || strings.HasPrefix(d, "_")) && !isPartitionDir(d)) {
				return true
			}
		}
		name := segs[len(segs)-1]
		return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
	}
	res := &VacuumResult{Retention: retain}
	consider := func(in storage.Info) error {
		if skip(in.Name) || keep[in.Name] || !in.ModTime.Before(cutoff) {
			return nil
		}
		if dir := st.LocalDir(); dir != "" {
			// Symbolic links (and other non-regular files) on a local disk are left alone.
			fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(in.Name)))
			if err != nil || !fi.Mode().IsRegular() {
				return nil
			}
		}
		res.Files = append(res.Files, in.Name)
		res.Bytes += in.Size
		return nil
	}
	// List only the top-level entries that may hold data files, so _delta_log and hidden
	// directories (e.g. _streamkit) are never listed object by object.
	top, err := st.ReadDir(ctx, "")
	for _, e := range top {
		if err != nil {
			break
		}
		switch {
		case !e.IsDir:
			err = consider(e)
		case !skip(e.Name + "/x"):
			err = st.Walk(ctx, e.Name, func(in storage.Info) error {
				in.Name = e.Name + "/" + in.Name
				return consider(in)
			})
		}
	}
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
		if err := st.Remove(ctx, f); err != nil {
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
