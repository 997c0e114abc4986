package interop

import (
	"strings"
	"testing"
)

// TestKeybyRoundTrip runs pyarrow → streamkit keyby → pyarrow over real pipes. The checker
// (arrowgen.py check) reads the output with read_next_batch_with_custom_metadata and fails on
// any difference from what a pass-through stage must forward: every data batch equal value for
// value (floats bit for bit, dictionaries with their dictionary), the schema with every field's
// and the schema's metadata plus streamkit.key, control batches with exactly their metadata and
// in order (watermarks normalized to UTC µs and dropped when they do not advance), and an
// end batch (end=final when the producer sent none).
func TestKeybyRoundTrip(t *testing.T) {
	p := needPeers(t)
	tests := []struct {
		name, input, key string
	}{
		// Every common type, nulls at every level, dictionaries replaced between batches,
		// foreign metadata on a data batch, all control kinds, end=pause.
		{"all types", "alltypes", "id"},
		{"dot path key", "alltypes", "st.inner.x,id"},
		// No control batch at all: end-of-stream means end=final, which keyby forwards.
		{"foreign producer", "foreign", "name"},
		{"controls end final", "controls", "id"},
		{"schema only", "empty", "id"},
		// An end batch without streamkit.end is end=final.
		{"end without kind", "end-no-kind", "id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, exits := run(t, nil,
				p.gen("produce", tt.input),
				p.sk("keyby", tt.key),
				p.gen("check", tt.input, "--key", tt.key))
			wantCodes(t, exits, 0, 0, 0)
			if !strings.HasPrefix(string(out), "ok ") {
				t.Fatalf("checker output: got %q, want \"ok <n> items\"", out)
			}
		})
	}
}
