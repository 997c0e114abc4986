package delta

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// LogDir is the name of the transaction log directory inside a table root.
const LogDir = "_delta_log"

// Limits applied when reading commit files (DELTA.md "Reader safety").
const (
	maxActionLineBytes  = 64 << 20
	maxActionsPerCommit = 50_000_000
)

// commitFileName returns the file name of commit v: v zero-padded to 20 digits + ".json".
func commitFileName(v int64) string { return fmt.Sprintf("%020d.json", v) }

// checkpointFileName returns the file name of the classic checkpoint of version v.
func checkpointFileName(v int64) string { return fmt.Sprintf("%020d.checkpoint.parquet", v) }

// logListing is what a directory listing of _delta_log tells about the table.
type logListing struct {
	commits     map[int64]bool
	checkpoints map[int64][]string // version → checkpoint file names (classic: 1; multi-part: all parts)
	maxCommit   int64              // -1 when there is none
}

// listLog lists dir (a _delta_log directory). Only names made of the expected digits and
// suffixes count; temp files, .crc files and anything unknown are skipped.
func listLog(dir string) (*logListing, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	l := &logListing{commits: map[int64]bool{}, checkpoints: map[int64][]string{}, maxCommit: -1}
	type multi struct {
		total int
		parts map[int]string
	}
	multis := map[int64]map[int]*multi{} // version → total parts → parts seen
	for _, e := range entries {
		name := e.Name()
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

// readCommit reads and parses commit file v of the log in dir.
func readCommit(dir string, v int64) ([]Action, error) {
	f, err := os.Open(filepath.Join(dir, commitFileName(v)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	actions, err := parseActions(f)
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

// errCommitExists reports that another writer already committed the version.
var errCommitExists = errors.New("commit version already exists")

// putIfAbsent makes data visible as dir/name only if that name does not exist yet: it writes
// a temporary file in dir, fsyncs it, hard-links it to name (link fails with EEXIST when
// another writer won) and fsyncs dir (DELTA.md "Log and atomic commits"). It returns
// errCommitExists when the name was taken.
func putIfAbsent(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, "_commit_"+uuid.NewString()+".json.tmp")
	if err := writeFileSync(tmp, data); err != nil {
		return err
	}
	defer os.Remove(tmp)
	err := os.Link(tmp, filepath.Join(dir, name))
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errCommitExists
		}
		return err
	}
	if err := os.Remove(tmp); err != nil {
		return err
	}
	return syncDir(dir)
}

// replaceFile atomically replaces dir/name with data (temp file, fsync, rename, fsync dir);
// used for checkpoints and _last_checkpoint, which may be rewritten.
func replaceFile(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, "_tmp_"+uuid.NewString()+"."+name+".tmp")
	if err := writeFileSync(tmp, data); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
