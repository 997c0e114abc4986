package cli

import "testing"

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		bad  bool
	}{
		// read-files --max-bytes-per-epoch and backfill --target-file-size (formerly
		// readfiles.ParseBytes).
		{"0", 0, false}, {"1048576", 1 << 20, false}, {"512MiB", 512 << 20, false}, {"2GB", 2e9, false},
		{"1.5 GiB", 3 << 29, false}, {"10k", 10000, false}, {"7B", 7, false}, {"-1", 0, true}, {"lots", 0, true},
		// write-delta and delta optimize --target-file-size (formerly writedelta.ParseSize).
		{"128MiB", 128 << 20, false}, {"64mb", 64e6, false}, {"1.5GiB", 3 << 29, false}, {"10 KB", 10000, false},
		{"", 0, true}, {"MiB", 0, true}, {"12 parsecs", 0, true},
		// The union: either parser's units, any case, exponents.
		{"2TiB", 2 << 40, false}, {"3T", 3e12, false}, {"1tb", 1e12, false}, {"5 kB", 5000, false}, {"1e6", 1e6, false},
		{"2.5E3 B", 2500, false}, {" 42 ", 42, false}, {"4 MIB", 4 << 20, false}, {"1EB", 0, true}, {"1e", 0, true},
		{"1e400", 0, true}, {"9999999TiB", 0, true}, {"1..2", 0, true}, {"+5", 0, true},
	} {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d (error %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

// TestParsePositiveSize holds the expectations of --target-file-size (write-delta, delta
// optimize) and the delta.targetFileSize property: a file size of zero bytes is an error.
func TestParsePositiveSize(t *testing.T) {
	for in, want := range map[string]int64{"128MiB": 128 << 20, "64mb": 64e6, "1048576": 1 << 20, "1.5GiB": 3 << 29, "10 KB": 10000} {
		if got, err := ParsePositiveSize(in); err != nil || got != want {
			t.Errorf("ParsePositiveSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "MiB", "12 parsecs", "0", "0.5", "2PiB"} {
		if _, err := ParsePositiveSize(bad); err == nil {
			t.Errorf("ParsePositiveSize(%q): no error", bad)
		}
	}
}

func TestTableRoot(t *testing.T) {
	for in, want := range map[string]string{"file:///tmp/a%20b": "/tmp/a b", "file://localhost/x/y/": "/x/y", "/abs/t": "/abs/t"} {
		if got, err := TableRoot(in); err != nil || got != want {
			t.Errorf("TableRoot(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"s3://bucket/t", "file://host/t", ""} {
		if _, err := TableRoot(bad); err == nil {
			t.Errorf("TableRoot(%q): no error", bad)
		}
	}
}
