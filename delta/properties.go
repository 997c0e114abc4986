package delta

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Table properties (metaData.configuration). Keys starting with "delta." are Delta's own
// settings: they are validated the way delta-spark's DeltaConfigs validates them when a table
// is created or altered (a value that does not parse is refused; an unknown delta.* key is
// refused, as Spark's DELTA_UNKNOWN_CONFIGURATION, unless arbitrary properties are allowed, as
// spark.databricks.delta.allowArbitraryProperties.enabled does), and their keys are
// normalised to Delta's spelling ("delta.appendonly" → "delta.appendOnly"). Other keys are user
// properties and pass through unchanged.

// ErrInvalidProperty is wrapped by every error of [ValidateProperties].
var ErrInvalidProperty = errors.New("invalid table property")

// Defaults of the table properties this package acts on (delta-spark's DeltaConfigs).
const (
	DefaultCheckpointInterval    = 10                  // delta.checkpointInterval
	DefaultLogRetention          = 30 * 24 * time.Hour // delta.logRetentionDuration ("interval 30 days")
	DefaultDeletedFileRetention  = 7 * 24 * time.Hour  // delta.deletedFileRetentionDuration ("interval 1 week")
	DefaultNumIndexedCols        = 32                  // delta.dataSkippingNumIndexedCols
	DefaultEnableExpiredLogClean = true                // delta.enableExpiredLogCleanup
)

type propKind int

const (
	propBool     propKind = iota + 1 // "true" or "false" (any case)
	propInterval                     // calendar interval ≥ 0 without months/years
	propPosInt                       // integer ≥ 1
	propPosInt32                     // integer ≥ 1 that fits an int32 (Spark's Int properties)
	propIndexed                      // integer ≥ -1 (dataSkippingNumIndexedCols)
	propString                       // any string
	propEnum                         // one of propSpec.enum (any case)
	propProtocol                     // sets the protocol: write-delta derives it itself
)

type propSpec struct {
	kind propKind
	enum []string
}

// knownProperties are the delta.* table properties of delta-spark (DeltaConfigs) and delta-rs
// (delta.targetFileSize) with their value forms, keyed by lower-case name; the map value's key
// spelling is recovered from canonicalProperty.
var knownProperties = map[string]propSpec{
	"delta.appendOnly":                                  {kind: propBool},
	"delta.logRetentionDuration":                        {kind: propInterval},
	"delta.deletedFileRetentionDuration":                {kind: propInterval},
	"delta.checkpointRetentionDuration":                 {kind: propInterval},
	"delta.sampleRetentionDuration":                     {kind: propInterval},
	"delta.setTransactionRetentionDuration":             {kind: propInterval},
	"delta.checkpointInterval":                          {kind: propPosInt32},
	"delta.enableExpiredLogCleanup":                     {kind: propBool},
	"delta.dataSkippingNumIndexedCols":                  {kind: propIndexed},
	"delta.dataSkippingStatsColumns":                    {kind: propString},
	"delta.checkpoint.writeStatsAsJson":                 {kind: propBool},
	"delta.checkpoint.writeStatsAsStruct":               {kind: propBool},
	"delta.compatibility.symlinkFormatManifest.enabled": {kind: propBool},
	"delta.randomizeFilePrefixes":                       {kind: propBool},
	"delta.randomPrefixLength":                          {kind: propPosInt32},
	"delta.isolationLevel":                              {kind: propEnum, enum: []string{"Serializable", "WriteSerializable"}},
	"delta.enableChangeDataFeed":                        {kind: propBool},
	"delta.enableDeletionVectors":                       {kind: propBool},
	"delta.enableRowTracking":                           {kind: propBool},
	"delta.enableInCommitTimestamps":                    {kind: propBool},
	"delta.enableTypeWidening":                          {kind: propBool},
	"delta.enableIcebergCompatV1":                       {kind: propBool},
	"delta.enableIcebergCompatV2":                       {kind: propBool},
	"delta.enableVariantShredding":                      {kind: propBool},
	"delta.universalFormat.enabledFormats":              {kind: propString},
	"delta.columnMapping.mode":                          {kind: propEnum, enum: []string{"none", "name", "id"}},
	"delta.columnMapping.maxColumnId":                   {kind: propIndexed},
	"delta.checkpointPolicy":                            {kind: propEnum, enum: []string{"classic", "v2"}},
	"delta.autoOptimize.optimizeWrite":                  {kind: propBool},
	"delta.autoOptimize.autoCompact":                    {kind: propBool},
	"delta.targetFileSize":                              {kind: propPosInt},
	"delta.minReaderVersion":                            {kind: propProtocol},
	"delta.minWriterVersion":                            {kind: propProtocol},
}

var canonicalProperty = func() map[string]string {
	m := make(map[string]string, len(knownProperties))
	for k := range knownProperties {
		m[strings.ToLower(k)] = k
	}
	return m
}()

// ValidateProperties checks table properties given by a user (create or change) and returns
// them with delta.* keys in Delta's spelling. For known delta.* keys the value must have the
// property's form: booleans "true"/"false"; intervals "interval N unit [N unit ...]" (the
// "interval" word optional; units week, day, hour, minute, second, millisecond, microsecond,
// singular or plural; not negative; months and years are refused as Delta does, because their
// length varies); checkpointInterval and randomPrefixLength integers in 1..2147483647 (Spark
// reads them as Int), targetFileSize (bytes) an integer ≥ 1; dataSkippingNumIndexedCols an integer ≥ -1; isolationLevel, columnMapping.mode and
// checkpointPolicy one of their values. delta.minReaderVersion, delta.minWriterVersion and
// delta.feature.* set the protocol, which this package derives from the schema: refused.
// delta.constraints.* are CHECK constraints this package cannot evaluate: refused.
// delta.enableDeletionVectors=true and a non-empty delta.universalFormat.enabledFormats ask for
// features this package does not write: refused. Boolean values are returned in lower case
// ("TRUE" → "true"), as Delta stores them. Other
// delta.* keys are refused unless allowArbitrary. Errors wrap [ErrInvalidProperty] and name the
// property, the value and the expected form. Keys outside delta.* are returned unchanged.
func ValidateProperties(conf map[string]string, allowArbitrary bool) (map[string]string, error) {
	keys := make([]string, 0, len(conf))
	for k := range conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, len(conf))
	for _, k := range keys {
		v := conf[k]
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, "delta.") {
			out[k] = v
			continue
		}
		canon, known := canonicalProperty[lk]
		switch {
		case strings.HasPrefix(lk, "delta.feature."):
			return nil, fmt.Errorf("%w: %s=%s: table features are enabled by the properties and column types that need them, not set directly", ErrInvalidProperty, k, v)
		case strings.HasPrefix(lk, "delta.constraints."):
			return nil, fmt.Errorf("%w: %s=%s: CHECK constraints are not supported (streamkit cannot evaluate them)", ErrInvalidProperty, k, v)
		case !known && allowArbitrary:
			out[k] = v
			continue
		case !known:
			return nil, fmt.Errorf("%w: unknown Delta property %s=%s (Spark refuses it too); check the spelling, or allow arbitrary delta.* properties explicitly", ErrInvalidProperty, k, v)
		}
		spec := knownProperties[canon]
		if err := checkPropertyValue(canon, spec, v); err != nil {
			return nil, err
		}
		if err := checkUnsupported(canon, v); err != nil {
			return nil, err
		}
		if spec.kind == propBool {
			v = strings.ToLower(strings.TrimSpace(v)) // Delta's spelling: "TRUE" is stored as "true"
		}
		if prev, dup := out[canon]; dup && prev != v {
			return nil, fmt.Errorf("%w: %s given twice with different values (%q, %q)", ErrInvalidProperty, canon, prev, v)
		}
		out[canon] = v
	}
	return out, nil
}

// checkUnsupported refuses values of well-formed properties that ask for what streamkit does
// not write: deletion vectors (the deletionVectors feature is never enabled) and UniForm
// (delta.universalFormat.enabledFormats needs IcebergCompat, which is not supported).
func checkUnsupported(key, v string) error {
	t := strings.TrimSpace(v)
	switch {
	case key == "delta.enableDeletionVectors" && strings.EqualFold(t, "true"):
		return fmt.Errorf("%w: %s=%s: streamkit does not write deletion vectors and does not enable the deletionVectors table feature; leave it unset or false", ErrInvalidProperty, key, v)
	case key == "delta.universalFormat.enabledFormats" && t != "":
		return fmt.Errorf("%w: %s=%s: UniForm (Iceberg/Hudi metadata) is not supported: it needs IcebergCompat, which streamkit does not write", ErrInvalidProperty, key, v)
	}
	return nil
}

func checkPropertyValue(key string, spec propSpec, v string) error {
	bad := func(form string) error {
		return fmt.Errorf("%w: %s=%q: want %s", ErrInvalidProperty, key, v, form)
	}
	t := strings.TrimSpace(v)
	switch spec.kind {
	case propBool:
		if !strings.EqualFold(t, "true") && !strings.EqualFold(t, "false") {
			return bad("true or false")
		}
	case propInterval:
		if _, err := ParseInterval(v); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrInvalidProperty, key, v, err)
		}
	case propPosInt:
		if n, err := strconv.ParseInt(t, 10, 64); err != nil || n < 1 {
			return bad("a positive integer")
		}
	case propPosInt32:
		if n, err := strconv.ParseInt(t, 10, 32); err != nil || n < 1 {
			return bad("a positive integer ≤ 2147483647")
		}
	case propIndexed:
		if n, err := strconv.ParseInt(t, 10, 32); err != nil || n < -1 {
			return bad("an integer ≥ -1 (-1: all columns)")
		}
	case propEnum:
		for _, e := range spec.enum {
			if strings.EqualFold(t, e) {
				return nil
			}
		}
		return bad("one of " + strings.Join(spec.enum, ", "))
	case propProtocol:
		return fmt.Errorf("%w: %s=%s: the protocol versions are derived from the schema and properties; they cannot be set", ErrInvalidProperty, key, v)
	}
	return nil
}

// ParseInterval parses a calendar interval as Delta's interval properties hold it
// (delta.logRetentionDuration, delta.deletedFileRetentionDuration, ...): an optional word
// "interval", then one or more "N unit" pairs, e.g. "interval 30 days", "1 week",
// "interval 1 day 12 hours". N is an integer; units (case-insensitive, singular or plural):
// week, day, hour, minute, second, millisecond, microsecond. Like delta-spark, a negative
// total and months or years (whose length varies) are refused.
func ParseInterval(s string) (time.Duration, error) {
	const form = `want an interval such as "interval 7 days" (units: weeks, days, hours, minutes, seconds, milliseconds, microseconds)`
	f := strings.Fields(strings.ToLower(strings.TrimSpace(s)))
	if len(f) >= 1 && f[0] == "interval" {
		f = f[1:]
	}
	if len(f) == 0 || len(f)%2 != 0 {
		return 0, errors.New(form)
	}
	var total time.Duration
	for i := 0; i < len(f); i += 2 {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, errors.New(form)
		}
		var d time.Duration
		switch strings.TrimSuffix(f[i+1], "s") {
		case "week":
			d = 7 * 24 * time.Hour
		case "day":
			d = 24 * time.Hour
		case "hour":
			d = time.Hour
		case "minute":
			d = time.Minute
		case "second":
			d = time.Second
		case "millisecond":
			d = time.Millisecond
		case "microsecond":
			d = time.Microsecond
		case "month", "year":
			return 0, fmt.Errorf("months and years are not accepted (their length varies); give days, e.g. \"interval 365 days\"")
		default:
			return 0, errors.New(form)
		}
		if n > int64(1<<62)/int64(d) || n < -int64(1<<62)/int64(d) {
			return 0, errors.New("interval out of range")
		}
		total += time.Duration(n) * d
	}
	if total < 0 {
		return 0, errors.New("the interval must not be negative")
	}
	return total, nil
}

// tableConfig holds the table properties this package acts on, parsed, with their defaults.
// Values that do not parse (tables written by others) keep the default.
type tableConfig struct {
	checkpointInterval int64         // delta.checkpointInterval
	numIndexedCols     int           // delta.dataSkippingNumIndexedCols, -1 = all
	tombstoneRetention time.Duration // delta.deletedFileRetentionDuration
	logRetention       time.Duration // delta.logRetentionDuration
	expiredLogCleanup  bool          // delta.enableExpiredLogCleanup
	appendOnly         bool          // delta.appendOnly
}

func configOf(m *Metadata) tableConfig {
	c := tableConfig{checkpointInterval: DefaultCheckpointInterval, numIndexedCols: DefaultNumIndexedCols,
		tombstoneRetention: DefaultDeletedFileRetention, logRetention: DefaultLogRetention,
		expiredLogCleanup: DefaultEnableExpiredLogClean}
	if m == nil {
		return c
	}
	conf := m.Configuration
	if v, err := strconv.ParseInt(strings.TrimSpace(conf["delta.checkpointInterval"]), 10, 64); err == nil && v > 0 {
		c.checkpointInterval = v
	}
	if v, err := strconv.Atoi(strings.TrimSpace(conf["delta.dataSkippingNumIndexedCols"])); err == nil && v >= -1 {
		c.numIndexedCols = v
	}
	if d, err := ParseInterval(conf["delta.deletedFileRetentionDuration"]); err == nil {
		c.tombstoneRetention = d
	}
	if d, err := ParseInterval(conf["delta.logRetentionDuration"]); err == nil {
		c.logRetention = d
	}
	if v := strings.TrimSpace(conf["delta.enableExpiredLogCleanup"]); strings.EqualFold(v, "false") {
		c.expiredLogCleanup = false
	}
	c.appendOnly = strings.EqualFold(strings.TrimSpace(conf["delta.appendOnly"]), "true")
	return c
}

// CheckpointInterval is delta.checkpointInterval of the table (default 10).
func (s *Snapshot) CheckpointInterval() int64 { return configOf(s.metadata).checkpointInterval }

// DeletedFileRetention is delta.deletedFileRetentionDuration of the table (default one
// week): how long removed files stay on disk for time travel and concurrent readers; VACUUM
// must not delete younger ones.
func (s *Snapshot) DeletedFileRetention() time.Duration {
	return configOf(s.metadata).tombstoneRetention
}

// LogRetention is delta.logRetentionDuration of the table (default 30 days): how long log
// files (commits, checkpoints) are kept for history and time travel before the cleanup after
// a checkpoint deletes them.
func (s *Snapshot) LogRetention() time.Duration { return configOf(s.metadata).logRetention }

// ExpiredLogCleanup is delta.enableExpiredLogCleanup of the table (default true): whether
// expired log files are deleted after each checkpoint.
func (s *Snapshot) ExpiredLogCleanup() bool { return configOf(s.metadata).expiredLogCleanup }

// NumIndexedCols returns how many leading leaf columns of m's table get file statistics:
// delta.dataSkippingNumIndexedCols, DefaultNumIndexedCols when unset or invalid, -1 for all.
// A nil m yields the default.
func (m *Metadata) NumIndexedCols() int { return configOf(m).numIndexedCols }
