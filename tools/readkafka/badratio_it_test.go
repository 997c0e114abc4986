package readkafka_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/internal/kafkatest"
)

// TestMaxBadRatioKafka (issue #17 item 3): records whose value does not decode are rescued
// rows (null value, raw record in _rescued_data); when most of an epoch's records are, read-kafka
// warns once with the counts, and with --max-bad-ratio below their share it exits 1 before
// the epoch's offsets and barrier, naming the stage, the epoch, the counts and the ratio.
func TestMaxBadRatioKafka(t *testing.T) {
	c := kafkatest.NewReal(t)
	in := c.Topic(t, "bad-ratio", 1, nil)
	for _, v := range []string{`{"id": 1}`, `not json`, `{"id": `, `[1,`} {
		c.Produce(t, &kgo.Record{Topic: in, Value: []byte(v)})
	}
	args := []string{"read-kafka", "-b", strings.Join(c.Brokers, ","), "-t", in, "--until", "now",
		"--value-format", "json", "--value-schema", "id BIGINT", "--checkpoint", t.TempDir()}
	stdout, stderr, err := streamkit(t, nil, args...)
	if err != nil {
		t.Fatalf("read-kafka: %v\n%s", err, stderr)
	}
	if rows := kafkatest.Decode(t, strings.NewReader(string(stdout))).Rows; len(rows) != 4 {
		t.Fatalf("%d rows, want 4 (the rescued ones too)", len(rows))
	}
	if want := "most records of epoch 1 were set aside: 3 of 4 (rescued_rows 3)"; strings.Count(stderr, "were set aside") != 1 || !strings.Contains(stderr, want) {
		t.Errorf("want one warning %q, stderr:\n%s", want, stderr)
	}
	args[len(args)-1] = t.TempDir()
	_, stderr, err = streamkit(t, nil, append(args, "--max-bad-ratio", "0.5")...)
	if want := "read-kafka: epoch 1: 3 of 4 records set aside (rescued_rows 3), ratio 0.75 > --max-bad-ratio 0.5"; !exitCode(err, 1) || !strings.Contains(stderr, want) {
		t.Errorf("--max-bad-ratio 0.5: err %v, want exit 1 and %q; stderr:\n%s", err, want, stderr)
	}
}

// exitCode reports whether err is an exit with status code.
func exitCode(err error, code int) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == code
}
