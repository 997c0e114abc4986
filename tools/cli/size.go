package cli

import (
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/streamkit/streamkit/stage"
)

// sizeUnits are the units ParseSize accepts, keyed by lower case: decimal units are powers of
// 1000 (k, kB, MB, GB, TB, as SI and the `du --si` family write them) and binary units powers
// of 1024 (KiB, MiB, GiB, TiB, IEC). Note that Spark's own configuration strings ("128m",
// "1g", spark.sql.files.maxPartitionBytes) read k/m/g as powers of 1024; streamkit reads them
// as SI, as its flags always did: write 128MiB for 128 × 2^20 bytes.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// ParseSize parses a byte size given on the command line (--target-file-size,
// --max-bytes-per-epoch) or in the table property delta.targetFileSize: a non-negative number
// (fractions and exponents allowed, "1.5GiB", "1e6") with an optional unit, case-insensitive, spaces allowed
// between them: B; k/KB, M/MB, G/GB, T/TB (powers of 1000); KiB, MiB, GiB, TiB (powers of
// 1024). A bare number is bytes; a fraction of a byte is truncated. "0" is 0: callers for
// which zero means something else check it, or use [ParsePositiveSize]. Errors say what was
// wanted; they are plain errors, the caller names the flag.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	// An exponent ("1e6"): 'e' followed by a digit or a sign and a digit, not the unit "EB".
	if j := i + 1; i > 0 && j < len(t) && (t[i] == 'e' || t[i] == 'E') {
		if j+1 < len(t) && (t[j] == '+' || t[j] == '-') {
			j++
		}
		if t[j] >= '0' && t[j] <= '9' {
			for i = j; i < len(t) && t[i] >= '0' && t[i] <= '9'; i++ {
			}
		}
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("size %q: want a number with an optional unit, such as 1048576, 512MiB or 2GB", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %q is not a number; want a number with an optional unit, such as 1048576, 512MiB or 2GB", s, num)
	}
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s, unit)
	}
	n := f * mult
	if n >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q: out of range", s)
	}
	return int64(n), nil
}

// ParsePositiveSize is [ParseSize] for sizes that must be at least one byte and at most 2^50
// (a file size: --target-file-size, delta.targetFileSize); other values are an error.
func ParsePositiveSize(s string) (int64, error) {
	n, err := ParseSize(s)
	if err != nil {
		return 0, err
	}
	if n < 1 || n > 1<<50 {
		return 0, fmt.Errorf("size %q: out of range", s)
	}
	return n, nil
}

// TableRoot turns a TABLE argument — a local path or a file:// URI (file:///abs/path,
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
