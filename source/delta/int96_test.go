package delta

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/storage"
)

// int96Of encodes the instant us (µs since the epoch) as Spark writes INT96: the nanoseconds
// of the day, then the Julian day number, little-endian.
func int96Of(us int64) parquet.Int96 {
	day := us / 86_400_000_000
	if us%86_400_000_000 < 0 {
		day--
	}
	var v parquet.Int96
	binary.LittleEndian.PutUint64(v[:8], uint64((us-day*86_400_000_000)*1000))
	binary.LittleEndian.PutUint32(v[8:], uint32(day+julianDayOfEpoch))
	return v
}

// writeInt96File writes a Parquet file of columns id (int64), t (optional INT96) and st
// (optional struct of an optional INT96 n), one row group per element of rowGroups (the row
// indices into ids/ts; a zero instant in ts or nts is null).
func writeInt96File(t *testing.T, path string, ids []int64, ts, nts []*time.Time, rowGroups [][2]int, opts ...file.WriteOption) int64 {
	t.Helper()
	n96 := schema.NewInt96Node("n", parquet.Repetitions.Optional, -1)
	st, err := schema.NewGroupNode("st", parquet.Repetitions.Optional, schema.FieldList{n96}, -1)
	if err != nil {
		t.Fatal(err)
	}
	root, err := schema.NewGroupNode("spark_schema", parquet.Repetitions.Required, schema.FieldList{
		schema.NewInt64Node("id", parquet.Repetitions.Required, -1),
		schema.NewInt96Node("t", parquet.Repetitions.Optional, -1),
		st,
	}, -1)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := file.NewParquetWriter(f, root, append(opts, file.WithWriterProps(parquet.NewWriterProperties(parquet.WithDictionaryDefault(false))))...)
	values := func(col []*time.Time, lo, hi int, present int16) ([]parquet.Int96, []int16) {
		var vs []parquet.Int96
		var defs []int16
		for _, v := range col[lo:hi] {
			if v == nil {
				defs = append(defs, present-1)
				continue
			}
			defs = append(defs, present)
			vs = append(vs, int96Of(v.UnixMicro()))
		}
		return vs, defs
	}
	for _, g := range rowGroups {
		rg := w.AppendRowGroup()
		cw, _ := rg.NextColumn()
		if _, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(ids[g[0]:g[1]], nil, nil); err != nil {
			t.Fatal(err)
		}
		cw.Close()
		vs, defs := values(ts, g[0], g[1], 1)
		cw, _ = rg.NextColumn()
		if _, err := cw.(*file.Int96ColumnChunkWriter).WriteBatch(vs, defs, nil); err != nil {
			t.Fatal(err)
		}
		cw.Close()
		vs, defs = values(nts, g[0], g[1], 2)
		cw, _ = rg.NextColumn()
		if _, err := cw.(*file.Int96ColumnChunkWriter).WriteBatch(vs, defs, nil); err != nil {
			t.Fatal(err)
		}
		cw.Close()
		rg.Close()
	}
	return closeParquet(t, w, path)
}

// instantParser returns a parser of UTC instants written "2006-01-02 15:04:05.999999".
func instantParser(t *testing.T) func(string) *time.Time {
	return func(s string) *time.Time {
		v, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
}

// closeParquet closes w, writing the file at path, and returns the file's size.
func closeParquet(t *testing.T, w *file.Writer, path string) int64 {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

const int96Schema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},` +
	`{"name":"t","type":"timestamp","nullable":true,"metadata":{}},` +
	`{"name":"st","type":{"type":"struct","fields":[{"name":"n","type":"timestamp","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}`

// Spark's INT96 TIMESTAMP values over years 1 to 9999 read exactly (to µs, not through
// nanoseconds), across row groups and batches, with row ranges, alone or with other columns.
func TestInt96FullRange(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	at := instantParser(t)
	ts := []*time.Time{at("0001-01-01 00:00:00"), at("1969-12-31 23:59:59.999999"), nil, at("1970-01-01 00:00:00"), at("9999-12-31 23:59:59.999999"), at("1582-10-04 12:00:00.5")}
	nts := []*time.Time{at("2000-01-01 00:00:00"), nil, nil, at("1677-09-22 00:00:00"), at("2262-04-10 23:59:59.999999"), nil}
	ids := []int64{0, 1, 2, 3, 4, 5}
	size := writeInt96File(t, filepath.Join(dir, "part-0.parquet"), ids, ts, nts, [][2]int{{0, 2}, {2, 5}, {5, 6}})
	writeCommit(t, dir, 0, protoV1, metaLine(int96Schema, "[]"), addLine("part-0.parquet", size, "{}"))
	snap, err := dl.NewTable(dir, mem).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"id":0,"st":{"n":"2000-01-01T00:00:00Z"},"t":"0001-01-01T00:00:00Z"}`,
		`{"id":1,"st":{"n":null},"t":"1969-12-31T23:59:59.999999Z"}`,
		`{"id":2,"st":{"n":null},"t":null}`,
		`{"id":3,"st":{"n":"1677-09-22T00:00:00Z"},"t":"1970-01-01T00:00:00Z"}`,
		`{"id":4,"st":{"n":"2262-04-10T23:59:59.999999Z"},"t":"9999-12-31T23:59:59.999999Z"}`,
		`{"id":5,"st":{"n":null},"t":"1582-10-04T12:00:00.5Z"}`,
	}
	for _, c := range []struct {
		cols       []string
		batch      int
		start, end int64
		want       []string
	}{
		{nil, 0, 0, -1, want},
		{nil, 2, 0, -1, want}, // batches cross row groups
		{nil, 2, 1, 5, want[1:5]},
		{[]string{"t"}, 4, 0, -1, nil}, // no other leaf: rows counted from metadata
		{[]string{"t", "id"}, 1, 3, -1, nil},
	} {
		rd, err := NewReader(dl.NewTable(dir, nil).Store(), snap.Metadata(), ReadOptions{Allocator: mem, Columns: c.cols, BatchRows: c.batch, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		got := scanRefs(t, rd, []FileRef{{Add: snap.Files()[0], Start: c.start, End: c.end}})
		rd.Close()
		w := c.want
		if w == nil {
			end := int(c.end)
			if end < 0 {
				end = len(ts)
			}
			for i := int(c.start); i < end; i++ {
				row := `{"t":null}`
				if ts[i] != nil {
					row = `{"t":"` + strings.TrimSuffix(ts[i].Format("2006-01-02T15:04:05.999999"), ".") + `Z"}`
				}
				if len(c.cols) == 2 {
					row = `{"id":` + itoa(ids[i]) + `,` + row[1:]
				}
				w = append(w, row)
			}
		}
		if strings.Join(got, "\n") != strings.Join(w, "\n") {
			t.Errorf("columns %v batch %d rows [%d, %d):\n got %s\nwant %s", c.cols, c.batch, c.start, c.end, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
	}
}

// nestedRow is a row of writeNestedInt96File: st is struct<n timestamp> (nil: a null struct;
// a nil n: a null field), l is array<timestamp>, m is map<string, timestamp> (a nil slice: a
// null list or map; a nil element: a null value).
type nestedRow struct {
	st *struct{ n *time.Time }
	l  []*time.Time
	m  []nestedEntry
	nl bool // l is null (else l is a list, maybe empty)
	nm bool // m is null
}

type nestedEntry struct {
	k string
	v *time.Time
}

// writeNestedInt96File writes rows as a Parquet file of columns id (int64), st (optional
// struct of an optional INT96 n), l (optional LIST of optional INT96) and m (optional MAP of
// required string keys to optional INT96 values), as Spark does, one row group per element of
// rowGroups (row index ranges).
func writeNestedInt96File(t *testing.T, path string, rows []nestedRow, rowGroups [][2]int) int64 {
	t.Helper()
	must := func(n *schema.GroupNode, err error) *schema.GroupNode {
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	st := must(schema.NewGroupNode("st", parquet.Repetitions.Optional, schema.FieldList{schema.NewInt96Node("n", parquet.Repetitions.Optional, -1)}, -1))
	l := must(schema.NewGroupNodeLogical("l", parquet.Repetitions.Optional, schema.FieldList{
		must(schema.NewGroupNode("list", parquet.Repetitions.Repeated, schema.FieldList{schema.NewInt96Node("element", parquet.Repetitions.Optional, -1)}, -1)),
	}, schema.NewListLogicalType(), -1))
	key, err := schema.NewPrimitiveNodeLogical("key", parquet.Repetitions.Required, schema.StringLogicalType{}, parquet.Types.ByteArray, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	m := must(schema.NewGroupNodeLogical("m", parquet.Repetitions.Optional, schema.FieldList{
		must(schema.NewGroupNode("key_value", parquet.Repetitions.Repeated, schema.FieldList{key, schema.NewInt96Node("value", parquet.Repetitions.Optional, -1)}, -1)),
	}, schema.MapLogicalType{}, -1))
	root := must(schema.NewGroupNode("spark_schema", parquet.Repetitions.Required, schema.FieldList{
		schema.NewInt64Node("id", parquet.Repetitions.Required, -1), st, l, m}, -1))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := file.NewParquetWriter(f, root, file.WithWriterProps(parquet.NewWriterProperties(parquet.WithDictionaryDefault(false))))
	// The levels and values of each leaf, built row by row.
	type leaf struct {
		vs         []parquet.Int96
		keys       []parquet.ByteArray
		defs, reps []int16
	}
	add96 := func(c *leaf, v *time.Time, def, rep int16) {
		if v != nil {
			c.vs = append(c.vs, int96Of(v.UnixMicro()))
			def++
		}
		c.defs, c.reps = append(c.defs, def), append(c.reps, rep)
	}
	for _, g := range rowGroups {
		var ids []int64
		var cn, cl, ck, cv leaf
		for i, r := range rows[g[0]:g[1]] {
			ids = append(ids, int64(g[0]+i))
			switch {
			case r.st == nil:
				cn.defs = append(cn.defs, 0)
			default:
				add96(&cn, r.st.n, 1, 0)
			}
			switch {
			case r.nl:
				cl.defs, cl.reps = append(cl.defs, 0), append(cl.reps, 0)
			case len(r.l) == 0:
				cl.defs, cl.reps = append(cl.defs, 1), append(cl.reps, 0)
			}
			for j, v := range r.l {
				add96(&cl, v, 2, min(int16(j), 1))
			}
			switch {
			case r.nm:
				ck.defs, ck.reps = append(ck.defs, 0), append(ck.reps, 0)
				cv.defs, cv.reps = append(cv.defs, 0), append(cv.reps, 0)
			case len(r.m) == 0:
				ck.defs, ck.reps = append(ck.defs, 1), append(ck.reps, 0)
				cv.defs, cv.reps = append(cv.defs, 1), append(cv.reps, 0)
			}
			for j, e := range r.m {
				ck.keys = append(ck.keys, parquet.ByteArray(e.k))
				ck.defs, ck.reps = append(ck.defs, 2), append(ck.reps, min(int16(j), 1))
				add96(&cv, e.v, 2, min(int16(j), 1))
			}
		}
		rg := w.AppendRowGroup()
		cw, _ := rg.NextColumn()
		if _, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(ids, nil, nil); err != nil {
			t.Fatal(err)
		}
		cw.Close()
		for _, c := range []*leaf{&cn, &cl, &ck, &cv} {
			cw, _ := rg.NextColumn()
			var reps []int16
			if c != &cn {
				reps = c.reps
			}
			var err error
			if c == &ck {
				_, err = cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(c.keys, c.defs, reps)
			} else {
				_, err = cw.(*file.Int96ColumnChunkWriter).WriteBatch(c.vs, c.defs, reps)
			}
			if err != nil {
				t.Fatal(err)
			}
			cw.Close()
		}
		rg.Close()
	}
	return closeParquet(t, w, path)
}

const nestedInt96Schema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},` +
	`{"name":"st","type":{"type":"struct","fields":[{"name":"n","type":"timestamp","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},` +
	`{"name":"l","type":{"type":"array","elementType":"timestamp","containsNull":true},"nullable":true,"metadata":{}},` +
	`{"name":"m","type":{"type":"map","keyType":"string","valueType":"timestamp","valueContainsNull":true},"nullable":true,"metadata":{}}]}`

// INT96 timestamps inside a struct, a list and a map's values read exactly over years 1 to
// 9999, as top-level ones do, with nulls at every level, across row groups and batch sizes.
func TestNestedInt96FullRange(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	at := instantParser(t)
	instants := []*time.Time{at("0001-01-01 00:00:00"), at("9999-12-31 23:59:59.999999"), at("1969-12-31 23:59:59.999999"),
		at("1582-10-04 12:00:00.5"), at("1677-09-21 00:12:43.145224"), at("2262-04-11 23:47:16.854776"), at("2024-05-01 10:00:00.000001"), nil}
	var rows []nestedRow
	for i := range 37 {
		v := func(k int) *time.Time { return instants[(i+k)%len(instants)] }
		r := nestedRow{l: []*time.Time{}, m: []nestedEntry{}}
		switch i % 4 { // null struct, null field, value
		case 0:
		case 1:
			r.st = &struct{ n *time.Time }{}
		default:
			r.st = &struct{ n *time.Time }{v(0)}
		}
		switch i % 5 { // null list, empty list, one to three elements, some null
		case 0:
			r.nl = true
		case 1:
		default:
			for k := range i%5 - 1 {
				r.l = append(r.l, v(k+1))
			}
		}
		switch i % 3 {
		case 0:
			r.nm = true
		case 1:
		default:
			r.m = []nestedEntry{{"a", v(3)}, {"b", v(5)}}
		}
		rows = append(rows, r)
	}
	size := writeNestedInt96File(t, filepath.Join(dir, "part-0.parquet"), rows, [][2]int{{0, 10}, {10, 11}, {11, 37}})
	writeCommit(t, dir, 0, protoV1, metaLine(nestedInt96Schema, "[]"), addLine("part-0.parquet", size, "{}"))
	snap, err := dl.NewTable(dir, mem).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	js := func(v *time.Time) string {
		if v == nil {
			return "null"
		}
		return `"` + strings.TrimSuffix(v.Format("2006-01-02T15:04:05.999999"), ".") + `Z"`
	}
	var want []string
	for i, r := range rows {
		st := "null"
		if r.st != nil {
			st = `{"n":` + js(r.st.n) + `}`
		}
		l := "null"
		if !r.nl {
			var es []string
			for _, v := range r.l {
				es = append(es, js(v))
			}
			l = "[" + strings.Join(es, ",") + "]"
		}
		m := "null"
		if !r.nm {
			var es []string
			for _, e := range r.m {
				es = append(es, `{"key":"`+e.k+`","value":`+js(e.v)+`}`)
			}
			m = "[" + strings.Join(es, ",") + "]"
		}
		want = append(want, fmt.Sprintf(`{"id":%d,"l":%s,"m":%s,"st":%s}`, i, l, m, st))
	}
	for _, c := range []struct {
		cols       []string
		batch      int
		start, end int64
	}{
		{nil, 0, 0, -1},
		{nil, 1, 0, -1},
		{nil, 4, 0, -1}, // batches cross row groups
		{nil, 7, 3, 30},
		{[]string{"m"}, 5, 0, -1},
		{[]string{"l", "st"}, 3, 2, -1},
	} {
		rd, err := NewReader(dl.NewTable(dir, nil).Store(), snap.Metadata(), ReadOptions{Allocator: mem, Columns: c.cols, BatchRows: c.batch, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		got := scanRefs(t, rd, []FileRef{{Add: snap.Files()[0], Start: c.start, End: c.end}})
		rd.Close()
		end := int(c.end)
		if end < 0 {
			end = len(rows)
		}
		var w []string
		for _, row := range want[c.start:end] {
			if c.cols != nil {
				var obj map[string]json.RawMessage
				if err := json.Unmarshal([]byte(row), &obj); err != nil {
					t.Fatal(err)
				}
				keep := map[string]json.RawMessage{}
				for _, k := range c.cols {
					keep[k] = obj[k]
				}
				b, _ := json.Marshal(keep)
				row = string(b)
			}
			w = append(w, row)
		}
		if strings.Join(got, "\n") != strings.Join(w, "\n") {
			t.Errorf("columns %v batch %d rows [%d, %d):\n got %s\nwant %s", c.cols, c.batch, c.start, c.end, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
	}
}

// A file Spark wrote with int96RebaseModeInWrite=LEGACY holds readings of the Julian calendar
// before 1582-10-15; they are read as the proleptic Gregorian instants of the same readings,
// as Spark reads them (later instants are the same in both calendars). The DATE and INT64
// TIMESTAMP key (datetimeRebaseModeInWrite=LEGACY) beside it changes nothing for INT96, at
// the top level or in a struct: each value is rebased once, by the INT96 key; with that key
// alone the INT96 values are read as written. A file of Spark before 3.1.0
// (org.apache.spark.version) is rebased without the key, as Spark's reader does.
func TestInt96LegacyRebase(t *testing.T) {
	mem := newMem(t)
	julian := func(jdn int64, tod time.Duration) *time.Time { // the instant Spark stored for that Julian day
		v := time.UnixMicro((jdn-julianDayOfEpoch)*86_400_000_000 + tod.Microseconds()).UTC()
		return &v
	}
	ts := []*time.Time{
		julian(1721424, 0),                        // Julian 0001-01-01
		julian(2299160, 23*time.Hour+time.Second), // Julian 1582-10-04, the day before the switch
		julian(2299161, 0),                        // 1582-10-15, the switch: not rebased
		julian(2440588, 0),                        // 1970-01-01
	}
	nts := ts // the struct's INT96 leaf is rebased too
	rebased := []string{"0001-01-01T00:00:00Z", "1582-10-04T23:00:01Z", "1582-10-15T00:00:00Z", "1970-01-01T00:00:00Z"}
	asWritten := []string{"0000-12-30T00:00:00Z", "1582-10-14T23:00:01Z", "1582-10-15T00:00:00Z", "1970-01-01T00:00:00Z"}
	for _, tc := range []struct {
		keys []string
		want []string
	}{
		{[]string{sparkLegacyInt96}, rebased},
		{[]string{sparkLegacyInt96, sparkLegacyDateTime}, rebased},
		{[]string{sparkLegacyDateTime}, asWritten},
		// Spark before 3.1 wrote INT96 in the hybrid calendar and had no key for it.
		{[]string{sparkVersionKey + "=3.0.1"}, rebased},
		{[]string{sparkVersionKey + "=2.4.5"}, rebased},
		{[]string{sparkVersionKey + "=3.5.1"}, asWritten},
		{[]string{sparkVersionKey + "=3.5.1", sparkLegacyInt96}, rebased},
	} {
		dir := t.TempDir()
		kv := metadata.NewKeyValueMetadata()
		for _, k := range tc.keys {
			k, v, _ := strings.Cut(k, "=")
			kv.Append(k, v)
		}
		size := writeInt96File(t, filepath.Join(dir, "part-0.parquet"), []int64{0, 1, 2, 3}, ts, nts, [][2]int{{0, 4}}, file.WithWriteMetadata(kv))
		writeCommit(t, dir, 0, protoV1, metaLine(int96Schema, "[]"), addLine("part-0.parquet", size, "{}"))
		snap, err := dl.NewTable(dir, mem).Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, col := range []string{"t", "st", "*"} {
			opts := ReadOptions{Allocator: mem}
			if col != "*" {
				opts.Columns = []string{col}
			}
			rd, err := NewReader(dl.NewTable(dir, nil).Store(), snap.Metadata(), opts)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(scanAll(t, rd, snap.Files()), "\n")
			rd.Close()
			var want []string
			for i, v := range tc.want {
				switch col {
				case "t":
					want = append(want, fmt.Sprintf(`{"t":%q}`, v))
				case "st":
					want = append(want, fmt.Sprintf(`{"st":{"n":%q}}`, v))
				default:
					want = append(want, fmt.Sprintf(`{"id":%d,"st":{"n":%q},"t":%q}`, i, v, v))
				}
			}
			if got != strings.Join(want, "\n") {
				t.Errorf("keys %v, columns %s: got\n%s\nwant\n%s", tc.keys, col, got, strings.Join(want, "\n"))
			}
		}
	}
}

// On a bucket the INT96 column chunks are fetched with the unit's other chunks (prefetch) and
// decoded the same way.
func TestS3Int96(t *testing.T) {
	s3test.Server(t)
	bucket := s3test.Bucket(t)
	ctx := context.Background()
	mem := newMem(t)
	dir := t.TempDir()
	y1 := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	y9999 := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	now := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	size := writeInt96File(t, filepath.Join(dir, "part-0.parquet"), []int64{0, 1, 2}, []*time.Time{&y1, nil, &y9999}, []*time.Time{&now, &now, nil}, [][2]int{{0, 1}, {1, 3}})
	writeCommit(t, dir, 0, protoV1, metaLine(int96Schema, "[]"), addLine("part-0.parquet", size, "{}"))
	st, err := storage.Open(ctx, "s3://"+bucket+"/tables/int96", storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"part-0.parquet", "_delta_log/00000000000000000000.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.WriteFile(ctx, name, b); err != nil {
			t.Fatal(err)
		}
	}
	tbl := dl.OpenTable(st, mem)
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(st, snap.Metadata(), ReadOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := strings.Join(scanAll(t, rd, snap.Files()), "\n")
	want := `{"id":0,"st":{"n":"2024-05-01T00:00:00Z"},"t":"0001-01-01T00:00:00Z"}` + "\n" +
		`{"id":1,"st":{"n":"2024-05-01T00:00:00Z"},"t":null}` + "\n" +
		`{"id":2,"st":{"n":null},"t":"9999-12-31T23:59:59.999999Z"}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestInt96DeletionVector: the top-level INT96 columns, read beside the record reader, lose
// the rows a deletion vector deletes as the other columns do (Spark writes INT96 timestamps
// by default, so a Spark table after DELETE has both), with or without another leaf column.
func TestInt96DeletionVector(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	const n = 300
	base := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := make([]int64, n)
	ts, nts := make([]*time.Time, n), make([]*time.Time, n)
	var deleted []uint64
	for i := range ids {
		ids[i] = int64(i)
		v := base.AddDate(i, 0, 0)
		ts[i] = &v
		if i%3 == 0 || (i >= 100 && i < 150) {
			deleted = append(deleted, uint64(i))
		}
	}
	size := writeInt96File(t, filepath.Join(dir, "part-0.parquet"), ids, ts, nts, [][2]int{{0, 100}, {100, 200}, {200, 300}})
	writeCommit(t, dir, 0,
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}`,
		metaLine(int96Schema, "[]"),
		fmt.Sprintf(`{"add":{"path":"part-0.parquet","partitionValues":{},"size":%d,"modificationTime":1,"dataChange":true,"deletionVector":%s}}`, size, inlineDV(deleted)))
	snap, err := dl.NewTable(dir, mem).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	isDel := map[int]bool{}
	for _, d := range deleted {
		isDel[int(d)] = true
	}
	for _, c := range []struct {
		cols  []string
		batch int
	}{{[]string{"id", "t"}, 7}, {[]string{"t"}, 7}, {[]string{"t", "id"}, 128}} {
		rd, err := NewReader(dl.NewTable(dir, nil).Store(), snap.Metadata(), ReadOptions{Allocator: mem, Columns: c.cols, BatchRows: c.batch, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		got := scanRange(t, rd, snap.Files()[0], 0, -1)
		rd.Close()
		var want []string
		for i := range n {
			if isDel[i] {
				continue
			}
			row := `{"t":"` + ts[i].Format("2006-01-02T15:04:05") + `Z"}`
			if len(c.cols) == 2 {
				row = `{"id":` + itoa(ids[i]) + `,` + row[1:]
			}
			want = append(want, row)
		}
		sort.Strings(want)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("columns %v batch %d: %d rows, want %d\n got %.300s\nwant %.300s", c.cols, c.batch, len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
