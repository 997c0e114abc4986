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

// logName is the store name of file name inside `_delta_log`.
func logName(name string) string { return LogDir + "/" + name }

// logListing is what a directory listing of _delta_log tells about the table.
type logListing struct {
	commits     map[int64]bool
	checkpoints map[int64][]string // version → checkpoint file names (classic: 1; multi-part: all parts)
	maxCommit   int64              // -1 when there is none
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
	l := &logListing{commits: map[int64]bool{}, checkpoints: map[int64][]string{}, maxCommit: -1, mod: map[string]time.Time{}}
	type multi struct {
		total int
		parts map[int]string
	}
	multis := map[int64]map[int]*multi{} // version → total parts → parts seen
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
			l.checkpoints[v] = []string{name}
		case strings.HasPrefix(rest, "checkpoint.") && strings.HasSuffix(rest, ".parquet"):
			// multi-part: checkpoint.<part 10 digits>.<total 10 digits>.parquet
			mid := strings.TrimSuffix(strings.TrimPrefix(rest, "checkpoint."), ".parquet")
			a, b, ok := strings.Cut(mid, ".")
			if !ok || len(a) != 10 || len(b) != 10 || !allDigits(a) || !allDigits(b) {
				continue // UUID-named (v2) checkpoints are not supported
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
	for v, byTotal := range multis {
		if _, classic := l.checkpoints[v]; classic {
			continue
		}
		for total, m := range byTotal {
			if len(m.parts) != total {
				continue // incomplete multi-part checkpoint: ignore
			}
			names := make([]string, 0, total)
			for p := 1; p <= total; p++ {
				names = append(names, m.parts[p])
			}
			l.checkpoints[v] = names
			break
		}
	}
	return l, nil
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
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxActionLineBytes)
	var out []Action
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var a Action
		if err := json.Unmarshal(line, &a); err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		if a != (Action{}) {
			out = append(out, a)
		}
		if len(out) > maxActionsPerCommit {
			return nil, fmt.Errorf("more than %d actions", maxActionsPerCommit)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
