package files

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// FingerprintBytes is how many leading bytes of a file its fingerprint covers.
const FingerprintBytes = 4096

// TempSuffixes are name endings of files still being written by common tools (Hadoop's
// ._COPYING_, browsers' .crdownload / .part, editors' ~); such files are never listed.
var TempSuffixes = []string{".tmp", ".temp", "._COPYING_", ".crdownload", ".part", ".partial", ".download", "~"}

// Hidden reports whether a file or directory name is skipped: hidden (".x"), underscore
// ("_x": Spark/Hadoop markers such as _SUCCESS, _temporary) or temporary (TempSuffixes).
func Hidden(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return true
	}
	for _, s := range TempSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// pattern is one compiled PATTERN argument.
type pattern struct {
	arg     string
	base    string          // absolute directory to walk
	glob    string          // doublestar pattern relative to base ("" = base is the file)
	literal map[string]bool // segments written literally in glob: never skipped as hidden
	file    bool            // a literal path that is not a directory
}

// compilePattern splits a PATTERN into an absolute base directory and a doublestar pattern.
// A path to a directory without glob characters means every file below it ("dir/**").
func compilePattern(arg string) (*pattern, error) {
	p := filepath.ToSlash(arg)
	if !doublestar.ValidatePattern(p) {
		return nil, fmt.Errorf("pattern %q: bad glob syntax", arg)
	}
	base, glob := doublestar.SplitPattern(p)
	file := false
	if !hasMeta(glob) {
		// A literal path: a file, or a directory meaning everything below it.
		full := filepath.FromSlash(p)
		if fi, err := os.Stat(full); err == nil && fi.IsDir() {
			base, glob = p, "**"
		} else {
			file = true
		}
	}
	abs, err := filepath.Abs(filepath.FromSlash(base))
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", arg, err)
	}
	pt := &pattern{arg: arg, base: abs, glob: glob, literal: map[string]bool{}, file: file}
	for _, seg := range strings.Split(glob, "/") {
		if !hasMeta(seg) {
			pt.literal[seg] = true
		}
	}
	return pt, nil
}

func hasMeta(s string) bool { return strings.ContainsAny(s, "*?[{\\") }

// listed is one file seen by a listing.
type listed struct {
	path  string
	size  int64
	mtime int64 // ns
}

// skipped reports whether the path relative to the pattern base has a hidden or temporary
// segment that the pattern did not spell out literally.
func (p *pattern) skipped(rel string) bool {
	for _, seg := range strings.Split(rel, "/") {
		if Hidden(seg) && !p.literal[seg] {
			return true
		}
	}
	return false
}

// list walks every pattern and returns the regular files they match (deduplicated by path,
// in no particular order). A pattern whose base directory does not exist matches nothing.
func list(patterns []*pattern) ([]listed, error) {
	seen := map[string]bool{}
	var out []listed
	for _, p := range patterns {
		fsys := os.DirFS(p.base)
		err := doublestar.GlobWalk(fsys, p.glob, func(rel string, d fs.DirEntry) error {
			if p.skipped(rel) {
				return nil
			}
			path := filepath.Join(p.base, filepath.FromSlash(rel))
			if seen[path] {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // removed since the directory was read
				}
				return fmt.Errorf("stat %s: %w", path, err)
			}
			if !fi.Mode().IsRegular() {
				// A symlink: follow it to a regular file.
				st, err := os.Stat(path)
				if err != nil || !st.Mode().IsRegular() {
					return nil
				}
				fi = st
			}
			seen[path] = true
			out = append(out, listed{path: path, size: fi.Size(), mtime: fi.ModTime().UnixNano()})
			return nil
		}, doublestar.WithFilesOnly(), doublestar.WithNoHidden(), doublestar.WithFailOnIOErrors())
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("list %s: %w", p.arg, err)
		}
	}
	return out, nil
}

// fingerprint hashes the first FingerprintBytes of path.
func fingerprint(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, FingerprintBytes)); err != nil {
		return "", fmt.Errorf("fingerprint %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// observation is what the stability tracker remembers of a file not yet planned.
type observation struct {
	size, mtime int64
	since       time.Time // when this size and mtime were first seen
}

// stability decides when a listed file is complete: nothing has changed it for After — its
// modification time is at least After old, or a listing at least After ago already saw the
// same size and time. A file whose size or time differs from the previous listing's is never
// stable in that listing and is observed afresh (a growing file is left until it stops
// growing). With After = 0 every file is stable at once. Memory: one observation per listed
// file not yet planned.
type stability struct {
	after time.Duration
	seen  map[string]*observation
}

func newStability(after time.Duration) *stability {
	return &stability{after: after, seen: map[string]*observation{}}
}

// observe records f at now and reports whether it is stable; changed is true when an earlier
// listing saw another size or time.
func (s *stability) observe(f listed, now time.Time) (stable, changed bool) {
	o := s.seen[f.path]
	if o == nil || o.size != f.size || o.mtime != f.mtime {
		changed = o != nil
		o = &observation{size: f.size, mtime: f.mtime, since: now}
		s.seen[f.path] = o
	}
	if s.after <= 0 {
		return !changed, changed
	}
	if changed {
		return false, true
	}
	old := now.Sub(time.Unix(0, f.mtime)) >= s.after || now.Sub(o.since) >= s.after
	return old, false
}

// readyAt is the earliest time an unchanged f can be stable.
func (s *stability) readyAt(f listed) time.Time {
	t := time.Unix(0, f.mtime).Add(s.after)
	if o := s.seen[f.path]; o != nil && o.since.Add(s.after).Before(t) {
		t = o.since.Add(s.after)
	}
	return t
}

// forget drops the observation of a planned or vanished file.
func (s *stability) forget(path string) { delete(s.seen, path) }

// prune forgets files absent from the latest listing.
func (s *stability) prune(present map[string]bool) {
	for p := range s.seen {
		if !present[p] {
			delete(s.seen, p)
		}
	}
}
