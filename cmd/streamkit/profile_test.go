package main

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCPUProfile: STREAMKIT_CPUPROFILE makes a CPU profile (gzipped pprof); a keyby shard child
// (STREAMKIT_SHARD) writes its own file beside it; without the variable nothing is written.
func TestCPUProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stage.prof")
	for _, shard := range []string{"", "1"} {
		t.Setenv("STREAMKIT_CPUPROFILE", path)
		t.Setenv("STREAMKIT_SHARD", shard)
		stop := startCPUProfile()
		x := 0
		for i := 0; i < 1e6; i++ {
			x += i
		}
		_ = x
		stop()
		want := path
		if shard != "" {
			want += ".shard-" + shard
		}
		f, err := os.Open(want)
		if err != nil {
			t.Fatalf("shard %q: %v", shard, err)
		}
		// A pprof profile is a gzipped protobuf whose string table names the sample types.
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			t.Fatalf("shard %q: %s is not gzip: %v", shard, want, err)
		}
		b, err := io.ReadAll(zr)
		f.Close()
		if err != nil || !strings.Contains(string(b), "cpu") || !strings.Contains(string(b), "nanoseconds") {
			t.Errorf("shard %q: %s is not a CPU profile (%d bytes, %v)", shard, want, len(b), err)
		}
	}
	t.Setenv("STREAMKIT_CPUPROFILE", "")
	startCPUProfile()()
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("files %v, want stage.prof and stage.prof.shard-1 only", ents)
	}
}
