package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/uuid"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// bucketStore is a Store over a gocloud.dev/blob bucket and a key prefix ("" or ending in "/").
type bucketStore struct {
	b      *blob.Bucket
	shared *bucketShared
	prefix string
	loc    string // redacted URL of the root, no trailing slash
}

// bucketShared is the state of one opened bucket, shared by its Sub stores.
type bucketShared struct {
	retry  Retry
	unsafe bool
	kind   string // "s3", "gs", "az": named in messages
	// s3 and name are the S3 client and bucket name of an S3 store, for single-request
	// streamed uploads (see bucketWriter.upload); nil elsewhere.
	s3   *s3.Client
	name string

	probeMu  sync.Mutex
	probed   bool // the probe settled: probeErr is its verdict
	probeErr error
}

func (s *bucketStore) Location() string { return s.loc }
func (s *bucketStore) LocalDir() string { return "" }

func (s *bucketStore) Sub(dir string) Store {
	dir = strings.Trim(dir, "/")
	if dir == "" {
		return s
	}
	return &bucketStore{b: s.b, shared: s.shared, prefix: s.prefix + dir + "/", loc: s.loc + "/" + dir}
}

// key is the bucket key of name, after checking it.
func (s *bucketStore) key(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", fmt.Errorf("%s: %w", s.loc, err)
	}
	return s.prefix + name, nil
}

func (s *bucketStore) url(name string) string { return s.loc + "/" + name }

func (s *bucketStore) ReadFile(ctx context.Context, name string) ([]byte, error) {
	k, err := s.key(name)
	if err != nil {
		return nil, err
	}
	var data []byte
	err = s.shared.retry.do(ctx, "read", s.url(name), func(ctx context.Context, _ int) error {
		var err error
		data, err = s.b.ReadAll(ctx, k)
		return err
	})
	return data, err
}

func (s *bucketStore) Stat(ctx context.Context, name string) (Info, error) {
	k, err := s.key(name)
	if err != nil {
		return Info{}, err
	}
	var in Info
	err = s.shared.retry.do(ctx, "stat", s.url(name), func(ctx context.Context, _ int) error {
		a, err := s.b.Attributes(ctx, k)
		if err != nil {
			return err
		}
		in = Info{Name: name, Size: a.Size, ModTime: a.ModTime, ETag: strings.Trim(a.ETag, `"`)}
		return nil
	})
	return in, err
}

func (s *bucketStore) Open(ctx context.Context, name string) (File, error) {
	in, err := s.Stat(ctx, name)
	if err != nil {
		return nil, err
	}
	k, _ := s.key(name)
	return &bucketFile{s: s, ctx: ctx, key: k, name: name, size: in.Size}, nil
}

// bucketFile reads an object by ranged GETs, each retried: one per ReadAt, and one open range
// for sequential Reads from the current offset.
type bucketFile struct {
	s    *bucketStore
	ctx  context.Context
	key  string
	name string
	size int64

	off int64
	r   *blob.Reader // sequential reader at off, or nil
}

func (f *bucketFile) Size() int64 { return f.size }

func (f *bucketFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.size {
		return 0, io.EOF
	}
	want := int64(len(p))
	if off+want > f.size {
		want = f.size - off
	}
	var n int
	err := f.s.shared.retry.do(f.ctx, "read", f.s.url(f.name), func(ctx context.Context, _ int) error {
		r, err := f.s.b.NewRangeReader(ctx, f.key, off, want, nil)
		if err != nil {
			return err
		}
		defer r.Close()
		n, err = io.ReadFull(r, p[:want])
		return err
	})
	if err != nil {
		return n, err
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *bucketFile) Read(p []byte) (int, error) {
	if f.off >= f.size {
		return 0, io.EOF
	}
	if f.r == nil {
		var r *blob.Reader
		err := f.s.shared.retry.do(f.ctx, "read", f.s.url(f.name), func(ctx context.Context, _ int) error {
			var err error
			// The reader outlives this try, so it takes the caller's context, not the try's.
			r, err = f.s.b.NewRangeReader(f.ctx, f.key, f.off, -1, nil)
			return err
		})
		if err != nil {
			return 0, err
		}
		f.r = r
	}
	n, err := f.r.Read(p)
	f.off += int64(n)
	if err != nil && err != io.EOF && transient(err) {
		// A broken connection mid-object: the next Read reopens the range at the new offset.
		f.r.Close()
		f.r = nil
		if n > 0 {
			return n, nil
		}
		return f.Read(p)
	}
	return n, err
}

func (f *bucketFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += f.size
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek %s: negative offset", f.s.url(f.name))
	}
	if offset != f.off && f.r != nil {
		f.r.Close()
		f.r = nil
	}
	f.off = offset
	return offset, nil
}

func (f *bucketFile) Close() error {
	if f.r != nil {
		f.r.Close()
		f.r = nil
	}
	return nil
}

// put writes data to key in one request per try; ifAbsent makes it conditional.
func (s *bucketStore) put(ctx context.Context, k string, data []byte, ifAbsent bool) error {
	// One part for the whole object, so the condition applies to a single PutObject.
	opts := &blob.WriterOptions{IfNotExist: ifAbsent, ContentType: "application/octet-stream",
		BufferSize: max(len(data)+1, 5<<20), DisableContentTypeDetection: true}
	return s.b.WriteAll(ctx, k, data, opts)
}

func (s *bucketStore) WriteFile(ctx context.Context, name string, data []byte) error {
	k, err := s.key(name)
	if err != nil {
		return err
	}
	return s.shared.retry.do(ctx, "write", s.url(name), func(ctx context.Context, _ int) error {
		return s.put(ctx, k, data, false)
	})
}

func (s *bucketStore) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	k, err := s.key(name)
	if err != nil {
		return err
	}
	if err := s.probe(ctx); err != nil {
		return err
	}
	if s.shared.unsafe {
		return s.unsafePutIfAbsent(ctx, name, k, data)
	}
	return s.create(ctx, s.url(name), k, data)
}

// create writes data at key k only if k is absent, retrying transient failures. A refusal
// after a try whose response was lost is resolved by reading, never by writing again: the
// object holds our bytes exactly when our earlier try took effect. It returns ErrExist when
// another writer's object is there.
func (s *bucketStore) create(ctx context.Context, loc, k string, data []byte) error {
	unknown := false // an earlier try may have written the object
	return s.shared.retry.do(ctx, "create", loc, func(ctx context.Context, _ int) error {
		err := s.put(ctx, k, data, true)
		if preconditionFailed(err) {
			if unknown {
				got, rerr := s.b.ReadAll(ctx, k)
				if rerr != nil {
					return rerr
				}
				if bytes.Equal(got, data) {
					return nil
				}
			}
			return ErrExist
		}
		if err != nil && transient(err) {
			unknown = true
		}
		return err
	})
}

// unsafePutIfAbsent is put-if-absent as exists-then-write, for --unsafe-single-writer stores.
func (s *bucketStore) unsafePutIfAbsent(ctx context.Context, name, k string, data []byte) error {
	return s.shared.retry.do(ctx, "create", s.url(name), func(ctx context.Context, _ int) error {
		ok, err := s.b.Exists(ctx, k)
		if err != nil {
			return err
		}
		if ok {
			got, err := s.b.ReadAll(ctx, k)
			if err == nil && bytes.Equal(got, data) {
				return nil
			}
			return ErrExist
		}
		return s.put(ctx, k, data, false)
	})
}

// probe checks once per opened bucket that put-if-absent really refuses an existing name: it
// creates a probe object under the root, creates it again (which must fail), and removes it.
// Some S3-compatible servers ignore If-None-Match and would let two Delta commits of one
// version both succeed, so they are refused unless the user accepted a single writer.
func (s *bucketStore) probe(ctx context.Context) error {
	sh := s.shared
	if sh.unsafe {
		return nil
	}
	sh.probeMu.Lock()
	defer sh.probeMu.Unlock()
	if sh.probed {
		return sh.probeErr
	}
	k := s.prefix + "_streamkit_probe_" + uuid.NewString()
	loc := s.loc + "/" + path.Base(k)
	if err := s.create(ctx, loc, k, []byte("1")); err != nil {
		return err // not settled: the next put-if-absent probes again (ErrExist cannot be: the name is new)
	}
	defer s.b.Delete(context.WithoutCancel(ctx), k)
	err := sh.retry.do(ctx, "create", loc, func(ctx context.Context, _ int) error {
		err := s.put(ctx, k, []byte("2"), true)
		if preconditionFailed(err) {
			return ErrExist
		}
		return err
	})
	switch {
	case errors.Is(err, ErrExist):
		sh.probed = true
	case err == nil:
		sh.probed = true
		sh.probeErr = fmt.Errorf("%s (%s): %w: a second create of the same object succeeded, so two writers could both commit one Delta version; use a store that honours If-None-Match, or pass --unsafe-single-writer if only one process ever writes here",
			s.loc, sh.kind, ErrNoConditionalWrite)
	default:
		return err // a transient failure after the retries: not settled either
	}
	return sh.probeErr
}

// preconditionFailed reports whether err is the store's refusal of a conditional write: gocloud
// maps it to FailedPrecondition, but when the SDK could not read the refusal's body (the
// upload's context ends with the failed write) only the HTTP status 412 says so.
func preconditionFailed(err error) bool {
	return err != nil && (gcerrors.Code(err) == gcerrors.FailedPrecondition || httpStatus(err) == 412)
}

func (s *bucketStore) Create(ctx context.Context, name string) (Writer, error) {
	k, err := s.key(name)
	if err != nil {
		return nil, err
	}
	return &bucketWriter{s: s, ctx: ctx, key: k, name: name}, nil
}

// spoolLimit is the size up to which a streamed object is held in memory before it spills to
// a temporary local file; the whole object is kept so that a failed upload can be retried.
const spoolLimit = 16 << 20

// bucketWriter spools a streamed object (memory, then a temporary file) and uploads it on
// Close, retrying the whole upload on transient errors.
type bucketWriter struct {
	s    *bucketStore
	ctx  context.Context
	key  string
	name string

	mem  bytes.Buffer
	file *os.File
	done bool
}

func (w *bucketWriter) Write(p []byte) (int, error) {
	if w.file == nil && w.mem.Len()+len(p) > spoolLimit {
		f, err := os.CreateTemp("", "streamkit-upload-*")
		if err != nil {
			return 0, fmt.Errorf("write %s: spool: %w", w.s.url(w.name), err)
		}
		os.Remove(f.Name()) // unlinked: gone with the process, whatever happens
		if _, err := f.Write(w.mem.Bytes()); err != nil {
			f.Close()
			return 0, fmt.Errorf("write %s: spool: %w", w.s.url(w.name), err)
		}
		w.mem = bytes.Buffer{}
		w.file = f
	}
	if w.file != nil {
		return w.file.Write(p)
	}
	return w.mem.Write(p)
}

func (w *bucketWriter) Close() error {
	if w.done {
		return nil
	}
	w.done = true
	defer w.release()
	return w.s.shared.retry.do(w.ctx, "write", w.s.url(w.name), func(ctx context.Context, _ int) error {
		var r io.Reader = bytes.NewReader(w.mem.Bytes())
		if w.file != nil {
			if _, err := w.file.Seek(0, io.SeekStart); err != nil {
				return err
			}
			r = w.file
		}
		return w.upload(ctx, r)
	})
}

// upload sends the spooled object. On S3 it is one PutObject streamed from the spool (up to
// S3's 5 GiB single-request limit): the SDK's multipart uploader sends checksum headers that
// S3-compatible servers reject on CompleteMultipartUpload, and one request is also one
// outcome to retry. Elsewhere it is gocloud's upload.
func (w *bucketWriter) upload(ctx context.Context, r io.Reader) error {
	sh := w.s.shared
	size := int64(w.mem.Len())
	if w.file != nil {
		st, err := w.file.Stat()
		if err != nil {
			return err
		}
		size = st.Size()
	}
	if sh.s3 != nil && size < 5<<30 {
		_, err := sh.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(sh.name), Key: aws.String(w.key),
			Body: r.(io.ReadSeeker), ContentLength: aws.Int64(size), ContentType: aws.String("application/octet-stream")})
		return err
	}
	return w.s.b.Upload(ctx, w.key, r, &blob.WriterOptions{ContentType: "application/octet-stream", DisableContentTypeDetection: true})
}

func (w *bucketWriter) release() {
	if w.file != nil {
		w.file.Close()
		w.file = nil
	}
	w.mem = bytes.Buffer{}
}

func (w *bucketWriter) Abort() {
	w.done = true
	w.release()
}

func (s *bucketStore) Remove(ctx context.Context, name string) error {
	k, err := s.key(name)
	if err != nil {
		return err
	}
	err = s.shared.retry.do(ctx, "delete", s.url(name), func(ctx context.Context, _ int) error {
		err := s.b.Delete(ctx, k)
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil
		}
		return err
	})
	return err
}

// listPage is the page size of listings; stores cap it at 1000.
const listPage = 1000

// list calls fn for every entry under prefix dir, one page at a time, each page retried.
func (s *bucketStore) list(ctx context.Context, dir, delim string, fn func(*blob.ListObject) error) error {
	p := s.prefix
	if dir != "" {
		if err := checkName(dir); err != nil {
			return fmt.Errorf("%s: %w", s.loc, err)
		}
		p += dir + "/"
	}
	token := blob.FirstPageToken
	for {
		var page []*blob.ListObject
		var next []byte
		err := s.shared.retry.do(ctx, "list", s.loc+"/"+strings.TrimPrefix(p, s.prefix), func(ctx context.Context, _ int) error {
			var err error
			page, next, err = s.b.ListPage(ctx, token, listPage, &blob.ListOptions{Prefix: p, Delimiter: delim})
			return err
		})
		if err != nil {
			return err
		}
		for _, o := range page {
			if err := fn(o); err != nil {
				return err
			}
		}
		if len(next) == 0 {
			return nil
		}
		token = next
	}
}

func (s *bucketStore) ReadDir(ctx context.Context, dir string) ([]Info, error) {
	base := s.prefix
	if dir != "" {
		base += dir + "/"
	}
	var out []Info
	err := s.list(ctx, dir, "/", func(o *blob.ListObject) error {
		name := strings.TrimSuffix(strings.TrimPrefix(o.Key, base), "/")
		if name == "" {
			return nil // a directory marker object
		}
		out = append(out, Info{Name: name, Size: o.Size, ModTime: o.ModTime, IsDir: o.IsDir, ETag: etagOf(o)})
		return nil
	})
	return out, err
}

func (s *bucketStore) Walk(ctx context.Context, dir string, fn func(Info) error) error {
	base := s.prefix
	if dir != "" {
		base += dir + "/"
	}
	return s.list(ctx, dir, "", func(o *blob.ListObject) error {
		name := strings.TrimPrefix(o.Key, base)
		if name == "" || strings.HasSuffix(name, "/") {
			return nil
		}
		return fn(Info{Name: name, Size: o.Size, ModTime: o.ModTime, ETag: etagOf(o)})
	})
}

// etagOf is the listing's version tag of an object where gocloud exposes it (the MD5 for S3
// single-part objects), else "".
func etagOf(o *blob.ListObject) string {
	if len(o.MD5) > 0 {
		return fmt.Sprintf("%x", o.MD5)
	}
	return ""
}

// newBucketStore wraps an opened bucket. loc is the URL of the root as the user gave it.
func newBucketStore(b *blob.Bucket, kind, loc, prefix string, opts Options) *bucketStore {
	return &bucketStore{b: b, prefix: prefix, loc: strings.TrimSuffix(Redact(loc), "/"),
		shared: &bucketShared{retry: opts.Retry.withDefaults(), unsafe: opts.UnsafeSingleWriter, kind: kind}}
}

// checkAccess makes one cheap call so that a missing bucket or refused credentials fail at
// Open, with the store's words, rather than at the first commit.
func (s *bucketStore) checkAccess(ctx context.Context, bucket string) error {
	err := s.shared.retry.do(ctx, "open", s.loc, func(ctx context.Context, _ int) error {
		_, _, err := s.b.ListPage(ctx, blob.FirstPageToken, 1, &blob.ListOptions{Prefix: s.prefix, Delimiter: "/"})
		return err
	})
	if err == nil {
		return nil
	}
	inner := err
	var oe *OpError
	if errors.As(err, &oe) {
		inner = oe.Err // OpError would name "open URL" a second time
	}
	if code := httpStatus(err); code == 401 || code == 403 {
		return fmt.Errorf("open %s: access denied (check the credentials in the %s SDK's environment or profile): %s", s.loc, s.shared.kind, Redact(inner.Error()))
	}
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return fmt.Errorf("open %s: bucket %q does not exist: %w", s.loc, bucket, errors.Unwrap(err))
	case gcerrors.PermissionDenied:
		return fmt.Errorf("open %s: access denied (check the credentials in the %s SDK's environment or profile): %s", s.loc, s.shared.kind, Redact(inner.Error()))
	}
	return err
}

// parseBucketURL splits a bucket URL into scheme, bucket, key prefix ("" or ending in "/") and
// query.
func parseBucketURL(loc string) (scheme, bucket, prefix string, q url.Values, err error) {
	if at := userinfoEnd(loc); at >= 0 {
		// Nothing between "://" and the last "@" is echoed: it may be a key, a secret or both,
		// and a secret with "/" or "@" in it breaks URL parsing in unpredictable places.
		sch, _, _ := strings.Cut(loc, "://")
		return "", "", "", nil, &URLError{URL: sch + "://REDACTED@" + loc[at+1:],
			Err: errors.New("credentials in the URL are not accepted; use the SDK's environment variables, profile or instance role")}
	}
	u, err := url.Parse(loc)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the whole URL; URLError names it, redacted
		}
		return "", "", "", nil, &URLError{URL: loc, Err: errors.New(Redact(err.Error()))}
	}
	if u.User != nil {
		return "", "", "", nil, &URLError{URL: u.Scheme + "://REDACTED@" + u.Host + u.Path,
			Err: errors.New("credentials in the URL are not accepted; use the SDK's environment variables, profile or instance role")}
	}
	scheme = strings.ToLower(u.Scheme)
	bucket = u.Host
	if bucket == "" {
		return "", "", "", nil, &URLError{URL: loc, Err: fmt.Errorf("no bucket: write %s://BUCKET/PATH", scheme)}
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		if err := checkName(prefix); err != nil {
			return "", "", "", nil, &URLError{URL: loc, Err: err}
		}
		prefix += "/"
	}
	q, err = url.ParseQuery(u.RawQuery)
	if err != nil {
		return "", "", "", nil, &URLError{URL: strings.SplitN(loc, "?", 2)[0], Err: errors.New("malformed URL parameters")}
	}
	return scheme, bucket, prefix, q, nil
}

// userinfoEnd is the index of the "@" that ends a user-info part of a bucket URL, or -1. An
// abfs(s) URL names CONTAINER@ACCOUNT in its host, which is not user info: one "@", no ":"
// and no "/" before it.
func userinfoEnd(loc string) int {
	scheme, rest, ok := strings.Cut(loc, "://")
	if !ok {
		return -1
	}
	// The authority ends at the first "/" after the last "@" that precedes any "?"; a password
	// may itself hold "/" and "@", so look for the last "@" before the query.
	head, _, _ := strings.Cut(rest, "?")
	at := strings.LastIndex(head, "@")
	if at < 0 {
		return -1
	}
	if strings.HasPrefix(strings.ToLower(scheme), "abfs") {
		before := head[:at]
		if !strings.ContainsAny(before, ":/@") {
			return -1
		}
	} else if slash := strings.Index(head, "/"); slash >= 0 && slash < at && !strings.Contains(head[:slash], ":") {
		// s3://bucket/path@x: the "@" is in the path, after a plain bucket name.
		return -1
	}
	return len(scheme) + 3 + at
}

// timeNow is the clock of leases; tests replace it.
var timeNow = time.Now
