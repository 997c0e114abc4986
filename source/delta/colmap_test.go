package delta

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	dl "github.com/streamkit/streamkit/delta"
)

// TestColumnMappingRoundTrip writes a table in column mapping modes name and id (streamkit's
// own writer: physical names, field ids, physical partition keys and statistics), renames a
// column and a nested field, drops a column and adds it again under its old name, and reads
// every state back by display names, also with --where pruning on the partition column and a
// renamed nested field.
func TestColumnMappingRoundTrip(t *testing.T) {
	for _, mode := range []string{"name", "id"} {
		t.Run(mode, func(t *testing.T) {
			mem := newMem(t)
			dir := t.TempDir()
			ctx := context.Background()
			info := arrow.StructOf(arrow.Field{Name: "city", Type: arrow.BinaryTypes.String, Nullable: true}, arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
			sc := arrow.NewSchema([]arrow.Field{
				{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				{Name: "user name", Type: arrow.BinaryTypes.String, Nullable: true},
				{Name: "part", Type: arrow.BinaryTypes.String, Nullable: true},
				{Name: "info", Type: info, Nullable: true},
			}, nil)
			appendRows(t, mem, dir, sc, &dl.CreateOptions{PartitionColumns: []string{"part"}, Configuration: map[string]string{dl.ColumnMappingModeKey: mode}},
				`[{"id":1,"user name":"ann","part":"a","info":{"city":"x","zip":1}},{"id":2,"user name":"bob","part":"b","info":{"city":"y","zip":2}}]`)
			tbl := dl.NewTable(dir, mem)
			snap, err := tbl.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if p := snap.Protocol(); p.MinReaderVersion != 2 || p.MinWriterVersion != 5 || snap.Metadata().Configuration[dl.MaxColumnIDKey] != "6" {
				t.Fatalf("protocol %+v, configuration %v", p, snap.Metadata().Configuration)
			}
			for _, a := range snap.Files() {
				if _, ok := a.PartitionValues["part"]; ok || !strings.Contains(a.Stats, `"col-`) || !strings.HasPrefix(a.Path, "col-") {
					t.Fatalf("add not keyed by physical names: %+v", a)
				}
			}
			// Rename `user name` to who and info.city to town: metadata only.
			st := snap.Schema()
			st.Fields[1].Name = "who"
			st.Fields[3].Type.(*dl.StructType).Fields[0].Name = "town"
			m := *snap.Metadata()
			m.SchemaString = st.JSON()
			commit(t, tbl, snap, &m)
			read := func(where string) string {
				s, err := tbl.Snapshot(ctx)
				if err != nil {
					t.Fatal(err)
				}
				rd, err := NewReader(tbl.Store(), s.Metadata(), ReadOptions{Allocator: mem, Predicate: where})
				if err != nil {
					t.Fatal(err)
				}
				defer rd.Close()
				var files []*dl.Add
				for _, a := range s.Files() {
					if v, err := rd.Verdict(a); err != nil {
						t.Fatal(err)
					} else if v != VerdictNone {
						files = append(files, a)
					}
				}
				return strings.Join(scanAll(t, rd, files), "\n")
			}
			want := `{"id":1,"info":{"town":"x","zip":1},"part":"a","who":"ann"}
{"id":2,"info":{"town":"y","zip":2},"part":"b","who":"bob"}`
			if got := read(""); got != want {
				t.Fatalf("after rename:\n%s\nwant\n%s", got, want)
			}
			// New rows under the new names.
			sc2 := arrow.NewSchema([]arrow.Field{sc.Field(0), {Name: "who", Type: arrow.BinaryTypes.String, Nullable: true}, sc.Field(2),
				{Name: "info", Type: arrow.StructOf(arrow.Field{Name: "town", Type: arrow.BinaryTypes.String, Nullable: true}, arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true}}, nil)
			appendRows(t, mem, dir, sc2, nil, `[{"id":3,"who":"cid","part":"a","info":{"town":"z","zip":3}}]`)
			if got, want := read("part = 'a' AND info.town = 'z'"), `{"id":3,"info":{"town":"z","zip":3},"part":"a","who":"cid"}`; got != want {
				t.Fatalf("--where after rename: %s, want %s", got, want)
			}
			// Drop who, then add it again (a new column: new id and physical name).
			snap, _ = tbl.Snapshot(ctx)
			st = snap.Schema()
			st.Fields = append(st.Fields[:1], st.Fields[2:]...)
			m = *snap.Metadata()
			m.SchemaString = st.JSON()
			commit(t, tbl, snap, &m)
			snap, _ = tbl.Snapshot(ctx)
			st = snap.Schema()
			st.Fields = append(st.Fields, dl.StructField{Name: "who", Type: dl.TypeString, Nullable: true})
			p := snap.Protocol()
			_, nm := dl.EvolveMetadata(&p, snap.Metadata(), st)
			if nm.Configuration[dl.MaxColumnIDKey] != "7" {
				t.Fatalf("maxColumnId after adding a column: %v", nm.Configuration)
			}
			commit(t, tbl, snap, nm)
			sc3 := arrow.NewSchema([]arrow.Field{sc2.Field(0), sc2.Field(2), sc2.Field(3), sc2.Field(1)}, nil)
			appendRows(t, mem, dir, sc3, nil, `[{"id":4,"who":"dan","part":null,"info":null}]`)
			want = `{"id":1,"info":{"town":"x","zip":1},"part":"a","who":null}
{"id":2,"info":{"town":"y","zip":2},"part":"b","who":null}
{"id":3,"info":{"town":"z","zip":3},"part":"a","who":null}
{"id":4,"info":null,"part":null,"who":"dan"}`
			if got := read(""); got != want {
				t.Fatalf("after drop and re-add:\n%s\nwant\n%s", got, want)
			}
			if got, want := read("who IS NOT NULL OR part = 'b'"), `{"id":2,"info":{"town":"y","zip":2},"part":"b","who":null}
{"id":4,"info":null,"part":null,"who":"dan"}`; got != want {
				t.Fatalf("--where after re-add:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func commit(t *testing.T, tbl *dl.Table, read *dl.Snapshot, m *dl.Metadata) {
	t.Helper()
	if _, err := tbl.Commit(context.Background(), dl.CommitRequest{Read: read, Metadata: m}); err != nil {
		t.Fatal(err)
	}
}

// TestColumnMappingChangeWhileFollowing: following a column-mapped table, a later rename and
// a drop followed by a re-add under the old name fail the stream (a restart reads with the new
// schema), while catching up over such commits from --starting-version 0 reads every file by
// physical names with the latest schema.
func TestColumnMappingChangeWhileFollowing(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	create := &dl.CreateOptions{Configuration: map[string]string{dl.ColumnMappingModeKey: "name"}}
	change := func(t *testing.T, dir string, edit func(st *dl.StructType) *dl.StructType) {
		tbl := dl.NewTable(dir, mem)
		snap, err := tbl.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p := snap.Protocol()
		_, m := dl.EvolveMetadata(&p, snap.Metadata(), edit(snap.Schema()))
		commit(t, tbl, snap, m)
	}
	follow := func(t *testing.T, dir string, mutate func(), want string) {
		src := openSource(t, cfg(dir, func(c *Config) { c.Follow = true }), testEnv(mem), nil)
		readAll(t, src, nil, 2)
		mutate()
		var err error
		for i := 0; i < 100 && err == nil; i++ {
			_, err = src.Read(ctx, nil)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want %q", err, want)
		}
	}
	t.Run("rename", func(t *testing.T) {
		dir := t.TempDir()
		appendRows(t, mem, dir, sc, create, `[{"id":1,"s":"a"}]`)
		follow(t, dir, func() {
			change(t, dir, func(st *dl.StructType) *dl.StructType { st.Fields[1].Name = "t"; return st })
		}, "column s renamed to t")
	})
	t.Run("drop and re-add", func(t *testing.T) {
		dir := t.TempDir()
		appendRows(t, mem, dir, sc, create, `[{"id":1,"s":"a"}]`)
		follow(t, dir, func() {
			change(t, dir, func(st *dl.StructType) *dl.StructType { st.Fields = st.Fields[:1]; return st })
			change(t, dir, func(st *dl.StructType) *dl.StructType {
				st.Fields = append(st.Fields, dl.StructField{Name: "s", Type: dl.TypeString, Nullable: true})
				return st
			})
		}, "column s was dropped and added again")
		appendRows(t, mem, dir, sc, nil, `[{"id":2,"s":"b"}]`)
		src := openSource(t, cfg(dir, func(c *Config) { c.Follow = true; c.StartingVersion = 0 }), testEnv(mem), nil)
		rows, _, _ := readAll(t, src, nil, 2)
		if got, want := strings.Join(rows, " "), `{"id":1,"s":null} {"id":2,"s":"b"}`; got != want {
			t.Fatalf("catching up: %s, want %s", got, want)
		}
	})
}
