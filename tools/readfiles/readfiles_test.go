package readfiles

import "testing"

func TestParseBytes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"0", 0, false}, {"1048576", 1 << 20, false}, {"512MiB", 512 << 20, false}, {"2GB", 2e9, false},
		{"1.5 GiB", 3 << 29, false}, {"10k", 10000, false}, {"7B", 7, false}, {"-1", 0, true}, {"lots", 0, true},
	} {
		got, err := ParseBytes(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d (error %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}
