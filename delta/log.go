package delta

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/streamkit/streamkit/storage"
)

// LogDir is the name of the transaction log directory inside a table root.
const LogDir = "_delta_log"

// Limits applied when reading commit files (DELTA.md "Reader safety").
const (
	maxActionLineBytes  = 64 << 20
	maxActionsPerCommit = 50_000_000
)

// CommitFileName returns the file name of commit v: v zero-padded to 20 digits + ".json".
func CommitFileName(v int64) string { return fmt.Sprintf("%020d.json", v) }

// CheckpointFileName returns the file name of the classic (single-file) checkpoint of
// version v: v zero-padded to 20 digits + ".checkpoint.parquet".
func CheckpointFileName(v int64) string { return fmt.Sprintf("%020d.checkpoint.parquet", v) }

// SidecarDir is the directory, inside `_delta_log`, of the sidecar files of v2 checkpoints
// (PROTOCOL.md "Sidecar Files").
const SidecarDir = "_sidecars"

// V2CheckpointFileName returns the file name of the UUID-named (v2 spec) checkpoint of version
// v (PROTOCOL.md "UUID-named checkpoint"): v zero-padded to 20 digits + ".checkpoint." + id +
// "." + ext, where ext is "json" or "parquet".
func V2CheckpointFileName(v int64, id uuid.UUID, ext string) string {
	return fmt.Sprintf("%020d.checkpoint.%s.%s", v, id, ext)
}

// logName is the store name of file name inside `_delta_log`.
func logName(name string) string { return LogDir + "/" + name }

// logListing is what a directory listing of _delta_log tells about the table.
type logListing struct {
	commits map[int64]bool
	// checkpoints are the complete checkpoints of each version, preferred first: classic,
	// UUID-named (v2) by name, multi-part; each is its file names in `_delta_log` (one, or all
	// parts of a multi-part checkpoint). A version may have several (racing writers, a v2
	// table's compatibility checkpoint); any one of them gives the same snapshot.
	checkpoints map[int64][][]string
	maxCommit   int64 // -1 when there is none
	// entries are the listed objects (files) of _delta_log, sorted by name: log cleanup reads
	// the .crc and compaction files from them, and version times come from their ModTime, so
	// that a bucket is listed once rather than asked for every object.
	entries []storage.Info
	mod     map[string]time.Time // file name → modification time
}

// listLog lists the `_delta_log` of the table in s. Only names made of the expected digits and
// suffixes count; temp files (the store's `.tmp-*` and the `_commit_*`/`_tmp_*` ones older
// streamkit versions left), .crc files and anything unknown are skipped. A log that does not
// exist gives an error matching fs.ErrNotExist (on a bucket: one without any object).
func listLog(ctx context.Context, s storage.Store) (*logListing, error) {
	entries, err := s.ReadDir(ctx, LogDir)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		// ReadDir lists a missing directory as empty; tell an empty _delta_log (a table
		// being created) from none, as a directory listing did.
		if _, err := s.Stat(ctx, LogDir); err != nil {
			return nil, err
		}
	}
	l := &logListing{commits: map[int64]bool{}, checkpoints: map[int64][][]string{}, maxCommit: -1, mod: map[string]time.Time{}}
	type multi struct {
		total int
		parts map[int]string
	}
	multis := map[int64]map[int]*multi{} // version → total parts → parts seen
	classic := map[int64]string{}
	uuids := map[int64][]string{}
	for _, e := range entries {
		if e.IsDir {
			continue
		}
		l.entries = append(l.entries, e)
		name := e.Name
		l.mod[name] = e.ModTime
		if len(name) < 21 || !allDigits(name[:20]) || name[20] != '.' {
			continue
		}
		v, err := strconv.ParseInt(name[:20], 10, 64)
		if err != nil {
			continue
		}
		rest := name[21:]
		switch {
		case rest == "json":
			l.commits[v] = true
			if v > l.maxCommit {
				l.maxCommit = v
			}
		case rest == "checkpoint.parquet":
			classic[v] = name
		case isV2CheckpointName(rest):
			uuids[v] = append(uuids[v], name) // entries are sorted by name
		case strings.HasPrefix(rest, "checkpoint.") && strings.HasSuffix(rest, ".parquet"):
			// multi-part: checkpoint.<part 10 digits>.<total 10 digits>.parquet
			mid := strings.TrimSuffix(strings.TrimPrefix(rest, "checkpoint."), ".parquet")
			a, b, ok := strings.Cut(mid, ".")
			if !ok || len(a) != 10 || len(b) != 10 || !allDigits(a) || !allDigits(b) {
				continue
			}
			part, _ := strconv.Atoi(a)
			total, _ := strconv.Atoi(b)
			if total < 1 || part < 1 || part > total {
				continue
			}
			if multis[v] == nil {
				multis[v] = map[int]*multi{}
			}
			m := multis[v][total]
			if m == nil {
				m = &multi{total: total, parts: map[int]string{}}
				multis[v][total] = m
			}
			m.parts[part] = name
		}
	}
	for v, name := range classic {
		l.checkpoints[v] = append(l.checkpoints[v], []string{name})
	}
	for v, names := range uuids {
		for _, name := range names {
			l.checkpoints[v] = append(l.checkpoints[v], []string{name})
		}
	}
	for v, byTotal := range multis {
		totals := make([]int, 0, len(byTotal))
		for total := range byTotal {
			totals = append(totals, total)
		}
		sort.Ints(totals)
		for _, total := range totals {
			m := byTotal[total]
			if len(m.parts) != total {
				continue // incomplete multi-part checkpoint: ignore
			}
			names := make([]string, 0, total)
			for p := 1; p <= total; p++ {
				names = append(names, m.parts[p])
			}
			l.checkpoints[v] = append(l.checkpoints[v], names)
		}
	}
	return l, nil
}

// isV2CheckpointName reports whether rest, a `_delta_log` file name after "<version>.", names
// a UUID-named checkpoint: "checkpoint.<uuid>.json" or "checkpoint.<uuid>.parquet".
func isV2CheckpointName(rest string) bool {
	mid, ok := strings.CutPrefix(rest, "checkpoint.")
	if !ok {
		return false
	}
	id, ok := strings.CutSuffix(mid, ".json")
	if !ok {
		id, ok = strings.CutSuffix(mid, ".parquet")
	}
	if !ok || len(id) != 36 {
		return false
	}
	_, err := uuid.Parse(id)
	return err == nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// checkpointVersions returns the checkpoint versions ≤ max, newest first.
func (l *logListing) checkpointVersions(max int64) []int64 {
	var vs []int64
	for v := range l.checkpoints {
		if v <= max {
			vs = append(vs, v)
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] > vs[j] })
	return vs
}

// readCommit reads and parses commit file v of the table in s; a missing one gives an error
// matching fs.ErrNotExist. The file is read whole: one request on a bucket.
func readCommit(ctx context.Context, s storage.Store, v int64) ([]Action, error) {
	b, err := s.ReadFile(ctx, logName(CommitFileName(v)))
	if err != nil {
		return nil, err
	}
	actions, err := parseActions(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("read commit %d: %w", v, err)
	}
	return actions, nil
}

// parseActions parses newline-delimited JSON actions, skipping blank lines and unknown
// action kinds; a line longer than maxActionLineBytes is an error.
func parseActions(r io.Reader) ([]Action, error) {
	var out []Action
	err := scanJSONLines(r, func(line []byte) error {
		var a Action
		if err := json.Unmarshal(line, &a); err != nil {
			return err
		}
		if a != (Action{}) {
			out = append(out, a)
		}
		return nil
	})
	return out, err
}

// scanJSONLines calls fn for every non-blank line of newline-delimited JSON (a commit, a JSON
// checkpoint), at most maxActionsPerCommit of them; a line longer than maxActionLineBytes is
// an error. Errors name the line.
func scanJSONLines(r io.Reader, fn func(line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxActionLineBytes)
	n := 0
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("line %d: %w", lineNo, err)
		}
		if n++; n > maxActionsPerCommit {
			return fmt.Errorf("more than %d actions", maxActionsPerCommit)
		}
	}
	return sc.Err()
}
