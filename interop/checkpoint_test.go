package interop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/streamkit/streamkit/state"
)

// printed is print --format json --show-control output, parsed.
type printed struct {
	ids      []int64         // the id column of every data row, in order
	epochOf  map[int64]int64 // id → its epoch column
	barriers []uint64        // barrier epochs, in order
	ends     []string        // end kinds
}

func parsePrinted(t *testing.T, out []byte) printed {
	t.Helper()
	p := printed{epochOf: map[int64]int64{}}
	for i, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		var m struct {
			Control *string `json:"_control"`
			Epoch   *uint64 `json:"epoch"`
			End     string  `json:"end"`
			ID      *int64  `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("print output line %d %q: %v", i+1, line, err)
		}
		switch {
		case m.Control != nil && *m.Control == "barrier":
			p.barriers = append(p.barriers, *m.Epoch)
		case m.Control != nil && *m.Control == "end":
			p.ends = append(p.ends, m.End)
		case m.Control != nil:
		case m.ID != nil && m.Epoch != nil:
			p.ids = append(p.ids, *m.ID)
			p.epochOf[*m.ID] = int64(*m.Epoch)
		default:
			t.Fatalf("print output line %d: unexpected %q", i+1, line)
		}
	}
	return p
}

func seq(from, to uint64) []uint64 {
	var s []uint64
	for n := from; n <= to; n++ {
		s = append(s, n)
	}
	return s
}

// commits returns the epochs with a commit marker in dir, verifying each marker twice: with
// the envelope rule of docs/protocol.md written out here (CRC32C over the exact bytes of
// "data", 8 lower-case hex digits), and with state.ReadJSON.
func commits(t *testing.T, dir string) []uint64 {
	t.Helper()
	eps, err := state.Epochs(dir, state.CommitsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range eps {
		path := filepath.Join(dir, state.CommitsDir, fmt.Sprintf("%020d.json", n))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			CRC  string          `json:"crc32c"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if got := fmt.Sprintf("%08x", crc32.Checksum(env.Data, crc32.MakeTable(crc32.Castagnoli))); got != env.CRC {
			t.Errorf("%s: crc32c %q, computed %q", path, env.CRC, got)
		}
		var rec state.CommitRecord
		if err := state.ReadJSON(path, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Epoch != n || rec.By != "print" {
			t.Errorf("%s: got epoch %d by %q, want epoch %d by print", path, rec.Epoch, rec.By, n)
		}
	}
	return eps
}

// TestCheckpointCommits pipes the example pyarrow source into print (directly, and through
// keyby), each stage with its own checkpoint directory: print must write commits/<n>.json for
// every epoch into its own directory and into every upstream directory named in
// streamkit.checkpoints (the Python source's and keyby's). A second run resumes after the
// committed epochs: the source reads print's markers in its directory and emits only the new
// epochs, so across both runs every row is printed exactly once.
func TestCheckpointCommits(t *testing.T) {
	p := needPeers(t)
	tests := []struct {
		name   string
		stages func(dir string) [][]string // the pipeline for --epochs n
		dirs   []string                    // checkpoint directories that get commit markers
	}{
		{
			name: "source into print",
			stages: func(dir string) [][]string {
				return [][]string{nil, p.sk("print", "--format", "json", "--show-control", "--checkpoint", filepath.Join(dir, "print"))}
			},
			dirs: []string{"print"},
		},
		{
			name: "checkpointing source, keyby, print",
			stages: func(dir string) [][]string {
				return [][]string{
					{"--checkpoint", filepath.Join(dir, "source")},
					p.sk("keyby", "id", "--checkpoint", filepath.Join(dir, "keyby")),
					p.sk("print", "--format", "json", "--show-control", "--checkpoint", filepath.Join(dir, "print")),
				}
			},
			dirs: []string{"source", "keyby", "print"},
		},
	}
	const rows = 3
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var all []int64
			for _, epochs := range []uint64{4, 6} { // first run, then a resumed run
				stages := tt.stages(dir)
				stages[0] = p.src(append([]string{"--epochs", fmt.Sprint(epochs), "--rows", fmt.Sprint(rows), "--batch-rows", "2"}, stages[0]...)...)
				out, exits := run(t, nil, stages...)
				wantCodes(t, exits, make([]int, len(stages))...)
				got := parsePrinted(t, out)
				all = append(all, got.ids...)
				if fmt.Sprint(got.ends) != "[pause]" {
					t.Errorf("end batches printed: got %v, want [pause]", got.ends)
				}
				for _, d := range tt.dirs {
					if got, want := commits(t, filepath.Join(dir, d)), seq(1, epochs); !slices.Equal(got, want) {
						t.Errorf("%s/commits after --epochs %d: got epochs %v, want %v", d, epochs, got, want)
					}
				}
			}
			// The source only resumes when it has a checkpoint; without one it starts over.
			want := []int64{}
			if slices.Contains(tt.dirs, "source") {
				for i := int64(0); i < 6*rows; i++ {
					want = append(want, i)
				}
				// The source's offsets WAL, written in Python, reads back with state.ReadOffsets.
				pos, err := state.ReadOffsets(filepath.Join(dir, "source"), 6)
				if err != nil {
					t.Fatal(err)
				}
				if string(pos) != `{"next_id":18}` {
					t.Errorf("source offsets of epoch 6: got %s, want {\"next_id\":18}", pos)
				}
			} else {
				for _, n := range []int64{4 * rows, 6 * rows} {
					for i := int64(0); i < n; i++ {
						want = append(want, i)
					}
				}
			}
			if !slices.Equal(all, want) {
				t.Errorf("ids printed over both runs: got %v, want %v", all, want)
			}
		})
	}
}

// TestInterrupt starts `source.py | streamkit print --checkpoint` as one process group, waits
// until print has printed barrier 2, and sends SIGINT to the group, as Ctrl-C does. The
// source finishes its current epoch (barrier) and sends end=pause; print finishes the epoch,
// commits it and stops. Both exit 130, and the commit markers cover exactly the epochs whose
// barrier print printed. A second run resumes from the markers: every row is printed exactly
// once over both runs, no gap, no duplicate.
//
// Known race (stage): a stage exits 130 only if its own signal watcher has run before
// the upstream's end=pause (sent in reaction to the same SIGINT) is processed; otherwise it
// exits 0. With a keyby between source and print, one of the two streamkit stages exited 0
// in about 1 run of 8 on a loaded machine; source | print has not shown it. The fix needs the
// end batch to say that the pause is an interrupt (see docs/protocol.md, "Interrupts").
func TestInterrupt(t *testing.T) {
	p := needPeers(t)
	dir := t.TempDir()
	srcDir, printDir := filepath.Join(dir, "source"), filepath.Join(dir, "print")
	const rows = 4
	src := func(epochs int, extra ...string) []string {
		return p.src(append([]string{"--epochs", fmt.Sprint(epochs), "--rows", fmt.Sprint(rows), "--batch-rows", "2",
			"--checkpoint", srcDir}, extra...)...)
	}
	printCmd := p.sk("print", "--format", "json", "--show-control", "--checkpoint", printDir)

	// The delay only paces the source so that it is mid-run when the signal arrives; the
	// test waits for print's output, never for the clock.
	pl := start(t, true, nil, src(1_000_000, "--delay", "0.01"), printCmd)
	var out bytes.Buffer
	sc := bufio.NewScanner(pl.Stdout)
	signalled := false
	for sc.Scan() {
		out.Write(sc.Bytes())
		out.WriteByte('\n')
		if !signalled && strings.Contains(sc.Text(), `"_control":"barrier","epoch":2`) {
			pl.interrupt(t, syscall.SIGINT)
			signalled = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	exits := pl.wait(t)
	if !signalled {
		t.Fatalf("print ended before barrier 2:%s", report(exits))
	}
	wantCodes(t, exits, 130, 130)
	first := parsePrinted(t, out.Bytes())
	if len(first.barriers) < 2 {
		t.Fatalf("barriers printed: got %v, want at least 1, 2", first.barriers)
	}
	last := first.barriers[len(first.barriers)-1]
	if want := seq(1, last); !slices.Equal(first.barriers, want) {
		t.Errorf("barriers printed: got %v, want %v", first.barriers, want)
	}
	if fmt.Sprint(first.ends) != "[pause]" {
		t.Errorf("end printed: got %v, want [pause]", first.ends)
	}
	for _, d := range []string{srcDir, printDir} {
		if got, want := commits(t, d), seq(1, last); !slices.Equal(got, want) {
			t.Errorf("%s: commit markers for epochs %v, want %v (the printed barriers)", d, got, want)
		}
	}
	// Every printed row belongs to a committed epoch; epochs before the last are complete.
	perEpoch := map[int64]int{}
	for _, id := range first.ids {
		perEpoch[first.epochOf[id]]++
	}
	for e, n := range perEpoch {
		switch {
		case e < 1 || uint64(e) > last:
			t.Errorf("printed %d rows of epoch %d, after the last committed epoch %d", n, e, last)
		case uint64(e) < last && n != rows:
			t.Errorf("epoch %d: printed %d rows, want %d", e, n, rows)
		}
	}

	// Resume: the source replays any epoch it had cut after print's last commit, then goes
	// on to epoch last+2; print prints those epochs only.
	total := int(last) + 2
	out2, exits := run(t, nil, src(total), printCmd)
	wantCodes(t, exits, 0, 0)
	second := parsePrinted(t, out2)
	if len(second.barriers) == 0 || second.barriers[0] != last+1 || second.barriers[len(second.barriers)-1] != uint64(total) {
		t.Errorf("resumed run printed barriers %v, want %d…%d", second.barriers, last+1, total)
	}
	all := append(append([]int64{}, first.ids...), second.ids...)
	for i, id := range all {
		if id != int64(i) {
			t.Fatalf("ids over both runs: got %v, want 0…%d each once", all, len(all)-1)
		}
	}
	if got, want := commits(t, printDir), seq(1, uint64(total)); !slices.Equal(got, want) {
		t.Errorf("print commits after the resumed run: got %v, want %v", got, want)
	}
}
