package kafka

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Kafka timestamps are computed in milliseconds straight from the column's unit: through
// nanoseconds (arrow.Timestamp.ToTime) an instant after 2262-04-11 overflowed int64 and was
// produced as a wrong, negative timestamp (10000-01-01 in ms became 1816-03-30), exit 0.
func TestKafkaMillisPast2262(t *testing.T) {
	for _, c := range []struct {
		at   time.Time
		unit arrow.TimeUnit
	}{
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), arrow.Second},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), arrow.Millisecond},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), arrow.Microsecond},
		{time.Date(2262, 4, 22, 13, 46, 34, 600_000_000, time.UTC), arrow.Microsecond},
		{time.Date(2024, 5, 1, 8, 0, 0, 123_456_789, time.UTC), arrow.Nanosecond},
		{time.Date(1969, 12, 31, 23, 59, 59, 999_999_000, time.UTC), arrow.Microsecond},
	} {
		var v int64
		switch c.unit {
		case arrow.Second:
			v = c.at.Unix()
		case arrow.Millisecond:
			v = c.at.UnixMilli()
		case arrow.Microsecond:
			v = c.at.UnixMicro()
		default:
			v = c.at.UnixNano()
		}
		want := c.at.Truncate(time.Millisecond).UnixMilli()
		if c.at.Before(time.Unix(0, 0)) {
			want = c.at.UnixMilli() // floor: 1969-12-31T23:59:59.999
		}
		if got := kafkaMillis(v, c.unit); got != want {
			t.Errorf("%s in %s: %d ms, want %d", c.at, c.unit, got, want)
		}
	}
}
