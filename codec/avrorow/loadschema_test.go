package avrorow

import (
	"strings"
	"testing"
)

// LoadSchema takes a plain file path, but Spark DDL (which --value-schema takes for json
// values) is not misread as one: the error says an Avro schema is JSON (break-test finding:
// "open order_id bigint, region string: no such file or directory").
func TestLoadSchemaDDLNotAPath(t *testing.T) {
	_, err := LoadSchema("order_id bigint, region string")
	if err == nil || strings.Contains(err.Error(), "no such file") || !strings.Contains(err.Error(), "Spark DDL column list, not an Avro schema") {
		t.Fatalf("DDL: %v", err)
	}
	if _, err := LoadSchema("missing.avsc"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing file: %v", err)
	}
}
