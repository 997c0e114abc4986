package interop

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

// TestForeignProducer: a plain pyarrow stream without any control batch is complete input:
// print prints every row and takes the end-of-stream marker as end=final.
func TestForeignProducer(t *testing.T) {
	p := needPeers(t)
	out, exits := run(t, nil, p.gen("produce", "foreign"), p.sk("print", "--format", "json", "--show-control"))
	wantCodes(t, exits, 0, 0)
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if got, want := len(lines), 5; got != want {
		t.Fatalf("got %d lines, want %d (4 rows, end):\n%s", got, want, out)
	}
	if got, want := lines[4], `{"_control":"end","end":"final"}`; got != want {
		t.Errorf("last line: got %s, want %s", got, want)
	}
}

// TestTruncatedStream cuts pyarrow streams with `head -c` — at every message boundary before
// the end-of-stream marker, inside every message, inside the marker — as when the upstream
// process dies. print must fail with exit 1 and say that the input ended without an
// end-of-stream marker. Three exceptions: the complete stream, a stream cut after its end
// batch (the end batch closes the stream; the reader does not read past it), both exit 0, and
// an empty pipe, exit 1 without a message (stage.ErrEmptyPipe).
func TestTruncatedStream(t *testing.T) {
	p := needPeers(t)
	const truncated = "input ended without an end-of-stream marker"
	type tc struct {
		name     string
		cut      int
		wantCode int
		wantErr  string
	}
	for _, input := range []string{"foreign", "controls"} {
		t.Run(input, func(t *testing.T) {
			stream, exits := run(t, nil, p.gen("produce", input))
			wantCodes(t, exits, 0)
			file := filepath.Join(t.TempDir(), input+".arrows")
			if err := os.WriteFile(file, stream, 0o644); err != nil {
				t.Fatal(err)
			}
			b, exits := run(t, nil, p.gen("boundaries", input))
			wantCodes(t, exits, 0)
			var bounds []int // after each message; the last one is after the marker
			for _, f := range strings.Fields(string(b)) {
				n, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				bounds = append(bounds, n)
			}
			size := len(stream)
			if len(bounds) < 3 || bounds[len(bounds)-1] != size || bounds[len(bounds)-2] != size-8 {
				t.Fatalf("boundaries %v of a %d-byte stream", bounds, size)
			}
			hasEnd := input == "controls" // its last message is an end batch
			afterLast := tc{"inside the end-of-stream marker", size - 4, 1, truncated}
			if hasEnd {
				afterLast = tc{"after the end batch, inside the marker", size - 4, 0, ""}
			}
			tests := []tc{
				// A pipe that closes before its first byte is what an upstream failure leaves:
				// exit 1, and no message of print's own beside the upstream's (#23).
				{"empty input", 0, 1, ""},
				{"inside the schema", 3, 1, truncated},
				afterLast,
				{"complete", size, 0, ""},
			}
			for i, n := range bounds[:len(bounds)-1] {
				if i == len(bounds)-2 && hasEnd {
					tests = append(tests, tc{"after the end batch", n, 0, ""})
				} else {
					tests = append(tests, tc{"after message " + strconv.Itoa(i+1), n, 1, truncated})
				}
				if i < len(bounds)-2 && n+9 < bounds[i+1] {
					tests = append(tests, tc{"inside message " + strconv.Itoa(i+2), n + 9, 1, truncated})
				}
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					_, exits := run(t, nil,
						[]string{"head", "-c", strconv.Itoa(tt.cut), file},
						p.sk("print", "--format", "json"))
					wantCodes(t, exits, 0, tt.wantCode)
					stderr := exits[1].stderr
					if tt.wantErr == "" {
						if stderr != "" {
							t.Errorf("stderr: got %q, want nothing", stderr)
						}
						return
					}
					if !strings.HasPrefix(stderr, "streamkit: print: stdin: ") || !strings.Contains(stderr, tt.wantErr) {
						t.Errorf("stderr: got %q, want \"streamkit: print: stdin: …%s…\"", stderr, tt.wantErr)
					}
				})
			}
		})
	}
}

// TestUsageErrors: a bad command line exits 2 with a message that names the problem, before
// reading any input.
func TestUsageErrors(t *testing.T) {
	bin := peertest.Binary(t)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown command", []string{"nope"}, `unknown command "nope"`},
		{"unknown format", []string{"print", "--format", "xml"}, `--format must be table, json or csv, got "xml"`},
		{"unknown flag", []string{"print", "--colour"}, "unknown flag: --colour"},
		{"negative limit", []string{"print", "--limit", "-1"}, "--limit must be ≥ 0"},
		{"bad flag value", []string{"print", "--limit", "x"}, `invalid argument "x"`},
		{"missing key", []string{"keyby"}, "keyby takes 1 argument(s), got 0"},
		{"bad log level", []string{"--log-level", "loud", "print"}, "--log-level must be"},
		{"unknown root flag", []string{"--verbose"}, "unknown flag: --verbose; see 'streamkit --help'\n"},
		{"empty key part", []string{"dedup", "--key", "a,,b"}, `dedup: --key "a,,b": column 2 is empty`},
		{"empty key", []string{"dedup", "--key", ""}, "dedup: --key: no column given"},
		{"trailing comma key", []string{"keyby", "id,"}, `keyby: KEY "id,": column 2 is empty`},
		{"empty window key", []string{"window", "tumbling", "--size", "1h", "--time", "t", "--key", " "}, "window: --key: no column given"},
		{"negative ttl", []string{"dedup", "--key", "id", "--event-time", "t", "--ttl", "-5s"}, "dedup: --ttl must be ≥ 0, got -5s"},
		{"negative watermark delay", []string{"dedup", "--watermark-delay", "-1s"}, "dedup: --watermark-delay must be ≥ 0, got -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, exits := run(t, nil, append([]string{bin}, tt.args...))
			wantCodes(t, exits, 2)
			if !strings.Contains(exits[0].stderr, tt.wantErr) {
				t.Errorf("stderr: got %q, want it to contain %q", exits[0].stderr, tt.wantErr)
			}
			if n := strings.Count(exits[0].stderr, "--help'"); n > 1 {
				t.Errorf("stderr: %q points to --help %d times", exits[0].stderr, n)
			}
		})
	}
}

// TestUpstreamFailure: when a stage in the middle fails (here keyby, on a stream cut after
// message n), its output must end without the end-of-stream marker, so the next stage fails
// too instead of taking the stream for a complete (end=final) one.
func TestUpstreamFailure(t *testing.T) {
	p := needPeers(t)
	stream, exits := run(t, nil, p.gen("produce", "controls"))
	wantCodes(t, exits, 0)
	file := filepath.Join(t.TempDir(), "controls.arrows")
	if err := os.WriteFile(file, stream, 0o644); err != nil {
		t.Fatal(err)
	}
	b, exits := run(t, nil, p.gen("boundaries", "controls"))
	wantCodes(t, exits, 0)
	bounds := strings.Fields(string(b))
	tests := []struct {
		name     string
		cut      string
		wantRows int
		wantErr  string
	}{
		// keyby fails before writing anything: print sees an empty pipe and exits 1 without
		// a message of its own, leaving keyby's as the only one (#23).
		{"cut after the schema", bounds[0], 0, ""},
		// keyby has forwarded rows, a watermark and barrier 1, then fails.
		{"cut after barrier 1", bounds[3], 2, "input ended without an end-of-stream marker"},
		{"cut inside the second data batch", strconv.Itoa(mustAtoi(t, bounds[4]) - 20), 2, "input ended without an end-of-stream marker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, exits := run(t, nil,
				[]string{"head", "-c", tt.cut, file},
				p.sk("keyby", "id"),
				p.sk("print", "--format", "json", "--show-control"))
			wantCodes(t, exits, 0, 1, 1)
			if !strings.Contains(exits[1].stderr, "input ended without an end-of-stream marker") {
				t.Errorf("keyby stderr: got %q, want a truncated-input error", exits[1].stderr)
			}
			if tt.wantErr == "" && exits[2].stderr != "" {
				t.Errorf("print stderr: got %q, want nothing", exits[2].stderr)
			}
			if !strings.Contains(exits[2].stderr, tt.wantErr) {
				t.Errorf("print stderr: got %q, want it to contain %q", exits[2].stderr, tt.wantErr)
			}
			if got := strings.Count(string(out), `"id":`); got != tt.wantRows {
				t.Errorf("rows printed: got %d, want %d:\n%s", got, tt.wantRows, out)
			}
			if strings.Contains(string(out), `"_control":"end"`) {
				t.Errorf("print saw an end batch:\n%s", out)
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBadControlBatch: a zero-row batch that claims to be a control batch (streamkit.control)
// but carries a value docs/protocol.md §2 does not allow stops the stage with exit 1 and a
// message naming the key and the value.
func TestBadControlBatch(t *testing.T) {
	p := needPeers(t)
	tests := []struct {
		input, wantErr string
	}{
		{"bad-epoch-zero", `streamkit.epoch="0" is not an epoch number ≥ 1`},
		{"bad-epoch-missing", `streamkit.epoch="" is not an epoch number ≥ 1`},
		{"bad-epoch-negative", `streamkit.epoch="-1" is not an epoch number ≥ 1`},
		{"bad-watermark", `streamkit.watermark="yesterday" is not an RFC 3339 instant`},
		{"bad-end", `streamkit.end="later" is neither final nor pause`},
		{"bad-kind", `unknown streamkit.control="flush"`},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			out, exits := run(t, nil, p.gen("produce", tt.input), p.sk("keyby", "id"), p.sk("print", "--format", "json", "--show-control"))
			wantCodes(t, exits, 0, 1, 1)
			if !strings.Contains(exits[1].stderr, tt.wantErr) {
				t.Errorf("keyby stderr: got %q, want it to contain %q", exits[1].stderr, tt.wantErr)
			}
			// The rows before the bad batch were forwarded, then the stream was cut.
			if !strings.Contains(exits[2].stderr, "input ended without an end-of-stream marker") {
				t.Errorf("print stderr: got %q, want a truncated-input error", exits[2].stderr)
			}
			if got := strings.Count(string(out), `"id":`); got != 2 {
				t.Errorf("rows printed: got %d, want 2", got)
			}
		})
	}
}

// TestDownstreamCloses: `… | streamkit print | head -n 1` — when the reader of print's stdout
// goes away, print stops quietly with exit 0 (DESIGN.md §3), and so does the source upstream
// of it.
func TestDownstreamCloses(t *testing.T) {
	p := needPeers(t)
	for _, format := range []string{"table", "json", "csv"} {
		t.Run(format, func(t *testing.T) {
			out, exits := run(t, nil,
				p.src("--epochs", "200", "--rows", "500", "--batch-rows", "500"),
				p.sk("print", "--format", format),
				[]string{"head", "-n", "1"})
			wantCodes(t, exits, 0, 0, 0)
			if exits[1].stderr != "" {
				t.Errorf("print stderr: got %q, want nothing", exits[1].stderr)
			}
			if n := strings.Count(string(out), "\n"); n != 1 {
				t.Errorf("got %d lines, want 1", n)
			}
		})
	}
}
