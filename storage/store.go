package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"
)

// ErrExist is returned by [Store.PutIfAbsent] when the name already holds an object that is
// not ours: another writer won. Nothing was written.
var ErrExist = errors.New("object already exists")

// ErrNoConditionalWrite is returned by [Open] for a store that cannot do an atomic
// put-if-absent, unless [Options.UnsafeSingleWriter] is set.
var ErrNoConditionalWrite = errors.New("the store cannot do conditional writes (put-if-absent)")

// Info describes one object (a file on a local disk).
type Info struct {
	// Name is the object's name relative to the directory or prefix it was listed under, or to
	// the store root for [Store.Stat]; slash-separated.
	Name string
	// Size is the object's length in bytes.
	Size int64
	// ModTime is the object's last modification time (the store's clock for a bucket).
	ModTime time.Time
	// ETag is the store's version tag of the object ("" on a local disk); it changes whenever
	// the object is rewritten.
	ETag string
	// IsDir is true for a directory (local) or a common prefix (bucket) in [Store.ReadDir].
	IsDir bool
}

// File is an open object for reading: sequential reads, and ranged reads for Parquet.
type File interface {
	io.Reader
	io.ReaderAt
	io.Seeker
	io.Closer
	// Size is the object's length in bytes when it was opened.
	Size() int64
}

// Writer streams one new object. Nothing is visible under its name until Close returns nil;
// Abort discards it.
type Writer interface {
	io.Writer
	// Close makes the object visible and durable (fsync on a local disk, the completed upload
	// on a bucket). On a local disk the name must not exist yet (O_EXCL).
	Close() error
	// Abort discards what was written; the name stays absent. Safe after a failed Close.
	Abort()
}

// Store is a root directory or bucket prefix. All names are relative to it (see the package
// doc). The methods are safe for concurrent use.
type Store interface {
	// Location is the root as a redacted URL or absolute local path, for messages.
	Location() string
	// LocalDir is the absolute local directory of a local store, "" for a bucket.
	LocalDir() string
	// Sub returns the store rooted at dir below this one.
	Sub(dir string) Store
	// ReadFile returns the whole object. Missing: an error matching fs.ErrNotExist.
	ReadFile(ctx context.Context, name string) ([]byte, error)
	// Open opens the object for reading. Missing: fs.ErrNotExist.
	Open(ctx context.Context, name string) (File, error)
	// Stat describes the object. Missing: fs.ErrNotExist.
	Stat(ctx context.Context, name string) (Info, error)
	// WriteFile makes data the object's content atomically, replacing any old content: a
	// reader sees the old object or the new one, never a mix.
	WriteFile(ctx context.Context, name string, data []byte) error
	// PutIfAbsent creates the object only if the name is free, atomically. It returns
	// [ErrExist] when another writer's object is there.
	PutIfAbsent(ctx context.Context, name string, data []byte) error
	// Create starts a streamed write of a new object; see [Writer].
	Create(ctx context.Context, name string) (Writer, error)
	// Remove deletes the object; a missing one is no error.
	Remove(ctx context.Context, name string) error
	// ReadDir lists the direct children of dir ("" = the root), sorted by name: objects, and
	// subdirectories (common prefixes) with IsDir set. A missing dir gives an empty list.
	ReadDir(ctx context.Context, dir string) ([]Info, error)
	// Walk calls fn for every object under dir, recursively, in lexical order of name (names
	// relative to dir), listing page by page. fn's error stops the walk and is returned.
	Walk(ctx context.Context, dir string, fn func(Info) error) error
}

// Options are the settings of [Open].
type Options struct {
	// UnsafeSingleWriter lets a store without conditional writes be opened; put-if-absent is
	// then an existence check followed by a write, which is only safe with one writer.
	UnsafeSingleWriter bool
	// Retry is the retry policy of bucket calls; zero fields take [DefaultRetry]'s.
	Retry Retry
	// FileMode is the mode of files created on a local disk (before the umask); default 0644.
	FileMode fs.FileMode
}

// IsURL reports whether s names a bucket (scheme s3, s3a, gs, az, abfs, abfss) rather than a
// local path or a file:// URL.
func IsURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok {
		return false
	}
	_, known := bucketSchemes[strings.ToLower(scheme)]
	return known
}

// Open returns the store rooted at loc: a local path, a file:// URL, or a bucket URL (see the
// package doc). A bucket is checked for access with one listing call, so a missing bucket or
// bad credentials fail here with a clear message. Errors are usage errors for malformed or
// unsupported URLs (an unknown scheme names the supported ones).
func Open(ctx context.Context, loc string, opts Options) (Store, error) {
	if opts.FileMode == 0 {
		opts.FileMode = 0o644
	}
	if IsURL(loc) {
		return openBucket(ctx, loc, opts)
	}
	if err := CheckScheme(loc); err != nil {
		return nil, err
	}
	dir, err := localPath(loc)
	if err != nil {
		return nil, err
	}
	return newLocal(dir, opts.FileMode), nil
}

// CheckScheme refuses a location that looks like a URL of a scheme no backend serves
// ("ftp://…", "s3x://…") with a *URLError naming the supported ones, so that it is never taken
// for a relative local path. Local paths, file:// and bucket URLs pass.
func CheckScheme(loc string) error {
	if lead, _, ok := strings.Cut(loc, ":"); ok && !strings.HasPrefix(loc[len(lead):], "://") {
		if _, known := bucketSchemes[strings.ToLower(lead)]; known {
			// "s3:/b/t" or "s3:b/t" is a mistyped URL, not a local directory named "s3:".
			return &URLError{URL: loc, Err: fmt.Errorf("%s URLs start with %s://BUCKET/", lead, lead)}
		}
	}
	scheme, _, ok := strings.Cut(loc, "://")
	if !ok || IsURL(loc) || strings.EqualFold(scheme, "file") || scheme == "" || strings.ContainsAny(scheme, "/.") {
		return nil
	}
	return &URLError{URL: loc, Err: fmt.Errorf("unsupported scheme %s://; use a local path, file://, s3://, gs://, az:// or abfss://", scheme)}
}

// URLError is a location that cannot be opened as given: a malformed URL, an unknown scheme,
// a URL without bucket. Tools report it as a usage error (exit 2).
type URLError struct {
	URL string
	Err error
}

func (e *URLError) Error() string { return fmt.Sprintf("%s: %v", Redact(e.URL), e.Err) }
func (e *URLError) Unwrap() error { return e.Err }

// checkName refuses names that would leave the root or that no store can hold.
func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("empty object name")
	}
	if strings.HasPrefix(name, "/") {
		return fmt.Errorf("object name %q is absolute", name)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return fmt.Errorf("object name %q has a %q segment", name, seg)
		}
	}
	return nil
}

// join is the name of child inside dir, both relative to one root.
func join(dir, child string) string {
	if dir == "" {
		return child
	}
	return path.Join(dir, child)
}

// notExist wraps a missing-object error so that errors.Is(err, fs.ErrNotExist) holds.
type notExist struct {
	op, loc string
	err     error
}

func (e *notExist) Error() string { return fmt.Sprintf("%s %s: not found", e.op, e.loc) }
func (e *notExist) Is(t error) bool {
	return t == fs.ErrNotExist
}
func (e *notExist) Unwrap() error { return e.err }
