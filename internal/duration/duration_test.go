package duration

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0":       0,
		"0s":      0,
		"250ms":   250 * time.Millisecond,
		"90s":     90 * time.Second,
		"1h30m":   90 * time.Minute,
		"-5m":     -5 * time.Minute,
		"+5m":     5 * time.Minute,
		"1d":      24 * time.Hour,
		"7d":      168 * time.Hour,
		"1.5d":    36 * time.Hour,
		"2w":      336 * time.Hour,
		"1d12h":   36 * time.Hour,
		"1w1d":    192 * time.Hour,
		"1h1d":    25 * time.Hour,
		"-1d":     -24 * time.Hour,
		" 30d ":   720 * time.Hour,
		"1d500ms": 24*time.Hour + 500*time.Millisecond,
		"3us":     3 * time.Microsecond,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-", "d", "1", "1x", "1dd", "abc", "1d-2h", "5 m", "100000w"} {
		if got, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, got)
		} else if !strings.Contains(err.Error(), bad) {
			t.Errorf("Parse(%q): error %q does not name the input", bad, err)
		}
	}
}

func TestValue(t *testing.T) {
	var v Value
	if err := v.Set("1d"); err != nil || time.Duration(v) != 24*time.Hour || v.String() != "24h0m0s" || v.Type() != "duration" {
		t.Fatalf("Set(1d): %v %v %q %q", err, time.Duration(v), v.String(), v.Type())
	}
	if err := v.Set("soon"); err == nil {
		t.Fatal("Set(soon) succeeded")
	}
}
