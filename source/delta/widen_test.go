package delta

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	dl "github.com/streamkit/streamkit/delta"
)

// widenTable makes a table whose first file is written as {id long, f float, n integer, d
// date, dec decimal(6,2)}, then widens f to double, n to long, d to timestamp_ntz and dec to
// decimal(10,4) as Spark's ALTER TABLE … CHANGE COLUMN … TYPE does (a metaData commit whose
// fields record delta.typeChanges, protocol reader 3 / writer 7 with typeWidening), and
// appends a second file under the new types.
func widenTable(t *testing.T, dir string) {
	t.Helper()
	mem := newMem(t)
	old := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 6, Scale: 2}, Nullable: true},
	}, nil)
	appendRows(t, mem, dir, old, nil, `[{"id":1,"f":1.1,"n":2147483647,"d":"2024-01-02","dec":"1.23"},{"id":2,"f":0.7,"n":-5,"d":null,"dec":"-9999.99"}]`)
	// Spark writes a float statistic as Java's Float.toString ("1.1", "0.7"), not as the
	// float's value as a double (1.100000023841858 is above 1.1, 0.699999988079071 below 0.7).
	c0 := filepath.Join(dir, "_delta_log", "00000000000000000000.json")
	b, err := os.ReadFile(c0)
	if err != nil || !bytes.Contains(b, []byte(`1.100000023841858`)) || !bytes.Contains(b, []byte(`0.699999988079071`)) {
		t.Fatalf("commit 0: %v\n%s", err, b)
	}
	b = bytes.ReplaceAll(b, []byte(`1.100000023841858`), []byte(`1.1`))
	if err := os.WriteFile(c0, bytes.ReplaceAll(b, []byte(`0.699999988079071`), []byte(`0.7`)), 0o644); err != nil {
		t.Fatal(err)
	}
	tc := func(from, to string) string {
		return `{"delta.typeChanges":[{"fromType":"` + from + `","toType":"` + to + `"}]}`
	}
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"f","type":"double","nullable":true,"metadata":` + tc("float", "double") + `},` +
		`{"name":"n","type":"long","nullable":true,"metadata":` + tc("integer", "long") + `},` +
		`{"name":"d","type":"timestamp_ntz","nullable":true,"metadata":` + tc("date", "timestamp_ntz") + `},` +
		`{"name":"dec","type":"decimal(10,4)","nullable":true,"metadata":` + tc("decimal(6,2)", "decimal(10,4)") + `}]}`
	meta := strings.Replace(metaLine(schema, "[]"), `"configuration":{}`, `"configuration":{"delta.enableTypeWidening":"true"}`, 1)
	writeCommit(t, dir, 1, `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["timestampNtz","typeWidening"],"writerFeatures":["timestampNtz","typeWidening"]}}`, meta)
	wide := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "d", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 4}, Nullable: true},
	}, nil)
	appendRows(t, mem, dir, wide, nil, `[{"id":3,"f":2.5,"n":8589934592,"d":"2024-01-03T10:00:00.000001","dec":"123456.7891"}]`)
}

// TestReadWidenedColumns: files written before a type widening are read with the table's
// current type (batch, --version before the widening, --follow through the ALTER commit), and
// --where on a widened column skips no file that holds a match: the float statistics "1.1" and
// "0.7" of the old file bound the doubles 1.100000023841858 and 0.699999988079071.
func TestReadWidenedColumns(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	widenTable(t, dir)
	env := testEnv(mem)
	want := []string{ // sorted
		`{"d":"2024-01-02T00:00:00","dec":"1.23","f":1.100000023841858,"id":1,"n":2147483647}`,
		`{"d":"2024-01-03T10:00:00.000001","dec":"123456.7891","f":2.5,"id":3,"n":8589934592}`,
		`{"d":null,"dec":"-9999.99","f":0.699999988079071,"id":2,"n":-5}`,
	}
	wideTypes := "id: int64, f: float64, n: int64, d: timestamp[us], dec: decimal(10, 4)"
	check := func(name string, c Config, want ...string) {
		t.Helper()
		src := openSource(t, c, env, nil)
		var types []string
		for _, f := range src.schema.Fields() {
			types = append(types, f.Name+": "+f.Type.String())
		}
		if got := strings.Join(types, ", "); c.Version < 0 && got != wideTypes {
			t.Errorf("%s: schema %s, want %s", name, got, wideTypes)
		}
		got, _, _ := readAll(t, src, nil, 3)
		sort.Strings(got)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n got %s\nwant %s", name, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
		}
	}
	check("latest", cfg(dir, nil), want...)
	check("follow from 0", cfg(dir, func(c *Config) { c.Follow = true; c.StartingVersion = 0 }), want...)
	check("version 0", cfg(dir, func(c *Config) { c.Version = 0 }),
		`{"d":"2024-01-02","dec":"1.23","f":1.1,"id":1,"n":2147483647}`, `{"d":null,"dec":"-9999.99","f":0.7,"id":2,"n":-5}`)
	check("where f > 1.1", cfg(dir, func(c *Config) { c.Where = "f > 1.1" }), want[0], want[1])
	check("where f = 1.100000023841858", cfg(dir, func(c *Config) { c.Where = "f = 1.100000023841858" }), want[0])
	check("where f < 0.7", cfg(dir, func(c *Config) { c.Where = "f < 0.7" }), want[2])
	check("where n > 2147483647", cfg(dir, func(c *Config) { c.Where = "n > 2147483647" }), want[1])
	check("where dec = 1.23", cfg(dir, func(c *Config) { c.Where = "dec = 1.23" }), want[0])
	check("where d", cfg(dir, func(c *Config) { c.Where = "d >= '2024-01-02' AND d < '2024-01-02 00:00:01'" }), want[0])
}

// TestUnsupportedTypeChangeRefused: a typeWidening table whose delta.typeChanges records a
// change that is no widening the protocol lists is refused, naming column and types.
func TestUnsupportedTypeChangeRefused(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{"delta.typeChanges":[{"fromType":"string","toType":"long"}]}}]}`
	writeCommit(t, dir, 0, `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["typeWidening"],"writerFeatures":["typeWidening"]}}`, metaLine(schema, "[]"))
	for _, follow := range []bool{false, true} {
		src, _ := NewSource(Config{Table: dir, Version: -1, StartingVersion: -1, Follow: follow})
		_, err := src.Open(context.Background(), testEnv(mem), nil)
		src.Close()
		if !errors.Is(err, dl.ErrUnsupportedProtocol) || !strings.Contains(err.Error(), "column id changed type from string to long") {
			t.Errorf("follow %v: %v", follow, err)
		}
	}
}

// TestDecimalWideningDigits: a decimal widens only to one that loses no scale and no integer
// digit (decimal(p, s) to decimal(p + k1, s + k2), k1 ≥ k2 ≥ 0), and integers only to decimals
// with 10 (byte, short, integer) or 20 (long) integer digits (break-test finding: every
// decimal counted as a widening of every other, so a follow whose output had decimal(5,2)
// read on past ALTER ... TYPE DECIMAL(10,4) and then failed on the next file with "widen
// decimal(10, 4) to decimal(5,2): invalid: %!s(<nil>)" instead of stopping at the ALTER).
func TestDecimalWideningDigits(t *testing.T) {
	dec := func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	for _, c := range []struct {
		from, to arrow.DataType
		want     bool
	}{
		{dec(5, 2), dec(10, 4), true},
		{dec(5, 2), dec(5, 2), true},
		{dec(5, 2), dec(6, 2), true},
		{dec(10, 4), dec(5, 2), false},
		{dec(5, 2), dec(6, 3), true},
		{dec(5, 2), dec(5, 3), false}, // an integer digit lost
		{dec(5, 2), dec(7, 1), false}, // a scale digit lost
		{arrow.PrimitiveTypes.Int32, dec(10, 0), true},
		{arrow.PrimitiveTypes.Int8, dec(12, 2), true},
		{arrow.PrimitiveTypes.Int16, dec(9, 0), false},
		{arrow.PrimitiveTypes.Int64, dec(20, 0), true},
		{arrow.PrimitiveTypes.Int64, dec(22, 3), false},
		{arrow.PrimitiveTypes.Float64, dec(38, 10), false},
	} {
		if got := widening(c.from, c.to); got != c.want {
			t.Errorf("widening(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
		}
		// The follow's schema check: a later schema's type must read into the output's.
		list := func(e arrow.DataType) arrow.DataType { return arrow.ListOf(e) }
		if got := readsInto(list(c.from), list(c.to)); got != c.want {
			t.Errorf("readsInto(list<%s>, list<%s>) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}
