package delta

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	dl "github.com/streamkit/streamkit/delta"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	"github.com/streamkit/streamkit/stage"
)

func newMem(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func recJSON(t testing.TB, mem memory.Allocator, sc *arrow.Schema, js string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, sc, strings.NewReader(js))
	if err != nil {
		t.Fatalf("record from JSON: %v", err)
	}
	return rec
}

// appendRows commits rows (JSON) to the table at dir, creating it with create when it does not
// exist; it returns the committed version.
func appendRows(t testing.TB, mem memory.Allocator, dir string, sc *arrow.Schema, create *dl.CreateOptions, js ...string) int64 {
	t.Helper()
	ctx := context.Background()
	tbl := dl.NewTable(dir, mem)
	var req dl.CommitRequest
	var meta *dl.Metadata
	if ok, _ := tbl.Exists(); ok {
		snap, err := tbl.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req.Read, meta = snap, snap.Metadata()
	} else {
		if create == nil {
			create = &dl.CreateOptions{}
		}
		p, m, err := dl.NewTableMetadata(sc, *create)
		if err != nil {
			t.Fatal(err)
		}
		req.Protocol, req.Metadata, meta = p, m, m
	}
	w, err := deltasink.NewDataWriter(dl.NewTable(dir, nil).Store(), meta, deltasink.WriterOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		rec := recJSON(t, mem, sc, j)
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	adds, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	req.Adds = adds
	res, err := tbl.Commit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res.Version
}

// writeCommit writes raw JSON lines as commit v of the table at dir.
func writeCommit(t testing.TB, dir string, v int64, lines ...string) {
	t.Helper()
	log := filepath.Join(dir, "_delta_log")
	if err := os.MkdirAll(log, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(log, fmt.Sprintf("%020d.json", v)), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// scanAll reads every batch of the files of snap through a Reader and returns the rows as
// JSON lines sorted.
func scanAll(t testing.TB, rd *Reader, files []*dl.Add) []string {
	t.Helper()
	refs := make([]FileRef, len(files))
	for i, f := range files {
		refs[i] = FileRef{Add: f, End: -1}
	}
	rows := scanRefs(t, rd, refs)
	sort.Strings(rows)
	return rows
}

// scanRefs reads every batch of refs through a Reader and returns the rows as JSON lines, in
// the scan's order.
func scanRefs(t testing.TB, rd *Reader, refs []FileRef) []string {
	t.Helper()
	sc := rd.Scan(context.Background(), refs)
	defer sc.Close()
	var rows []string
	for {
		b, err := sc.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.Rec != nil {
			rows = append(rows, recRows(t, b.Rec)...)
			b.Rec.Release()
		}
	}
	return rows
}

// recRows renders each row of rec as a JSON object.
func recRows(t testing.TB, rec arrow.RecordBatch) []string {
	t.Helper()
	b, err := rec.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var objs []json.RawMessage
	if err := json.Unmarshal(b, &objs); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = string(o)
	}
	return out
}

// testEnv is a stage environment for driving a Source directly.
func testEnv(mem memory.Allocator) *stage.Env {
	return &stage.Env{Mem: mem, Now: time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), BatchRows: 3, Linger: time.Millisecond}
}

// readAll drives src until io.EOF (or until idle returns nil batches maxIdle times in a row,
// for follow mode), returning the rows, the positions after each batch and the number of
// rows read before each of those positions.
func readAll(t testing.TB, src *Source, limit stage.Position, maxIdle int) ([]string, []stage.Position, []int) {
	t.Helper()
	var rows []string
	var poss []stage.Position
	var cum []int
	idle := 0
	for {
		rec, err := src.Read(context.Background(), limit)
		if err == io.EOF {
			return rows, poss, cum
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			if src.EpochFull() {
				src.EpochCut()
				continue
			}
			idle++
			if idle >= maxIdle {
				return rows, poss, cum
			}
			continue
		}
		idle = 0
		rows = append(rows, recRows(t, rec)...)
		rec.Release()
		poss = append(poss, src.Position())
		cum = append(cum, len(rows))
	}
}
