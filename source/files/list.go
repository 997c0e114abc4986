package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/streamkit/streamkit/storage"
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
	arg     string          // as given (redacted for a URL)
	base    string          // absolute directory to walk, or the URL of a bucket prefix
	glob    string          // doublestar pattern relative to base ("" = base is the file)
	literal map[string]bool // segments written literally in glob: never skipped as hidden
	file    bool            // a literal path that is not a directory

	// bucket patterns (base is scheme://BUCKET[/PREFIX]): store is rooted at base, opened by
	// Source.Open; probe marks a literal URL, which is one object if that name exists and
	// otherwise a prefix meaning every object below it (decided at Open, like a local
	// directory).
	bucket bool
	probe  bool
	store  storage.Store
}

// compilePattern splits a PATTERN into an absolute base directory and a doublestar pattern.
// A path to a directory without glob characters means every file below it ("dir/**").
// A bucket URL is split by compileURL; file:///abs/glob is the local glob /abs/glob; any other
// scheme:// is refused (a usage error naming the supported schemes).
func compilePattern(arg string) (*pattern, error) {
	if storage.IsURL(arg) {
		return compileURL(arg)
	}
	if err := storage.CheckScheme(arg); err != nil && !strings.Contains(arg, "://") {
		return nil, fmt.Errorf("pattern %q: %w", storage.Redact(arg), errors.Unwrap(err))
	}
	local := arg
	if scheme, rest, ok := strings.Cut(arg, "://"); ok && isScheme(scheme) {
		if !strings.EqualFold(scheme, "file") {
			return nil, fmt.Errorf("pattern %q: unsupported scheme %s://; use a local path or glob, file://, s3://, gs://, az:// or abfss://", storage.Redact(arg), scheme)
		}
		local = strings.TrimPrefix(rest, "localhost")
		if !strings.HasPrefix(local, "/") {
			return nil, fmt.Errorf("pattern %q: a file URL names an absolute path: file:///DIR/GLOB", arg)
		}
	}
	p := filepath.ToSlash(local)
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
	pt := &pattern{arg: arg, base: abs, glob: glob, file: file}
	pt.setLiteral()
	return pt, nil
}

// isScheme reports whether s is a URL scheme (RFC 3986: a letter, then letters, digits, "+",
// "-" or "."), so that "foo://x" is refused rather than read as the relative path foo:/x.
func isScheme(s string) bool {
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// compileURL splits a bucket glob scheme://BUCKET/KEY-GLOB into the URL of the longest
// literal directory prefix before the first glob character (the store that is listed, page
// by page) and the doublestar pattern matched against the object names below it:
// s3://b/landing/**/*.json lists the prefix landing/ of bucket b and matches **/*.json. A
// literal URL is an object or a prefix (see pattern.probe); one ending in "/" is a prefix.
// A URL glob has no query string: "?" is the glob's one-character wildcard, and endpoints and
// regions come from the SDK's environment (package storage). Errors are usage errors.
func compileURL(arg string) (*pattern, error) {
	shown := storage.Redact(arg)
	scheme, rest, _ := strings.Cut(arg, "://")
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return nil, fmt.Errorf("pattern %q: no bucket: write %s://BUCKET/PATH", shown, scheme)
	}
	if hasMeta(bucket) {
		return nil, fmt.Errorf("pattern %q: the bucket name %q cannot be a glob; only the path after it can", shown, bucket)
	}
	if !doublestar.ValidatePattern(key) {
		return nil, fmt.Errorf("pattern %q: bad glob syntax", shown)
	}
	pt := &pattern{arg: shown, bucket: true}
	var dir string
	switch {
	case hasMeta(key):
		dir, pt.glob = doublestar.SplitPattern(key)
		if dir == "." {
			dir = ""
		}
	case key == "" || strings.HasSuffix(key, "/"):
		dir, pt.glob = strings.TrimSuffix(key, "/"), "**"
	default:
		pt.probe = true
		dir, pt.glob = "", key
		if i := strings.LastIndexByte(key, '/'); i >= 0 {
			dir, pt.glob = key[:i], key[i+1:]
		}
	}
	if dir != "" {
		for _, seg := range strings.Split(dir, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return nil, fmt.Errorf("pattern %q: the path has a %q segment", shown, seg)
			}
		}
	}
	pt.base = strings.ToLower(scheme) + "://" + bucket
	if dir != "" {
		pt.base += "/" + dir
	}
	pt.setLiteral()
	return pt, nil
}

// setLiteral records the glob's literal segments.
func (p *pattern) setLiteral() {
	p.literal = map[string]bool{}
	for _, seg := range strings.Split(p.glob, "/") {
		if !hasMeta(seg) {
			p.literal[seg] = true
		}
	}
}

// open opens the store of a bucket pattern and, for a literal URL, decides whether it names
// an object or a prefix.
func (p *pattern) open(ctx context.Context, open func(context.Context, string) (storage.Store, error)) error {
	st, err := open(ctx, p.base)
	if err != nil {
		return err
	}
	p.store = st
	if !p.probe {
		return nil
	}
	_, err = st.Stat(ctx, p.glob)
	switch {
	case err == nil:
		p.file = true
	case errors.Is(err, fs.ErrNotExist):
		p.store, p.base = st.Sub(p.glob), p.base+"/"+p.glob
		p.glob = "**"
		p.setLiteral()
	default:
		return err
	}
	return nil
}

func hasMeta(s string) bool { return strings.ContainsAny(s, "*?[{\\") }

// listed is one file seen by a listing.
type listed struct {
	path  string
	size  int64
	mtime int64 // ns
	// etag, store and name: a bucket object's version tag, store and name in it (nil store
	// on a local disk).
	etag  string
	store storage.Store
	name  string
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
// Bucket patterns list their prefix (storage.Store.Walk, page by page); odd is called for an
// object whose name no store can open (an empty segment, "a//b"), which is left out.
func list(ctx context.Context, patterns []*pattern, odd func(path string)) ([]listed, error) {
	seen := map[string]bool{}
	var out []listed
	for _, p := range patterns {
		if p.store != nil {
			if err := p.listStore(ctx, seen, &out, odd); err != nil {
				return nil, fmt.Errorf("list %s: %w", p.arg, err)
			}
			continue
		}
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

// listStore lists a bucket pattern: every object below its prefix whose name relative to it
// the glob matches (doublestar.Match), hidden names skipped as on a local disk.
func (p *pattern) listStore(ctx context.Context, seen map[string]bool, out *[]listed, odd func(string)) error {
	add := func(in storage.Info) {
		path := p.base + "/" + in.Name
		if seen[path] {
			return
		}
		seen[path] = true
		// A HEAD (Stat) quotes the ETag, a listing does not: record it unquoted.
		etag := strings.Trim(in.ETag, `"`)
		*out = append(*out, listed{path: path, size: in.Size, mtime: in.ModTime.UnixNano(), etag: etag, store: p.store, name: in.Name})
	}
	if p.file {
		in, err := p.store.Stat(ctx, p.glob)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		in.Name = p.glob
		add(in)
		return nil
	}
	return p.store.Walk(ctx, "", func(in storage.Info) error {
		if ok, _ := doublestar.Match(p.glob, in.Name); !ok || p.skipped(in.Name) {
			return nil
		}
		if strings.HasPrefix(in.Name, "/") || strings.Contains(in.Name, "//") {
			odd(p.base + "/" + in.Name)
			return nil
		}
		add(in)
		return nil
	})
}

// fingerprint hashes the first FingerprintBytes of a listed file or object. A bucket object
// whose listing gave an ETag (the MD5 of its content on S3 and GCS, for objects not uploaded
// in parts) is fingerprinted by it instead, without a request: "etag:" + the ETag.
func fingerprint(ctx context.Context, f listed) (string, error) {
	if f.store == nil {
		return fingerprintFile(f.path)
	}
	if f.etag != "" {
		return "etag:" + f.etag, nil
	}
	o, err := f.store.Open(ctx, f.name)
	if err != nil {
		return "", err
	}
	defer o.Close()
	h := sha256.New()
	// One ranged read of the head, not a stream of the whole object.
	buf := make([]byte, min(FingerprintBytes, max(o.Size(), 0)))
	n, err := o.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("fingerprint %s: %w", f.path, err)
	}
	h.Write(buf[:n])
	return fpHex(h), nil
}

// fingerprintFile hashes the first FingerprintBytes of path.
func fingerprintFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, FingerprintBytes)); err != nil {
		return "", fmt.Errorf("fingerprint %s: %w", path, err)
	}
	return fpHex(h), nil
}

func fpHex(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)[:16]) }

// fingerprintAll fingerprints the listed files fs[i] whose fps[i] is "" — bucket objects
// concurrently (one ranged GET each, fingerprintWorkers at a time), local files one by one as
// before. A file gone since the listing gets fps[i] = "" and gone[i] = true.
func fingerprintAll(ctx context.Context, files []listed, fps []string) (gone []bool, err error) {
	gone = make([]bool, len(files))
	var objects []int
	for i, f := range files {
		if fps[i] != "" {
			continue
		}
		if f.store != nil {
			objects = append(objects, i)
			continue
		}
		fp, err := fingerprint(ctx, f)
		if errors.Is(err, fs.ErrNotExist) {
			gone[i] = true
			continue
		}
		if err != nil {
			return nil, err
		}
		fps[i] = fp
	}
	if len(objects) == 0 {
		return gone, nil
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for w := 0; w < min(fingerprintWorkers, len(objects)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fp, err := fingerprint(ctx, files[i])
				switch {
				case errors.Is(err, fs.ErrNotExist):
					gone[i] = true
				case err != nil:
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				default:
					fps[i] = fp
				}
			}
		}()
	}
	for _, i := range objects {
		next <- i
	}
	close(next)
	wg.Wait()
	return gone, first
}

// fingerprintWorkers bounds the concurrent ranged reads that fingerprint new bucket objects.
const fingerprintWorkers = 16

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
