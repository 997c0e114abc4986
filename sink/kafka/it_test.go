package kafka_test

import (
	"testing"

	"github.com/streamkit/streamkit/internal/kafkatest"
)

// TestReal runs every scenario against the real Kafka 4.x broker of scripts/kafka.sh
// (skipped without it unless STREAMKIT_REQUIRE_PEERS=1).
func TestReal(t *testing.T) {
	c := kafkatest.NewReal(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { sc.fn(t, c) })
	}
}
