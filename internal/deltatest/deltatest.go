// Package deltatest holds helpers for tests that check the rows of a Delta table.
package deltatest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/delta"
	rd "github.com/streamkit/streamkit/source/delta"
)

// IDRows reads the table at dir (its latest snapshot) and returns one string per row: the
// int64 column id, followed by ":" and the string column record_source when the table has
// one, sorted by id (then as strings); and the snapshot's version. Errors fail t.
func IDRows(t testing.TB, mem memory.Allocator, dir string) ([]string, int64) {
	t.Helper()
	return IDRowsOf(t, mem, delta.NewTable(dir, mem))
}

// IDRowsOf is IDRows for an opened table (e.g. delta.OpenTable on a bucket store).
func IDRowsOf(t testing.TB, mem memory.Allocator, tbl *delta.Table) ([]string, int64) {
	t.Helper()
	var out []string
	version := eachBatch(t, mem, tbl, func(rec arrow.RecordBatch) {
		ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
		var src *array.String
		if idx := rec.Schema().FieldIndices("record_source"); len(idx) > 0 {
			src = rec.Column(idx[0]).(*array.String)
		}
		for i := 0; i < ids.Len(); i++ {
			s := fmt.Sprint(ids.Value(i))
			if src != nil {
				s += ":" + src.Value(i)
			}
			out = append(out, s)
		}
	})
	sort.Slice(out, func(i, j int) bool { return IDLess(out[i], out[j]) })
	return out, version
}

// JSONRows reads the table's latest snapshot with read-delta's reader and returns its rows
// as JSON objects (array.RecordToJSON: keys sorted, timestamps RFC 3339), sorted. Errors
// fail t.
func JSONRows(t testing.TB, mem memory.Allocator, tbl *delta.Table) []string {
	t.Helper()
	var out []string
	eachBatch(t, mem, tbl, func(rec arrow.RecordBatch) {
		var buf bytes.Buffer
		if err := array.RecordToJSON(rec, &buf); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.Split(strings.TrimSpace(buf.String()), "\n")...)
	})
	sort.Strings(out)
	return out
}

// eachBatch scans every live file of the table's latest snapshot and calls fn with each data
// batch (released after fn); it returns the snapshot's version.
func eachBatch(t testing.TB, mem memory.Allocator, tbl *delta.Table, fn func(arrow.RecordBatch)) int64 {
	t.Helper()
	ctx := context.Background()
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rd.NewReader(tbl.Store(), snap.Metadata(), rd.ReadOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var refs []rd.FileRef
	for _, f := range snap.Files() {
		refs = append(refs, rd.FileRef{Add: f, End: -1})
	}
	sc := r.Scan(ctx, refs)
	defer sc.Close()
	for {
		b, err := sc.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.Rec == nil {
			continue
		}
		fn(b.Rec)
		b.Rec.Release()
	}
	return snap.Version()
}

// IDLess orders rows of IDRows by their id, then as strings.
func IDLess(a, b string) bool {
	var x, y int
	fmt.Sscan(strings.Split(a, ":")[0], &x)
	fmt.Sscan(strings.Split(b, ":")[0], &y)
	if x != y {
		return x < y
	}
	return a < b
}
