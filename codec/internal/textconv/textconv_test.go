package textconv

import (
	"testing"
	"time"
)

func TestParseTimestamp(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	tests := []struct {
		in      string
		loc     *time.Location
		want    string // RFC 3339 µs UTC, "" = invalid
		hasZone bool
	}{
		{"2024-03-01T12:00:00Z", nil, "2024-03-01T12:00:00.000000Z", true},
		{"2024-03-01 12:00:00.1234567+05:30", nil, "2024-03-01T06:30:00.123456Z", true},
		{"2024-03-01t12:00-0100", nil, "2024-03-01T13:00:00.000000Z", true},
		{"2024-03-01T12:00:00 UTC", nil, "2024-03-01T12:00:00.000000Z", true},
		{"2024-03-01", nil, "2024-03-01T00:00:00.000000Z", false},
		{"1969-12-31T23:59:59.999999Z", nil, "1969-12-31T23:59:59.999999Z", true},
		{"2024-07-01T08:00:00", ny, "2024-07-01T12:00:00.000000Z", false},
		{"2024-01-01T08:00:00", ny, "2024-01-01T13:00:00.000000Z", false},
		{"2024-02-30T00:00:00Z", nil, "", false},
		{"2024-03-01T24:00:00Z", nil, "", false},
		{"2024-03-01T12:00:00.Z", nil, "", false},
		{"2024-03-01T12:00:00+25:00", nil, "", false},
		{"2024-3-1", nil, "", false},
		{"", nil, "", false},
	}
	for _, tt := range tests {
		if tt.loc == nil && tt.in == "2024-07-01T08:00:00" {
			continue
		}
		us, hasZone, ok := ParseTimestamp([]byte(tt.in), tt.loc)
		got := ""
		if ok {
			got = FormatMicros(us)
		}
		if got != tt.want || ok && hasZone != tt.hasZone {
			t.Errorf("ParseTimestamp(%q) = %q zone=%v, want %q zone=%v", tt.in, got, hasZone, tt.want, tt.hasZone)
		}
	}
}

func TestParseDecimal128(t *testing.T) {
	tests := []struct {
		in          string
		prec, scale int32
		want        string // "" = does not fit / invalid
	}{
		{"12.345", 10, 2, "12.35"},
		{"-12.345", 10, 2, "-12.35"},
		{"12.344", 10, 2, "12.34"},
		{"0.005", 3, 2, "0.01"},
		{"1e3", 10, 2, "1000.00"},
		{".5", 3, 1, "0.5"},
		{"99.99", 4, 2, "99.99"},
		{"100", 4, 2, ""},
		{"99.995", 4, 2, ""},
		{"12345678901234567890.123", 38, 3, "12345678901234567890.123"},
		{"1.2.3", 10, 2, ""},
		{"-", 10, 2, ""},
		{"abc", 10, 2, ""},
	}
	for _, tt := range tests {
		n, ok := ParseDecimal128([]byte(tt.in), tt.prec, tt.scale)
		got := ""
		if ok {
			got = n.ToString(tt.scale)
		}
		if got != tt.want {
			t.Errorf("ParseDecimal128(%q, %d, %d) = %q, want %q", tt.in, tt.prec, tt.scale, got, tt.want)
		}
	}
}

func TestParseInt(t *testing.T) {
	tests := []struct {
		in   string
		bits int
		ok   bool
		want int64
	}{
		{"127", 8, true, 127}, {"128", 8, false, 0}, {"-128", 8, true, -128}, {"+5", 64, true, 5},
		{"9223372036854775807", 64, true, 9223372036854775807}, {"9223372036854775808", 64, false, 0},
		{"1.0", 64, false, 0}, {" 1", 64, false, 0}, {"-", 64, false, 0}, {"", 64, false, 0},
	}
	for _, tt := range tests {
		got, ok := ParseInt([]byte(tt.in), tt.bits)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseInt(%q, %d) = %d, %v; want %d, %v", tt.in, tt.bits, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDaysFromCivil(t *testing.T) {
	for _, d := range []time.Time{time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1600, 2, 29, 0, 0, 0, 0, time.UTC), time.Date(2400, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(-1, 3, 1, 0, 0, 0, 0, time.UTC)} {
		if got, want := DaysFromCivil(d.Year(), int(d.Month()), d.Day()), d.Unix()/86400; got != want {
			t.Errorf("DaysFromCivil(%v) = %d, want %d", d, got, want)
		}
	}
}

// Epoch numbers in a finer unit than µs floor, so an instant before 1970 stays in its second.
func TestEpochToMicrosFloors(t *testing.T) {
	for _, c := range []struct {
		v    int64
		unit int
		want int64
	}{{-1, 3, -1}, {-1000, 3, -1}, {-1001, 3, -2}, {999, 3, 0}, {-1, 1, -1000}, {-1, 0, -1_000_000}, {5, 2, 5}} {
		if got, ok := EpochIntToMicros(c.v, c.unit); !ok || got != c.want {
			t.Errorf("EpochIntToMicros(%d, %d) = %d, %v; want %d", c.v, c.unit, got, ok, c.want)
		}
	}
	for _, c := range []struct {
		v    float64
		unit int
		want int64
	}{{-1, 3, -1}, {-0.0000005, 0, -1}, {1.5, 2, 1}, {-1.5, 2, -2}, {-1.5, 0, -1_500_000}} {
		if got, ok := EpochToMicros(c.v, c.unit); !ok || got != c.want {
			t.Errorf("EpochToMicros(%v, %d) = %d, %v; want %d", c.v, c.unit, got, ok, c.want)
		}
	}
	if _, ok := EpochToMicros(9.3e18, 2); ok {
		t.Error("EpochToMicros accepted a value beyond int64")
	}
}
