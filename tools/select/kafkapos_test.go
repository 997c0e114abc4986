package selecttool

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/peertest"
)

// TestRuntimeErrorNamesKafkaOffset: an ANSI error in a row read by read-kafka names the
// record as TOPIC/PARTITION@OFFSET (the form of codec/rescue), from the topic, partition and
// offset columns, or, when --columns drops topic and partition, from the batch's partition.
func TestRuntimeErrorNamesKafkaOffset(t *testing.T) {
	bin := peertest.Binary(t)
	c := kafkatest.NewFake(t)
	topic := c.Topic(t, "pos", 2, nil)
	var recs []*kgo.Record
	for _, v := range []string{"4", "2", "0", "5"} {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 1, Value: []byte(v)})
	}
	recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("1")})
	c.Produce(t, recs...)
	for _, cc := range []struct{ columns, tool, expr, want string }{
		{"", "select", "100 div CAST(value AS INT) AS per", "[DIVIDE_BY_ZERO] division by zero in div at " + topic + "/1@2 "},
		{"value,offset", "filter", "100 / CAST(value AS INT) > 1", "[DIVIDE_BY_ZERO] division by zero in / (divide) at " + topic + "/1@2 "},
		{"value", "select", "CAST(IF(value = '0', 'zero', value) AS INT) AS bad", "[CAST_INVALID_INPUT] the value 'zero' of type string cannot be cast to int at " + topic + "/1, epoch 1, row 2 "},
	} {
		args := `"$SK" read-kafka -b "$B" -t "$T" --value-format string --until now`
		if cc.columns != "" {
			args += " --columns " + cc.columns
		}
		cmd := exec.Command("bash", "-o", "pipefail", "-c", args+` | "$SK" `+cc.tool+` "$E" > /dev/null`)
		cmd.Env = append(os.Environ(), "SK="+bin, "B="+strings.Join(c.Brokers, ","), "T="+topic, "E="+cc.expr)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("%s %q: %v, want exit 1\n%s", cc.tool, cc.expr, err, out)
			continue
		}
		if !strings.Contains(string(out), cc.want) {
			t.Errorf("%s %q (--columns %q): stderr\n%s\nwant it to contain %q", cc.tool, cc.expr, cc.columns, out, cc.want)
		}
	}
}
