package state

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/streamkit/streamkit/storage"
)

// A checkpoint location is a local path or a bucket URL (s3://BUCKET/PREFIX, gs://, az://,
// abfss://; see package storage). Every function of this package that takes a path takes a
// location: the files are read and written through the storage.Store of that location, which
// on a local disk keeps today's fsync, rename and link guarantees (docs/protocol.md §7.2) and
// on a bucket uses atomic object writes and put-if-absent (docs/protocol.md §6.1).

// filePerm is the mode of checkpoint files on a local disk: private to the stage's user.
const filePerm = 0o600

// bg is the context of checkpoint file operations: they are short and bounded by the store's
// retry policy; a stage's own cancellation must not tear a commit half-way.
var bg = context.Background()

// buckets caches one opened store per bucket root (scheme, bucket and query), so a process
// opens and checks each bucket once however many checkpoint directories live in it.
var buckets struct {
	sync.Mutex
	m map[string]storage.Store
}

// StoreAt returns the store rooted at checkpoint location loc: a local directory (made
// absolute; not created) or a bucket prefix. A bucket is opened once per process and checked
// for access then (storage.Open); errors are storage's (a malformed URL is a
// *storage.URLError).
func StoreAt(loc string) (storage.Store, error) {
	if !storage.IsURL(loc) {
		if strings.HasPrefix(loc, "file://") {
			return storage.Open(bg, loc, storage.Options{FileMode: filePerm})
		}
		return storage.Local(loc, filePerm)
	}
	root, prefix, err := splitURL(loc)
	if err != nil {
		return nil, err
	}
	buckets.Lock()
	defer buckets.Unlock()
	st, ok := buckets.m[root]
	if !ok {
		if st, err = storage.Open(bg, root, storage.Options{}); err != nil {
			return nil, err
		}
		if buckets.m == nil {
			buckets.m = map[string]storage.Store{}
		}
		buckets.m[root] = st
	}
	return st.Sub(prefix), nil
}

// IsURL reports whether a checkpoint location is a bucket URL rather than a local path
// (storage.IsURL).
func IsURL(loc string) bool { return storage.IsURL(loc) }

// splitURL splits a bucket URL into its root (scheme://bucket?query) and key prefix.
func splitURL(loc string) (root, prefix string, err error) {
	u, err := url.Parse(loc)
	if err != nil {
		return "", "", &storage.URLError{URL: loc, Err: err}
	}
	prefix = strings.Trim(u.Path, "/")
	u.Path, u.RawPath = "", ""
	return u.String(), prefix, nil
}

// Join appends slash-separated elements to a checkpoint location: filepath.Join for a local
// path, "/" for a URL (before its query, if any; never cleaned as a file path, which would
// fold "s3://" into "s3:/").
func Join(loc string, elem ...string) string {
	if !storage.IsURL(loc) {
		return filepath.Join(append([]string{loc}, elem...)...)
	}
	base, q, hasQ := strings.Cut(loc, "?")
	base = strings.TrimRight(base, "/")
	for _, e := range elem {
		if e = strings.Trim(e, "/"); e != "" {
			base += "/" + e
		}
	}
	if hasQ {
		base += "?" + q
	}
	return base
}

// WithSuffix appends suffix to the last element of a checkpoint location ("dir" →
// "dir.shard-1"), after cleaning a local path and before a URL's query.
func WithSuffix(loc, suffix string) string {
	if !storage.IsURL(loc) {
		return filepath.Clean(loc) + suffix
	}
	base, q, hasQ := strings.Cut(loc, "?")
	base = strings.TrimRight(base, "/") + suffix
	if hasQ {
		base += "?" + q
	}
	return base
}

// Base is the last element of a checkpoint location (a stage directory's name).
func Base(loc string) string {
	if !storage.IsURL(loc) {
		return filepath.Base(filepath.Clean(loc))
	}
	base, _, _ := strings.Cut(loc, "?")
	return path.Base(strings.TrimRight(base, "/"))
}

// Abs makes a local checkpoint location absolute; a URL is returned as given (without
// credentials, see storage.Redact), as it names the same place from any directory.
func Abs(loc string) (string, error) {
	if storage.IsURL(loc) {
		return storage.Redact(loc), nil
	}
	return filepath.Abs(loc)
}

// splitLoc is the directory location and base name of a file location.
func splitLoc(loc string) (dir, name string) {
	if !storage.IsURL(loc) {
		return filepath.Dir(loc), filepath.Base(loc)
	}
	base, q, hasQ := strings.Cut(loc, "?")
	i := strings.LastIndex(base, "/")
	dir, name = base[:i], base[i+1:]
	if hasQ {
		dir += "?" + q
	}
	return dir, name
}

// where names object name of st in messages: the local path, or the redacted URL.
func where(st storage.Store, name string) string {
	if d := st.LocalDir(); d != "" {
		return filepath.Join(d, filepath.FromSlash(name))
	}
	return st.Location() + "/" + path.Clean(name)
}

// isLocal reports whether st is a local directory.
func isLocal(st storage.Store) bool { return st.LocalDir() != "" }

// openLoc opens the store of a location for one of the path-taking functions, wrapping a
// failure with what was being done.
func openLoc(what, loc string) (storage.Store, error) {
	st, err := StoreAt(loc)
	if err != nil {
		var ue *storage.URLError
		if errors.As(err, &ue) {
			return nil, err
		}
		return nil, fmt.Errorf("%s %s: %w", what, storage.Redact(loc), err)
	}
	return st, nil
}
