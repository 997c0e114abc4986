package delta

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// uriSafe reports whether c may appear unencoded in an add.path: RFC 3986 unreserved
// characters, '/' and the sub-delimiters Spark's Hadoop Path keeps ("!$&'()*+,;=@").
// ':' is encoded so a first segment can never be read as a URI scheme.
func uriSafe(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~/!$&'()*+,;=@", c) >= 0
}

// EncodePath URI-encodes a relative file path for add.path / remove.path (PROTOCOL.md "Add
// File and Remove File": the path is an RFC 2396 URI). Every byte outside uriSafe becomes %XX,
// so a Hive-escaped directory "p=a%3Ab c" is logged as "p=a%253Ab%20c".
func EncodePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if uriSafe(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// ErrUnsafePath is wrapped by errors about add/remove paths that could escape the table
// directory.
var ErrUnsafePath = errors.New("unsafe path in Delta log")

// DecodePath turns a logged add/remove path into a path relative to the table root, refusing
// anything that could escape it (DELTA.md "Reader safety"): absolute paths and URIs with a
// scheme, "..", ".", empty segments, backslashes, NUL and paths into _delta_log.
func DecodePath(logged string) (string, error) {
	if strings.Contains(logged, "://") || strings.HasPrefix(logged, "/") || strings.HasPrefix(logged, "file:") {
		return "", fmt.Errorf("decode path %q: %w: absolute paths are not supported", logged, ErrUnsafePath)
	}
	p, err := url.PathUnescape(logged)
	if err != nil {
		return "", fmt.Errorf("decode path %q: %w", logged, err)
	}
	if p == "" || strings.ContainsAny(p, "\\\x00") || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("decode path %q: %w", logged, ErrUnsafePath)
	}
	for i, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." || (i == 0 && seg == "_delta_log") {
			return "", fmt.Errorf("decode path %q: %w", logged, ErrUnsafePath)
		}
	}
	return p, nil
}
