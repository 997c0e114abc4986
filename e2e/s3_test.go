package e2e_test

// The object-storage end-to-end tests of issue #19: the real streamkit binary against the real
// S3-compatible server of scripts/s3.sh (S3Proxy, internal/s3test), through the fault proxy
// (internal/faultproxy) where faults are wanted, checked by the real readers (delta-rs, DuckDB's
// delta extension, Spark's s3a:// filesystem: internal/s3test's ReadTable; DuckDB's read_json
// over the input: scripts/e2e/s3input.py) and by reading the Delta log straight from the
// bucket.
//
//   - TestS3ConcurrentWriters: 4 write-delta flows × 100 epochs into one s3:// table while
//     `delta optimize` runs on it again and again.
//   - TestS3Chaos: read-files 's3://…/in/*.json' | dedup | write-delta s3://…, checkpoints on
//     s3://, ≥ 30 kill -9s of random stages; the table equals DuckDB's DISTINCT over the input.
//   - TestS3Faults: generate | write-delta s3://… through the fault proxy (latency, resets, lost
//     responses), then faults that outlast the retries.
//   - TestS3TwoOwners: a second pipeline on a held s3:// checkpoint is refused; after kill -9
//     and the lease's expiry the next one takes over.
//   - TestS3Refusals: bad credentials, a missing bucket, bad schemes, a store that ignores
//     If-None-Match (and --unsafe-single-writer past it).
//   - TestS3Readers: streamkit's table read by delta-rs, DuckDB and Spark; Spark's and
//     delta-rs' tables read by read-delta and appended to by write-delta.
//
// They run in make test (small sizes, S3 server of the Makefile); make e2e sets bigger ones:
// STREAMKIT_S3E2E_EPOCHS (epochs per writer, 100), STREAMKIT_S3E2E_EPOCH_ROWS (rows per
// writer epoch, 10), STREAMKIT_S3E2E_FILES (input files of the chaos run, 100, of
// STREAMKIT_S3E2E_FILE_ROWS rows each, 200), STREAMKIT_S3E2E_KILLS (30), STREAMKIT_S3E2E_SEED
// (logged), STREAMKIT_S3E2E_FAULT_ROWS (rows of the fault run, 2000).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/streamkit/streamkit/internal/arrowtest"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/storage"
)

// leaseTTL is STREAMKIT_LEASE_TTL of every child: short, so that a restart after a kill -9
// takes the dead stage's checkpoint over quickly.
const leaseTTL = 2 * time.Second

// s3job is one test's bucket on the S3 test server and the tools to fill and check it.
type s3job struct {
	t      *testing.T
	srv    *s3test.S3 // the server itself (never through a proxy): for listing and checks
	bucket string
	bin    string
	py     string
	script string
	dir    string   // local: logs
	env    []string // children's environment: the server (or a proxy) and the lease TTL
}

// newS3Job gives t a fresh bucket on the server.
func newS3Job(t *testing.T) *s3job {
	t.Helper()
	srv := s3test.Server(t)
	j := &s3job{t: t, srv: srv, bucket: s3test.Bucket(t), bin: peertest.Binary(t), py: peertest.Python(t),
		script: filepath.Join(peertest.Root(t), "scripts", "e2e", "s3input.py"), dir: t.TempDir()}
	j.env = append(srv.Env(), "STREAMKIT_LEASE_TTL="+leaseTTL.String())
	t.Cleanup(func() { noLocalURLDirs(t, t.Name(), ".") })
	return j
}

// noLocalURLDirs fails t when dir (the stages' working directory) holds a directory named
// after a URL scheme ("s3:", made from s3://bucket/… taken for a local path), and removes it.
func noLocalURLDirs(t testing.TB, what, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ":") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		var files []string
		filepath.WalkDir(p, func(q string, _ os.DirEntry, _ error) error {
			files = append(files, q)
			return nil
		})
		os.RemoveAll(p)
		t.Errorf("%s: a local directory was made from a URL in the stages' working directory: %v", what, files[:min(len(files), 8)])
	}
}

// via makes the children reach the store through s (a proxy's view of the server).
func (j *s3job) via(s *s3test.S3) {
	j.env = append(s.Env(), "STREAMKIT_LEASE_TTL="+leaseTTL.String())
}

// url is s3://BUCKET/name.
func (j *s3job) url(name string) string { return "s3://" + j.bucket + "/" + name }

// start starts stages as one pipeline with $STREAMKIT_CHECKPOINT=ckpt (when set) and the job's
// environment; each stage's stderr goes to <dir>/<log>-<stage>.log.
func (j *s3job) start(log, ckpt string, stages ...stageSpec) *pipeline {
	j.t.Helper()
	return startPipelineEnv(j.t, j.bin, j.env, ckpt, filepath.Join(j.dir, log), stages)
}

// runOK runs stages to their end; every stage must exit 0 within timeout.
func (j *s3job) runOK(log, ckpt string, timeout time.Duration, stages ...stageSpec) *pipeline {
	j.t.Helper()
	p := j.start(log, ckpt, stages...)
	p.wait(j.t, timeout)
	p.checkLogs(j.t, log)
	p.requireSuccess(j.t, log)
	return p
}

// python runs scripts/e2e/s3input.py with the job's environment and decodes its JSON into
// out.
func (j *s3job) python(out any, args ...string) {
	j.t.Helper()
	cmd := exec.Command(j.py, append([]string{j.script}, args...)...)
	cmd.Env = append(os.Environ(), j.srv.Env()...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		j.t.Fatalf("s3input.py %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String(), 40))
	}
	if err := json.Unmarshal(b, out); err != nil {
		j.t.Fatalf("s3input.py %s: %v: %.300s", args[0], err, b)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// tableIDs reads table (an s3:// URL) with each engine (internal/s3test's readers, one
// process) and returns the int64 column id of its rows per engine, and the table version
// delta-rs read (-1 when delta-rs is not among them).
func (j *s3job) tableIDs(table string, engines ...s3test.Engine) (map[s3test.Engine][]int64, int64) {
	j.t.Helper()
	res := s3test.ReadTable(j.t, table, engines...)
	out := map[s3test.Engine][]int64{}
	for e, r := range res {
		out[e] = resultIDs(j.t, table, e, r)
	}
	version := int64(-1)
	if r, ok := res[s3test.DeltaRS]; ok {
		version = r.Version
	}
	return out, version
}

// resultIDs is the int64 column id of the rows e read from table.
func resultIDs(t testing.TB, table string, e s3test.Engine, r s3test.Result) []int64 {
	t.Helper()
	ids := make([]int64, 0, len(r.Rows))
	for _, row := range r.Rows {
		var v struct {
			ID *int64 `json:"id"`
		}
		if err := json.Unmarshal([]byte(row), &v); err != nil || v.ID == nil {
			t.Fatalf("%s read by %s: a row without an int64 id: %s (%v)", table, e, row, err)
		}
		ids = append(ids, *v.ID)
	}
	return ids
}

// readersAgree reads table with delta-rs and DuckDB (and the other engines given) and fails t
// unless each returns exactly want (ids as a multiset: a duplicated row is an error). It
// returns the version delta-rs read.
func (j *s3job) readersAgree(what, table string, want []int64, more ...s3test.Engine) int64 {
	j.t.Helper()
	engines := append([]s3test.Engine{s3test.DeltaRS, s3test.DuckDB}, more...)
	got, version := j.tableIDs(table, engines...)
	for _, e := range engines {
		sameIDs(j.t, fmt.Sprintf("%s: %s", what, e), got[e], want)
	}
	return version
}

// rowCount is the number of rows delta-rs reads in table; outside lo…hi it fails t.
func (j *s3job) rowCount(table string, lo, hi int64) int64 {
	j.t.Helper()
	got, _ := j.tableIDs(table, s3test.DeltaRS)
	if n := int64(len(got[s3test.DeltaRS])); n < lo || n > hi {
		j.t.Fatalf("%s: delta-rs reads %d rows, want %d…%d", table, n, lo, hi)
	}
	return int64(len(got[s3test.DeltaRS]))
}

// sameIDs fails t unless got equals want as multisets, naming the missing, extra and duplicated
// ids (10 of each at most).
func sameIDs(t testing.TB, what string, got, want []int64) {
	t.Helper()
	got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if slices.Equal(got, want) {
		return
	}
	count := map[int64]int{}
	for _, v := range want {
		count[v]++
	}
	var missing, extra []int64
	for _, v := range got {
		if count[v] > 0 {
			count[v]--
		} else {
			extra = append(extra, v)
		}
	}
	for v, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, v)
		}
	}
	slices.Sort(missing)
	first := func(s []int64) []int64 { return s[:min(len(s), 10)] }
	t.Fatalf("%s: %d rows, want %d: %d missing (e.g. %v), %d extra or duplicated (e.g. %v)",
		what, len(got), len(want), len(missing), first(missing), len(extra), first(extra))
}

// seq is from, from+1, …, from+n-1.
func seq64(from, n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = from + int64(i)
	}
	return out
}

// keys lists the object keys under prefix (paginated), straight from the server.
func (j *s3job) keys(prefix string) []string {
	j.t.Helper()
	ctx := context.Background()
	p := s3.NewListObjectsV2Paginator(j.srv.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(j.bucket), Prefix: aws.String(prefix)})
	var out []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			j.t.Fatalf("list s3://%s/%s: %v", j.bucket, prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, aws.ToString(o.Key))
		}
	}
	return out
}

func (j *s3job) get(key string) []byte {
	j.t.Helper()
	out, err := j.srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(j.bucket), Key: aws.String(key)})
	if err != nil {
		j.t.Fatalf("get s3://%s/%s: %v", j.bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		j.t.Fatalf("get s3://%s/%s: %v", j.bucket, key, err)
	}
	return b
}

func (j *s3job) put(key string, data []byte) {
	j.t.Helper()
	if _, err := j.srv.Client().PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(j.bucket), Key: aws.String(key), Body: bytes.NewReader(data),
	}); err != nil {
		j.t.Fatalf("put s3://%s/%s: %v", j.bucket, key, err)
	}
}

// logFile is one commit of a Delta log as read from the bucket.
type logFile struct {
	version int64
	commits int            // commitInfo actions
	ops     map[string]int // commitInfo.operation → count
	txns    []txnAction
	adds    []string // add paths
	removes []string // remove paths
	other   map[string]int
}

type txnAction struct {
	AppID   string `json:"appId"`
	Version int64  `json:"version"`
}

var (
	versionFile = regexp.MustCompile(`^(\d{20})\.json$`)
	// What else a Delta log may hold: classic and multi-part checkpoints, the pointer to the
	// newest, checksum files (Spark writes them).
	logCompanion = regexp.MustCompile(`^(\d{20}\.checkpoint(\.\d{10}\.\d{10})?\.parquet|_last_checkpoint|\d{20}\.crc)$`)
)

// readLog reads every version file of table (a key prefix, without a trailing slash) from the
// bucket and fails t unless the versions run 0, 1, … without a gap, every file parses as
// newline-delimited JSON actions with exactly one commitInfo, and the log holds nothing but
// versions and checkpoints (no temporary or renamed objects: commits are put-if-absent).
func (j *s3job) readLog(table string) []logFile {
	j.t.Helper()
	var out []logFile
	var strays []string
	for _, k := range j.keys(table + "/_delta_log/") {
		name := strings.TrimPrefix(k, table+"/_delta_log/")
		m := versionFile.FindStringSubmatch(name)
		if m == nil {
			if !logCompanion.MatchString(name) {
				strays = append(strays, name)
			}
			continue
		}
		v, _ := strconv.ParseInt(m[1], 10, 64)
		lf := logFile{version: v, other: map[string]int{}, ops: map[string]int{}}
		for i, line := range bytes.Split(bytes.TrimSpace(j.get(k)), []byte("\n")) {
			var act map[string]json.RawMessage
			if err := json.Unmarshal(line, &act); err != nil {
				j.t.Fatalf("%s: version %d, line %d is not a JSON action (a partial commit?): %v: %.200s", table, v, i+1, err, line)
			}
			for kind, body := range act {
				switch kind {
				case "commitInfo":
					lf.commits++
					var ci struct {
						Operation string `json:"operation"`
					}
					json.Unmarshal(body, &ci)
					lf.ops[ci.Operation]++
				case "txn":
					var tx txnAction
					if err := json.Unmarshal(body, &tx); err != nil {
						j.t.Fatalf("%s: version %d: txn %s: %v", table, v, body, err)
					}
					lf.txns = append(lf.txns, tx)
				case "add", "remove":
					var f struct {
						Path string `json:"path"`
					}
					if err := json.Unmarshal(body, &f); err != nil || f.Path == "" {
						j.t.Fatalf("%s: version %d: %s %s: no path", table, v, kind, body)
					}
					if kind == "add" {
						lf.adds = append(lf.adds, f.Path)
					} else {
						lf.removes = append(lf.removes, f.Path)
					}
				default:
					lf.other[kind]++
				}
			}
		}
		if lf.commits != 1 {
			j.t.Fatalf("%s: version %d holds %d commitInfo actions, want 1", table, v, lf.commits)
		}
		out = append(out, lf)
	}
	if len(strays) > 0 {
		j.t.Fatalf("%s/_delta_log holds objects that are neither versions nor checkpoints: %v", table, strays)
	}
	slices.SortFunc(out, func(a, b logFile) int { return int(a.version - b.version) })
	for i, lf := range out {
		if lf.version != int64(i) {
			j.t.Fatalf("%s: the log's versions are not contiguous from 0: version %d at position %d (a gap before it)", table, lf.version, i)
		}
	}
	if len(out) == 0 {
		j.t.Fatalf("%s: no Delta log in the bucket", table)
	}
	return out
}

// replay checks the file actions of log in order: every removed file was live, no file is
// added twice while live. A commit that another writer's create had silently overwritten
// would break this chain (its adds gone, a later remove of them dangling). It returns the live
// files at the end.
func replay(t testing.TB, table string, log []logFile) map[string]bool {
	t.Helper()
	live := map[string]bool{}
	for _, lf := range log {
		for _, p := range lf.removes {
			if !live[p] {
				t.Fatalf("%s: version %d removes %s, which is not live", table, lf.version, p)
			}
			delete(live, p)
		}
		for _, p := range lf.adds {
			if live[p] {
				t.Fatalf("%s: version %d adds %s, which is live already", table, lf.version, p)
			}
			live[p] = true
		}
	}
	return live
}

// flowEpochs returns, per txn appId, the epochs of the log's txn actions in version order.
func flowEpochs(log []logFile) map[string][]int64 {
	out := map[string][]int64{}
	for _, lf := range log {
		for _, tx := range lf.txns {
			out[tx.AppID] = append(out[tx.AppID], tx.Version)
		}
	}
	return out
}

// checkFlow fails t unless flow committed the epochs first…last, each exactly once, in order.
func checkFlow(t testing.TB, table, flow string, epochs []int64, first, last int64) {
	t.Helper()
	want := seq64(first, last-first+1)
	if !slices.Equal(epochs, want) {
		seen := map[int64]int{}
		var dups []int64
		for _, e := range epochs {
			if seen[e]++; seen[e] == 2 {
				dups = append(dups, e)
			}
		}
		t.Fatalf("%s: flow %s committed epochs %v (%d txn actions, duplicated %v), want %d…%d each once in order",
			table, flow, abbreviate(epochs), len(epochs), dups, first, last)
	}
}

func abbreviate(s []int64) string {
	if len(s) <= 20 {
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("%v … %v", s[:10], s[len(s)-10:])
}

// genStage is `generate` of an id column counting from `from`, n rows, at most perEpoch per
// epoch (no time-cut epochs), at rate (rows/s; "" for as fast as the pipe takes them).
func genStage(name string, from, n, perEpoch int64, rate string) stageSpec {
	args := []string{"generate", "--schema", "id bigint", "--gen", fmt.Sprintf("id=sequence(%d)", from),
		"--rows", strconv.FormatInt(n, 10), "--max-records-per-epoch", strconv.FormatInt(perEpoch, 10), "--epoch-interval", "1h"}
	if rate != "" {
		args = append(args, "--rate", rate)
	}
	return stageSpec{name, args}
}

func seed(t testing.TB) uint64 {
	if s := os.Getenv("STREAMKIT_S3E2E_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("STREAMKIT_S3E2E_SEED: %v", err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// 4 write-delta processes (flows w1…w4) × STREAMKIT_S3E2E_EPOCHS epochs into one s3:// table
// while `delta optimize` runs on it over and over: every version file is written exactly once
// (contiguous, one commitInfo each, a consistent add/remove chain, each flow's epochs once),
// no row is lost or duplicated (delta-rs and DuckDB), each flow's txn version is its last epoch.
func TestS3ConcurrentWriters(t *testing.T) {
	j := newS3Job(t)
	// Nothing is killed here, so the short TTL would only test the machine's load: a writer
	// whose renewal ran late (1.58 s on a loaded run) rightly stops before committing.
	j.env = append(j.srv.Env(), "STREAMKIT_LEASE_TTL=15s")
	const writers = 4
	epochs := int64(envInt(t, "STREAMKIT_S3E2E_EPOCHS", 100))
	perEpoch := int64(envInt(t, "STREAMKIT_S3E2E_EPOCH_ROWS", 10))
	table := j.url("t")
	const base = 1_000_000_000 // flow k's ids are k·base + 0…
	start := time.Now()
	var ps []*pipeline
	var want []int64
	for k := 1; k <= writers; k++ {
		flow := fmt.Sprintf("w%d", k)
		stages := []stageSpec{
			genStage("generate", int64(k)*base, epochs*perEpoch, perEpoch, ""),
			{"write-delta", []string{"write-delta", table, "--flow", flow}},
		}
		if k == 1 {
			t.Logf("writer %s (and w2…w%d alike):\n%s", flow, writers, shellLine(map[string]string{"STREAMKIT_CHECKPOINT": j.url("ckpt/" + flow)}, stages))
		}
		ps = append(ps, j.start(flow, j.url("ckpt/"+flow), stages...))
		want = append(want, seq64(int64(k)*base, epochs*perEpoch)...)
	}
	// delta optimize, again and again while the writers run (from the table's first version
	// on), then once more.
	for len(j.keys("t/_delta_log/00000000000000000000.json")) == 0 {
		done := true
		for _, p := range ps {
			done = done && p.finished()
		}
		if done || time.Since(start) > 2*time.Minute {
			for _, p := range ps {
				syscall.Kill(-p.pgid, syscall.SIGKILL)
				p.wait(t, time.Minute)
			}
			t.Fatalf("no version 0 of %s from the writers after %s:\n%s", table, time.Since(start), ps[0].logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var optRuns, optCommits int
	optimize := func() {
		cmd := exec.Command(j.bin, "delta", "optimize", table, "--progress", "off")
		cmd.Env = append(baseEnv(), j.env...)
		out, code := peertest.Output(t, cmd)
		optRuns++
		if code != 0 {
			for _, p := range ps {
				if !p.finished() {
					syscall.Kill(-p.pgid, syscall.SIGKILL)
				}
			}
			t.Fatalf("delta optimize run %d on %s while writers append: exit %d\n%s", optRuns, table, code, out)
		}
	}
	for {
		running := false
		for _, p := range ps {
			running = running || !p.finished()
		}
		if !running {
			break
		}
		if time.Since(start) > 10*time.Minute {
			for _, p := range ps {
				syscall.Kill(-p.pgid, syscall.SIGKILL)
			}
			t.Fatalf("writers still running after %s (killed)", time.Since(start))
		}
		optimize()
	}
	for _, p := range ps {
		p.wait(t, time.Minute)
		p.checkLogs(t, "writer")
		p.requireSuccess(t, "writer")
	}
	optimize()
	wall := time.Since(start)

	log := j.readLog("t")
	live := replay(t, table, log)
	flows := flowEpochs(log)
	for k := 1; k <= writers; k++ {
		flow := fmt.Sprintf("w%d", k)
		checkFlow(t, table, flow, flows[flow], 1, epochs)
	}
	if len(flows) != writers {
		t.Fatalf("%s: txn actions of %d flows, want %d: %v", table, len(flows), writers, flows)
	}
	for _, lf := range log {
		optCommits += lf.ops["OPTIMIZE"]
	}
	if v := j.readersAgree(table, table, want); v != log[len(log)-1].version {
		t.Fatalf("%s: delta-rs reads version %d, the bucket's newest is %d", table, v, log[len(log)-1].version)
	}
	t.Logf("%d writers × %d epochs × %d rows into %s in %s: %d versions (%d OPTIMIZE commits of %d optimize runs), %d live files, %d rows read back by delta-rs and DuckDB",
		writers, epochs, perEpoch, table, wall.Round(time.Millisecond), len(log), optCommits, optRuns, len(live), len(want))
	if optCommits == 0 {
		t.Fatalf("%s: none of %d delta optimize runs committed (small files were there to compact)", table, optRuns)
	}
}

// inputFile is file i of the chaos input: ids i·rows … i·rows+rows-1 as NDJSON {"id", "v"},
// then exact copies of the first dups rows of file i-1 (duplicates for dedup).
func inputFile(i, rows, dups int) []byte {
	var b bytes.Buffer
	line := func(id int) { fmt.Fprintf(&b, "{\"id\":%d,\"v\":\"r%d\"}\n", id, id) }
	for r := 0; r < rows; r++ {
		line(i*rows + r)
	}
	for r := 0; i > 0 && r < dups; r++ {
		line((i-1)*rows + r)
	}
	return b.Bytes()
}

// read-files 's3://…/in/*.json' | dedup --key id | write-delta s3://…/out with
// $STREAMKIT_CHECKPOINT on s3://, killed -9 at random moments STREAMKIT_S3E2E_KILLS times (a
// random stage each time, restarted after the lease TTL), with more input files arriving
// whenever a run caught up; then a run to the end and one more that must add nothing. The
// table equals DuckDB's DISTINCT id over the input, read by delta-rs and DuckDB.
func TestS3Chaos(t *testing.T) {
	j := newS3Job(t)
	files := envInt(t, "STREAMKIT_S3E2E_FILES", 100)
	rows := envInt(t, "STREAMKIT_S3E2E_FILE_ROWS", 200)
	kills := envInt(t, "STREAMKIT_S3E2E_KILLS", 30)
	sd := seed(t)
	rnd := rand.New(rand.NewPCG(sd, 19))
	const dups = 5
	written := 0
	addFiles := func(n int) {
		for i := written; i < written+n; i++ {
			j.put(fmt.Sprintf("in/part-%05d.json", i), inputFile(i, rows, dups))
		}
		written += n
	}
	addFiles(files)
	stages := []stageSpec{
		{"read-files", []string{"read-files", j.url("in/*.json"), "--schema", "id bigint, v string", "--max-files-per-epoch", "1", "--stable-after", "0"}},
		{"dedup", []string{"dedup", "--key", "id"}},
		{"write-delta", []string{"write-delta", j.url("out")}},
	}
	ckpt := j.url("ckpt")
	t.Logf("chaos: seed %d (STREAMKIT_S3E2E_SEED), %d kills, %d input files of %d rows (+%d duplicates each); job:\n%s",
		sd, kills, files, rows, dups, shellLine(map[string]string{"STREAMKIT_CHECKPOINT": ckpt, "STREAMKIT_LEASE_TTL": leaseTTL.String()}, stages))
	start := time.Now()
	byStage := map[string]int{}
	// Kills come within maxDelay of a run's start: 3 s, then as long as the last run that
	// caught up took (at least 300 ms), so that most land while files are being read.
	maxDelay := 3 * time.Second
	killed, runs, caughtUp, killsAfterCommit := 0, 0, 0, 0
	for killed < kills {
		if time.Since(start) > 15*time.Minute {
			t.Fatalf("chaos: only %d kills after %s", killed, time.Since(start))
		}
		runs++
		victim := rnd.IntN(len(stages))
		// One run in four is killed early (listing, lease, restore, replay), the others up to
		// maxDelay in (files read, epochs committed).
		delay := time.Duration(rnd.Int64N(int64(maxDelay)))
		if rnd.IntN(4) == 0 {
			delay = time.Duration(rnd.Int64N(int64(500 * time.Millisecond)))
		}
		before := len(j.keys("out/_delta_log/"))
		p := j.start(fmt.Sprintf("chaos-%03d", runs), ckpt, stages...)
		select {
		case <-p.done:
		case <-time.After(delay):
			p.killStage(victim)
		}
		p.wait(t, 2*time.Minute)
		p.checkLogs(t, fmt.Sprintf("chaos run %d", runs))
		if p.killedBy(victim, syscall.SIGKILL) {
			killed++
			byStage[stages[victim].name]++
			after := len(j.keys("out/_delta_log/"))
			if after > before {
				killsAfterCommit++
			}
			t.Logf("run %d: kill -9 %s after %s: exits %v; log objects %d → %d", runs, stages[victim].name, delay.Round(time.Millisecond), p.exitCodes(), before, after)
			// The dead stage's lease expires after the TTL; the others let theirs go on exit.
			time.Sleep(leaseTTL + 500*time.Millisecond)
			continue
		}
		p.requireSuccess(t, fmt.Sprintf("chaos run %d (ended before its kill -9)", runs))
		caughtUp++
		maxDelay = max(p.wall, 300*time.Millisecond)
		t.Logf("run %d: caught up in %s (before its kill -9); %d more input files", runs, p.wall.Round(time.Millisecond), files/5)
		addFiles(max(files/5, 1))
	}
	j.runOK("chaos-final", ckpt, 5*time.Minute, stages...)
	endLog := j.readLog("out")
	j.runOK("chaos-again", ckpt, 5*time.Minute, stages...)
	againLog := j.readLog("out")
	if len(againLog) != len(endLog) {
		t.Fatalf("a run after the completed one added versions %d…%d (nothing was left to write)", len(endLog), len(againLog)-1)
	}
	replay(t, j.url("out"), againLog)
	var in struct {
		Rows int64   `json:"rows"`
		IDs  []int64 `json:"ids"`
	}
	j.python(&in, "input-ids", j.url("in/*.json"))
	if len(in.IDs) != written*rows {
		t.Fatalf("DuckDB finds %d distinct ids in the %d input files, want %d", len(in.IDs), written, written*rows)
	}
	version := j.readersAgree("chaos table "+j.url("out"), j.url("out"), in.IDs)
	t.Logf("chaos: %d runs, %d kill -9s (%v; %d in runs that committed before it), %d runs caught up; %d input files, %d records (%d distinct); table version %d; %s",
		runs+2, killed, byStage, killsAfterCommit, caughtUp, written, in.Rows, len(in.IDs), version, time.Since(start).Round(time.Second))
}

// generate | write-delta s3://… through the fault proxy: latency, random resets and lost
// responses on every request (so on commits, epoch files and leases too); the table equals the
// input exactly, each epoch committed once. Then a run whose faults outlast the retries (every
// connection reset once a commit's data file is in the bucket): exit 1, the message names the
// URL and the operation and holds no secret, nothing partial is left, and a run without faults
// completes the input exactly.
func TestS3Faults(t *testing.T) {
	j := newS3Job(t)
	sd := seed(t)
	via, px := s3test.Proxied(t, sd)
	j.via(via)
	n := int64(envInt(t, "STREAMKIT_S3E2E_FAULT_ROWS", 2000))
	const perEpoch = 50
	table := j.url("t")
	ckpt := j.url("ckpt")
	// Only write-delta's calls go through the proxy: the table, its checkpoint and lease.
	// generate keeps its checkpoint on local disk, so that a failure is write-delta's own.
	genCkpt := filepath.Join(j.dir, "generate-ckpt")
	job := func(rows int64) []stageSpec {
		g := genStage("generate", 0, rows, perEpoch, "400")
		g.args = append(g.args, "--checkpoint", genCkpt)
		return []stageSpec{g, {"write-delta", []string{"write-delta", table, "--flow", "f", "--checkpoint", ckpt + "/write-delta"}}}
	}
	px.SetLatency(2*time.Millisecond, time.Millisecond)
	px.ResetRandomly(0.05, 4096)
	px.DropResponses(0.05)
	t.Logf("faults: seed %d, latency 2 ms/connection + 1 ms/chunk, 5%% of connections reset within 4 KiB, 5%% of responses lost; job:\n%s",
		sd, shellLine(map[string]string{"STREAMKIT_CHECKPOINT": ckpt, "AWS_ENDPOINT_URL": via.Endpoint}, job(n)))
	p := j.runOK("faults", "", 5*time.Minute, job(n)...)
	st := px.Stats()
	t.Logf("fault run: %s, proxy %+v", p.wall.Round(time.Millisecond), st)
	px.Clear()
	log := j.readLog("t")
	replay(t, table, log)
	checkFlow(t, table, "f", flowEpochs(log)["f"], 1, n/perEpoch)
	j.readersAgree("table after the fault run", table, seq64(0, n))

	// Faults that outlast the retries: once the next run's first data file is in the bucket,
	// every connection is reset.
	versions := len(log)
	pl := j.start("outlast", "", job(2*n)...)
	deadline := time.Now().Add(time.Minute)
	dataFiles := func() int {
		c := 0
		for _, k := range j.keys("t/") {
			if strings.HasSuffix(k, ".parquet") && !strings.Contains(k, "_delta_log/") {
				c++
			}
		}
		return c
	}
	files0 := dataFiles()
	for dataFiles() == files0 && !pl.finished() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	px.ResetAfter(1)
	px.ResetAll()
	pl.wait(t, 3*time.Minute)
	px.Clear()
	pl.checkLogs(t, "outlast")
	wd := pl.procs[1]
	errText, _ := os.ReadFile(wd.log)
	if code := wd.cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("write-delta under faults that outlast the retries: %s, want exit 1\n%s", pl.status(1), pl.logs())
	}
	msg := string(errText)
	if !strings.Contains(msg, "s3://"+j.bucket+"/") || !regexp.MustCompile(`\b(create|put|write|read|list|open|get|stat|delete)\b`).MatchString(msg) {
		t.Fatalf("write-delta's error does not name the URL (s3://%s/…) and the operation:\n%s", j.bucket, msg)
	}
	noSecret(t, "write-delta under faults", msg, j.srv.SecretKey)
	t.Logf("write-delta after its retries: %s", tail(msg, 3))
	after := j.readLog("t")
	replay(t, table, after)
	last := int64(len(after) - 1)
	eps := flowEpochs(after)["f"]
	checkFlow(t, table, "f", eps, 1, eps[len(eps)-1])
	j.readersAgree(fmt.Sprintf("table after the failed run (versions %d → %d)", versions, last+1), table, seq64(0, eps[len(eps)-1]*perEpoch))
	if eps[len(eps)-1] >= 2*n/perEpoch {
		t.Fatalf("the run under faults that outlast the retries committed every epoch (%d): the faults came too late", eps[len(eps)-1])
	}
	// The same job without faults completes the input exactly.
	j.runOK("recover", "", 5*time.Minute, job(2*n)...)
	final := j.readLog("t")
	replay(t, table, final)
	checkFlow(t, table, "f", flowEpochs(final)["f"], 1, 2*n/perEpoch)
	j.readersAgree("table after the recovery run", table, seq64(0, 2*n))
	t.Logf("faults: %d rows in %d epochs committed exactly once through %d lost responses and %d resets; then a failing run and its recovery (%d versions)",
		2*n, 2*n/perEpoch, st.Dropped, st.Resets, len(final))
}

// noSecret fails t when text holds one of the secrets.
func noSecret(t testing.TB, what, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Fatalf("%s: the output holds a secret:\n%s", what, text)
		}
	}
}

// A second pipeline on the s3:// checkpoint of a running one is refused; so is one started
// right after the first was killed -9 (its lease is still valid); once the lease has expired,
// the next one takes over and continues exactly once.
func TestS3TwoOwners(t *testing.T) {
	j := newS3Job(t)
	table := j.url("t")
	ckpt := j.url("ckpt")
	const perEpoch = 20
	stages := []stageSpec{genStage("generate", 0, 1_000_000, perEpoch, "200"), {"write-delta", []string{"write-delta", table}}}
	first := j.start("first", ckpt, stages...)
	defer func() {
		if !first.finished() {
			syscall.Kill(-first.pgid, syscall.SIGKILL)
		}
	}()
	waitVersion := func(p *pipeline, v int) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for len(j.keys(fmt.Sprintf("t/_delta_log/%020d.json", v))) == 0 {
			if p.finished() || time.Now().After(deadline) {
				t.Fatalf("no table version %d from the pipeline:\n%s", v, p.logs())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitVersion(first, 1)
	refused := func(what string) {
		t.Helper()
		p := j.start(what, ckpt, stages...)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			syscall.Kill(-p.pgid, syscall.SIGKILL)
			<-p.done
			t.Fatalf("%s: a second pipeline on checkpoint %s still runs after 30 s:\n%s", what, ckpt, p.logs())
		}
		var msgs []string
		ok := false
		for i, pr := range p.procs {
			code := pr.cmd.ProcessState.ExitCode()
			b, _ := os.ReadFile(pr.log)
			if (code == 1 || code == 2) && strings.Contains(string(b), ckpt) {
				ok = true
			}
			msgs = append(msgs, fmt.Sprintf("%s: %s: %s", pr.name, p.status(i), tail(string(b), 2)))
			noSecret(t, what, string(b), j.srv.SecretKey)
		}
		if !ok {
			t.Fatalf("%s: no stage was refused with exit 1 or 2 and a message naming %s:\n%s", what, ckpt, p.logs())
		}
		t.Logf("%s: refused: %s", what, strings.Join(msgs, " | "))
	}
	refused("second-while-running")
	if first.finished() {
		t.Fatalf("the first pipeline ended while the second was refused:\n%s", first.logs())
	}
	syscall.Kill(-first.pgid, syscall.SIGKILL)
	first.wait(t, 10*time.Second)
	killedAt := time.Now()
	refused("right-after-kill") // a local flock dies with its holder, a lease outlives it
	if time.Since(killedAt) > leaseTTL {
		t.Logf("the refusal took %s, longer than the lease TTL %s: it proved nothing more than the first", time.Since(killedAt), leaseTTL)
	}
	time.Sleep(time.Until(killedAt.Add(leaseTTL + 500*time.Millisecond)))
	before := len(j.readLog("t"))
	third := j.start("takeover", ckpt, stages...)
	waitVersion(third, before+1)
	third.interrupt()
	third.wait(t, time.Minute)
	for i := range third.procs {
		if c := third.procs[i].cmd.ProcessState.ExitCode(); c != 130 && c != 0 {
			t.Fatalf("takeover pipeline after SIGINT: %s ended with %s\n%s", third.procs[i].name, third.status(i), third.logs())
		}
	}
	log := j.readLog("t")
	replay(t, table, log)
	var flow string
	for f := range flowEpochs(log) {
		flow = f
	}
	eps := flowEpochs(log)[flow]
	if len(flowEpochs(log)) != 1 || len(eps) == 0 {
		t.Fatalf("%s: want one flow's commits, got %v", table, flowEpochs(log))
	}
	checkFlow(t, table, flow, eps, 1, eps[len(eps)-1])
	// Ctrl-C commits the epoch under way, which may hold fewer than perEpoch rows.
	j.readersAgree("table after the takeover", table, seq64(0, j.rowCount(table, (eps[len(eps)-1]-1)*perEpoch+1, eps[len(eps)-1]*perEpoch)))
	t.Logf("takeover after kill -9 + %s: versions %d → %d, flow %s at epoch %d", leaseTTL, before, len(log), flow, eps[len(eps)-1])
}

// noConditionalWrites is an S3 endpoint in front of the server that ignores If-None-Match: a
// conditional PUT the server refuses (412, the object exists) is turned into a successful
// overwrite (the object is deleted with the test's own client and the same signed request sent
// again), as an S3-compatible store without conditional writes behaves. Everything else passes
// unchanged.
func noConditionalWrites(t *testing.T, srv *s3test.S3) (*s3test.S3, *int) {
	t.Helper()
	var mu sync.Mutex
	overwrites := 0
	c := srv.Client()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		send := func() (*http.Response, error) {
			out, err := http.NewRequestWithContext(r.Context(), r.Method, srv.Endpoint+r.URL.RequestURI(), bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			out.Header = r.Header.Clone()
			out.Host = r.Host // the signature covers the Host the client addressed
			out.ContentLength = int64(len(body))
			return http.DefaultTransport.RoundTrip(out)
		}
		resp, err := send()
		if err == nil && resp.StatusCode == http.StatusPreconditionFailed && r.Method == http.MethodPut && r.Header.Get("If-None-Match") != "" {
			resp.Body.Close()
			bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
			if _, err = c.DeleteObject(r.Context(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err == nil {
				mu.Lock()
				overwrites++
				mu.Unlock()
				resp, err = send()
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	via := *srv
	via.Endpoint = hs.URL
	via.HostPort = strings.TrimPrefix(hs.URL, "http://")
	return &via, &overwrites
}

// Bad credentials, a missing bucket, URLs with bad schemes and a store without conditional
// writes each fail with exit 1 or 2 and a message that says what is wrong and names the URL,
// hold no secret, and leave no object behind; --unsafe-single-writer lets the last one write.
func TestS3Refusals(t *testing.T) {
	j := newS3Job(t)
	srv := j.srv
	noCond, overwrites := noConditionalWrites(t, srv)
	missing := "st-missing-" + strconv.FormatUint(rand.Uint64(), 16)
	const wrongSecret = "wrong-secret-4f1d9a0c7e2b"
	gen := `"$SK" generate --schema 'id bigint' --gen 'id=sequence(0)' --rows 10 --progress off`
	type tc struct {
		name   string
		env    []string
		script string
		codes  []int
		want   [][]string // each group: one of its strings must be in stderr (case-insensitive)
		prefix string     // nothing may be left under this key prefix of the bucket
	}
	cases := []tc{
		{"bad credentials write-delta", []string{"AWS_SECRET_ACCESS_KEY=" + wrongSecret},
			gen + ` | "$SK" write-delta ` + j.url("badcred") + ` --progress off`,
			[]int{1, 2}, [][]string{{j.url("badcred")}, {"denied", "403", "signature", "credential"}}, "badcred"},
		{"bad credentials read-delta", []string{"AWS_SECRET_ACCESS_KEY=" + wrongSecret},
			`"$SK" read-delta ` + j.url("badcred-r") + ` --progress off | "$SK" print --progress off`,
			[]int{1, 2}, [][]string{{j.url("badcred-r")}, {"denied", "403", "signature", "credential"}}, "badcred-r"},
		{"bad credentials checkpoint", []string{"AWS_SECRET_ACCESS_KEY=" + wrongSecret, "STREAMKIT_CHECKPOINT=" + j.url("badcred-ckpt")},
			gen + ` > /dev/null`,
			[]int{1, 2}, [][]string{{j.url("badcred-ckpt")}, {"denied", "403", "signature", "credential"}}, "badcred-ckpt"},
		{"missing bucket", nil,
			gen + ` | "$SK" write-delta s3://` + missing + `/t --progress off`,
			[]int{1, 2}, [][]string{{"s3://" + missing}, {"bucket", "nosuch", "not exist", "not found"}}, ""},
		{"missing bucket read-files", nil,
			`"$SK" read-files 's3://` + missing + `/in/*.json' --schema 'id bigint' --progress off | "$SK" print --progress off`,
			[]int{1, 2}, [][]string{{"s3://" + missing}, {"bucket", "nosuch", "not exist", "not found"}}, ""},
		{"bad scheme write-delta", nil,
			gen + ` | "$SK" write-delta s3x://` + j.bucket + `/t --progress off`,
			[]int{2}, [][]string{{"s3x"}}, "t"},
		{"bad scheme read-delta", nil,
			`"$SK" read-delta gopher://` + j.bucket + `/t --progress off > /dev/null`,
			[]int{2}, [][]string{{"gopher"}}, "t"},
		{"bad scheme checkpoint", nil,
			`"$SK" generate --schema 'id bigint' --rows 10 --checkpoint ftp://` + j.bucket + `/ckpt --progress off > /dev/null`,
			[]int{2}, [][]string{{"ftp"}}, "ckpt"},
		{"bad scheme STREAMKIT_CHECKPOINT", []string{"STREAMKIT_CHECKPOINT=gopher://" + j.bucket + "/ckpt"},
			gen + ` > /dev/null`,
			[]int{2}, [][]string{{"gopher"}}, "ckpt"},
		{"no conditional writes", noCond.Env(),
			gen + ` | "$SK" write-delta ` + j.url("nocond") + ` --progress off`,
			[]int{1, 2}, [][]string{{j.url("nocond")}, {"conditional", "if-none-match", "put-if-absent"}, {"--unsafe-single-writer"}}, "nocond"},
	}
	for _, c := range cases {
		env := append(append(append([]string{}, j.env...), "STREAMKIT_CHECKPOINT="), c.env...)
		_, stderr, code := peertest.Pipeline(t, j.dir, env, c.script)
		noLocalURLDirs(t, c.name, j.dir) // the pipelines' working directory
		if !slices.Contains(c.codes, code) {
			t.Errorf("%s: exit %d, want one of %v\n%s", c.name, code, c.codes, stderr)
			continue
		}
		low := strings.ToLower(stderr)
		for _, group := range c.want {
			found := false
			for _, w := range group {
				found = found || strings.Contains(low, strings.ToLower(w))
			}
			if !found {
				t.Errorf("%s: stderr names none of %q:\n%s", c.name, group, stderr)
			}
		}
		noSecret(t, c.name, stderr, srv.SecretKey, wrongSecret)
		if c.prefix != "" {
			if left := j.keys(c.prefix + "/"); len(left) > 0 {
				t.Errorf("%s: objects left in the bucket under %s/: %v", c.name, c.prefix, left)
			}
		}
		t.Logf("%s: exit %d: %s", c.name, code, tail(stderr, 2))
	}
	if _, err := srv.Client().HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String(missing)}); err == nil {
		t.Errorf("bucket %s exists after the runs that named it: a tool created it", missing)
	}
	if *overwrites == 0 {
		t.Errorf("the store without conditional writes never overwrote an object: the refusal was not due to its probe")
	}
	// --unsafe-single-writer: the same store is accepted, and the table is complete.
	_, stderr, code := peertest.Pipeline(t, j.dir, append(append(append([]string{}, j.env...), noCond.Env()...), "STREAMKIT_CHECKPOINT="),
		gen+` | "$SK" write-delta `+j.url("nocond")+` --unsafe-single-writer --progress off`)
	if code != 0 {
		t.Fatalf("write-delta --unsafe-single-writer through a store without conditional writes: exit %d\n%s", code, stderr)
	}
	log := j.readLog("nocond")
	replay(t, j.url("nocond"), log)
	j.readersAgree("--unsafe-single-writer table", j.url("nocond"), seq64(0, 10))
}

// streamkit's table in the bucket is read by delta-rs, DuckDB and Spark (s3a://); tables Spark
// and delta-rs write to the bucket are read by read-delta, appended to by write-delta, and read
// again by Spark, delta-rs and DuckDB.
func TestS3Readers(t *testing.T) {
	j := newS3Job(t)
	own := j.url("streamkit")
	_, stderr, code := peertest.Pipeline(t, j.dir, append(append([]string{}, j.env...), "STREAMKIT_CHECKPOINT="),
		`"$SK" generate --schema 'id bigint, name string' --gen 'id=sequence(0)' --rows 500 --progress off | "$SK" write-delta `+own+` --progress off`)
	if code != 0 {
		t.Fatalf("generate | write-delta %s: exit %d\n%s", own, code, stderr)
	}
	// Spark starts once per RunTables: the peers write their tables and read streamkit's in one
	// process, and read all three after write-delta's appends in another.
	all := []s3test.Engine{s3test.DeltaRS, s3test.DuckDB, s3test.Spark}
	reads := func(table string) []s3test.Op {
		var ops []s3test.Op
		for _, e := range all {
			ops = append(ops, s3test.Read(e, table))
		}
		return ops
	}
	res := s3test.RunTables(t, append([]s3test.Op{
		s3test.Write(s3test.Spark, j.url("spark"), idRows(t, "spark.arrow", 0, 100), "append"),
		s3test.Write(s3test.DeltaRS, j.url("deltars"), idRows(t, "deltars.arrow", 100, 100), "append")},
		reads(own)...)...)
	for i, e := range all {
		sameIDs(t, fmt.Sprintf("streamkit's table: %s", e), resultIDs(t, own, e, res[2+i]), seq64(0, 500))
	}
	tables := []struct {
		name, table string
		from, add   int64
	}{{"Spark", j.url("spark"), 0, 1000}, {"delta-rs", j.url("deltars"), 100, 2000}}
	var ops []s3test.Op
	for _, tb := range tables {
		out, stderr, code := peertest.Pipeline(t, j.dir, append(append([]string{}, j.env...), "STREAMKIT_CHECKPOINT="),
			`"$SK" read-delta `+tb.table+` --columns id --progress off | "$SK" print --format csv --progress off`)
		if code != 0 {
			t.Fatalf("read-delta %s (written by %s): exit %d\n%s", tb.table, tb.name, code, stderr)
		}
		sameIDs(t, "read-delta of "+tb.name+"'s table", csvIDs(t, out), seq64(tb.from, 100))
		_, stderr, code = peertest.Pipeline(t, j.dir, append(append([]string{}, j.env...), "STREAMKIT_CHECKPOINT="),
			fmt.Sprintf(`"$SK" generate --schema 'id bigint, name string' --gen 'id=sequence(%d)' --rows 50 --progress off | "$SK" write-delta %s --progress off`, tb.add, tb.table))
		if code != 0 {
			t.Fatalf("write-delta appending to %s's table %s: exit %d\n%s", tb.name, tb.table, code, stderr)
		}
		ops = append(ops, reads(tb.table)...)
	}
	res = s3test.RunTables(t, ops...)
	for i, tb := range tables {
		want := append(seq64(tb.from, 100), seq64(tb.add, 50)...)
		for k, e := range all {
			sameIDs(t, fmt.Sprintf("%s's table after write-delta appended: %s", tb.name, e), resultIDs(t, tb.table, e, res[i*len(all)+k]), want)
		}
	}
}

// idRows writes an Arrow IPC file of n rows (id int64 from, from+1, …; name string "r<id>")
// for the peers' writers and returns its path.
func idRows(t *testing.T, name string, from, n int64) string {
	t.Helper()
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil))
	defer b.Release()
	for _, id := range seq64(from, n) {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("r%d", id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), name)
	arrowtest.WriteFile(t, path, rec)
	return path
}

// csvIDs parses print --format csv output of one id column.
func csvIDs(t testing.TB, out string) []int64 {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || lines[0] != "id" {
		t.Fatalf("print --format csv: no id header: %.200s", out)
	}
	var ids []int64
	for _, l := range lines[1:] {
		v, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			t.Fatalf("print --format csv: %q: %v", l, err)
		}
		ids = append(ids, v)
	}
	return ids
}

// The store of noConditionalWrites really accepts a second create (so TestS3Refusals' refusal
// is the one a real such store gets), and storage.Open's probe names it: checked with the SDK
// and with the bucket store directly, without the CLI.
func TestS3NoConditionalWritesStore(t *testing.T) {
	j := newS3Job(t)
	noCond, overwrites := noConditionalWrites(t, j.srv)
	ctx := context.Background()
	c := noCond.Client()
	for i, body := range []string{"first", "second"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(j.bucket), Key: aws.String("k"),
			Body: strings.NewReader(body), IfNoneMatch: aws.String("*")}); err != nil {
			t.Fatalf("create %d of k through the store without conditional writes: %v", i+1, err)
		}
	}
	if got := string(j.get("k")); got != "second" || *overwrites != 1 {
		t.Fatalf("after two creates k holds %q with %d overwrites, want \"second\" and 1", got, *overwrites)
	}
	// The real server refuses the same second create.
	_, err := j.srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(j.bucket), Key: aws.String("k"),
		Body: strings.NewReader("third"), IfNoneMatch: aws.String("*")})
	if err == nil || !strings.Contains(err.Error(), "PreconditionFailed") {
		t.Fatalf("the server itself accepted a create of an existing object: %v", err)
	}
	st, err := storage.Open(ctx, "s3://"+j.bucket+"/p?endpoint="+noCond.Endpoint, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = st.PutIfAbsent(ctx, "x", []byte("1"))
	if !errors.Is(err, storage.ErrNoConditionalWrite) {
		t.Fatalf("put-if-absent on a store without conditional writes: %v, want storage.ErrNoConditionalWrite", err)
	}
	t.Logf("refused: %v", err)
}

// Two write-delta processes of one flow on one s3:// table, each with its own checkpoint and
// working directory (two hosts, as far as the table can tell): while the first runs, the
// second is refused (the flow's lease on the bucket, or its binding to the first checkpoint),
// with exit 1 or 2 and a message naming the flow; the table keeps each epoch once.
func TestS3SameFlowTwoWriters(t *testing.T) {
	j := newS3Job(t)
	table := j.url("t")
	start := func(name string) (*exec.Cmd, string) {
		dir := filepath.Join(j.dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		log := filepath.Join(j.dir, name+".log")
		f, err := os.Create(log)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd := exec.Command("bash", "-o", "pipefail", "-c",
			`"$SK" generate --schema 'id bigint' --gen 'id=sequence(0)' --rows 100000 --max-records-per-epoch 20 --epoch-interval 1h --rate 100 --progress off | "$SK" write-delta `+table+` --flow f --progress off`)
		cmd.Dir = dir
		cmd.Env = append(append(baseEnv(), "SK="+j.bin, "STREAMKIT_CHECKPOINT="+j.url("ckpt-"+name)), j.env...)
		cmd.Stdout, cmd.Stderr = f, f
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait(); noLocalURLDirs(t, name, dir) })
		return cmd, log
	}
	first, firstLog := start("first")
	deadline := time.Now().Add(time.Minute)
	for len(j.keys("t/_delta_log/00000000000000000001.json")) == 0 {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(firstLog)
			t.Fatalf("the first writer committed no version 1 within a minute:\n%s", tail(string(b), 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The flow's lease (and its holder's record) are on the bucket, not on the writer's disk.
	if held := j.keys("t/_streamkit/flows/"); len(held) == 0 {
		t.Errorf("the running writer of flow f holds nothing under %s/_streamkit/flows/ on the bucket (no lease: a writer elsewhere is not kept out)", table)
	}
	second, secondLog := start("second")
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		syscall.Kill(-second.Process.Pid, syscall.SIGKILL)
		<-done
		b, _ := os.ReadFile(secondLog)
		t.Fatalf("a second write-delta of flow f on %s (another checkpoint and working directory) still runs after 30 s beside the first: the flow is not held on the bucket\n%s", table, tail(string(b), 20))
	}
	b, _ := os.ReadFile(secondLog)
	if code := second.ProcessState.ExitCode(); (code != 1 && code != 2) || !strings.Contains(string(b), `"f"`) && !strings.Contains(string(b), "flow f") {
		t.Fatalf("second writer of flow f: exit %d, want 1 or 2 with a message naming the flow:\n%s", code, tail(string(b), 20))
	}
	noSecret(t, "second writer", string(b), j.srv.SecretKey)
	t.Logf("second writer refused: %s", tail(string(b), 2))
	syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
	first.Wait()
	log := j.readLog("t")
	replay(t, table, log)
	eps := flowEpochs(log)["f"]
	checkFlow(t, table, "f", eps, 1, eps[len(eps)-1])
}
