package avrorow

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rescueReader has the logical types whose values can be out of the column's range; rawWriter
// is the same with s as bytes (the bytes→string resolution).
const rescueReader = `{"type":"record","name":"R","fields":[
 {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}},
 {"name":"big","type":{"type":"bytes","logicalType":"decimal","precision":38,"scale":0}},
 {"name":"s","type":"string"},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"lts","type":{"type":"long","logicalType":"local-timestamp-millis"}},
 {"name":"ltn","type":{"type":"long","logicalType":"local-timestamp-nanos"}}]}`

const rawWriter = `{"type":"record","name":"R","fields":[
 {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}},
 {"name":"big","type":{"type":"bytes","logicalType":"decimal","precision":38,"scale":0}},
 {"name":"s","type":"bytes"},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"lts","type":{"type":"long","logicalType":"local-timestamp-millis"}},
 {"name":"ltn","type":{"type":"long","logicalType":"local-timestamp-nanos"}}]}`

// plainWriter is rescueReader without logical types: resolution adds them (the Avro
// specification resolves by the underlying types).
const plainWriter = `{"type":"record","name":"R","fields":[
 {"name":"d","type":"bytes"},{"name":"big","type":"bytes"},{"name":"s","type":"bytes"},
 {"name":"ts","type":"long"},{"name":"lts","type":"long"},{"name":"ltn","type":"long"}]}`

// plain converts a native row of rawWriter to plainWriter's (decimals as two's-complement
// bytes, timestamps as int64 millis).
func plain(v map[string]any) map[string]any {
	w := &Node{Type: "bytes", Logical: "decimal", Scale: 2}
	out := map[string]any{}
	for k, x := range v {
		switch x := x.(type) {
		case *big.Rat:
			w.Scale = map[string]int32{"d": 2, "big": 0}[k]
			out[k] = rawValue(w, x)
		case time.Time:
			out[k] = x.UnixMilli()
		default:
			out[k] = x
		}
	}
	return out
}

// TestRescueOutOfRange: values the column cannot hold (a decimal beyond its precision or 128
// bits, a string that is not UTF-8, a millisecond timestamp whose µs overflow int64) are bad
// records naming the field on the direct, goavro and resolution paths; nothing panics.
func TestRescueOutOfRange(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s, err := ParseSchema(rescueReader)
	if err != nil {
		t.Fatal(err)
	}
	if ft := s.Type.(*arrow.StructType).Field(5).Type; ft.String() != "timestamp[ns]" {
		t.Errorf("local-timestamp-nanos column is %s, want timestamp[ns]", ft)
	}
	row := func() map[string]any {
		return map[string]any{"d": big.NewRat(1234, 100), "big": big.NewRat(1, 1), "s": []byte("ok"),
			"ts": time.UnixMilli(1000).UTC(), "lts": int64(1000), "ltn": int64(5)}
	}
	cases := []struct {
		field string
		val   any
		why   string
	}{
		{"", nil, ""},
		{"d", big.NewRat(1e10, 1), "d: value 10000000000.00 does not fit decimal(4,2)"},
		{"big", new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 130)), "big: value 1361129467683753853853498429727072845824 does not fit decimal(38,0)"},
		{"s", []byte("a\xffb"), "s: string is not valid UTF-8"},
		{"ts", int64(1) << 62, "ts: timestamp-millis"},
		{"lts", int64(1) << 62, "lts: local-timestamp-millis 4611686018427387904 ms overflows"},
	}
	for _, path := range []string{"direct", "goavro", "resolved", "plain-writer"} {
		var d *Decoder
		switch path {
		case "resolved":
			d = NewDecoder(s, func(uint32) (string, error) { return rawWriter, nil })
		case "plain-writer":
			d = NewDecoder(s, func(uint32) (string, error) { return plainWriter, nil })
		default:
			d = NewDecoder(s, nil)
		}
		d.Open(mem)
		for _, c := range cases {
			v := row()
			if c.field != "" {
				v[c.field] = c.val
			}
			b := encode(t, rawWriter, v)
			if path == "plain-writer" {
				b = encode(t, plainWriter, plain(v))
			}
			var why string
			switch path {
			case "direct":
				why = d.Append(b)
			case "goavro":
				why = d.appendResolved(s.Codec, nil, b)
			case "resolved", "plain-writer":
				why = d.Append(wire(1, b))
			}
			if (c.why == "") != (why == "") || !strings.Contains(why, c.why) {
				t.Errorf("%s %s: reason %q, want %q", path, c.field, why, c.why)
			}
		}
		a := d.NewArray()
		if got, want := rowJSON(t, a, 0), `{"big":"1","d":"12.34","ltn":"1970-01-01T00:00:00.000000005","lts":"1970-01-01T00:00:01","s":"ok","ts":"1970-01-01T00:00:01Z"}`; got != want {
			t.Errorf("%s good row %s, want %s", path, got, want)
		}
		if a.NullN() != len(cases)-1 {
			t.Errorf("%s: %d nulls, want %d", path, a.NullN(), len(cases)-1)
		}
		a.Release()
		d.Release()
	}
}
