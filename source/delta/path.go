package delta

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/storage"
)

// resolvePath turns the path of an add action into a '/'-separated path relative to the table
// root, refusing anything that could read outside it (DELTA.md "Reader safety"). Relative
// paths go through [dl.DecodePath] (percent-decoding; no "..", ".", empty segments,
// backslashes, NUL or _delta_log). An absolute path — "/abs/…", "file:/abs/…" or
// "file:///abs/…", as Spark writes for shallow clones — is accepted only when it lies inside
// the table root (root must be absolute and clean), and is then checked like a relative one.
// On a bucket table (root a bucket URL) a URL path is accepted only inside the root
// (s3a:// and s3n:// are s3://), and a local absolute path never. Local files are opened
// through an [os.Root] as well, so a symlink cannot lead outside the table.
func resolvePath(root, logged string) (string, error) {
	if !isAbsoluteURI(logged) {
		return dl.DecodePath(logged)
	}
	p := logged
	if strings.HasPrefix(p, "file:") {
		u, err := url.Parse(p)
		if err != nil {
			return "", fmt.Errorf("decode path %q: %w: %v", logged, dl.ErrUnsafePath, err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", fmt.Errorf("decode path %q: %w: file URI with host %q", logged, dl.ErrUnsafePath, u.Host)
		}
		p = u.EscapedPath()
	} else if strings.Contains(p, "://") {
		if !storage.IsURL(root) {
			return "", fmt.Errorf("decode path %q: %w: only local paths are supported", logged, dl.ErrUnsafePath)
		}
		rel, ok := underURL(root, p)
		if !ok {
			return "", fmt.Errorf("decode path %q: %w: URL outside the table root %s", logged, dl.ErrUnsafePath, root)
		}
		return dl.DecodePath(rel)
	}
	dec, err := url.PathUnescape(p)
	if err != nil {
		return "", fmt.Errorf("decode path %q: %w", logged, err)
	}
	if strings.ContainsAny(dec, "\\\x00") {
		return "", fmt.Errorf("decode path %q: %w", logged, dl.ErrUnsafePath)
	}
	for _, seg := range strings.Split(strings.TrimPrefix(dec, "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("decode path %q: %w", logged, dl.ErrUnsafePath)
		}
	}
	prefix := filepath.ToSlash(root)
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if !strings.HasPrefix(dec, prefix) {
		return "", fmt.Errorf("decode path %q: %w: absolute path outside the table root %s", logged, dl.ErrUnsafePath, root)
	}
	rel := strings.TrimPrefix(dec, prefix)
	// Re-check the relative remainder with the standard rules (e.g. no _delta_log).
	return dl.DecodePath(url.PathEscape(rel))
}

func isAbsoluteURI(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, "file:") || strings.Contains(p, "://")
}

// underURL returns the (still escaped) remainder of URL u below bucket URL root, and whether u
// lies under it. Schemes compare ignoring case, with Hadoop's s3a and s3n as s3.
func underURL(root, u string) (string, bool) {
	norm := func(s string) (string, string) {
		scheme, rest, _ := strings.Cut(s, "://")
		scheme = strings.ToLower(scheme)
		if scheme == "s3a" || scheme == "s3n" {
			scheme = "s3"
		}
		return scheme, rest
	}
	rs, rr := norm(root)
	us, ur := norm(u)
	prefix := strings.TrimSuffix(rr, "/") + "/"
	if rs != us || !strings.HasPrefix(ur, prefix) {
		return "", false
	}
	return strings.TrimPrefix(ur, prefix), true
}
