// Package e2e_test is the main job of issue #10, end to end on real data through the real
// peers: 3,000,000 US flights (vega-datasets flights-3m.parquet) produced into the Kafka broker
// of scripts/kafka.sh as JSON values keyed by origin over 4 partitions, each value carrying the
// flight's row number in the file as id, 1% of the records delivered twice; then
//
//	read-kafka --until now --value-format json --value-schema … | dedup --key value.id
//	  | keyby value.origin | window tumbling --size 1h --time value.date --agg 'count, avg(value.delay), max(value.delay)'
//	  | write-delta TABLE
//
// with $STREAMKIT_CHECKPOINT set, three times:
//
//   - one-shot: one available-now run over the whole topic, then the closing run (below);
//   - cron: the input cut into 10 parts produced one after another, an available-now run
//     after each, then the closing run; the table equals the one-shot table;
//   - chaos: the one-shot job (with --max-records-per-epoch records/200, so that the data lasts
//     for the kills) while a driver kill -9s a random stage at random moments (one run in four
//     within 2 s of its start: start-up, restore, replay; the others within one epoch after the
//     source cut its first new epoch) and restarts the pipeline, STREAMKIT_E2E_KILLS times
//     (default 30), plus one Ctrl-C (SIGINT to the process group) and restart; and a second flow
//     into the same table: a backfill of the first month's windows from a Parquet file with
//     --dedup-cols origin,window_start and an overlap check, retried every 1-3 s like a cron
//     job; then closing runs, up to three of them killed as well, and one more after the
//     completed one; the table equals the one-shot table, without a duplicate.
//
// Every table is read by delta-rs and by DuckDB's delta extension (both must return the same
// rows) and every row must equal DuckDB's own GROUP BY over the Parquet file.
//
// Open windows. Available-now runs end with end=pause, so the window stage keeps the windows
// its watermark has not passed for the next run. The comparison needs all of them: each flow
// ends with a closing run of the same job with `read-kafka --end final` (the input is complete:
// every window fires). After the one-shot's available-now run the table must hold only rows that
// equal their expected row (a subset), and after the closing run exactly the expected rows.
// The source of a final run sends the end-of-time watermark before its last barrier, so the
// windows fire inside a committed epoch: closing runs are killed too, and a closing run after a
// completed one must add nothing. (After a final run the watermark stays at the end of time: a
// later record of the same checkpoint would be late.)
//
// Watermark delay. The window's watermark is max event time seen − --watermark-delay, over all
// rows of the stream. read-kafka reads the four partitions of a backlog unevenly (each fetch
// takes up to 8 MiB per partition, and the partitions hold different numbers of flights per
// day), so on this data the event times it delivers run up to ~95 days apart; with a small
// delay most rows are late and go to --late-output. Nothing in the toolkit yet keeps one
// watermark per Kafka partition (DESIGN.md §4: "the minimum over source partitions"), so the job
// uses --watermark-delay 8784h (a year, longer than the data): no row can be late (asserted:
// every --late-output file stays empty), and the windows fire in the closing run. Set
// STREAMKIT_E2E_WATERMARK_DELAY to try another delay.
//
// Environment: STREAMKIT_E2E=1 runs it (make e2e); STREAMKIT_E2E_ROWS (default all 3,000,000)
// uses the first N flights; STREAMKIT_E2E_KILLS (30); STREAMKIT_E2E_SEED (the chaos driver's
// seed, logged); STREAMKIT_E2E_DIR keeps the work directory (data, checkpoints, tables, logs);
// STREAMKIT_E2E_REPORT writes the measurements as JSON; STREAMKIT_E2E_CHAOS_MINUTES (20) bounds
// the chaos run; STREAMKIT_BIN tests a prebuilt binary.
package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/state"
)

// valueSchema is the schema of the JSON values (write-kafka --value-format json of the rows of
// the prepared Parquet file).
const valueSchema = "id BIGINT, date TIMESTAMP, delay BIGINT, distance BIGINT, origin STRING, destination STRING"

const (
	partitions = 4
	cronParts  = 10
	prepSeed   = 10 // which rows are duplicated
)

type job struct {
	t       *testing.T
	bin     string
	py      string
	script  string
	flights string
	broker  string
	rows    int
	records int64
	dir     string
	prep    string
	wmDelay string
	adm     *kadm.Client
	rep     *report
}

// report collects the measurements (logged, and written to STREAMKIT_E2E_REPORT).
type report struct {
	mu          sync.Mutex
	Rows        int            `json:"flights_rows"`
	Records     int64          `json:"kafka_records"`
	Duplicates  int64          `json:"injected_duplicates"`
	Windows     int64          `json:"expected_windows"`
	Produce     *runReport     `json:"produce"`
	OneShot     *runReport     `json:"one_shot"`
	OneShotEnd  *runReport     `json:"one_shot_closing_run"`
	Cron        []*runReport   `json:"cron_runs,omitempty"`
	CronProduce []*runReport   `json:"cron_produce,omitempty"`
	CronEnd     *runReport     `json:"cron_closing_run"`
	Chaos       *chaosReport   `json:"chaos"`
	Verify      map[string]any `json:"verify"`
}

type runReport struct {
	Name         string       `json:"name"`
	WallS        float64      `json:"wall_s"`
	Records      int64        `json:"records"`
	RecordsPerS  float64      `json:"records_per_s,omitempty"`
	CPUS         float64      `json:"cpu_s"`
	CPUSPerMRec  float64      `json:"cpu_s_per_1m_records,omitempty"`
	Stages       []stageUsage `json:"stages"`
	Epochs       uint64       `json:"epochs_committed,omitempty"`
	TableVersion int64        `json:"table_version,omitempty"`
}

type killReport struct {
	Run       int     `json:"run"`
	Stage     string  `json:"stage"`
	AfterS    float64 `json:"after_s"`
	At        string  `json:"at"`
	Backlog   int64   `json:"backlog_before"`
	Committed int64   `json:"records_committed_by_run"`
	Signal    string  `json:"signal"`
}

type chaosReport struct {
	Seed          uint64         `json:"seed"`
	Runs          int            `json:"runs"`
	Kills         []killReport   `json:"kills"`
	KillsByStage  map[string]int `json:"kills_by_stage"`
	KillsWithData int            `json:"kills_while_backlog"`
	Interrupts    int            `json:"sigint_runs"`
	ClosingKills  int            `json:"kills_in_closing_runs"`
	WallS         float64        `json:"wall_s"`
	Epochs        uint64         `json:"epochs_committed"`
	TableVersion  int64          `json:"table_version"`
	Backfill      map[string]int `json:"backfill_exit_codes"`
	End           *runReport     `json:"closing_run"`
}

func envInt(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

func TestFlights(t *testing.T) {
	if os.Getenv("STREAMKIT_E2E") != "1" {
		t.Skip("the end-to-end flights job runs with make e2e (STREAMKIT_E2E=1)")
	}
	j := &job{t: t, rep: &report{Verify: map[string]any{}}}
	j.bin = peertest.Binary(t)
	for _, tool := range []string{"read-files", "write-kafka", "read-kafka", "dedup", "keyby", "window", "write-delta", "backfill"} {
		if err := exec.Command(j.bin, tool, "--help").Run(); err != nil {
			t.Fatalf("streamkit %s is not in this build: %v", tool, err)
		}
	}
	j.py = peertest.Python(t)
	j.flights = peertest.VegaFile(t, "flights-3m.parquet")
	j.broker = peertest.Kafka(t).Plaintext
	j.script = filepath.Join(peertest.Root(t), "scripts", "e2e", "flights.py")
	j.rows = envInt(t, "STREAMKIT_E2E_ROWS", 3_000_000)
	j.wmDelay = os.Getenv("STREAMKIT_E2E_WATERMARK_DELAY")
	if j.wmDelay == "" {
		j.wmDelay = "8784h"
	}
	if d := os.Getenv("STREAMKIT_E2E_DIR"); d != "" {
		j.dir = d
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	} else {
		j.dir = t.TempDir()
	}
	j.prep = filepath.Join(j.dir, "prep")
	os.MkdirAll(filepath.Join(j.dir, "logs"), 0o755)
	t.Logf("work directory %s, binary %s, broker %s", j.dir, j.bin, j.broker)

	var prep struct {
		Rows       int    `json:"rows"`
		Records    int64  `json:"records"`
		Duplicates int64  `json:"duplicates"`
		FirstMonth int    `json:"first_month_rows"`
		MonthEnd   string `json:"first_month_end"`
	}
	j.python(&prep, "prepare", j.flights, j.prep, strconv.Itoa(j.rows), strconv.Itoa(cronParts), strconv.Itoa(prepSeed))
	j.rows, j.records = prep.Rows, prep.Records
	j.rep.Rows, j.rep.Records, j.rep.Duplicates = prep.Rows, prep.Records, prep.Duplicates
	t.Logf("prepared %d flights as %d records (%d duplicates); the first month (before %s) has %d windows",
		prep.Rows, prep.Records, prep.Duplicates, prep.MonthEnd, prep.FirstMonth)

	cl, err := kgo.NewClient(kgo.SeedBrokers(j.broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	j.adm = kadm.NewClient(cl)
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	topic, cronTopic := "e2e-flights-"+suffix, "e2e-flights-cron-"+suffix
	j.createTopic(topic)
	j.createTopic(cronTopic)
	if os.Getenv("STREAMKIT_E2E_DIR") == "" {
		defer j.adm.DeleteTopics(context.Background(), topic, cronTopic)
	}

	defer j.writeReport()
	ok := t.Run("produce", func(t *testing.T) { j.produceAll(t, topic) }) &&
		t.Run("one-shot", func(t *testing.T) { j.oneShot(t, topic) }) &&
		t.Run("cron", func(t *testing.T) { j.cron(t, cronTopic) }) &&
		t.Run("chaos", func(t *testing.T) { j.chaos(t, topic) })
	if !ok {
		t.FailNow()
	}
}

// python runs scripts/e2e/flights.py and decodes its JSON output into out.
func (j *job) python(out any, args ...string) {
	j.t.Helper()
	cmd := exec.Command(j.py, append([]string{j.script}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		j.t.Fatalf("flights.py %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if err := json.Unmarshal(b, out); err != nil {
		j.t.Fatalf("flights.py %s: %v: %s", args[0], err, b)
	}
}

func (j *job) createTopic(name string) {
	j.t.Helper()
	r, err := j.adm.CreateTopic(context.Background(), partitions, 1, nil, name)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		j.t.Fatalf("create topic %s: %v", name, err)
	}
}

// endOffsets returns the end offset of every partition of topic.
func (j *job) endOffsets(t testing.TB, topic string) map[int32]int64 {
	t.Helper()
	ends, err := j.adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

func sum(m map[int32]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// produce runs read-files FILE | write-kafka into topic (records keyed by origin, the whole
// row as the JSON value).
func (j *job) produce(t testing.TB, name, file, topic string) *runReport {
	t.Helper()
	stages := []stageSpec{
		{"read-files", []string{"read-files", file}},
		{"write-kafka", []string{"write-kafka", "-b", j.broker, "-t", topic, "--key", "origin", "--value-format", "json"}},
	}
	p := startPipeline(t, j.bin, "", filepath.Join(j.dir, "logs", name), stages)
	p.wait(t, 10*time.Minute)
	p.requireSuccess(t, name)
	return j.measure(name, p, 0)
}

func (j *job) measure(name string, p *pipeline, records int64) *runReport {
	r := &runReport{Name: name, WallS: p.wall.Seconds(), Records: records, Stages: p.usage()}
	for _, s := range r.Stages {
		r.CPUS += s.CPUS
	}
	if records > 0 {
		r.RecordsPerS = float64(records) / r.WallS
		r.CPUSPerMRec = r.CPUS / (float64(records) / 1e6)
	}
	return r
}

func (j *job) produceAll(t *testing.T, topic string) {
	t.Logf("produce:\n%s", shellLine(nil, []stageSpec{
		{"", []string{"read-files", filepath.Join(j.prep, "input.parquet")}},
		{"", []string{"write-kafka", "-b", j.broker, "-t", topic, "--key", "origin", "--value-format", "json"}},
	}))
	r := j.produce(t, "produce", filepath.Join(j.prep, "input.parquet"), topic)
	ends := j.endOffsets(t, topic)
	r.Records = sum(ends)
	r.RecordsPerS = float64(r.Records) / r.WallS
	r.CPUSPerMRec = r.CPUS / (float64(r.Records) / 1e6)
	j.rep.Produce = r
	if r.Records != j.records {
		t.Fatalf("topic %s holds %d records, want %d", topic, r.Records, j.records)
	}
	for p := int32(0); p < partitions; p++ {
		if ends[p] == 0 {
			t.Fatalf("partition %d is empty: %v", p, ends)
		}
	}
	t.Logf("produced %d records in %.1f s (%.0f records/s), partitions %v", r.Records, r.WallS, r.RecordsPerS, ends)
}

// stages returns the job for topic into table; extra are read-kafka options.
func (j *job) stages(topic, table, late string, extra ...string) []stageSpec {
	rk := []string{"read-kafka", "-b", j.broker, "-t", topic, "--until", "now", "--value-format", "json", "--value-schema", valueSchema}
	return []stageSpec{
		{"read-kafka", append(rk, extra...)},
		{"dedup", []string{"dedup", "--key", "value.id"}},
		{"keyby", []string{"keyby", "value.origin"}},
		{"window", []string{"window", "tumbling", "--size", "1h", "--time", "value.date", "--watermark-delay", j.wmDelay,
			"--agg", "count, avg(value.delay), max(value.delay)", "--late-output", late}},
		{"write-delta", []string{"write-delta", table}},
	}
}

// flow is one checkpointed job: a checkpoint root and a table.
type flow struct {
	j      *job
	name   string
	topic  string
	ckpt   string
	table  string
	runs   int
	extra  []string // read-kafka options of every run
	lates  []string
	logged bool
}

func (j *job) newFlow(name, topic string, extra ...string) *flow {
	return &flow{j: j, name: name, topic: topic, ckpt: filepath.Join(j.dir, "ckpt", name),
		table: filepath.Join(j.dir, "tables", name), extra: extra}
}

// start starts the next run of the flow; extra read-kafka options are added to the flow's.
func (f *flow) start(t testing.TB, extra ...string) *pipeline {
	t.Helper()
	f.runs++
	late := filepath.Join(f.j.dir, "logs", fmt.Sprintf("%s-%03d-late.ndjson", f.name, f.runs))
	f.lates = append(f.lates, late)
	stages := f.j.stages(f.topic, f.table, late, append(append([]string{}, f.extra...), extra...)...)
	if !f.logged {
		f.logged = true
		t.Logf("%s job:\n%s", f.name, shellLine(map[string]string{"STREAMKIT_CHECKPOINT": f.ckpt}, stages))
	}
	return startPipeline(t, f.j.bin, f.ckpt, filepath.Join(f.j.dir, "logs", fmt.Sprintf("%s-%03d", f.name, f.runs)), stages)
}

// run runs the flow once to its end; every stage must exit 0.
func (f *flow) run(t testing.TB, records int64, extra ...string) *runReport {
	t.Helper()
	p := f.start(t, extra...)
	p.wait(t, 20*time.Minute)
	p.requireSuccess(t, fmt.Sprintf("%s run %d", f.name, f.runs))
	p.checkLogs(t, fmt.Sprintf("%s run %d", f.name, f.runs))
	r := f.j.measure(fmt.Sprintf("%s run %d", f.name, f.runs), p, records)
	r.Epochs = f.epochs(t)
	return r
}

// epochs returns the newest epoch write-delta committed.
func (f *flow) epochs(t testing.TB) uint64 {
	c, err := state.Committed(filepath.Join(f.ckpt, "write-delta"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newestOffsets returns the newest epoch in read-kafka's offsets WAL (0 when none).
func (f *flow) newestOffsets(t testing.TB) uint64 {
	eps, err := state.Epochs(filepath.Join(f.ckpt, "read-kafka"), state.OffsetsDir)
	if err != nil || len(eps) == 0 {
		return 0
	}
	return eps[len(eps)-1]
}

// position returns the records before read-kafka's committed position (0 without one).
func (f *flow) position(t testing.TB) int64 {
	dir := filepath.Join(f.ckpt, "read-kafka")
	c, err := state.Committed(dir)
	if err != nil || c == 0 {
		return 0
	}
	b, err := state.ReadOffsets(dir, c)
	if err != nil {
		t.Fatalf("offsets of committed epoch %d: %v", c, err)
	}
	var pos map[string]map[string]json.RawMessage // partition → offset, and the topic's "topicId"
	if err := json.Unmarshal(b, &pos); err != nil {
		t.Fatalf("offsets %s: %v", b, err)
	}
	var n int64
	for _, ps := range pos {
		for p, raw := range ps {
			if p == "topicId" {
				continue
			}
			var o int64
			if err := json.Unmarshal(raw, &o); err != nil {
				t.Fatalf("offsets %s: partition %s: %v", b, p, err)
			}
			n += o
		}
	}
	return n
}

// checkNoLate fails t when a window stage wrote a late row.
func (f *flow) checkNoLate(t testing.TB) {
	t.Helper()
	for _, l := range f.lates {
		if fi, err := os.Stat(l); err == nil && fi.Size() > 0 {
			t.Fatalf("late rows in %s (%d bytes): the watermark delay %s is too small", l, fi.Size(), f.j.wmDelay)
		}
	}
}

type verifyResult struct {
	Version       int64      `json:"version"`
	DeltaRSRows   int64      `json:"deltars_rows"`
	DuckDBRows    int64      `json:"duckdb_rows"`
	ExpectedRows  int64      `json:"expected_rows"`
	ReadersDiffer int64      `json:"readers_differ"`
	Duplicates    int64      `json:"duplicates"`
	Missing       int64      `json:"missing"`
	Extra         int64      `json:"extra"`
	Mismatched    int64      `json:"mismatched"`
	Columns       []string   `json:"columns"`
	Examples      [][]string `json:"examples"`
}

// verify reads the flow's table with delta-rs and DuckDB and compares it with DuckDB's GROUP BY
// over the flights file; complete: every expected row must be there (else only a subset).
func (f *flow) verify(t testing.TB, complete bool) verifyResult {
	t.Helper()
	var v verifyResult
	f.j.python(&v, "verify", f.table, f.j.flights, strconv.Itoa(f.j.rows))
	t.Logf("%s table: delta-rs %d rows, DuckDB %d rows, expected %d; missing %d, extra %d, mismatched %d, duplicates %d, readers differ %d (version %d)",
		f.name, v.DeltaRSRows, v.DuckDBRows, v.ExpectedRows, v.Missing, v.Extra, v.Mismatched, v.Duplicates, v.ReadersDiffer, v.Version)
	bad := v.ReadersDiffer != 0 || v.Duplicates != 0 || v.Extra != 0 || v.Mismatched != 0 || v.DeltaRSRows != v.DuckDBRows
	if complete {
		bad = bad || v.Missing != 0 || v.DuckDBRows != v.ExpectedRows
	}
	if bad {
		t.Fatalf("%s table differs from DuckDB's GROUP BY (complete=%v): %+v", f.name, complete, v)
	}
	f.j.rep.mu.Lock()
	f.j.rep.Verify[f.name] = v
	f.j.rep.Windows = v.ExpectedRows
	f.j.rep.mu.Unlock()
	return v
}

// same fails t unless the two tables hold the same rows (as multisets).
func (j *job) same(t testing.TB, a, b *flow) {
	t.Helper()
	var r struct{ A, B, OnlyA, OnlyB int64 }
	var raw map[string]int64
	j.python(&raw, "same", a.table, b.table)
	r.A, r.B, r.OnlyA, r.OnlyB = raw["a"], raw["b"], raw["only_a"], raw["only_b"]
	if r.OnlyA != 0 || r.OnlyB != 0 || r.A != r.B {
		t.Fatalf("%s and %s tables differ: %+v", a.name, b.name, r)
	}
	t.Logf("%s table = %s table (%d rows)", b.name, a.name, r.B)
}

var reference *flow // the one-shot flow, the other tables must equal its table

func (j *job) oneShot(t *testing.T, topic string) {
	f := j.newFlow("one-shot", topic)
	r := f.run(t, j.records)
	f.checkNoLate(t)
	j.rep.OneShot = r
	t.Logf("available-now run: %d records in %.1f s = %.0f records/s; %.1f CPU-s (%.2f CPU-s per 1M records); %d epochs",
		j.records, r.WallS, r.RecordsPerS, r.CPUS, r.CPUSPerMRec, r.Epochs)
	logStages(t, r)
	f.verify(t, false)
	end := f.run(t, 0, "--end", "final")
	f.checkNoLate(t)
	j.rep.OneShotEnd = end
	t.Logf("closing run (--end final): %.1f s, %.1f CPU-s; %d epochs committed in all", end.WallS, end.CPUS, end.Epochs)
	logStages(t, end)
	v := f.verify(t, true)
	end.TableVersion = v.Version
	reference = f
}

func logStages(t testing.TB, r *runReport) {
	t.Helper()
	for _, s := range r.Stages {
		t.Logf("  %-12s %-10s cpu %6.2f s (user %6.2f, sys %5.2f)  peak RSS %7.1f MiB", s.Stage, s.Status, s.CPUS, s.UserS, s.SysS, s.MaxRSSM)
	}
}

func (j *job) cron(t *testing.T, topic string) {
	f := j.newFlow("cron", topic)
	var before int64
	for k := 0; k < cronParts; k++ {
		part := filepath.Join(j.prep, fmt.Sprintf("part-%02d.parquet", k))
		pr := j.produce(t, fmt.Sprintf("cron-produce-%02d", k), part, topic)
		n := sum(j.endOffsets(t, topic))
		pr.Records = n - before
		j.rep.CronProduce = append(j.rep.CronProduce, pr)
		r := f.run(t, n-before)
		j.rep.Cron = append(j.rep.Cron, r)
		if got := f.position(t); got != n {
			t.Fatalf("cron run %d: read-kafka committed %d records, the topic holds %d", k+1, got, n)
		}
		t.Logf("part %d: %d records produced in %.1f s, run %.1f s, epoch %d", k, n-before, pr.WallS, r.WallS, r.Epochs)
		before = n
	}
	f.checkNoLate(t)
	f.verify(t, false)
	end := f.run(t, 0, "--end", "final")
	f.checkNoLate(t)
	j.rep.CronEnd = end
	f.verify(t, true)
	j.same(t, reference, f)
}

// chaos runs the one-shot job again, from scratch, while killing a random stage with SIGKILL at
// random moments and restarting; one run is interrupted with SIGINT to the process group
// instead. A backfill flow retries meanwhile.
func (j *job) chaos(t *testing.T, topic string) {
	kills := envInt(t, "STREAMKIT_E2E_KILLS", 30)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("STREAMKIT_E2E_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("STREAMKIT_E2E_SEED: %v", err)
		}
		seed = n
	}
	rnd := rand.New(rand.NewPCG(seed, 7))
	// Epochs of records/200 records (--max-records-per-epoch), so that whatever the size about
	// 200 epochs carry the data and a run killed after its first new epoch still moves on.
	epochRecords := max(j.records/200, 5000)
	epochDur := time.Duration(float64(time.Second) * float64(epochRecords) / j.rep.OneShot.RecordsPerS)
	t.Logf("chaos: seed %d (STREAMKIT_E2E_SEED), %d kills, epochs of %d records (~%s)", seed, kills, epochRecords, epochDur)
	f := j.newFlow("chaos", topic, "--max-records-per-epoch", strconv.FormatInt(epochRecords, 10))
	rep := &chaosReport{Seed: seed, KillsByStage: map[string]int{}, Backfill: map[string]int{}}
	j.rep.Chaos = rep

	// The second flow: a cron-like loop retrying the backfill of the first month's windows.
	stopBackfill := make(chan struct{})
	backfillDone := make(chan error, 1)
	var bfMu sync.Mutex
	bfArgs := []string{"backfill", "--from", filepath.Join(j.prep, "first-month.parquet"), "--to", f.table,
		"--flow", "e2e-backfill-first-month", "--dedup-cols", "origin,window_start",
		"--overlap-col", "window_start", "--min-overlap", "24h", "--progress", "off"}
	t.Logf("backfill flow (retried every 1-3 s):\nstreamkit %s", strings.Join(bfArgs, " "))
	backfill := func() (int, string) {
		cmd := exec.Command(j.bin, bfArgs...)
		cmd.Env = baseEnv()
		out, _ := cmd.CombinedOutput()
		code := cmd.ProcessState.ExitCode()
		bfMu.Lock()
		rep.Backfill[strconv.Itoa(code)]++
		bfMu.Unlock()
		return code, string(out)
	}
	go func() {
		brnd := rand.New(rand.NewPCG(seed, 11))
		for {
			select {
			case <-stopBackfill:
				backfillDone <- nil
				return
			case <-time.After(time.Duration(1000+brnd.IntN(2000)) * time.Millisecond):
			}
			code, out := backfill()
			if code != 0 && code != 3 {
				backfillDone <- fmt.Errorf("backfill exited %d: %s", code, out)
				return
			}
		}
	}()

	start := time.Now()
	deadline := start.Add(time.Duration(envInt(t, "STREAMKIT_E2E_CHAOS_MINUTES", 20)) * time.Minute)
	sigint := false
	killed := 0
	stageNames := []string{"read-kafka", "dedup", "keyby", "window", "write-delta"}
	for killed < kills || !sigint {
		if time.Now().After(deadline) {
			t.Fatalf("chaos: only %d kills after %s", killed, time.Since(start))
		}
		select {
		case err := <-backfillDone:
			t.Fatalf("backfill flow: %v", err)
		default:
		}
		backlog := j.records - f.position(t)
		srcEpoch := f.newestOffsets(t)
		interrupt := !sigint && killed >= kills/2
		victim := rnd.IntN(len(stageNames))
		// A random moment: one run in four from its start (start-up, restore, replay),
		// otherwise after the source cut its first new epoch of this run (records flowing
		// through every stage, checkpoints and commits under way), up to one epoch later (the
		// replayed epochs before it already move the run on).
		fromStart := rnd.IntN(4) == 0
		var delay time.Duration
		if fromStart {
			delay = time.Duration(rnd.Int64N(int64(2 * time.Second)))
		} else {
			delay = time.Duration(rnd.Int64N(int64(epochDur) + 1))
		}
		p := f.start(t)
		at := "from the start"
		if !fromStart {
			at = "after the first new epoch"
			for !p.finished() && f.newestOffsets(t) <= srcEpoch {
				time.Sleep(5 * time.Millisecond)
			}
			delay += time.Since(p.start)
		}
		select {
		case <-p.done:
		case <-time.After(delay - time.Since(p.start)):
			if interrupt {
				p.interrupt()
			} else {
				p.killStage(victim)
			}
		}
		p.wait(t, 3*time.Minute)
		p.checkLogs(t, fmt.Sprintf("chaos run %d", f.runs))
		committed := j.records - backlog
		progress := f.position(t) - committed
		switch {
		case interrupt:
			// Ctrl-C: every stage finishes the epoch, commits, and exits 130 (or 0 when the
			// end of the input came first).
			landed := false
			for i := range p.procs {
				switch p.procs[i].cmd.ProcessState.ExitCode() {
				case 130:
					landed = true
				case 0:
				default:
					t.Fatalf("run %d after SIGINT: %s ended with %s\n%s", f.runs, p.procs[i].name, p.status(i), p.logs())
				}
			}
			if !landed {
				t.Logf("run %d: completed in %s before the SIGINT, %d records committed", f.runs, p.wall, progress)
				continue
			}
			sigint = true
			rep.Interrupts++
			rep.Kills = append(rep.Kills, killReport{Run: f.runs, Stage: "all (process group)", AfterS: delay.Seconds(), At: at, Backlog: backlog, Committed: progress, Signal: "SIGINT"})
			t.Logf("run %d: SIGINT to the process group after %s (%s): exits %v, %d records committed", f.runs, delay.Round(time.Millisecond), at, p.exitCodes(), progress)
		case p.killedBy(victim, syscall.SIGKILL):
			killed++
			rep.KillsByStage[stageNames[victim]]++
			if backlog > 0 {
				rep.KillsWithData++
			}
			rep.Kills = append(rep.Kills, killReport{Run: f.runs, Stage: stageNames[victim], AfterS: delay.Seconds(), At: at, Backlog: backlog, Committed: progress, Signal: "SIGKILL"})
			t.Logf("run %d: kill -9 %s after %s (%s; backlog %d): exits %v, %d records committed", f.runs, stageNames[victim], delay.Round(time.Millisecond), at, backlog, p.exitCodes(), progress)
		default:
			// The run ended before the signal (or the signal hit a stage on its way out): it
			// must have ended well.
			p.requireSuccess(t, fmt.Sprintf("chaos run %d", f.runs))
			t.Logf("run %d: completed in %s before the signal, %d records committed", f.runs, p.wall, progress)
		}
	}
	// The closing runs: the rest of the topic, then end=final, so that every window fires. Up
	// to three of them are killed at a random moment of their expected duration too (reading
	// the rest, firing the windows, committing them), until one completes; then one more
	// closing run must find nothing left to fire. The backfill loop goes on meanwhile: it may
	// run as soon as the live rows are committed.
	var end *runReport
	for attempt := 0; end == nil; attempt++ {
		if time.Now().After(deadline) {
			t.Fatalf("chaos: no closing run completed after %s", time.Since(start))
		}
		backlog := j.records - f.position(t)
		est := time.Duration(float64(time.Second)*(float64(backlog)/j.rep.OneShot.RecordsPerS+j.rep.OneShotEnd.WallS)) + time.Second
		delay := time.Duration(rnd.Int64N(int64(est)))
		victim := rnd.IntN(len(stageNames))
		p := f.start(t, "--end", "final")
		if attempt < 3 {
			select {
			case <-p.done:
			case <-time.After(delay):
				p.killStage(victim)
			}
		}
		p.wait(t, 10*time.Minute)
		p.checkLogs(t, fmt.Sprintf("chaos closing run %d", f.runs))
		progress := f.position(t) - (j.records - backlog)
		if attempt < 3 && p.killedBy(victim, syscall.SIGKILL) {
			killed++
			rep.ClosingKills++
			rep.KillsByStage[stageNames[victim]]++
			rep.Kills = append(rep.Kills, killReport{Run: f.runs, Stage: stageNames[victim], AfterS: delay.Seconds(), At: "closing run (--end final)", Backlog: backlog, Committed: progress, Signal: "SIGKILL"})
			t.Logf("run %d (closing): kill -9 %s after %s (backlog %d): exits %v, %d records committed", f.runs, stageNames[victim], delay.Round(time.Millisecond), backlog, p.exitCodes(), progress)
			continue
		}
		p.requireSuccess(t, fmt.Sprintf("chaos closing run %d", f.runs))
		end = j.measure(fmt.Sprintf("chaos run %d", f.runs), p, backlog)
		end.Epochs = f.epochs(t)
		t.Logf("run %d (closing): completed in %s, %d records committed", f.runs, p.wall.Round(time.Millisecond), progress)
	}
	f.checkNoLate(t)
	f.verify(t, true)
	// A closing run after a completed one: nothing is left to fire, nothing is written twice.
	f.run(t, 0, "--end", "final")
	close(stopBackfill)
	if err := <-backfillDone; err != nil {
		t.Fatalf("backfill flow: %v", err)
	}
	rep.End = end
	rep.Runs = f.runs
	rep.WallS = time.Since(start).Seconds()
	rep.Epochs = f.epochs(t)
	f.checkNoLate(t)
	if got := f.position(t); got != j.records {
		t.Fatalf("read-kafka committed %d records, the topic holds %d", got, j.records)
	}
	v := f.verify(t, true)
	rep.TableVersion = v.Version
	j.same(t, reference, f)

	// Now the live rows cover the first month: the backfill runs (unless the loop ran it
	// already), and skips every row; then it is done.
	code, out := backfill()
	if code != 0 {
		t.Fatalf("backfill after the closing run exited %d: %s", code, out)
	}
	if code, out = backfill(); code != 0 || !strings.Contains(out, "already done") {
		t.Fatalf("second backfill: exit %d: %s", code, out)
	}
	v = f.verify(t, true)
	rep.TableVersion = v.Version
	j.same(t, reference, f)
	codes := make([]string, 0, len(rep.Backfill))
	for c, n := range rep.Backfill {
		codes = append(codes, fmt.Sprintf("exit %s ×%d", c, n))
	}
	sort.Strings(codes)
	t.Logf("chaos: %d runs, %d kills (%v; %d while records were waiting, %d in closing runs), %d SIGINT, %.0f s; %d epochs committed, table version %d; backfill attempts %s",
		rep.Runs, killed, rep.KillsByStage, rep.KillsWithData, rep.ClosingKills, rep.Interrupts, rep.WallS, rep.Epochs, rep.TableVersion, strings.Join(codes, ", "))
}

func (j *job) writeReport() {
	b, _ := json.MarshalIndent(j.rep, "", "  ")
	if p := os.Getenv("STREAMKIT_E2E_REPORT"); p != "" {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			j.t.Errorf("write report: %v", err)
		}
	}
	os.WriteFile(filepath.Join(j.dir, "report.json"), b, 0o644)
}
