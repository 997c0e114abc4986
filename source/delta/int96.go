package delta

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/streamkit/streamkit/codec/int96"
)

// Spark writes TIMESTAMP columns as INT96, also inside structs, lists and maps; codec/int96
// decodes them straight to microseconds, which pqarrow cannot (see that package). The scan
// reads a top-level INT96 column apart with int96.Column and has pqarrow hand over the raw
// values of INT96 leaves inside nested columns (int96.MicrosFields), decoded in place per batch
// (int96.DecodeFields); both rebase the Julian readings of a file Spark marked
// sparkLegacyInt96 (newInt96Column, int96DecodeNested). int96.CheckNested remains for a
// nested column whose Arrow type MicrosFields cannot rewrite (an extension type from an
// ARROW:schema; Delta writers produce none): pqarrow decodes it to ns, range-checked before
// the file's first row.

// julianDayOfEpoch is the Julian day number of 1970-01-01.
const julianDayOfEpoch = int96.JulianDayOfEpoch

// Spark's LEGACY rebase mode is read by codec/int96 (legacy.go); the names below are its.
const (
	sparkLegacyInt96    = int96.SparkLegacyInt96
	sparkLegacyDateTime = int96.SparkLegacyDateTime
	sparkVersionKey     = int96.SparkVersionKey
)

// newInt96Column reads the top-level INT96 column leaf of pf over rowGroups to µs, rebasing a
// legacy file's values (int96.LegacyRebase).
func newInt96Column(pf *file.Reader, leaf int, rowGroups []int, legacy bool) *int96.Column {
	return int96.NewColumn(pf, leaf, rowGroups, int96.LegacyRebase(legacy))
}

// int96DecodeNested decodes in place the INT96 leaves of d, a batch of the nested field sf
// that int96.MicrosFields rewrote, rebasing a legacy file's values as newInt96Column does.
func int96DecodeNested(pf *file.Reader, sf *pqarrow.SchemaField, d arrow.ArrayData, legacy bool) error {
	return int96.DecodeFields(pf, sf, d, int96.LegacyRebase(legacy))
}

// int96Nested is a nested column of a file whose INT96 leaves int96.MicrosFields rewrote.
type int96Nested struct {
	col   int                  // its index in the record reader's batches
	field *pqarrow.SchemaField // its manifest field
}
