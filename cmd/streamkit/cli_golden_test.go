package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/textdiff"
)

// update rewrites expected files instead of comparing: the golden CLI cases under
// testdata/cli/<tool>/<case>/ (-run '^TestCLI$') and the pages of docs/cli (-run '^TestCLIDocs$', make docs).
var update = flag.Bool("update", false, "rewrite expected files (golden CLI cases, docs/cli) instead of comparing")

// minCases is the least number of cmd cases each tool must have under testdata/cli/<tool>/.
const minCases = 10

// caseTimeout bounds one case; a case is meant to take well under a second.
const caseTimeout = 30 * time.Second

// TestCLI runs the golden CLI cases: every directory testdata/cli/<tool>/<case>/ holding a
// file cmd is one subtest TestCLI/<tool>/<case> (the format is described in
// testdata/cli/README.md). The cmd runs with bash -o pipefail in a fresh temporary directory
// holding copies of the case's input* files, with the streamkit under test first on PATH; its
// stdout must equal the file stdout, its exit code the file exit (0 when missing) and, when
// the file stderr exists, its stderr that file, all after normalizer.apply. -update rewrites stdout,
// exit and stderr (stderr when it exists or the exit code is not 0) from the current binary.
//
// Directories with a file args instead of cmd are the older cases of print and state-dump,
// run by interop.TestPrintGolden and statedump.TestGolden; they are skipped here.
func TestCLI(t *testing.T) {
	bin := peertest.Binary(t)
	root := filepath.Join(peertest.Root(t), "testdata", "cli")
	tools := map[string]bool{}
	for _, c := range newRoot().Commands() {
		if !c.Hidden && c.Name() != "help" && c.Name() != "completion" {
			tools[c.Name()] = true
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	byTool := map[string][]string{} // tool → case directories
	for _, tool := range entries {
		if !tool.IsDir() {
			continue
		}
		if !tools[tool.Name()] {
			t.Errorf("testdata/cli/%s: no such tool", tool.Name())
			continue
		}
		cases, err := os.ReadDir(filepath.Join(root, tool.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			dir := filepath.Join(root, tool.Name(), c.Name())
			switch {
			case !c.IsDir() || exists(filepath.Join(dir, "args")):
				// a shared file, or one of the older print/state-dump cases
			case !exists(filepath.Join(dir, "cmd")):
				t.Errorf("%s: no cmd file", dir)
			default:
				byTool[tool.Name()] = append(byTool[tool.Name()], dir)
			}
		}
	}
	for tool := range tools {
		if len(byTool[tool]) < minCases {
			t.Errorf("testdata/cli/%s: %d cases, want at least %d", tool, len(byTool[tool]), minCases)
		}
	}
	for tool, dirs := range byTool {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			for _, dir := range dirs {
				t.Run(filepath.Base(dir), func(t *testing.T) {
					t.Parallel()
					runCase(t, bin, dir)
				})
			}
		})
	}
}

// runCase runs the case in dir and compares (or, with -update, rewrites) its expected files.
func runCase(t *testing.T, bin, dir string) {
	script, err := os.ReadFile(filepath.Join(dir, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := copyInputs(dir, work); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", string(script))
	cmd.Dir = work
	cmd.Env = caseEnv(filepath.Dir(bin), work)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	from := time.Now()
	err = cmd.Run()
	to := time.Now()
	code := exitCode(t, err)
	if ctx.Err() != nil {
		t.Fatalf("%s/cmd: still running after %v\nstderr:\n%s", dir, caseTimeout, stderr.String())
	}
	n := normalizer{dirs: []string{work}, from: from, to: to}
	gotOut, gotErr := n.apply(stdout.String()), n.apply(stderr.String())

	if *update {
		write(t, filepath.Join(dir, "stdout"), gotOut)
		if code != 0 {
			write(t, filepath.Join(dir, "exit"), strconv.Itoa(code)+"\n")
		} else {
			os.Remove(filepath.Join(dir, "exit"))
		}
		if code != 0 || exists(filepath.Join(dir, "stderr")) {
			write(t, filepath.Join(dir, "stderr"), gotErr)
		}
	}
	wantCode := 0
	if b, err := os.ReadFile(filepath.Join(dir, "exit")); err == nil {
		if wantCode, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			t.Fatalf("%s/exit: %v", dir, err)
		}
	}
	if code != wantCode {
		t.Errorf("exit code %d, want %d (-update rewrites %s/exit)\nstderr:\n%s", code, wantCode, dir, gotErr)
	}
	wantOut, err := os.ReadFile(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if gotOut != string(wantOut) {
		t.Errorf("stdout differs from %s/stdout (-update rewrites it)\n%s\nstderr:\n%s", dir, textdiff.Lines(gotOut, string(wantOut)), gotErr)
	}
	if wantErr, err := os.ReadFile(filepath.Join(dir, "stderr")); err == nil && gotErr != string(wantErr) {
		t.Errorf("stderr differs from %s/stderr (-update rewrites it)\n%s", dir, textdiff.Lines(gotErr, string(wantErr)))
	}
}

// exitCode returns the exit code of a command that ended with err (from Run or Wait); an error
// other than an exit status fails t.
func exitCode(t testing.TB, err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

// caseEnv is the environment of a case: the test's, minus every STREAMKIT_* variable (a
// checkpoint root or broker address of the developer's shell must not leak into a case), with
// the directory of the binary under test first on PATH, colour off, UTC and the C locale, and
// HOME in the case's directory.
func caseEnv(binDir, work string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "STREAMKIT_"), k == "PATH", k == "HOME", k == "TZ", k == "NO_COLOR", strings.HasPrefix(k, "LC_"), k == "LANG":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+work, "NO_COLOR=1", "TZ=UTC", "LC_ALL=C")
}

// copyInputs copies the files and directories of case dir whose names start with "input"
// into work, keeping their names. The copies' modification times are 2024-01-01T00:00:00Z plus
// one second per file in lexical order of their paths: fixed, so read-files --with-metadata
// prints the same times every run; ascending, so read-files (which reads in order of
// modification time) reads them in name order; old, so none waits for --stable-after.
func copyInputs(dir, work string) error {
	matches, err := filepath.Glob(filepath.Join(dir, "input*"))
	if err != nil {
		return err
	}
	var files []string
	for _, m := range matches {
		err := filepath.WalkDir(m, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			if d.IsDir() {
				return os.MkdirAll(filepath.Join(work, rel), 0o755)
			}
			files = append(files, rel)
			return nil
		})
		if err != nil {
			return err
		}
	}
	sort.Strings(files)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, rel := range files {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			return err
		}
		dst := filepath.Join(work, rel)
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
		mt := base.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(dst, mt, mt); err != nil {
			return err
		}
	}
	return nil
}

// normalizer makes a case's output independent of where and when it ran. It is the one place
// that does so; testdata/cli/README.md lists what it replaces.
type normalizer struct {
	dirs     []string  // the case's directory: replaced by $TMP
	from, to time.Time // the wall-clock interval of the run
}

var (
	rfc3339  = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	epochMS  = regexp.MustCompile(`\b1\d{12}\b`)
	uuid     = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	duration = regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+\.\d+(ns|µs|us|ms|s)\b`)
)

// apply replaces in s: the case directory (also as its symlink-free path) by $TMP; RFC 3339
// times within a minute of the run (file modification times, commit times) by <now>; 13-digit
// epoch milliseconds within a minute of the run by <now-ms>; Go durations with a fraction
// (elapsed times such as 1.234567ms or 2m3.5s; whole ones such as 5s are options, kept) by
// <dur>; UUIDs (generated flow ids, data file names) by <uuid>.
func (n normalizer) apply(s string) string {
	for _, d := range n.dirs {
		if real, err := filepath.EvalSymlinks(d); err == nil && real != d {
			s = strings.ReplaceAll(s, real, "$TMP")
		}
		s = strings.ReplaceAll(s, d, "$TMP")
	}
	lo, hi := n.from.Add(-time.Minute), n.to.Add(time.Minute)
	s = rfc3339.ReplaceAllStringFunc(s, func(m string) string {
		tm, err := time.Parse(time.RFC3339Nano, strings.Replace(m, " ", "T", 1))
		if err != nil || tm.Before(lo) || tm.After(hi) {
			return m
		}
		return "<now>"
	})
	s = epochMS.ReplaceAllStringFunc(s, func(m string) string {
		ms, _ := strconv.ParseInt(m, 10, 64)
		if tm := time.UnixMilli(ms); tm.Before(lo) || tm.After(hi) {
			return m
		}
		return "<now-ms>"
	})
	s = uuid.ReplaceAllString(s, "<uuid>")
	return duration.ReplaceAllString(s, "<dur>")
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
