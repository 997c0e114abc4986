package codec

import "github.com/streamkit/streamkit/codec/internal/textconv"

// ParseTimestampText parses timestamp text exactly as CSV and JSON decoding read timestamp
// columns (codec/internal/textconv): "YYYY-MM-DD" (or an ISO 8601 expanded year, a sign and 4 to
// 6 digits: "+10000-01-01"), optionally followed by 'T', 't' or ' ' and
// "hh:mm[:ss[.fraction]]" (1 to 9 fraction digits, beyond µs truncated), and optionally a zone
// "Z", "±hh", "±hh:mm", "±hhmm" or "UTC". civil is the wall-clock reading in µs as if it were
// UTC and offset the zone's offset east of UTC in µs (0 without one): the instant is
// civil − offset. hasZone reports whether the text carried a zone; zone-less text is left to
// the caller's location (DESIGN.md §4: never the machine's zone). It does not allocate.
func ParseTimestampText(b []byte) (civil, offset int64, hasZone, ok bool) {
	return textconv.ParseCivil(b)
}
