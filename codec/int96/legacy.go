package int96

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Spark's LEGACY rebase mode: files whose DATE, INT64 TIMESTAMP or INT96 values before
// 1582-10-15 are readings of the hybrid Julian calendar, rebased here to the proleptic
// Gregorian calendar as Spark's reader does, for read-delta (source/delta) and read-files
// (codec/formats) alike.

// SparkLegacyInt96 is the key of a Parquet file's key-value metadata by which Spark marks INT96
// values written with int96RebaseModeInWrite=LEGACY: instants before the Gregorian switch were
// written as readings of the hybrid Julian calendar (java.util.GregorianCalendar).
const SparkLegacyInt96 = "org.apache.spark.legacyINT96"

// gregorianSwitchMicros is 1582-10-15 00:00:00 UTC, the first day of the Gregorian calendar in
// Spark's hybrid one: later instants are the same in both.
const gregorianSwitchMicros = -12_219_292_800_000_000

// rebaseJulianMicros turns an instant us before the Gregorian switch, read from a LEGACY INT96
// value (a reading of the Julian calendar in UTC), into the proleptic Gregorian instant of the
// same reading, as Spark's RebaseDateTime.rebaseJulianToGregorianMicros does for UTC. Spark
// rebases in the writer's zone; for other zones the result can differ from Spark's by the
// zone's local-mean-time offset, which only zones' pre-1900 history has.
func rebaseJulianMicros(us int64) int64 {
	day := us / 86_400_000_000
	if us%86_400_000_000 < 0 {
		day--
	}
	tod := us - day*86_400_000_000
	// Julian calendar date of the Julian day number (Richards' algorithm; the day number of
	// year 1 is positive, so / is a floor here).
	c := day + JulianDayOfEpoch + 32082
	d := (4*c + 3) / 1461
	e := c - 1461*d/4
	m := (5*e + 2) / 153
	dom := e - (153*m+2)/5 + 1
	month := m + 3 - 12*(m/10)
	year := d - 4800 + m/10
	g := time.Date(int(year), time.Month(month), int(dom), 0, 0, 0, 0, time.UTC).Unix() / 86400
	return g*86_400_000_000 + tod
}

// SparkLegacyDateTime is the key of a Parquet file's key-value metadata by which Spark marks DATE
// and INT64 TIMESTAMP values written with datetimeRebaseModeInWrite=LEGACY (Spark 2.x and
// Databricks Runtime before 7 wrote so): days and instants before the Gregorian switch are
// readings of the hybrid Julian calendar, as SparkLegacyInt96 says for INT96.
const SparkLegacyDateTime = "org.apache.spark.legacyDateTime"

// SparkVersionKey is the key of a Parquet file's key-value metadata by which Spark records the
// version that wrote it ("3.5.1").
const SparkVersionKey = "org.apache.spark.version"

// SparkLegacyModes reports whether the INT96 values (int96Legacy) and the DATE and INT64 TIMESTAMP
// values (dateTime) of a file with key-value metadata kv are, before 1582-10-15, readings of
// the hybrid Julian calendar, as Spark's reader decides (DataSourceUtils.int96RebaseSpec and
// datetimeRebaseSpec): by the keys SparkLegacyInt96 and SparkLegacyDateTime, and for a file
// whose Spark version predates them, by the version: before 3.1.0 Spark wrote INT96 so
// always, before 3.0.0 DATE and INT64 TIMESTAMP too (versions compare as strings, as Spark
// compares them). A file with no Spark version is taken as its keys say (Spark would apply
// its session's read modes, EXCEPTION by default, failing on such values).
func SparkLegacyModes(kv metadata.KeyValueMetadata) (int96Legacy, dateTime bool) {
	int96Legacy = kv.FindValue(SparkLegacyInt96) != nil
	dateTime = kv.FindValue(SparkLegacyDateTime) != nil
	if v := kv.FindValue(SparkVersionKey); v != nil {
		int96Legacy = int96Legacy || *v < "3.1.0"
		dateTime = dateTime || *v < "3.0.0"
	}
	return int96Legacy, dateTime
}

// RebaseLegacyDateTime rebases, in place, the DATE and INT64 TIMESTAMP values before the
// Gregorian switch of d, a batch of the file's field sf as the record reader decoded it (the
// file's own types), as Spark's RebaseDateTime.rebaseJulianToGregorianDays/Micros do for UTC.
// It follows sf down to its leaves and rebases only the leaves whose Parquet column
// legacyDateTimeLeaf names: an INT96 leaf (decoded and rebased by its own key,
// SparkLegacyInt96, in int96DecodeNested) is left as it is, so nested INT96 instants are not
// rebased twice. Only files carrying SparkLegacyDateTime pay for it. It fails only when d's
// children do not match sf's (an arrow-go change), never on a value.
func RebaseLegacyDateTime(pf *file.Reader, sf *pqarrow.SchemaField, d arrow.ArrayData) error {
	if !sf.IsLeaf() {
		kids := d.Children()
		if len(kids) != len(sf.Children) {
			return fmt.Errorf("column %s: %d child arrays for %d fields", sf.Field.Name, len(kids), len(sf.Children))
		}
		for i := range sf.Children {
			if err := RebaseLegacyDateTime(pf, &sf.Children[i], kids[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if legacyDateTimeLeaf(pf.MetaData().Schema.Column(sf.ColIndex)) {
		rebaseLegacyLeaf(d)
	}
	return nil
}

// legacyDateTimeLeaf reports whether Spark rebases col's values in a SparkLegacyDateTime file:
// an INT32 DATE or an INT64 TIMESTAMP adjusted to UTC (Spark's TIMESTAMP, in ms or µs).
// INT96 has its own key; TIMESTAMP_NTZ (not adjusted to UTC) is never rebased, as Spark's
// reader does not rebase it either.
func legacyDateTimeLeaf(col *schema.Column) bool {
	switch lt := col.LogicalType().(type) {
	case schema.DateLogicalType:
		return col.PhysicalType() == parquet.Types.Int32
	case schema.TimestampLogicalType:
		return col.PhysicalType() == parquet.Types.Int64 && lt.IsAdjustedToUTC()
	}
	return false
}

// rebaseLegacyLeaf rebases, in place, the date32 or timestamp values of d before the Gregorian
// switch (other types are left alone).
func rebaseLegacyLeaf(d arrow.ArrayData) {
	var perDay int64
	switch dt := d.DataType().(type) {
	case *arrow.Date32Type:
		perDay = 1
	case *arrow.TimestampType:
		perDay = 86_400 * map[arrow.TimeUnit]int64{arrow.Second: 1, arrow.Millisecond: 1e3, arrow.Microsecond: 1e6, arrow.Nanosecond: 1e9}[dt.Unit]
	default:
		return
	}
	bufs := d.Buffers()
	if len(bufs) < 2 || bufs[1] == nil {
		return
	}
	var valid []byte
	if bufs[0] != nil && d.NullN() > 0 {
		valid = bufs[0].Bytes()
	}
	off, n := d.Offset(), d.Len()
	rebase := func(v int64) int64 {
		// to µs, rebase, back (a day boundary maps to a day boundary; µs keep their digits)
		day := v / perDay
		if v%perDay < 0 {
			day--
		}
		rest := v - day*perDay
		return rebaseJulianMicros(day*86_400_000_000)/86_400_000_000*perDay + rest
	}
	switchDay := int64(gregorianSwitchMicros / 86_400_000_000)
	if perDay == 1 {
		vals := arrow.Date32Traits.CastFromBytes(bufs[1].Bytes())[off : off+n]
		for i, v := range vals {
			if int64(v) < switchDay && (valid == nil || bitutil.BitIsSet(valid, off+i)) {
				vals[i] = arrow.Date32(rebase(int64(v)))
			}
		}
		return
	}
	vals := arrow.TimestampTraits.CastFromBytes(bufs[1].Bytes())[off : off+n]
	for i, v := range vals {
		if int64(v) < switchDay*perDay && (valid == nil || bitutil.BitIsSet(valid, off+i)) {
			vals[i] = arrow.Timestamp(rebase(int64(v)))
		}
	}
}

// LegacyRebase is the rebase of the INT96 values of a file whose SparkLegacyInt96 marks
// them as Julian readings before 1582-10-15 (legacy), nil for other files.
func LegacyRebase(legacy bool) Rebase {
	if !legacy {
		return nil
	}
	return func(us int64) int64 {
		if us < gregorianSwitchMicros {
			return rebaseJulianMicros(us)
		}
		return us
	}
}
