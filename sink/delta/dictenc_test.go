package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/streamkit/streamkit/delta"
)

// dictTestStrings are distinct strings that collide in naive short-string packings (zero
// bytes, 7 vs 8 bytes, empty, multi-byte UTF-8).
var dictTestStrings = []string{"", "a", "a\x00", "\x00a", "\x00", "ATL", "ABCDEFG", "ABCDEFGH",
	"ABCDEFGHI", "é", "日本語テキスト", "a much longer string value than seven bytes"}

// TestDictEncode: every row of the dictionary array equals the input row (nulls stay null),
// the dictionary holds distinct values, chunks may be slices with offsets, and a dictionary
// over the limit gives nil.
func TestDictEncode(t *testing.T) {
	mem := newMem(t)
	rng := rand.New(rand.NewSource(1))
	mk := func(dt arrow.DataType, n int, distinct int) arrow.Array {
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		for i := 0; i < n; i++ {
			if rng.Intn(7) == 0 {
				b.AppendNull()
				continue
			}
			k := rng.Intn(distinct)
			switch b := b.(type) {
			case *array.Int64Builder:
				b.Append(int64(k) * -7919)
			case *array.TimestampBuilder:
				b.Append(arrow.Timestamp(int64(k) * 60_000_000))
			case *array.StringBuilder:
				b.Append(dictTestStrings[k%len(dictTestStrings)] + strings.Repeat("x", k/len(dictTestStrings)))
			case *array.BinaryBuilder:
				b.Append([]byte(dictTestStrings[k%len(dictTestStrings)] + strings.Repeat("\xff", k/len(dictTestStrings))))
			}
		}
		return b.NewArray()
	}
	for _, dt := range []arrow.DataType{arrow.PrimitiveTypes.Int64, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		arrow.BinaryTypes.String, arrow.BinaryTypes.Binary} {
		t.Run(dt.String(), func(t *testing.T) {
			whole := mk(dt, 3000, 100)
			defer whole.Release()
			plain := mk(dt, 500, 30)
			defer plain.Release()
			// a slice with an offset, a whole array, a slice without nulls at its start
			chunks := []arrow.Array{array.NewSlice(whole, 13, 1700), plain, array.NewSlice(whole, 1700, 2999)}
			defer chunks[0].Release()
			defer chunks[2].Release()
			rows := 0
			for _, c := range chunks {
				rows += c.Len()
			}
			var scratch []int32
			enc := dictEncode(chunks, rows, 1<<20, &scratch)
			if enc == nil {
				t.Fatal("dictEncode gave nil under the limit")
			}
			defer enc.Release()
			d := enc.(*array.Dictionary)
			dict := d.Dictionary()
			seen := map[string]bool{}
			for i := 0; i < dict.Len(); i++ {
				k := dict.ValueStr(i)
				if seen[k] {
					t.Fatalf("dictionary value %q twice", k)
				}
				seen[k] = true
			}
			idx := d.Indices().(*array.Int32)
			pos := 0
			for _, c := range chunks {
				for i := 0; i < c.Len(); i++ {
					if c.IsNull(i) != d.IsNull(pos) {
						t.Fatalf("row %d: null %v, encoded null %v", pos, c.IsNull(i), d.IsNull(pos))
					}
					if c.IsValid(i) && !sameValue(c, i, dict, int(idx.Value(pos))) {
						t.Fatalf("row %d: %s, encoded %s", pos, c.ValueStr(i), dict.ValueStr(int(idx.Value(pos))))
					}
					pos++
				}
			}
			if got := dictEncode(chunks, rows, 16, new([]int32)); got != nil {
				got.Release()
				t.Fatal("dictEncode ignored a 16-byte limit")
			}
		})
	}
}

// sameValue compares row i of a with row j of dict (an Int64 dictionary for timestamps).
func sameValue(a arrow.Array, i int, dict arrow.Array, j int) bool {
	switch a := a.(type) {
	case *array.Int64:
		return a.Value(i) == dict.(*array.Int64).Value(j)
	case *array.Timestamp:
		return int64(a.Value(i)) == dict.(*array.Int64).Value(j)
	case *array.String:
		return a.Value(i) == dict.(*array.String).Value(j)
	case *array.Binary:
		return bytes.Equal(a.Value(i), dict.(*array.Binary).Value(j))
	}
	return false
}

// TestWriterDictionaryColumns writes columns that take every path of the writer — dictionary
// pre-encoded (with nulls, across several row groups, batches cut at row group boundaries),
// a string column whose dictionary outgrows the page limit (dense), other types (dense) — for
// a flat schema (parquet/file path) and with a struct column (pqarrow path), then reads the
// file back and checks every value, the Parquet encodings and statistics, and the Delta
// stats.
func TestWriterDictionaryColumns(t *testing.T) {
	for _, nested := range []bool{false, true} {
		t.Run(fmt.Sprintf("nested=%v", nested), func(t *testing.T) {
			mem := newMem(t)
			fields := []arrow.Field{
				{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
				{Name: "code", Type: arrow.BinaryTypes.String, Nullable: true},
				{Name: "uniq", Type: arrow.BinaryTypes.String, Nullable: false},
				{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
				{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
				{Name: "nulls", Type: arrow.BinaryTypes.String, Nullable: true},
				{Name: "inulls", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			}
			if nested {
				fields = append(fields, arrow.Field{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true})
			}
			sc := arrow.NewSchema(fields, nil)
			const batches, per = 6, 20000
			var recs []arrow.RecordBatch
			for bi := 0; bi < batches; bi++ {
				var rows []string
				for i := 0; i < per; i++ {
					r := bi*per + i
					cj, _ := json.Marshal(dictTestStrings[r%len(dictTestStrings)])
					id, code, bin := fmt.Sprint(r%977), string(cj), `"QUJD"`
					if r%11 == 0 {
						id = "null"
					}
					if r%13 == 0 {
						code = "null"
					}
					if r%17 == 0 {
						bin = "null"
					}
					row := fmt.Sprintf(`{"nulls":null,"inulls":null,"id":%s,"ts":"2024-01-%02dT%02d:00:00Z","code":%s,"uniq":"unique-value-%08d-%s","bin":%s,"f":%d.25`,
						id, 1+r%28, r%24, code, r, strings.Repeat("z", 40), bin, r)
					if nested {
						row += fmt.Sprintf(`,"s":{"x":%d}`, r%5)
					}
					rows = append(rows, row+"}")
				}
				recs = append(recs, recFromJSON(t, mem, sc, "["+strings.Join(rows, ",")+"]"))
			}
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			tbl := newTestTable(t, mem)
			// About 2.5 batches per row group: some batches are cut between two row groups.
			res := appendBatches(t, tbl, nil, &delta.CreateOptions{}, sc, WriterOptions{Allocator: mem, RowGroupSize: 5 << 20}, nil, recs...)
			files := res.Snapshot.Files()
			if len(files) != 1 {
				t.Fatalf("%d files, want 1", len(files))
			}
			path := filepath.Join(tbl.Root(), files[0].Path)
			pf, err := file.OpenParquetFile(path, false)
			if err != nil {
				t.Fatal(err)
			}
			defer pf.Close()
			if pf.NumRowGroups() < 2 {
				t.Fatalf("%d row groups, want several", pf.NumRowGroups())
			}
			// Encodings and statistics of every column chunk.
			for rg := 0; rg < pf.NumRowGroups(); rg++ {
				md := pf.MetaData().RowGroup(rg)
				for c := 0; c < md.NumColumns(); c++ {
					cc, err := md.ColumnChunk(c)
					if err != nil {
						t.Fatal(err)
					}
					name := cc.PathInSchema().String()
					if !cc.HasDictionaryPage() && name != "uniq" {
						t.Errorf("row group %d column %s: no dictionary page", rg, name)
					}
					// A dictionary over the page limit: the flat path writes the column plain
					// from its first value instead of letting arrow-go build the dictionary
					// again up to the limit (a dictionary page and dictionary-encoded pages).
					if name == "uniq" && !nested && (cc.HasDictionaryPage() || slices.ContainsFunc(cc.Encodings(), func(e parquet.Encoding) bool {
						return e == parquet.Encodings.RLEDict || e == parquet.Encodings.PlainDict
					})) {
						t.Errorf("row group %d column uniq: encodings %v, dictionary page %v; want plain only", rg, cc.Encodings(), cc.HasDictionaryPage())
					}
					st, err := cc.Statistics()
					allNull := name == "nulls" || name == "inulls"
					if err != nil || st == nil || st.HasMinMax() == allNull {
						t.Errorf("row group %d column %s: min/max statistics %v (%v)", rg, name, st != nil && st.HasMinMax(), err)
					}
					if allNull && (st == nil || st.NullCount() != md.NumRows()) {
						t.Errorf("row group %d column %s: null count %v, want %d", rg, name, st, md.NumRows())
					}
				}
			}
			checkChunkStats(t, pf, "code", recs, true)
			checkChunkStats(t, pf, "uniq", recs, false)
			// Values.
			fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fr.ReadTable(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			for j, f := range sc.Fields() {
				want := make([]arrow.Array, len(recs))
				for i, r := range recs {
					want[i] = r.Column(j)
				}
				wantCol, err := array.Concatenate(want, mem)
				if err != nil {
					t.Fatal(err)
				}
				gotCol, err := array.Concatenate(got.Column(got.Schema().FieldIndices(f.Name)[0]).Data().Chunks(), mem)
				if err != nil {
					t.Fatal(err)
				}
				if !array.Equal(wantCol, gotCol) {
					t.Errorf("column %s differs after the round trip", f.Name)
				}
				wantCol.Release()
				gotCol.Release()
			}
			// Delta stats.
			var st struct {
				NumRecords int64
				MinValues  map[string]any
				MaxValues  map[string]any
				NullCount  map[string]any
			}
			if err := json.Unmarshal([]byte(files[0].Stats), &st); err != nil {
				t.Fatal(err)
			}
			n := float64(batches * per)
			if st.NumRecords != batches*per || st.NullCount["code"] != float64(int(n+12)/13) || st.NullCount["id"] != float64(int(n+10)/11) ||
				st.MinValues["code"] != "" || st.MaxValues["code"] != "日本語テキスト" || st.MinValues["id"] != 0.0 || st.MaxValues["id"] != 976.0 ||
				st.MinValues["ts"] != "2024-01-01T00:00:00.000Z" || st.MaxValues["ts"] != "2024-01-28T23:00:00.000Z" {
				t.Errorf("delta stats %s", files[0].Stats)
			}
		})
	}
}

// checkChunkStats compares the Parquet statistics of string column name, summed over row
// groups, with the input: null count, and min/max over the file; dict: the column must be
// dictionary-encoded.
func checkChunkStats(t *testing.T, pf *file.Reader, name string, recs []arrow.RecordBatch, dict bool) {
	t.Helper()
	var nulls int64
	var lo, hi []byte
	for rg := 0; rg < pf.NumRowGroups(); rg++ {
		md := pf.MetaData().RowGroup(rg)
		cc, err := md.ColumnChunk(md.Schema.ColumnIndexByName(name))
		if err != nil {
			t.Fatal(err)
		}
		s, err := cc.Statistics()
		if err != nil {
			t.Fatal(err)
		}
		bs := s.(*metadata.ByteArrayStatistics)
		nulls += bs.NullCount()
		if lo == nil || bytes.Compare(bs.Min(), lo) < 0 {
			lo = append([]byte{}, bs.Min()...)
		}
		if hi == nil || bytes.Compare(bs.Max(), hi) > 0 {
			hi = append([]byte{}, bs.Max()...)
		}
		if dict && cc.Encodings()[0] == parquet.Encodings.Plain && !cc.HasDictionaryPage() {
			t.Errorf("row group %d: %s not dictionary-encoded", rg, name)
		}
	}
	var wantNulls int64
	var wlo, whi string
	first := true
	for _, r := range recs {
		c := r.Column(r.Schema().FieldIndices(name)[0]).(*array.String)
		for i := 0; i < c.Len(); i++ {
			if c.IsNull(i) {
				wantNulls++
				continue
			}
			v := c.Value(i)
			if first || v < wlo {
				wlo = v
			}
			if first || v > whi {
				whi = v
			}
			first = false
		}
	}
	if nulls != wantNulls || string(lo) != wlo || string(hi) != whi {
		t.Errorf("Parquet stats of %s: nulls %d min %q max %q, want %d %q %q", name, nulls, lo, hi, wantNulls, wlo, whi)
	}
}

// TestWriterRarePartitionHoldsLittle: a partition that gets one row of every batch keeps a
// copy of that row, not the batch, until its row group is written.
func TestWriterRarePartitionHoldsLittle(t *testing.T) {
	mem := newMem(t)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	_, meta, err := delta.NewTableMetadata(sc, delta.CreateOptions{PartitionColumns: []string{"p"}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewDataWriter(delta.NewTable(t.TempDir(), nil).Store(), meta, WriterOptions{Allocator: mem, RowGroupSize: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	var peak int64
	for bi := 0; bi < 40; bi++ {
		for i := 0; i < 5000; i++ { // one contiguous run per partition: slices, no copy
			p := "common"
			if i == 4999 {
				p = "rare"
			}
			b.Field(0).(*array.StringBuilder).Append(p)
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("value %d of batch %d, padded %s", i, bi, strings.Repeat("-", 40)))
		}
		rec := b.NewRecordBatch()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		peak = max(peak, int64(mem.CurrentAlloc()))
	}
	// A batch is ~350 KB; holding all 40 would be ~14 MB.
	if peak > 3<<20 {
		t.Fatalf("writer held %d bytes of Arrow data", peak)
	}
}

// TestDictEncodeInt64Ranges: small-range int64 chunks without nulls take the direct table,
// wider ones or chunks with nulls the hash table; every path gives the dictionary in order of
// first occurrence and the right index for each row, across chunk boundaries and offsets.
func TestDictEncodeInt64Ranges(t *testing.T) {
	mem := newMem(t)
	rng := rand.New(rand.NewSource(2))
	build := func(vals []int64, nullAt int) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for i, v := range vals {
			if i == nullAt {
				b.AppendNull()
			} else {
				b.Append(v)
			}
		}
		return b.NewArray()
	}
	for _, tc := range []struct {
		name   string
		lo, hi int64 // values drawn from [lo, hi], both included
		nullAt int   // a null in the second chunk at this row (-1: none)
		direct bool
	}{
		{"direct, negative to positive", -300, 300, -1, true},
		{"direct, widest range", -1 << 40, -1<<40 + maxDirectRange - 1, -1, true},
		{"hash, one past the range", 5, 5 + maxDirectRange, -1, false},
		{"hash, a null", -300, 300, 7, false},
		{"hash, extremes", math.MinInt64, math.MaxInt64, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var chunks []arrow.Array
			var all []int64
			valid := map[int]bool{}
			for c := 0; c < 3; c++ {
				vals := make([]int64, 500+c*300)
				for i := range vals {
					switch {
					case i == 0 && c == 0:
						vals[i] = tc.lo
					case i == 1 && c == 2:
						vals[i] = tc.hi
					default:
						span := uint64(tc.hi-tc.lo) + 1
						if span == 0 { // the full int64 range
							vals[i] = int64(rng.Uint64())
						} else {
							vals[i] = tc.lo + int64(rng.Uint64()%min(span, 900))*int64(max(span/900, 1))
						}
					}
				}
				nullAt := -1
				if c == 1 {
					nullAt = tc.nullAt
				}
				a := build(vals, nullAt)
				defer a.Release()
				if c == 2 { // a slice with an offset
					s := array.NewSlice(a, 1, int64(a.Len()))
					defer s.Release()
					a, vals = s, vals[1:]
				}
				for i, v := range vals {
					valid[len(all)] = i != nullAt
					all = append(all, v)
				}
				chunks = append(chunks, a)
			}
			var d int64Dict
			d.init(chunks)
			if (d.direct != nil) != tc.direct {
				t.Fatalf("direct table used: %v, want %v", d.direct != nil, tc.direct)
			}
			enc := dictEncode(chunks, len(all), 1<<20, new([]int32))
			if enc == nil {
				t.Fatal("nil under the limit")
			}
			defer enc.Release()
			da := enc.(*array.Dictionary)
			dict := da.Dictionary().(*array.Int64).Int64Values()
			idx := da.Indices().(*array.Int32)
			var want []int64
			seen := map[int64]bool{}
			for i, v := range all {
				if da.IsNull(i) == valid[i] {
					t.Fatalf("row %d: null %v", i, da.IsNull(i))
				}
				if !valid[i] {
					continue
				}
				if !seen[v] {
					seen[v] = true
					want = append(want, v)
				}
				if got := dict[idx.Value(i)]; got != v {
					t.Fatalf("row %d: %d encoded as %d", i, v, got)
				}
			}
			if fmt.Sprint(dict) != fmt.Sprint(want) {
				t.Fatalf("dictionary not in order of first occurrence:\n%v\n%v", dict, want)
			}
		})
	}
}
