package peertest

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// KafkaBroker is the real single-node Kafka 4.x broker of scripts/kafka.sh (PEERS.md): its
// listeners and the credentials the script generated.
type KafkaBroker struct {
	Plaintext string // PLAINTEXT listener, host:port
	SASL      string // SASL_PLAINTEXT listener with SCRAM-SHA-256 and SCRAM-SHA-512
	SSL       string // SSL listener requiring a client certificate (mTLS)
	// SASLUser is the SCRAM user; SASLPasswordFile holds its password (never print it).
	SASLUser, SASLPasswordFile string
	// CA verifies the broker; ClientCert and ClientKey authenticate the client (PEM files).
	CA, ClientCert, ClientKey string
	// Kcat is the kcat wrapper (Debian kcat with a modern librdkafka), "" when not installed.
	Kcat string
}

var (
	kafkaOnce sync.Once
	kafkaB    *KafkaBroker
	kafkaErr  string
)

// Kafka returns the real broker. Addresses come from the environment when
// STREAMKIT_KAFKA_PLAINTEXT is set (eval "$(scripts/kafka.sh env)"); otherwise Kafka runs
// `scripts/kafka.sh start` (idempotent; the jars must have been installed by scripts/peers.sh
// kafka) and reads `scripts/kafka.sh env`. A broker started here is left running for the other
// test packages: `scripts/kafka.sh stop` (or make test) stops it. Without jars, java or a
// reachable broker the test is skipped, or fails under STREAMKIT_REQUIRE_PEERS=1.
func Kafka(t testing.TB) *KafkaBroker {
	t.Helper()
	kafkaOnce.Do(func() { kafkaB, kafkaErr = startKafka(Root(t)) })
	if kafkaB == nil {
		missing(t, "kafka broker: "+kafkaErr)
	}
	return kafkaB
}

func startKafka(root string) (*KafkaBroker, string) {
	env := map[string]string{}
	if os.Getenv("STREAMKIT_KAFKA_PLAINTEXT") != "" {
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "STREAMKIT_") {
				env[k] = v
			}
		}
	} else {
		script := filepath.Join(root, "scripts", "kafka.sh")
		if _, err := os.Stat(script); err != nil {
			return nil, "no scripts/kafka.sh"
		}
		if _, err := os.Stat(filepath.Join(root, ".it", "kafka", "libs")); err != nil {
			return nil, "no broker jars in .it/kafka/libs (run scripts/peers.sh kafka)"
		}
		if _, err := exec.LookPath("java"); err != nil {
			return nil, "no java on PATH"
		}
		cmd := exec.Command(script, "start")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, "scripts/kafka.sh start: " + err.Error() + "\n" + string(out)
		}
		out, err := exec.Command(script, "env").Output()
		if err != nil {
			return nil, "scripts/kafka.sh env: " + err.Error()
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
			if k, v, ok := strings.Cut(line, "="); ok {
				env[k] = strings.Trim(v, `"'`)
			}
		}
	}
	b := &KafkaBroker{
		Plaintext:        env["STREAMKIT_KAFKA_PLAINTEXT"],
		SASL:             env["STREAMKIT_KAFKA_SASL"],
		SSL:              env["STREAMKIT_KAFKA_SSL"],
		SASLUser:         env["STREAMKIT_KAFKA_SASL_USERNAME"],
		SASLPasswordFile: env["STREAMKIT_KAFKA_SASL_PASSWORD_FILE"],
		CA:               env["STREAMKIT_KAFKA_SSL_CA"],
		ClientCert:       env["STREAMKIT_KAFKA_SSL_CERT"],
		ClientKey:        env["STREAMKIT_KAFKA_SSL_KEY"],
		Kcat:             env["STREAMKIT_KCAT"],
	}
	if b.Plaintext == "" {
		return nil, "no STREAMKIT_KAFKA_PLAINTEXT address"
	}
	if b.Kcat != "" {
		if _, err := os.Stat(b.Kcat); err != nil {
			b.Kcat = ""
		}
	}
	c, err := net.DialTimeout("tcp", b.Plaintext, 5*time.Second)
	if err != nil {
		return nil, "broker not reachable at " + b.Plaintext + ": " + err.Error()
	}
	c.Close()
	return b, ""
}

// KcatPath returns the kcat wrapper, skipping (or failing) the test when it is not installed.
func (b *KafkaBroker) KcatPath(t testing.TB) string {
	t.Helper()
	if b.Kcat == "" {
		missing(t, "kcat (run scripts/peers.sh kcat)")
	}
	return b.Kcat
}
