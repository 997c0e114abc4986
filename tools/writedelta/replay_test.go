package writedelta

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/sink/delta"
	"github.com/streamkit/streamkit/stage"
)

// shell runs script with sh in dir, $SK being the streamkit binary, and returns its output and
// exit code (the last command's: the scripts end with write-delta).
func shell(t *testing.T, dir, script string, env ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "SK="+peertest.Binary(t)), env...)
	return peertest.Output(t, cmd)
}

// A checkpointed write-delta skips the epochs its table holds for the flow as replays; behind a
// source without a checkpoint, which numbers its epochs from 1 on every run, that threw the
// second run's rows away (exit 0, "epoch already committed to the table: skipped"). Now such a
// stream is refused at its first barrier (exit 2, saying how to run it) and leaves no table;
// the replayable mark (streamkit.replayable) travels from a checkpointed source through
// stateless operators, operators with checkpoints and keyby --shards, so those pipelines still
// work and two runs hold every row once; a stateful operator (dedup, window) without a
// checkpoint drops it, since a restart would lose its state.
func TestUnreplayableSourceRefused(t *testing.T) {
	dir := t.TempDir()
	gen := `"$SK" --progress off generate --schema 'id bigint' --gen id=sequence --seed 5`
	wd := `"$SK" --progress off write-delta`
	for _, c := range []struct{ name, script string }{
		{"generate", gen + ` --rows 3 | ` + wd + ` lake/a --checkpoint ck/a`},
		{"dedup with a checkpoint", gen + ` --rows 3 | "$SK" --progress off dedup --key id --checkpoint ck/b-dedup | ` + wd + ` lake/b --checkpoint ck/b`},
		// A stateful stage without a checkpoint loses its state on a restart, so its output is
		// not replayable although its source's is: refused, not rows lost or duplicated.
		{"dedup without checkpoint", gen + ` --rows 3 --checkpoint ck/d-gen | "$SK" --progress off dedup --key id | ` + wd + ` lake/d --checkpoint ck/d`},
		{"window without checkpoint", gen + ` --rows 3 --checkpoint ck/w-gen | "$SK" --progress off window count --size 2 | ` + wd + ` lake/w --checkpoint ck/w`},
	} {
		for run := 0; run < 2; run++ { // the first run is refused already, not only the second
			out, code := shell(t, dir, c.script)
			if code != 2 || !strings.Contains(out, "epochs are not replayable") || !strings.Contains(out, "--checkpoint DIR") ||
				!strings.Contains(out, "run write-delta without --checkpoint") {
				t.Fatalf("%s, run %d: exit %d\n%s", c.name, run, code, out)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "lake")); err == nil {
		entries, _ := os.ReadDir(filepath.Join(dir, "lake"))
		for _, e := range entries {
			if left, _ := os.ReadDir(filepath.Join(dir, "lake", e.Name())); len(left) > 0 {
				t.Fatalf("a refused run left %s/%v", e.Name(), left)
			}
		}
	}

	for _, c := range []struct{ name, table, script string }{
		{"generate --checkpoint", "c", gen + ` --rows ROWS --checkpoint ck/c-gen | ` + wd + ` lake/c --checkpoint ck/c`},
		{"every stage, keyby --shards", "e", `export STREAMKIT_CHECKPOINT=ck/e; ` + gen + ` --rows ROWS | "$SK" --progress off keyby id --shards 2 -- dedup --key id | ` + wd + ` lake/e`},
	} {
		for _, rows := range []string{"3", "6"} {
			out, code := shell(t, dir, strings.ReplaceAll(c.script, "ROWS", rows))
			if code != 0 {
				t.Fatalf("%s, --rows %s: exit %d\n%s", c.name, rows, code, out)
			}
		}
		if got := tableIDs(t, filepath.Join(dir, "lake", c.table)); !equalIDs(got, seq(0, 6)) {
			t.Fatalf("%s: two runs (3 rows, then 6) hold ids %v, want 0..5 once", c.name, got)
		}
	}
}

// The in-process rule: a checkpointed write-delta refuses the first barrier of a stream without
// the replayable mark, whatever its epoch; a stream without barriers (a foreign producer) is
// still committed as one final epoch after the committed ones, every run.
func TestUnreplayableStreamInProcess(t *testing.T) {
	mem := newMem(t)
	base := t.TempDir()
	root, ck := filepath.Join(base, "t"), filepath.Join(base, "ck")
	log, err := run(t, delta.StreamConfig{Table: root}, ck, unreplayableStream(t, mem, idSchema).ids(0, 3).barrier(1).end(codec.Pause))
	if err == nil || stage.ExitCode(err) != 2 || !strings.Contains(err.Error(), "write-delta: epoch 1: the input's epochs are not replayable") {
		t.Fatalf("unreplayable epoch 1: %v\n%s", err, log)
	}
	if exists(root) {
		t.Fatal("a refused stream created the table")
	}
	for i := 0; i < 2; i++ {
		mustRun(t, delta.StreamConfig{Table: root}, ck, unreplayableStream(t, mem, idSchema).ids(3*i, 3*i+3).eos())
	}
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 6)) {
		t.Fatalf("two foreign runs: ids %v", got)
	}
	// Without a checkpoint nothing is skipped (a new flow id per run): accepted.
	mustRun(t, delta.StreamConfig{Table: root}, "", unreplayableStream(t, mem, idSchema).ids(6, 9).barrier(1).end(codec.Final))
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 9)) {
		t.Fatalf("without a checkpoint: ids %v", got)
	}
}
