package readkafka_test

// End-to-end tests of the streamkit binary against the real Kafka 4.x broker
// (scripts/kafka.sh) with kcat as the independent producer and consumer. They skip without the
// broker unless STREAMKIT_REQUIRE_PEERS=1.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/peertest"
)

func streamkit(t *testing.T, stdin io.Reader, args ...string) (stdout []byte, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(peertest.Binary(t), append([]string{"--progress=off"}, args...)...)
	cmd.Stdin = stdin
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err = cmd.Run()
	return so.Bytes(), se.String(), err
}

// pipeline runs `streamkit a... | streamkit b...` and returns b's stdout.
func pipeline(t *testing.T, a, b []string) ([]byte, error) {
	t.Helper()
	bin := peertest.Binary(t)
	ca := exec.Command(bin, append([]string{"--progress=off"}, a...)...)
	cb := exec.Command(bin, append([]string{"--progress=off"}, b...)...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var ea, eb, ob bytes.Buffer
	ca.Stdout, ca.Stderr = pw, &ea
	cb.Stdin, cb.Stdout, cb.Stderr = pr, &ob, &eb
	if err := ca.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cb.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	pr.Close()
	erra, errb := ca.Wait(), cb.Wait()
	if erra != nil || errb != nil {
		return ob.Bytes(), fmt.Errorf("%v: %v\n%s\n%v: %v\n%s", a[0], erra, ea.String(), b[0], errb, eb.String())
	}
	return ob.Bytes(), nil
}

func kcatRun(t *testing.T, kcat string, stdin string, args ...string) {
	t.Helper()
	cmd := exec.Command(kcat, args...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat %v: %v\n%s", args, err, out)
	}
}

// TestKcatRoundTrip: kcat (librdkafka) produces null, empty and binary keys and values and
// repeated and null-valued headers, franz-go adds records with explicit old timestamps; what
// read-kafka reads equals what kcat consumes, and read-kafka | write-kafka copies the topic so
// that kcat reads the copy byte for byte the same.
func TestKcatRoundTrip(t *testing.T) {
	c := kafkatest.NewReal(t)
	kcat := c.Real.KcatPath(t)
	brokers := strings.Join(c.Brokers, ",")
	a := c.Topic(t, "kcat-a", 1, nil)
	b := c.Topic(t, "kcat-b", 1, nil)
	kcatRun(t, kcat, "k1:v1\n:\n", "-P", "-b", brokers, "-t", a, "-p", "0", "-K:")
	kcatRun(t, kcat, ":\nnullkey-not:\n", "-P", "-b", brokers, "-t", a, "-p", "0", "-K:", "-Z")
	kcatRun(t, kcat, "\xff\xfe\x00k:\x80bin\x00ary\n", "-P", "-b", brokers, "-t", a, "-p", "0", "-K:", "-H", "a=1", "-H", "a=2", "-H", "n", "-H", "e=")
	old := time.Date(2001, 2, 3, 4, 5, 6, 789e6, time.UTC)
	c.Produce(t,
		&kgo.Record{Topic: a, Key: []byte("old"), Value: []byte("ts"), Timestamp: old,
			Headers: []kgo.RecordHeader{{Key: "x", Value: nil}, {Key: "x", Value: nil}, {Key: "y", Value: []byte("z")}}},
		&kgo.Record{Topic: a, Key: nil, Value: []byte{}, Timestamp: old.Add(time.Millisecond)},
	)
	want := kafkatest.KcatConsume(t, kcat, c.Brokers, a)
	if len(want) != 7 {
		t.Fatalf("kcat read %d records, want 7: %v", len(want), want)
	}
	stdout, stderr, err := streamkit(t, nil, "read-kafka", "-b", brokers, "-t", a, "--until", "now")
	if err != nil {
		t.Fatalf("read-kafka: %v\n%s", err, stderr)
	}
	got := kafkatest.Decode(t, bytes.NewReader(stdout)).Rows
	kafkatest.SortRows(got)
	if len(got) != len(want) {
		t.Fatalf("read-kafka read %d rows, kcat %d", len(got), len(want))
	}
	for i := range want {
		if err := kafkatest.SameRow(got[i], want[i], false); err != nil {
			t.Errorf("read-kafka vs kcat, record %d: %v", i, err)
		}
	}
	if _, err := pipeline(t, []string{"read-kafka", "-b", brokers, "-t", a, "--until", "now"},
		[]string{"write-kafka", "-b", brokers, "-t", b}); err != nil {
		t.Fatal(err)
	}
	copied := kafkatest.KcatConsume(t, kcat, c.Brokers, b)
	if len(copied) != len(want) {
		t.Fatalf("kcat read %d records from the copy, want %d", len(copied), len(want))
	}
	for i := range want {
		if err := kafkatest.SameRow(copied[i], want[i], false); err != nil {
			t.Errorf("copy vs original (kcat), record %d: %v", i, err)
		}
	}
}

// printed is one run's `print --format json --show-control` output, split into epochs.
type printed struct {
	epochs map[uint64][]string // epoch → "partition@offset=value", sorted
	tail   int                 // rows after the last barrier (uncommitted, replayed later)
}

func parsePrinted(t *testing.T, path string) printed {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := printed{epochs: map[uint64][]string{}}
	var cur []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue // a line cut by kill -9
		}
		if ctl, ok := m["_control"]; ok {
			if ctl == "barrier" {
				n := uint64(m["epoch"].(float64))
				sort.Strings(cur)
				if prev, ok := p.epochs[n]; ok && fmt.Sprint(prev) != fmt.Sprint(cur) {
					t.Fatalf("%s: epoch %d printed twice with different rows", path, n)
				}
				p.epochs[n] = cur
				cur = nil
			}
			continue
		}
		v, _ := base64.StdEncoding.DecodeString(m["value"].(string))
		cur = append(cur, fmt.Sprintf("%v@%v=%s", m["partition"], m["offset"], v))
	}
	p.tail = len(cur)
	return p
}

// produceSlowly writes values 0..total-1 round-robin over two partitions in small batches
// and closes the returned channel when done.
func produceSlowly(t *testing.T, c *kafkatest.Cluster, topic string, total int, wg *sync.WaitGroup) <-chan struct{} {
	produced := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(produced)
		for i := 0; i < total; i += 100 {
			var recs []*kgo.Record
			for j := i; j < i+100; j++ {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(j % 2), Key: []byte(fmt.Sprint(j)), Value: []byte(fmt.Sprint(j))})
			}
			if err := c.Client.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			time.Sleep(30 * time.Millisecond)
		}
	}()
	return produced
}

// killLoop runs `read-kafka | downstream` repeatedly while the producer writes, kill -9-ing
// read-kafka or the downstream stage (alternately) at random moments, and finally drains with
// --until now. stdout(round) receives the downstream's output. It returns the rounds run.
func killLoop(t *testing.T, c *kafkatest.Cluster, topic, root string, produced <-chan struct{}, downstream []string, stdout func(round int) io.WriteCloser) (rounds, kills int) {
	bin := peertest.Binary(t)
	brokers := strings.Join(c.Brokers, ",")
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for round := 0; ; round++ {
		final := false
		select {
		case <-produced:
			final = kills >= 4
		default:
		}
		until := "never"
		if final {
			until = "now"
		}
		of := stdout(round)
		rk := exec.Command(bin, "--progress=off", "read-kafka", "-b", brokers, "-t", topic, "--until", until,
			"--checkpoint", filepath.Join(root, "read-kafka"), "--epoch-interval", "150ms", "--batch-rows", "500")
		ds := exec.Command(bin, append([]string{"--progress=off"}, downstream...)...)
		p, w, _ := os.Pipe()
		var erk, eds bytes.Buffer
		rk.Stdout, rk.Stderr = w, &erk
		ds.Stdin, ds.Stdout, ds.Stderr = p, of, &eds
		if err := rk.Start(); err != nil {
			t.Fatal(err)
		}
		if err := ds.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		p.Close()
		if final {
			e1, e2 := rk.Wait(), ds.Wait()
			of.Close()
			if e1 != nil || e2 != nil {
				t.Fatalf("final run: read-kafka %v\n%s\n%s %v\n%s", e1, erk.String(), downstream[0], e2, eds.String())
			}
			return round + 1, kills
		}
		time.Sleep(time.Duration(300+rng.Intn(900)) * time.Millisecond)
		victim, other := rk, ds
		if round%2 == 1 {
			victim, other = ds, rk
		}
		victim.Process.Kill()
		victim.Wait()
		kills++
		done := make(chan struct{})
		go func() { other.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			// An idle read-kafka notices a dead reader only at its next write: stop it.
			other.Process.Kill()
			<-done
		}
		of.Close()
		if round > 40 {
			t.Fatal("too many rounds")
		}
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// TestKill9ExactlyOnce: read-kafka | print --checkpoint, while a producer writes; kill -9 of
// either process at random moments, restart, and finally drain with --until now. Every epoch
// printed more than once is identical (a replay), and every record belongs to exactly one
// epoch: exactly once per committed epoch, nothing lost.
func TestKill9ExactlyOnce(t *testing.T) {
	c := kafkatest.NewReal(t)
	topic := c.Topic(t, "kill9", 2, nil)
	const total = 20000
	var wg sync.WaitGroup
	defer wg.Wait()
	produced := produceSlowly(t, c, topic, total, &wg)
	root := kafkatest.TempDir(t)
	var outs []string
	rounds, kills := killLoop(t, c, topic, root, produced,
		[]string{"print", "--format", "json", "--show-control", "--checkpoint", filepath.Join(root, "print")},
		func(round int) io.WriteCloser {
			out := filepath.Join(root, fmt.Sprintf("out-%02d.jsonl", round))
			outs = append(outs, out)
			f, err := os.Create(out)
			if err != nil {
				t.Fatal(err)
			}
			return f
		})
	epochOf := map[string]uint64{}
	replayed := 0
	all := map[uint64][]string{}
	for _, o := range outs {
		p := parsePrinted(t, o)
		for n, rows := range p.epochs {
			if prev, ok := all[n]; ok {
				if fmt.Sprint(prev) != fmt.Sprint(rows) {
					t.Fatalf("epoch %d differs between runs", n)
				}
				replayed++
				continue
			}
			all[n] = rows
			for _, r := range rows {
				if e, ok := epochOf[r]; ok {
					t.Fatalf("record %s in epochs %d and %d", r, e, n)
				}
				epochOf[r] = n
			}
		}
	}
	if len(epochOf) != total {
		t.Fatalf("%d distinct records in committed epochs, want %d", len(epochOf), total)
	}
	values := map[string]bool{}
	for r := range epochOf {
		values[r[strings.IndexByte(r, '=')+1:]] = true
	}
	for i := 0; i < total; i++ {
		if !values[fmt.Sprint(i)] {
			t.Fatalf("record %d missing", i)
		}
	}
	t.Logf("%d rounds, %d kills, %d epochs, %d epochs printed again after a kill (identical)", rounds, kills, len(all), replayed)
}

// TestKill9Transactional: read-kafka | write-kafka --transactional-id with kill -9 of either
// stage; a read_committed consumer of the output sees every record exactly once.
func TestKill9Transactional(t *testing.T) {
	c := kafkatest.NewReal(t)
	in := c.Topic(t, "kill9tx-in", 2, nil)
	out := c.Topic(t, "kill9tx-out", 2, nil)
	const total = 20000
	var wg sync.WaitGroup
	defer wg.Wait()
	produced := produceSlowly(t, c, in, total, &wg)
	root := kafkatest.TempDir(t)
	rounds, kills := killLoop(t, c, in, root, produced,
		[]string{"write-kafka", "-b", strings.Join(c.Brokers, ","), "-t", out, "--transactional-id", "tx-" + out,
			"--checkpoint", filepath.Join(root, "write-kafka")},
		func(int) io.WriteCloser { return nopCloser{io.Discard} })
	committed := c.Consume(t, out, false)
	seen := map[string]int{}
	for _, r := range committed {
		seen[string(r.Value)]++
	}
	dups := 0
	for i := 0; i < total; i++ {
		switch n := seen[fmt.Sprint(i)]; {
		case n == 0:
			t.Fatalf("record %d missing from the output", i)
		case n > 1:
			dups++
		}
	}
	if dups > 0 || len(committed) != total {
		t.Fatalf("%d records duplicated; %d records read, want %d", dups, len(committed), total)
	}
	all := c.Consume(t, out, true)
	t.Logf("%d rounds, %d kills; read_committed %d records (exactly once), read_uncommitted %d (aborted replays included)",
		rounds, kills, len(committed), len(all))
}

// TestSecurity: SCRAM-SHA-256/512 on the SASL listener and mTLS on the SSL listener, for
// read-kafka and write-kafka; a wrong password fails fast, clearly, without the secret.
func TestSecurity(t *testing.T) {
	c := kafkatest.NewReal(t)
	b := c.Real
	if b.SASL == "" || b.SSL == "" {
		t.Skip("broker without SASL/SSL listeners")
	}
	topic := c.Topic(t, "secure", 1, nil)
	c.Produce(t, &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte("v")})
	pw, err := os.ReadFile(b.SASLPasswordFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		stdout, stderr, err := streamkit(t, nil, "read-kafka", "-b", b.SASL, "-t", topic, "--until", "now",
			"--sasl-mechanism", mech, "--sasl-user", b.SASLUser, "--sasl-password-file", b.SASLPasswordFile)
		if err != nil {
			t.Fatalf("%s: %v\n%s", mech, err, stderr)
		}
		if rows := kafkatest.Decode(t, bytes.NewReader(stdout)).Rows; len(rows) != 1 {
			t.Fatalf("%s: %d rows", mech, len(rows))
		}
		if strings.Contains(stderr, string(pw)) {
			t.Fatalf("%s: the password appears on stderr", mech)
		}
	}
	// Password from the environment; write-kafka over SCRAM.
	cmd := exec.Command(peertest.Binary(t), "--progress=off", "read-kafka", "-b", b.SASL, "-t", topic, "--until", "now",
		"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", b.SASLUser)
	cmd.Env = append(os.Environ(), "STREAMKIT_KAFKA_PASSWORD="+string(pw))
	in, err := cmd.Output()
	if err != nil {
		t.Fatalf("password from env: %v", err)
	}
	out := c.Topic(t, "secure-out", 1, nil)
	if _, stderr, err := streamkit(t, bytes.NewReader(in), "write-kafka", "-b", b.SASL, "-t", out,
		"--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", b.SASLUser, "--sasl-password-file", b.SASLPasswordFile); err != nil {
		t.Fatalf("write-kafka over SCRAM: %v\n%s", err, stderr)
	}
	if got := c.Consume(t, out, false); len(got) != 1 || string(got[0].Value) != "v" {
		t.Fatalf("write-kafka over SCRAM wrote %v", got)
	}
	// mTLS.
	stdout, stderr, err := streamkit(t, nil, "read-kafka", "-b", b.SSL, "-t", topic, "--until", "now",
		"--tls-ca", b.CA, "--tls-cert", b.ClientCert, "--tls-key", b.ClientKey)
	if err != nil {
		t.Fatalf("mTLS: %v\n%s", err, stderr)
	}
	if rows := kafkatest.Decode(t, bytes.NewReader(stdout)).Rows; len(rows) != 1 {
		t.Fatalf("mTLS: %d rows", len(rows))
	}
	if _, stderr, err := streamkit(t, bytes.NewReader(in), "write-kafka", "-b", b.SSL, "-t", out,
		"--tls-ca", b.CA, "--tls-cert", b.ClientCert, "--tls-key", b.ClientKey); err != nil {
		t.Fatalf("write-kafka over mTLS: %v\n%s", err, stderr)
	}
	// mTLS without a client certificate is refused.
	start := time.Now()
	_, stderr, err = streamkit(t, nil, "read-kafka", "-b", b.SSL, "-t", topic, "--until", "now", "--tls-ca", b.CA)
	if err == nil {
		t.Fatal("SSL listener without a client certificate: read-kafka succeeded")
	}
	t.Logf("no client certificate (%s): %s", time.Since(start).Round(time.Millisecond), lastLine(stderr))
	// Wrong password: fails fast, says so, never prints either secret.
	wrong := filepath.Join(t.TempDir(), "wrong")
	const secret = "not-the-password-3f9a"
	os.WriteFile(wrong, []byte(secret+"\n"), 0o600)
	start = time.Now()
	_, stderr, err = streamkit(t, nil, "read-kafka", "-b", b.SASL, "-t", topic, "--until", "now",
		"--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", b.SASLUser, "--sasl-password-file", wrong)
	took := time.Since(start)
	if err == nil {
		t.Fatal("wrong password: read-kafka succeeded")
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("wrong password: exit %v, want 1", err)
	}
	if took > 15*time.Second {
		t.Errorf("wrong password took %s to fail", took)
	}
	if !strings.Contains(stderr, "authentication failed") || !strings.Contains(stderr, "--sasl-password-file "+wrong) {
		t.Errorf("wrong password: unclear message:\n%s", stderr)
	}
	if strings.Contains(stderr, secret) || strings.Contains(stderr, string(pw)) {
		t.Errorf("wrong password: a secret appears on stderr:\n%s", stderr)
	}
	t.Logf("wrong password failed in %s: %s", took.Round(time.Millisecond), lastLine(stderr))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// TestColumnsFlatten: kcat produces JSON values (one fits, one is not JSON, one has a mistyped
// and an extra field, one tombstone); read-kafka --columns 'value.*,partition,offset' writes
// Spark's select("v.*", "partition", "offset") plus _rescued_data, losing nothing.
func TestColumnsFlatten(t *testing.T) {
	c := kafkatest.NewReal(t)
	kcat := c.Real.KcatPath(t)
	brokers := strings.Join(c.Brokers, ",")
	topic := c.Topic(t, "columns", 1, nil)
	kcatRun(t, kcat, "k:{\"a\":1,\"b\":\"x\\u0026y\"}\nk:notjson\nk:{\"b\":\"y\",\"a\":\"bad\",\"z\":[1]}\nk:\n",
		"-P", "-b", brokers, "-t", topic, "-p", "0", "-K:", "-Z")
	out, err := pipeline(t,
		[]string{"read-kafka", "-b", brokers, "-t", topic, "--until", "now", "--value-format", "json",
			"--value-schema", "a BIGINT, b STRING", "--columns", "value.*,partition,offset"},
		[]string{"print", "--format", "json"})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"a":1,"b":"x&y","partition":0,"offset":0,"_rescued_data":null}
{"a":null,"b":null,"partition":0,"offset":1,"_rescued_data":"{\"value\":\"notjson\",\"_error\":\"value: invalid literal at byte 0\",\"_file\":\"%[1]s/0@1\"}"}
{"a":null,"b":"y","partition":0,"offset":2,"_rescued_data":"{\"z\":[1],\"a\":\"bad\",\"_file\":\"%[1]s/0@2\"}"}
{"a":null,"b":null,"partition":0,"offset":3,"_rescued_data":null}`, topic)
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// One member, as select("v.b", "offset"): the value's unparsed fields still reach
	// _rescued_data.
	out, err = pipeline(t,
		[]string{"read-kafka", "-b", brokers, "-t", topic, "--until", "now", "--value-format", "json",
			"--value-schema", "a BIGINT, b STRING", "--columns", "value.b,offset"},
		[]string{"print", "--format", "json"})
	if err != nil {
		t.Fatal(err)
	}
	want = fmt.Sprintf(`{"b":"x&y","offset":0,"_rescued_data":null}
{"b":null,"offset":1,"_rescued_data":"{\"value\":\"notjson\",\"_error\":\"value: invalid literal at byte 0\",\"_file\":\"%[1]s/0@1\"}"}
{"b":"y","offset":2,"_rescued_data":"{\"z\":[1],\"a\":\"bad\",\"_file\":\"%[1]s/0@2\"}"}
{"b":null,"offset":3,"_rescued_data":null}`, topic)
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("value.b: got\n%s\nwant\n%s", got, want)
	}
	_, stderr, err := streamkit(t, nil, "read-kafka", "-b", brokers, "-t", topic, "--until", "now", "--columns", "value.*")
	if err == nil || !strings.Contains(stderr, "value.* needs --value-format json or avro") {
		t.Errorf("--columns value.* of binary values: err %v, stderr %s", err, stderr)
	}
}

// TestReadmeCopyIntoMissingTopic runs README's exactly-once copy (read-kafka | write-kafka
// --transactional-id, checkpoints under $STREAMKIT_CHECKPOINT) into a topic that does not exist
// yet, which the broker creates, then restarts it with more input; and a plain copy into another
// missing topic. kcat (read_committed) sees every record once.
func TestReadmeCopyIntoMissingTopic(t *testing.T) {
	c := kafkatest.NewReal(t)
	kcat := c.Real.KcatPath(t)
	brokers := strings.Join(c.Brokers, ",")
	in := c.Topic(t, "readme-in", 2, nil)
	out, out2 := c.MissingTopic(t, "readme-out"), c.MissingTopic(t, "readme-out2")
	t.Setenv("STREAMKIT_CHECKPOINT", kafkatest.TempDir(t))
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			c.Produce(t, &kgo.Record{Topic: in, Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))})
		}
	}
	check := func(topic string, n int) {
		t.Helper()
		seen := map[string]int{}
		rows := kafkatest.KcatConsume(t, kcat, c.Brokers, topic)
		for _, r := range rows {
			seen[string(r.Value)]++
		}
		for i := 0; i < n; i++ {
			if seen[fmt.Sprint(i)] != 1 {
				t.Errorf("%s: record %d seen %d times", topic, i, seen[fmt.Sprint(i)])
			}
		}
		if len(rows) != n {
			t.Errorf("%s: %d records, want %d", topic, len(rows), n)
		}
	}
	produce(0, 30)
	for round, n := range []int{30, 45} {
		if _, err := pipeline(t, []string{"read-kafka", "-b", brokers, "-t", in, "--until", "now", "--max-records-per-epoch", "10"},
			[]string{"write-kafka", "-b", brokers, "-t", out, "--transactional-id", "copy-" + out}); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		check(out, n)
		if round == 0 {
			produce(30, 45)
		}
	}
	if _, err := pipeline(t, []string{"read-kafka", "-b", brokers, "-t", in, "--until", "now", "--checkpoint", kafkatest.TempDir(t)},
		[]string{"write-kafka", "-b", brokers, "-t", out2, "--checkpoint", kafkatest.TempDir(t)}); err != nil {
		t.Fatal(err)
	}
	check(out2, 45)
}

// TestValueSchemaBarePath runs README's `read-kafka --value-format json --value-schema
// orders.json` (a relative path without "@") against the real broker: the file's JSON Schema
// decodes the values.
func TestValueSchemaBarePath(t *testing.T) {
	c := kafkatest.NewReal(t)
	in := c.Topic(t, "schema-file", 1, nil)
	c.Produce(t, &kgo.Record{Topic: in, Value: []byte(`{"order_id": 7, "region": "eu", "amount": 2.5}`)})
	t.Chdir(t.TempDir())
	if err := os.WriteFile("orders.json", []byte(`{"type": "object", "properties": {"order_id": {"type": "integer"}, "region": {"type": "string"}, "amount": {"type": "number"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := streamkit(t, nil, "read-kafka", "-b", strings.Join(c.Brokers, ","), "-t", in, "--until", "now",
		"--value-format", "json", "--value-schema", "orders.json", "--checkpoint", "ckpt")
	if err != nil {
		t.Fatalf("read-kafka: %v\n%s", err, stderr)
	}
	rows := kafkatest.Decode(t, bytes.NewReader(stdout)).Rows
	if len(rows) != 1 || string(rows[0].Value) != `{"_rescued_data":null,"amount":2.5,"order_id":7,"region":"eu"}` {
		t.Fatalf("rows %v", rows)
	}
}
