package delta

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamkit/streamkit/delta"
)

// HiveDefaultPartition is the directory value of a null (or empty-string) partition value.
const HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// needsHiveEscape reports whether Hive/Spark escape c in partition directory names
// (ExternalCatalogUtils.escapePathName): control characters 0x01–0x1F, 0x7F and
// "#%'*/:=?\{[]^.
func needsHiveEscape(c byte) bool {
	if c < 0x20 || c == 0x7f {
		return true
	}
	return strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0
}

// EscapePartitionName escapes a partition column name or value for use as a directory
// name component the way Hive and Spark do: every byte in needsHiveEscape becomes %XX
// (uppercase hex); everything else, including spaces and non-ASCII UTF-8, is kept.
func EscapePartitionName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsHiveEscape(c) {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// PartitionDir returns the relative directory (on disk, '/'-separated) of a file with the given
// partition values, in partition column order: col1=v1/col2=v2. A nil value (null) becomes
// HiveDefaultPartition. Both names and values are escaped with EscapePartitionName.
func PartitionDir(cols []string, values map[string]*string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		v := HiveDefaultPartition
		if p := values[c]; p != nil && *p != "" {
			v = EscapePartitionName(*p)
		}
		parts[i] = EscapePartitionName(c) + "=" + v
	}
	return strings.Join(parts, "/")
}

// Partition value layouts (DELTA.md "Partition value strings").
const (
	partitionTimestampLayout    = "2006-01-02T15:04:05.000000Z"
	partitionTimestampNTZLayout = "2006-01-02 15:04:05.000000"
)

// partitionValue serializes row i of a canonical-typed array as a partition value
// (PROTOCOL.md "Partition Value Serialization"). Null and the empty string yield nil (JSON
// null): readers read an empty partition value as null.
func partitionValue(arr arrow.Array, i int) (*string, error) {
	if arr.IsNull(i) {
		return nil, nil
	}
	var s string
	switch a := arr.(type) {
	case *array.String:
		s = a.Value(i)
		if s == "" {
			return nil, nil
		}
	case *array.Int8:
		s = strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int16:
		s = strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int32:
		s = strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int64:
		s = strconv.FormatInt(a.Value(i), 10)
	case *array.Boolean:
		s = strconv.FormatBool(a.Value(i))
	case *array.Float32:
		s = javaFloatString(float64(a.Value(i)), 32)
	case *array.Float64:
		s = javaFloatString(a.Value(i), 64)
	case *array.Date32:
		s = a.Value(i).ToTime().Format("2006-01-02")
	case *array.Timestamp:
		t := time.UnixMicro(int64(a.Value(i))).UTC()
		if a.DataType().(*arrow.TimestampType).TimeZone == "" {
			s = t.Format(partitionTimestampNTZLayout)
		} else {
			s = t.Format(partitionTimestampLayout)
		}
	case *array.Decimal128:
		s = decimalString(a.Value(i), a.DataType().(*arrow.Decimal128Type).Scale)
	default:
		return nil, fmt.Errorf("partition value of type %s: %w", arr.DataType(), delta.ErrUnsupportedType)
	}
	return &s, nil
}

// decimalString renders an unscaled decimal with exactly scale fractional digits.
func decimalString(n decimal128.Num, scale int32) string {
	s := n.BigInt().String()
	if scale <= 0 {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if len(s) <= int(scale) {
		s = strings.Repeat("0", int(scale)-len(s)+1) + s
	}
	s = s[:len(s)-int(scale)] + "." + s[len(s)-int(scale):]
	if neg {
		s = "-" + s
	}
	return s
}

// javaFloatString formats like Java's Double.toString / Float.toString: decimal notation with
// at least one fractional digit for 1e-3 ≤ |v| < 1e7, otherwise computerized scientific
// notation ("1.0E10", "1.5E-5"); "NaN", "Infinity", "-Infinity".
func javaFloatString(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case v == 0:
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	abs := math.Abs(v)
	if abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(v, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'E', -1, bits) // e.g. 1E+10, 1.5E-05
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}
