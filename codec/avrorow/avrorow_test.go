package avrorow

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/linkedin/goavro/v2"
)

const v1 = `{"type":"record","name":"Order","namespace":"shop","fields":[
 {"name":"user_id","type":"int"},
 {"name":"user","type":{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"tags","type":{"type":"array","items":"string"}}]}},
 {"name":"attrs","type":{"type":"map","values":"long"}},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"either","type":["int","string"]},
 {"name":"state","type":{"type":"enum","name":"State","symbols":["NEW","PAID","GONE"]}},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"id","type":{"type":"string","logicalType":"uuid"}},
 {"name":"blob","type":"bytes"},
 {"name":"dropped","type":"string"}
]}`

// v2 evolves v1 as a reader: user_id promoted to long, a field added with a default, a
// field removed, the enum loses GONE but has a default, note's union reordered.
const v2 = `{"type":"record","name":"Order","namespace":"shop","fields":[
 {"name":"user_id","type":"long"},
 {"name":"user","type":{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"tags","type":{"type":"array","items":"string"}},{"name":"vip","type":"boolean","default":false}]}},
 {"name":"attrs","type":{"type":"map","values":"double"}},
 {"name":"note","type":["string","null"]},
 {"name":"either","type":["int","string"]},
 {"name":"state","type":{"type":"enum","name":"State","symbols":["NEW","PAID","UNKNOWN"],"default":"UNKNOWN"}},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"id","type":{"type":"string","logicalType":"uuid"}},
 {"name":"blob","type":"bytes"},
 {"name":"country","type":"string","default":"FR"},
 {"name":"score","type":["null","double"],"default":null}
]}`

func native(state string, note any) map[string]any {
	return map[string]any{
		"user_id": int32(7),
		"user":    map[string]any{"name": "ann", "tags": []any{"a", "b"}},
		"attrs":   map[string]any{"y": int64(2), "x": int64(1)},
		"note":    note,
		"either":  goavro.Union("string", "s"),
		"state":   state,
		"amount":  big.NewRat(1234, 100),
		"ts":      time.UnixMilli(1714521600123).UTC(),
		"day":     time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC),
		"id":      "6f1c0a43-4d8c-4e7a-9a3e-4c1b2d3e4f50",
		"blob":    []byte{0, 0xff},
		"dropped": "x",
	}
}

func encode(t *testing.T, doc string, v any) []byte {
	t.Helper()
	c, err := goavro.NewCodec(doc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.BinaryFromNative(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wire(id uint32, body []byte) []byte {
	b := []byte{Magic, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], id)
	return append(b, body...)
}

// rowJSON renders row i of a column as JSON (Arrow's own value rendering).
func rowJSON(t *testing.T, a arrow.Array, i int) string {
	t.Helper()
	b, err := json.Marshal(a.GetOneForMarshal(i))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPlainDecode(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s, err := ParseSchema(v1)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(s, nil)
	d.Open(mem)
	defer d.Release()
	good := encode(t, v1, native("PAID", goavro.Union("string", "hi")))
	for _, c := range []struct {
		in  []byte
		bad string
	}{
		{good, ""},
		{encode(t, v1, native("NEW", nil)), ""},
		{good[:len(good)-3], "bad avro data"},
		{append(append([]byte{}, good...), 1), "1 bytes left after the datum"},
	} {
		if got := d.Append(c.in); (c.bad == "") != (got == "") || !strings.Contains(got, c.bad) {
			t.Errorf("Append(%x) = %q, want %q", c.in, got, c.bad)
		}
	}
	a := d.NewArray()
	defer a.Release()
	if a.Len() != 4 || a.NullN() != 2 {
		t.Fatalf("len %d nulls %d, want 4 and 2", a.Len(), a.NullN())
	}
	st := a.DataType().(*arrow.StructType)
	for name, want := range map[string]string{
		"user_id": "int32", "user": "struct<name: utf8, tags: list<item: utf8, nullable>>", "attrs": "map<utf8, int64, items_nullable>",
		"note": "utf8", "either": "struct<member0: int32 nullable, member1: utf8 nullable>", "state": "utf8", "amount": "decimal(10, 2)",
		"ts": "timestamp[us, tz=UTC]", "day": "date32", "id": "utf8", "blob": "binary",
	} {
		f, ok := st.FieldByName(name)
		if !ok || f.Type.String() != want {
			t.Errorf("field %s: %v, want %s", name, f.Type, want)
		}
	}
	row := map[string]any{}
	if err := json.Unmarshal([]byte(rowJSON(t, a, 0)), &row); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"user_id": `7`, "user": `{"name":"ann","tags":["a","b"]}`, "attrs": `[{"key":"x","value":1},{"key":"y","value":2}]`,
		"note": `"hi"`, "either": `{"member0":null,"member1":"s"}`, "state": `"PAID"`, "amount": `"12.34"`,
		"ts": `"2024-05-01T00:00:00.123Z"`, "day": `"2024-05-01"`, "id": `"6f1c0a43-4d8c-4e7a-9a3e-4c1b2d3e4f50"`, "blob": `"AP8="`,
	} {
		got, _ := json.Marshal(row[k])
		if string(got) != want {
			t.Errorf("row 0 %s = %s, want %s", k, got, want)
		}
	}
	if !a.IsNull(2) || !a.IsNull(3) {
		t.Error("bad rows are not null")
	}
}

func TestWireResolution(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	reader, err := ParseSchema(v2)
	if err != nil {
		t.Fatal(err)
	}
	asked := map[uint32]int{}
	lookup := func(id uint32) (string, error) {
		asked[id]++
		switch id {
		case 1:
			return v1, nil
		case 2:
			return v2, nil
		case 3:
			return `{"type":"record","name":"Other","fields":[]}`, nil
		case 4:
			return "", errors.New("registry unreachable")
		}
		return "", &PermanentError{Err: fmt.Errorf("schema %d not found", id)}
	}
	d := NewDecoder(reader, lookup)
	d.Open(mem)
	defer d.Release()
	w2 := map[string]any{"user_id": int64(9), "user": map[string]any{"name": "bob", "tags": []any{}, "vip": true},
		"attrs": map[string]any{}, "note": nil, "either": goavro.Union("int", int32(3)), "state": "UNKNOWN",
		"amount": big.NewRat(-5, 10), "ts": time.UnixMilli(0).UTC(), "day": time.Unix(0, 0).UTC(), "id": "x",
		"blob": []byte{}, "country": "DE", "score": goavro.Union("double", 1.5)}
	ins := []struct {
		in  []byte
		bad string
	}{
		{wire(1, encode(t, v1, native("GONE", goavro.Union("string", "hi")))), ""},
		{wire(2, encode(t, v2, w2)), ""},
		{wire(1, encode(t, v1, native("NEW", nil))), ""},
		{append([]byte{1}, wire(1, nil)[1:]...), "magic byte 0x01"},
		{[]byte{0, 0, 0}, "shorter than the 5-byte header"},
		{wire(3, nil), "cannot be resolved"},
		{wire(4, nil), "registry unreachable"},
		{wire(4, nil), "registry unreachable"},
		{wire(99, nil), "schema id 99: schema 99 not found"},
		{wire(99, nil), "schema id 99"},
		{wire(1, []byte{0x02}), "bad avro data"},
	}
	for i, c := range ins {
		if got := d.Append(c.in); (c.bad == "") != (got == "") || !strings.Contains(got, c.bad) {
			t.Errorf("record %d: Append = %q, want %q", i, got, c.bad)
		}
	}
	if asked[1] != 1 || asked[99] != 1 || asked[4] != 2 {
		t.Errorf("look-ups %v: want id 1 and 99 once (cached, 99 permanent), 4 twice (transient)", asked)
	}
	a := d.NewArray()
	defer a.Release()
	for i, want := range []string{
		`{"amount":"12.34","attrs":[{"key":"x","value":1},{"key":"y","value":2}],"blob":"AP8=","country":"FR","day":"2024-05-01","either":{"member0":null,"member1":"s"},"id":"6f1c0a43-4d8c-4e7a-9a3e-4c1b2d3e4f50","note":"hi","score":null,"state":"UNKNOWN","ts":"2024-05-01T00:00:00.123Z","user":{"name":"ann","tags":["a","b"],"vip":false},"user_id":7}`,
		`{"amount":"-0.5","attrs":[],"blob":"","country":"DE","day":"1970-01-01","either":{"member0":3,"member1":null},"id":"x","note":null,"score":1.5,"state":"UNKNOWN","ts":"1970-01-01T00:00:00Z","user":{"name":"bob","tags":[],"vip":true},"user_id":9}`,
		`{"amount":"12.34","attrs":[{"key":"x","value":1},{"key":"y","value":2}],"blob":"AP8=","country":"FR","day":"2024-05-01","either":{"member0":null,"member1":"s"},"id":"6f1c0a43-4d8c-4e7a-9a3e-4c1b2d3e4f50","note":null,"score":null,"state":"NEW","ts":"2024-05-01T00:00:00.123Z","user":{"name":"ann","tags":["a","b"],"vip":false},"user_id":7}`,
	} {
		var m map[string]any
		_ = json.Unmarshal([]byte(rowJSON(t, a, i)), &m)
		got, _ := json.Marshal(m)
		if string(got) != want {
			t.Errorf("row %d:\n got %s\nwant %s", i, got, want)
		}
	}
	if a.Len() != len(ins) || a.NullN() != len(ins)-3 {
		t.Errorf("len %d nulls %d", a.Len(), a.NullN())
	}
	if _, ok := a.(*array.Struct).Field(0).(*array.Int64); !ok {
		t.Error("user_id is not the reader's long")
	}
}

func TestResolveIncompatible(t *testing.T) {
	for _, c := range []struct{ w, r, want string }{
		{`{"type":"record","name":"A","fields":[]}`, `{"type":"record","name":"A","fields":[{"name":"x","type":"int"}]}`, "has no default"},
		{`{"type":"record","name":"A","fields":[]}`, `{"type":"record","name":"B","fields":[]}`, "writer record A, reader record B"},
		{`"long"`, `"int"`, "cannot be read as int"},
		{`{"type":"fixed","name":"F","size":4}`, `{"type":"fixed","name":"F","size":8}`, "fixed"},
		{`"string"`, `["null","int"]`, "matches no branch"},
	} {
		w, err := Compile([]byte(c.w))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Compile([]byte(c.r))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Resolve(w, r); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Resolve(%s, %s) = %v, want %q", c.w, c.r, err, c.want)
		}
	}
	// A record with an alias resolves; a writer union branch the reader lacks fails per value.
	w, _ := Compile([]byte(`{"type":"record","name":"Old","fields":[{"name":"a","type":["int","string"]}]}`))
	r, _ := Compile([]byte(`{"type":"record","name":"New","aliases":["Old"],"fields":[{"name":"b","aliases":["a"],"type":"long"}]}`))
	res, err := Resolve(w, r)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := res(map[string]any{"a": goavro.Union("int", int32(4))}); err != nil || v.(map[string]any)["b"] != int64(4) {
		t.Errorf("alias resolution: %v, %v", v, err)
	}
	if _, err := res(map[string]any{"a": goavro.Union("string", "x")}); err == nil || !strings.Contains(err.Error(), "cannot be read as long") {
		t.Errorf("bad branch: %v", err)
	}
}

func TestDefaultValue(t *testing.T) {
	n, err := Compile([]byte(`{"type":"record","name":"R","fields":[
	 {"name":"b","type":"bytes","default":"\u0000\u00ff"},
	 {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2},"default":"\u00ff\u0038"},
	 {"name":"u","type":["string","null"],"default":"x"},
	 {"name":"a","type":{"type":"array","items":"int"},"default":[1,2]},
	 {"name":"t","type":{"type":"long","logicalType":"timestamp-millis"},"default":1000}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"[0 255]", "-2", "map[string:x]", "[1 2]", "1970-01-01 00:00:01 +0000 UTC"}
	for i, f := range n.Fields {
		v, err := DefaultValue(f.Node, f.Default)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		got := fmt.Sprint(v)
		if r, ok := v.(*big.Rat); ok {
			got = r.FloatString(0)
		}
		if got != want[i] {
			t.Errorf("default of %s = %s, want %s", f.Name, got, want[i])
		}
	}
}

// TestEncodeRoundTrip: rows decoded from Avro are encoded again (schema derived from the Arrow
// type, and the original schema) and decode to the same values.
func TestEncodeRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s, err := ParseSchema(v1)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(s, nil)
	d.Open(mem)
	defer d.Release()
	for _, st := range []string{"NEW", "GONE"} {
		if why := d.Append(encode(t, v1, native(st, goavro.Union("string", st)))); why != "" {
			t.Fatal(why)
		}
	}
	a := d.NewArray()
	defer a.Release()
	derived, err := FromArrow(a.DataType(), "Order")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{v1, derived} {
		ws, err := ParseSchema(doc)
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		enc := NewEncoder(ws).WithID(42)
		d2 := NewDecoder(ws, func(id uint32) (string, error) {
			if id != 42 {
				return "", fmt.Errorf("id %d", id)
			}
			return doc, nil
		})
		d2.Open(mem)
		for i := 0; i < a.Len(); i++ {
			b, err := enc.Append(nil, a, i)
			if err != nil {
				t.Fatalf("encode row %d with %s: %v", i, doc, err)
			}
			if why := d2.Append(b); why != "" {
				t.Fatalf("decode row %d: %s", i, why)
			}
		}
		b := d2.NewArray()
		for i := 0; i < a.Len(); i++ {
			if x, y := rowJSON(t, a, i), rowJSON(t, b, i); x != y {
				t.Errorf("schema %.40s… row %d:\n got %s\nwant %s", doc, i, y, x)
			}
		}
		b.Release()
		d2.Release()
	}
	if _, err := FromArrow(arrow.PrimitiveTypes.Uint64, "x"); err == nil {
		t.Error("uint64 got an Avro schema")
	}
	e := NewEncoder(s)
	if _, err := e.Append(nil, a.(*array.Struct).Field(0), 0); err == nil || !strings.Contains(err.Error(), "for an Avro record") {
		t.Errorf("an int column encoded as the record: %v", err)
	}
}

// TestDirectMatchesGoavro: the direct path and goavro's decoding (plus AppendTo) give the same
// column for the same data, including maps with several keys (key order), nested unions and
// every logical type; every truncation of a datum is reported, never a panic, and leaves the
// builder consistent.
func TestDirectMatchesGoavro(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	doc := `{"type":"record","name":"R","fields":[
	 {"name":"m","type":{"type":"map","values":["null","long","string"]}},
	 {"name":"a","type":{"type":"array","items":{"type":"record","name":"I","fields":[{"name":"f","type":"float"},{"name":"d","type":"double"},{"name":"b","type":"boolean"}]}}},
	 {"name":"fx","type":{"type":"fixed","name":"F","size":3}},
	 {"name":"fd","type":{"type":"bytes","logicalType":"decimal","precision":18,"scale":3}},
	 {"name":"u","type":{"type":"fixed","name":"U","size":16,"logicalType":"uuid"}},
	 {"name":"tm","type":{"type":"int","logicalType":"time-millis"}},
	 {"name":"tu","type":{"type":"long","logicalType":"time-micros"}},
	 {"name":"tsu","type":{"type":"long","logicalType":"timestamp-micros"}},
	 {"name":"lts","type":{"type":"long","logicalType":"local-timestamp-millis"}},
	 {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
	 {"name":"n","type":"null"}]}`
	val := func(i int) map[string]any {
		return map[string]any{
			"m":   map[string]any{"z": goavro.Union("long", int64(i)), "a": nil, "m": goavro.Union("string", "s")},
			"a":   []any{map[string]any{"f": float32(1.5), "d": -2.25, "b": i%2 == 0}},
			"fx":  []byte{1, 2, byte(i)},
			"fd":  big.NewRat(int64(-12345*i), 1000),
			"u":   []byte{0x6f, 0x1c, 0x0a, 0x43, 0x4d, 0x8c, 0x4e, 0x7a, 0x9a, 0x3e, 0x4c, 0x1b, 0x2d, 0x3e, 0x4f, byte(i)},
			"tm":  time.Duration(i) * time.Millisecond,
			"tu":  time.Duration(i) * time.Microsecond,
			"tsu": time.UnixMicro(int64(i) * 1_000_001).UTC(),
			"lts": int64(i) * 1001,
			"e":   []string{"A", "B"}[i%2],
			"n":   nil,
		}
	}
	for _, d := range []string{doc, v1} {
		s, err := ParseSchema(d)
		if err != nil {
			t.Fatal(err)
		}
		direct, viaGoavro := NewDecoder(s, nil), NewDecoder(s, nil)
		direct.Open(mem)
		viaGoavro.Open(mem)
		var datums [][]byte
		for i := 0; i < 5; i++ {
			v := val(i)
			if d == v1 {
				v = native([]string{"NEW", "PAID", "GONE"}[i%3], []any{nil, goavro.Union("string", "x")}[i%2])
				v["attrs"] = map[string]any{"q": int64(i), "b": int64(-i), "k": int64(7)}
			}
			datums = append(datums, encode(t, d, v))
		}
		for i, b := range datums {
			if why := direct.Append(b); why != "" {
				t.Fatalf("direct %d: %s", i, why)
			}
			if why := viaGoavro.appendResolved(s.Codec, nil, b); why != "" {
				t.Fatalf("goavro %d: %s", i, why)
			}
		}
		// Every strict prefix is malformed (the schemas have no trailing zero-length fields).
		for cut := 0; cut < len(datums[1]); cut++ {
			if why := direct.Append(datums[1][:cut]); why == "" {
				t.Fatalf("prefix of %d bytes decoded", cut)
			}
		}
		a, g := direct.NewArray(), viaGoavro.NewArray()
		for i := range datums {
			if x, y := rowJSON(t, a, i), rowJSON(t, g, i); x != y {
				t.Errorf("row %d:\ndirect %s\ngoavro %s", i, x, y)
			}
		}
		if a.Len() != len(datums)+len(datums[1]) || a.NullN() != len(datums[1]) {
			t.Errorf("len %d nulls %d", a.Len(), a.NullN())
		}
		a.Release()
		g.Release()
		direct.Release()
		viaGoavro.Release()
	}
}
