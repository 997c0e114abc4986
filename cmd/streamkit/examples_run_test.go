package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/spf13/cobra"

	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/s3test"
)

// An example is one runnable example: a paragraph of a subcommand's Example text (comment
// lines and commands up to a blank line) or a ```sh block of README.md or docs/*.md, run as
// one bash script.
type example struct {
	name   string // subtest name: help/<command path>/<n> or <file>:<line>
	where  string // for messages: "streamkit dedup --help, example 2" or "README.md line 12"
	script string
	// A transcript ("$ command" in a ```text block followed by the error it prints) must exit
	// wantExit with each line of wantStderr in its stderr ("…" matches anything, /data/ is the
	// work directory).
	wantExit   int
	wantStderr []string
}

// exampleOverride changes how one example runs, for an example that cannot run as written in
// a test (it waits minutes, or needs a listener the test broker does not have). Keep these
// few: an example that is wrong as written is fixed, not overridden.
type exampleOverride struct {
	match   string      // a substring of exactly one example's script
	replace [][2]string // textual replacements applied to the script, in order
	fresh   []string    // fixture paths removed before the run (the example makes them anew)
	reason  string
}

var exampleOverrides = []exampleOverride{
	{
		match: "--sasl-mechanism SCRAM-SHA-512 --sasl-user app --sasl-password-file /run/secrets/kafka",
		replace: [][2]string{
			{"-b kafka:9094 ", "-b $SCRAM_BROKER --until now "},
			{"--tls-ca ca.pem ", ""},
			{"--sasl-user app --sasl-password-file /run/secrets/kafka", "--sasl-user $SCRAM_USER --sasl-password-file $SCRAM_PASSWORD_FILE"},
		},
		reason: "the test broker has SCRAM on a plaintext listener and TLS (mTLS) on another, no SASL_SSL listener: the SCRAM half runs as written, bounded",
	},
	{
		match:  "write-delta ./lake/orders --partition-by value.region",
		fresh:  []string{"lake/orders"},
		reason: "creates ./lake/orders from Kafka records, where the fixture has the orders table the other examples read",
	},
	{
		match:  "--consumer-group orders-ingest",
		fresh:  []string{"s3/lake/orders"},
		reason: "creates s3://lake/orders from Kafka records, where the fixture has the orders table read-delta's example reads",
	},
	{
		match:   "make demo",
		replace: [][2]string{{"make demo", "DEMO_DIR=$PWD/demo STREAMKIT_BIN=$STREAMKIT_BIN $REPO/scripts/demo.sh"}},
		reason:  "make demo builds into the checkout; the test runs the same script with the binary under test, in its temporary directory",
	},
}

// examplesNotRun are the shell blocks that run no streamkit command a test could execute, each
// with the reason (a substring of exactly one block).
var examplesNotRun = map[string]string{
	"go install github.com/streamkit/streamkit/cmd/streamkit@latest": "installs from the network; make build is the go build ./cmd/streamkit that built the binary under test",
	"make test\n":                 "the suite this test is part of",
	"BENCH_SCALE=0.01 make bench": "the benchmark suite (an hour at full scale), run by make bench itself",
}

// examplesKnownFailing are examples that fail on this branch as written, and are fixed by work
// merged later (a substring of exactly one example → the reason). They still run: an entry
// whose example passes, or that matches none, fails the test, so the list is emptied as the
// fixes land.
var examplesKnownFailing = map[string]string{}

// Timeouts: a bounded example must end within boundedTimeout; an unbounded one (a live Kafka
// read, --follow, generate --rate without --rows) is interrupted with SIGINT once it has
// written output (checkOutput) or after liveWait, and must then exit 130 within stopTimeout.
const (
	boundedTimeout = 2 * time.Minute
	liveWait       = 10 * time.Second
	stopTimeout    = 45 * time.Second
	// examplesParallel is how many examples run at once.
	examplesParallel = 4
)

// TestExamplesRun executes every example of every subcommand's --help and every shell block
// of README.md and docs/*.md (docs/cli/*.md are generated from the help examples, which run
// already) with data the test provides: each in a copy of the fixture directory that
// testdata/examples/fixture.sh builds with the streamkit under test (files, Delta tables,
// checkpoints the examples name), with the test's services in place of the addresses the
// examples name: the Kafka broker for 127.0.0.1:9092 and kafka:9092 (each topic an example
// names is a fresh topic, filled from the fixture's topics/<topic>.json when the example
// reads it), the schema registry for http://127.0.0.1:8081, the S3 test server for
// http://127.0.0.1:9000 (each s3://<bucket> a fresh bucket holding the fixture's
// s3/<bucket>/). Each example must exit 0 and write something: on stdout, into the file its
// last command redirects stdout to, into the Delta table or topic its last command writes.
// Unbounded examples are interrupted (SIGINT to the whole pipeline, as Ctrl-C does) once they
// have written output and must exit 130 with output. The fixture needs the Kafka broker, so
// without it the test skips (fails under STREAMKIT_REQUIRE_PEERS=1, as in make test); an
// example that needs the registry, S3 or the Python venv skips or fails the same way.
func TestExamplesRun(t *testing.T) {
	exs := collectExamples(t)
	used := map[string]int{}
	var run []example
	for _, ex := range exs {
		skipped := false
		for k := range examplesNotRun {
			if strings.Contains(ex.script+"\n", k) {
				used["notrun:"+k]++
				skipped = true
			}
		}
		if !skipped {
			run = append(run, ex)
		}
	}
	for k := range examplesNotRun {
		if used["notrun:"+k] != 1 {
			t.Errorf("examplesNotRun entry %q matches %d shell blocks, want 1", k, used["notrun:"+k])
		}
	}
	for _, ex := range run {
		for _, o := range exampleOverrides {
			if strings.Contains(ex.script, o.match) {
				used["override:"+o.match]++
			}
		}
		for k := range examplesKnownFailing {
			if strings.Contains(ex.script, k) {
				used["known:"+k]++
			}
		}
	}
	for _, o := range exampleOverrides {
		if used["override:"+o.match] != 1 {
			t.Errorf("exampleOverrides entry %q matches %d examples, want 1", o.match, used["override:"+o.match])
		}
	}
	for k := range examplesKnownFailing {
		if used["known:"+k] != 1 {
			t.Errorf("examplesKnownFailing entry %q matches %d examples, want 1 (remove it once its fix is merged)", k, used["known:"+k])
		}
	}

	fixture := buildFixture(t)
	// The examples run examplesParallel at a time, whatever go test's -parallel (they mostly
	// wait: on pipes, a broker, an interrupt): t.Run from several goroutines.
	sem := make(chan struct{}, examplesParallel)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, ex := range run {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			t.Run(ex.name, func(t *testing.T) { runOrExpectFailure(t, fixture, ex) })
		}()
	}
}

// runOrExpectFailure runs ex; an example of examplesKnownFailing must fail instead.
func runOrExpectFailure(t *testing.T, fixture string, ex example) {
	known := ""
	for k, why := range examplesKnownFailing {
		if strings.Contains(ex.script, k) {
			known = why
		}
	}
	if known == "" {
		runExample(t, fixture, ex)
		return
	}
	// A known failure: run it in a subtest of its own, whose failure is expected.
	rec := &recorder{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != errRecorderFatal {
				panic(r)
			}
		}()
		runExample(rec, fixture, ex)
	}()
	if !rec.failed {
		t.Errorf("%s: passes now; remove it from examplesKnownFailing (%s)", ex.where, known)
	} else {
		t.Logf("%s: fails as expected (%s): %s", ex.where, known, strings.Join(rec.msgs, "; "))
	}
}

// recorder is a testing.TB that records failures instead of failing, for known failures.
type recorder struct {
	testing.TB
	failed bool
	msgs   []string
}

var errRecorderFatal = errors.New("recorder: fatal")

func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(errRecorderFatal)
}
func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }
func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

// collectExamples returns the examples of every subcommand's Example text and of the shell
// blocks of README.md and docs/*.md, in that order.
func collectExamples(t *testing.T) []example {
	var exs []example
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			for i, p := range exampleParagraphs(sub.Example) {
				path := strings.TrimPrefix(sub.CommandPath(), "streamkit ")
				exs = append(exs, example{
					name:   fmt.Sprintf("help/%s/%d", strings.ReplaceAll(path, " ", "_"), i+1),
					where:  fmt.Sprintf("%s --help, example %d", sub.CommandPath(), i+1),
					script: p,
				})
			}
			walk(sub)
		}
	}
	walk(newRoot())
	root := peertest.Root(t)
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, file := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for _, blk := range shellBlocks(string(b)) {
			exs = append(exs, example{
				name:   fmt.Sprintf("%s:%d", rel, blk.line),
				where:  fmt.Sprintf("%s line %d", rel, blk.line),
				script: blk.text,
			})
		}
		exs = append(exs, transcripts(rel, string(b))...)
	}
	return exs
}

// exampleParagraphs splits an Example text into its examples: runs of lines separated by blank
// lines, each with its comment; a paragraph without a command is dropped.
func exampleParagraphs(text string) []string {
	var out []string
	for _, p := range regexp.MustCompile(`\n\s*\n`).Split(text, -1) {
		var lines []string
		cmd := false
		for _, l := range strings.Split(p, "\n") {
			l = strings.TrimSpace(l)
			if l == "" {
				continue
			}
			cmd = cmd || !strings.HasPrefix(l, "#")
			lines = append(lines, l)
		}
		if cmd {
			out = append(out, strings.Join(lines, "\n"))
		}
	}
	return out
}

type shellBlock struct {
	line int // of the opening fence, from 1
	text string
}

// shellBlocks returns the ```sh blocks of a Markdown text.
func shellBlocks(md string) []shellBlock {
	var out []shellBlock
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		start := i
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		out = append(out, shellBlock{line: start + 1, text: strings.Join(body, "\n") + "\n"})
	}
	return out
}

// transcripts returns the transcripts of the ```text blocks of a Markdown text: a line
// "$ COMMAND" followed by the lines it prints. Lines "streamkit: …" are the error it ends with:
// exit 1 (a runtime or data error, README's exit codes) with those lines on stderr.
func transcripts(file, md string) []example {
	var out []example
	lines := strings.Split(md, "\n")
	in := false
	var cur *example
	for i, l := range lines {
		switch {
		case strings.TrimSpace(l) == "```text":
			in = true
		case in && strings.TrimSpace(l) == "```":
			in, cur = false, nil
		case in && strings.HasPrefix(l, "$ "):
			out = append(out, example{
				name:   fmt.Sprintf("%s:%d", file, i+1),
				where:  fmt.Sprintf("%s line %d", file, i+1),
				script: strings.TrimPrefix(l, "$ ") + "\n",
			})
			cur = &out[len(out)-1]
		case in && cur != nil && strings.HasPrefix(l, "streamkit: "):
			cur.wantExit = 1
			cur.wantStderr = append(cur.wantStderr, l)
		}
	}
	return out
}

// matchesLine reports whether text holds a line matching pattern, in which "…" matches any
// run of characters.
func matchesLine(text, pattern string) bool {
	parts := strings.Split(pattern, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?m)^` + strings.Join(parts, ".*") + `$`).MatchString(text)
}

// buildFixture builds the fixture directory with testdata/examples/fixture.sh, which needs the
// Kafka broker (it reads a topic into ./ckpt/orders); the directory and the topic live until t
// ends.
func buildFixture(t *testing.T) string {
	kc := kafkatest.NewReal(t)
	dir := t.TempDir()
	topic := kc.Topic(t, "examples-fixture-orders", 2, nil)
	cmd := exec.Command("bash", filepath.Join(peertest.Root(t), "testdata", "examples", "fixture.sh"))
	cmd.Dir = dir
	cmd.Env = append(caseEnv(filepath.Dir(peertest.Binary(t)), dir),
		"REPO="+peertest.Root(t), "BROKER="+kc.Brokers[0], "ORDERS_TOPIC="+topic)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testdata/examples/fixture.sh: %v\n%s", err, out)
	}
	return dir
}

var (
	topicFlag = regexp.MustCompile(`(^|\s)(-t|--topic)(\s+|=)([A-Za-z0-9._-]+)`)
	idFlag    = regexp.MustCompile(`(--transactional-id|--consumer-group)(\s+|=)([A-Za-z0-9._-]+)`)
	brokers   = regexp.MustCompile(`\b(127\.0\.0\.1|localhost|kafka):9092\b`)
	registry  = regexp.MustCompile(`https?://(127\.0\.0\.1|localhost):80[0-9][0-9](/apis/ccompat/v[0-9]+)?`)
	s3Local   = regexp.MustCompile(`http://(127\.0\.0\.1|localhost):9000\b`)
	bucketURL = regexp.MustCompile(`s3a?://([a-z0-9][a-z0-9.-]*)`)
	// checkpointRoot finds STREAMKIT_CHECKPOINT=DIR (exported or for one command).
	checkpointRoot = regexp.MustCompile(`STREAMKIT_CHECKPOINT=([^\s;|&]+)`)
)

// runExample runs one example in a copy of fixture and checks what it did.
func runExample(t testing.TB, fixture string, ex example) {
	dir := filepath.Join(t.TempDir(), "work")
	if out, err := exec.Command("cp", "-a", fixture, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the fixture: %v %s", err, out)
	}
	script := ex.script
	var fresh []string
	for _, o := range exampleOverrides {
		if strings.Contains(script, o.match) {
			for _, r := range o.replace {
				script = strings.ReplaceAll(script, r[0], r[1])
			}
			fresh = append(fresh, o.fresh...)
		}
	}
	// An example that sets its own checkpoint root starts with it empty, as a first run does;
	// the fixture's checkpoints are for the examples that read them (state-dump).
	for _, m := range checkpointRoot.FindAllStringSubmatch(script, -1) {
		if !strings.Contains(m[1], "://") {
			fresh = append(fresh, m[1])
		}
	}
	for _, p := range fresh {
		if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	// Absolute paths under /data (the examples' data volume) are under the work directory.
	script = strings.ReplaceAll(script, "file:///data/", "file://"+dir+"/data/")
	bin := peertest.Binary(t)
	env := append(caseEnv(filepath.Dir(bin), dir), "REPO="+peertest.Root(t), "STREAMKIT_BIN="+bin)
	var kc *kafkatest.Cluster
	topics := map[string]string{} // example's name → fresh topic

	// Kafka: the test broker; fresh topics, filled from topics/<name>.json when read.
	if brokers.MatchString(script) || strings.Contains(script, "$SCRAM_BROKER") {
		kc = kafkatest.NewReal(t)
		b := kafkatest.NewReal(t).Real
		script = brokers.ReplaceAllString(script, kc.Brokers[0])
		env = append(env, "SCRAM_BROKER="+b.SASL, "SCRAM_USER="+b.SASLUser, "SCRAM_PASSWORD_FILE="+b.SASLPasswordFile)
		for _, m := range topicFlag.FindAllStringSubmatch(script, -1) {
			if topics[m[4]] == "" {
				topics[m[4]] = kc.Topic(t, m[4], 2, nil)
			}
		}
		script = topicFlag.ReplaceAllStringFunc(script, func(s string) string {
			m := topicFlag.FindStringSubmatch(s)
			return m[1] + m[2] + m[3] + topics[m[4]]
		})
		suffix := filepath.Base(topics[firstKey(topics)])
		script = idFlag.ReplaceAllString(script, "${1}${2}${3}-"+suffix)
	}
	// The schema registry.
	var registryURL string
	if registry.MatchString(script) {
		registryURL = peertest.SchemaRegistry(t)
		script = registry.ReplaceAllString(script, registryURL)
	}
	// S3: fresh buckets holding the fixture's s3/<bucket>/.
	if bucketURL.MatchString(script) {
		srv := s3test.Server(t)
		env = append(env, s3test.Env(t)...)
		script = s3Local.ReplaceAllString(script, srv.Endpoint)
		buckets := map[string]string{}
		for _, m := range bucketURL.FindAllStringSubmatch(script, -1) {
			if buckets[m[1]] == "" {
				buckets[m[1]] = s3test.Bucket(t)
				uploadDir(t, srv, filepath.Join(dir, "s3", m[1]), buckets[m[1]])
			}
		}
		script = bucketURL.ReplaceAllStringFunc(script, func(s string) string {
			m := bucketURL.FindStringSubmatch(s)
			return strings.TrimSuffix(s, m[1]) + buckets[m[1]]
		})
	}
	// A Python example gets the venv's python (pyarrow) first on PATH.
	if strings.Contains(script, "python") || strings.Contains(script, ".py") {
		py := peertest.Python(t)
		for i, kv := range env {
			if p, ok := strings.CutPrefix(kv, "PATH="); ok {
				env[i] = "PATH=" + filepath.Dir(py) + string(os.PathListSeparator) + p
			}
		}
	}
	if kc != nil {
		for name, topic := range topics {
			seedTopic(t, bin, dir, env, kc.Brokers[0], registryURL, script, topic, filepath.Join(dir, "topics", name+".json"))
		}
	}

	target := lastTarget(dir, script)
	before := deltaVersions(target.table)
	live := unbounded(script)
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	fail := func(format string, args ...any) {
		t.Fatalf("%s: %s\nscript (as run):\n%s\nstderr:\n%s", ex.where, fmt.Sprintf(format, args...), script, tail(stderr.String(), 60))
	}
	var err error
	want := ex.wantExit
	if live {
		want = 130
		deadline := time.Now().Add(liveWait)
		interrupted := false
		for !interrupted {
			select {
			case err = <-done:
				fail("an unbounded example ended by itself (%v) before it was interrupted", err)
			case <-time.After(500 * time.Millisecond):
			}
			if checkOutput(t, kc, target, before, stdout.Bytes()) == "" || time.Now().After(deadline) {
				time.Sleep(time.Second) // a little more output
				syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
				interrupted = true
			}
		}
	}
	limit, what := boundedTimeout, "still running after %v"
	if live {
		limit, what = stopTimeout, "still running %v after SIGINT"
	}
	select {
	case err = <-done:
	case <-time.After(limit):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		fail(what, limit)
	}
	code := exitCode(t, err)
	if code != want {
		fail("exit code %d, want %d", code, want)
	}
	for _, l := range ex.wantStderr {
		if l = strings.ReplaceAll(l, " /data/", " "+dir+"/"); !matchesLine(stderr.String(), l) {
			fail("no line on stderr matches %q", l)
		}
	}
	if want != 0 {
		return
	}
	if msg := checkOutput(t, kc, target, before, stdout.Bytes()); msg != "" {
		fail("%s", msg)
	}
	t.Logf("%s: exit %d, stdout:\n%s", ex.where, code, tail(stdout.String(), 8))
}

func firstKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// unbounded reports whether a script's last command runs until it is interrupted: a
// read-kafka without --until (and not in a consumer group with --until), read-files or
// read-delta with --follow, generate --rate without --rows.
func unbounded(script string) bool {
	lines := exampleLines(script)
	if len(lines) == 0 {
		return false
	}
	last := lines[len(lines)-1]
	segs, err := splitPipeline(last)
	if err != nil {
		return false
	}
	for _, words := range segs {
		for len(words) > 0 && isAssignment(words[0]) {
			words = words[1:]
		}
		if len(words) < 2 || words[0] != "streamkit" {
			continue
		}
		has := func(flag string) bool {
			for _, w := range words {
				if w == flag || strings.HasPrefix(w, flag+"=") {
					return true
				}
			}
			return false
		}
		switch words[1] {
		case "run": // as its pipeline (the last word)
			if unbounded(words[len(words)-1]) {
				return true
			}
		case "read-kafka":
			if !has("--until") {
				return true
			}
		case "read-files", "read-delta":
			if has("--follow") {
				return true
			}
		case "generate":
			if has("--rate") && !has("--rows") {
				return true
			}
		}
	}
	return false
}

// An outputTarget is where the last command of a script writes: the file its stdout is
// redirected to, a local Delta table (write-delta, backfill), a topic (write-kafka), or stdout
// (all empty). A table on a bucket has no target: its exit code says enough.
type outputTarget struct {
	file, table, topic string
	bucket             bool
}

// lastTarget returns the output target of the last command of script, run in dir.
func lastTarget(dir, script string) outputTarget {
	lines := exampleLines(script)
	last := lines[len(lines)-1]
	if m := regexp.MustCompile(`(^|[^0-9&])>\s*([^\s|&>]+)\s*$`).FindStringSubmatch(last); m != nil {
		return outputTarget{file: filepath.Join(dir, m[2])}
	}
	segs, err := splitPipeline(last)
	if err != nil {
		return outputTarget{}
	}
	words := segs[len(segs)-1]
	for len(words) > 0 && isAssignment(words[0]) {
		words = words[1:]
	}
	table := ""
	switch {
	case len(words) >= 3 && words[0] == "streamkit" && words[1] == "write-delta":
		table = firstPositional(words[2:])
	case len(words) >= 3 && words[0] == "streamkit" && words[1] == "backfill" && !slices.Contains(words, "--plan"):
		table = flagValue(words, "--to")
	case len(words) >= 3 && words[0] == "streamkit" && words[1] == "run":
		return lastTarget(dir, words[len(words)-1]) // its members write where its pipeline's last command does
	case len(words) >= 2 && words[0] == "streamkit" && words[1] == "write-kafka":
		return outputTarget{topic: flagValue(words, "-t", "--topic")}
	}
	if table == "" {
		return outputTarget{}
	}
	if strings.Contains(table, "://") && !strings.HasPrefix(table, "file://") {
		return outputTarget{bucket: true}
	}
	table = strings.TrimPrefix(table, "file://")
	if !filepath.IsAbs(table) {
		table = filepath.Join(dir, table)
	}
	return outputTarget{table: table}
}

// checkOutput returns what the target lacks ("" when nothing): the file must be non-empty; the
// table must have more commits than before (the number before the run); the topic must hold
// records; stdout must be non-empty.
func checkOutput(t testing.TB, kc *kafkatest.Cluster, out outputTarget, before int, stdout []byte) string {
	switch {
	case out.bucket:
		return ""
	case out.file != "":
		if st, err := os.Stat(out.file); err != nil || st.Size() == 0 {
			return fmt.Sprintf("the last command wrote nothing into %s", out.file)
		}
		return ""
	case out.table != "":
		if after := deltaVersions(out.table); after <= before {
			return fmt.Sprintf("no new commit in table %s (%d commits, %d before the run)", out.table, after, before)
		}
		return ""
	case out.topic != "" && kc != nil:
		var n int64
		for _, end := range kc.Ends(t, out.topic) {
			n += end
		}
		if n == 0 {
			return fmt.Sprintf("write-kafka wrote nothing into topic %s", out.topic)
		}
		return ""
	}
	if len(bytes.TrimSpace(stdout)) == 0 {
		return "no output on stdout"
	}
	return ""
}

// deltaVersions returns the number of commit files in the _delta_log of table (0 when none).
func deltaVersions(table string) int {
	logs, _ := filepath.Glob(filepath.Join(table, "_delta_log", "[0-9]*.json"))
	return len(logs)
}

// flagValue returns the value of the first of names in words (--flag VALUE or --flag=VALUE).
func flagValue(words []string, names ...string) string {
	for i, w := range words {
		for _, n := range names {
			if v, ok := strings.CutPrefix(w, n+"="); ok {
				return v
			}
			if w == n && i+1 < len(words) {
				return words[i+1]
			}
		}
	}
	return ""
}

// firstPositional returns the first argument that is not a flag or a flag's value (flags of
// the form --flag VALUE are assumed, except the boolean ones given).
func firstPositional(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return a
		}
		if !strings.Contains(a, "=") && !boolFlag(a) {
			i++
		}
	}
	return ""
}

func boolFlag(f string) bool {
	switch f {
	case "--merge-schema", "--unsafe-single-writer", "--dry-run", "--force", "--follow", "--plan":
		return true
	}
	return false
}

// seedTopic produces file (JSON lines) into topic as JSON values, or as Avro in the Confluent
// wire format when the script reads the topic with --value-format avro, with streamkit
// itself. A topic the script only writes is not filled; neither is one without a file.
func seedTopic(t testing.TB, bin, dir string, env []string, broker, registryURL, script, topic, file string) {
	read := false
	avro := false
	for _, line := range exampleLines(script) {
		segs, _ := splitPipeline(line)
		for _, words := range segs {
			if len(words) < 2 || words[0] != "streamkit" || words[1] != "read-kafka" {
				continue
			}
			for i, w := range words {
				if (w == "-t" || w == "--topic") && i+1 < len(words) && words[i+1] == topic {
					read = true
					avro = avro || strings.Contains(strings.Join(words, " "), "--value-format avro")
				}
			}
		}
	}
	if !read {
		return
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the example reads topic %s: the fixture has no %s", filepath.Base(file), file)
	}
	sh := `"$SK" --progress off read-files --format json "$1" | "$SK" --progress off write-kafka -b "$2" -t "$3" --value-format `
	if avro {
		sh += `avro --schema-registry "$4"`
	} else {
		sh += "json"
	}
	cmd := exec.Command("bash", "-o", "pipefail", "-c", sh, "seed", file, broker, topic, registryURL)
	cmd.Dir = dir
	cmd.Env = append(env, "SK="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fill topic %s from %s: %v\n%s", topic, file, err, out)
	}
}

// uploadDir puts every file under local into bucket, at its path relative to local. A missing
// local directory is an empty bucket.
func uploadDir(t testing.TB, srv *s3test.S3, local, bucket string) {
	c := srv.Client()
	err := filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(local, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(filepath.ToSlash(rel)), Body: bytes.NewReader(b)})
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("upload %s to bucket %s: %v", local, bucket, err)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a polling reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// TestExampleHelpers shows that the example runner's parsing finds what it is meant to find.
func TestExampleHelpers(t *testing.T) {
	md := "x\n```text\n$ streamkit a | streamkit b\nstreamkit: b: bad at /data/x.csv:3\n```\n```text\n  out\n$ streamkit c\nrows\n```\n"
	ts := transcripts("R.md", md)
	if len(ts) != 2 || ts[0].name != "R.md:3" || ts[0].wantExit != 1 || len(ts[0].wantStderr) != 1 || ts[1].wantExit != 0 || ts[1].script != "streamkit c\n" {
		t.Errorf("transcripts: %+v", ts)
	}
	for _, c := range []struct {
		text, pattern string
		want          bool
	}{
		{"x\nstreamkit: e: at /w/f.parquet row 9: no\n", "streamkit: e: at …/f.parquet row 9: no", true},
		{"streamkit: e: at /w/f.parquet row 9: no (more)\n", "streamkit: e: at …/f.parquet row 9: no", false},
		{"streamkit: e: 1+1\n", "streamkit: e: 1+1", true},
		{"streamkit: e: 11\n", "streamkit: e: 1+1", false},
	} {
		if got := matchesLine(c.text, c.pattern); got != c.want {
			t.Errorf("matchesLine(%q, %q) = %v", c.text, c.pattern, got)
		}
	}
	for script, want := range map[string]bool{
		"streamkit read-kafka -b h -t x | streamkit print":                       true,
		"streamkit read-kafka -b h -t x --until now | streamkit print":           false,
		"STREAMKIT_CHECKPOINT=c streamkit read-kafka -t x | streamkit print":     true,
		"streamkit read-files --follow 'in/*.csv' | streamkit print":             true,
		"streamkit generate --rate 100/s | streamkit print":                      true,
		"streamkit generate --rate 100/s --rows 5 | streamkit print":             false,
		"streamkit read-kafka -t x | streamkit print\nstreamkit state-dump ckpt": false,
	} {
		if got := unbounded(script); got != want {
			t.Errorf("unbounded(%q) = %v", script, got)
		}
	}
	for script, want := range map[string]outputTarget{
		"streamkit read-files a | streamkit print --format csv > out.csv":          {file: "/w/out.csv"},
		"streamkit read-files a | streamkit write-delta ./lake/t --mode overwrite": {table: "/w/lake/t"},
		"streamkit a | streamkit write-delta file:///data/t":                       {table: "/data/t"},
		"streamkit a | streamkit write-delta s3://b/t":                             {bucket: true},
		"streamkit backfill --from x --to ./lake/t --flow f":                       {table: "/w/lake/t"},
		"streamkit backfill --from x --to ./lake/t --flow f --plan":                {},
		"streamkit a | streamkit write-kafka -b h -t out --key k":                  {topic: "out"},
		"streamkit a | streamkit print":                                            {},
	} {
		if got := lastTarget("/w", script); got != want {
			t.Errorf("lastTarget(%q) = %+v, want %+v", script, got, want)
		}
	}
}
