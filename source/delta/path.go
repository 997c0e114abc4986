package delta

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	dl "github.com/streamkit/streamkit/delta"
)

// resolvePath turns the path of an add action into a '/'-separated path relative to the table
// root, refusing anything that could read outside it (DELTA.md "Reader safety"). Relative
// paths go through [dl.DecodePath] (percent-decoding; no "..", ".", empty segments,
// backslashes, NUL or _delta_log). An absolute path — "/abs/…", "file:/abs/…" or
// "file:///abs/…", as Spark writes for shallow clones — is accepted only when it lies inside
// the table root (root must be absolute and clean), and is then checked like a relative one.
// Files are opened through an [os.Root] as well, so a symlink cannot lead outside the table.
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
		return "", fmt.Errorf("decode path %q: %w: only local paths are supported", logged, dl.ErrUnsafePath)
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
