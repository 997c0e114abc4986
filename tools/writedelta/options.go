package writedelta

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/streamkit/streamkit/stage"
)

// TableRoot turns the TABLE argument — a local path or a file:// URI (file:///abs/path,
// percent-encoded) — into an absolute local directory. Other URI schemes are a usage error:
// streamkit writes Delta tables on local POSIX file systems only (put-if-absent is a hard link).
func TableRoot(arg string) (string, error) {
	if arg == "" {
		return "", stage.Usagef("the table path is empty")
	}
	if i := strings.Index(arg, "://"); i > 0 {
		u, err := url.Parse(arg)
		if err != nil {
			return "", stage.Usagef("table %q: %v", arg, err)
		}
		if !strings.EqualFold(u.Scheme, "file") {
			return "", stage.Usagef("table %q: only local paths and file:// URIs are supported, not %s://", arg, u.Scheme)
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", stage.Usagef("table %q: file URI with host %q; use file:///absolute/path", arg, u.Host)
		}
		if u.Path == "" {
			return "", stage.Usagef("table %q: no path", arg)
		}
		return filepath.Clean(u.Path), nil
	}
	abs, err := filepath.Abs(arg)
	if err != nil {
		return "", fmt.Errorf("table %q: %w", arg, err)
	}
	return abs, nil
}

// ParseSize parses a byte size: a number with an optional unit B, KB, MB, GB (powers of 1000)
// or KiB, MiB, GiB (powers of 1024), case-insensitive, e.g. "128MiB", "64mb", "1048576".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("size %q: want a number with an optional unit (e.g. 128MiB)", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %v", s, err)
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q (want B, KB, MB, GB, KiB, MiB or GiB)", s, unit)
	}
	n := f * mult
	if n < 1 || n > 1<<50 {
		return 0, fmt.Errorf("size %q: out of range", s)
	}
	return int64(n), nil
}

// parseKV splits "key=value" (the value may contain '='); the key must not be empty.
func parseKV(flag, s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return "", "", stage.Usagef("%s %q: want KEY=VALUE", flag, s)
	}
	return k, v, nil
}
