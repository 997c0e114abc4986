package files

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/streamkit/streamkit/codec/csvrow"
	"github.com/streamkit/streamkit/codec/formats"
	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/stage"
)

func isUsage(err error) bool {
	var u *stage.UsageError
	return errors.As(err, &u)
}

// TestColumns checks --columns (Config.Columns): the output is the selected columns in their
// order plus _rescued_data; a value of a column left out is not decoded, so in every mode it
// is neither rescued nor a bad record, while fields no column names are still rescued; CSV
// without a header binds by the whole schema's positions.
func TestColumns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file, data string
		header           bool
		mode             rescue.Mode
		want             string
	}{
		{"csv", "a.csv", "id,amount,user\n1,10,ann\n2,abc,bob\n3,30,cy,extra\n", true, rescue.Permissive,
			`{"user":"ann","id":1,"_rescued_data":null}|{"user":"bob","id":2,"_rescued_data":null}|{"user":"cy","id":3,"_rescued_data":"{\"_c3\":\"extra\",\"_file\":\"$F\"}"}`},
		{"csv-dropmalformed", "a.csv", "id,amount,user\n1,10,ann\n2,abc,bob\n", true, rescue.DropMalformed,
			`{"user":"ann","id":1,"_rescued_data":null}|{"user":"bob","id":2,"_rescued_data":null}`},
		{"csv-failfast", "a.csv", "id,amount,user\n1,10,ann\n2,abc,bob\n", true, rescue.FailFast,
			`{"user":"ann","id":1,"_rescued_data":null}|{"user":"bob","id":2,"_rescued_data":null}`},
		{"csv-no-header", "a.csv", "1,10,ann\n2,abc,bob\n", false, rescue.Permissive,
			`{"user":"ann","id":1,"_rescued_data":null}|{"user":"bob","id":2,"_rescued_data":null}`},
		{"json", "a.json", `{"id":1,"amount":10,"user":"ann"}` + "\n" + `{"id":2,"amount":"abc","user":"bob","new":true}` + "\n", false, rescue.Permissive,
			`{"user":"ann","id":1,"_rescued_data":null}|{"user":"bob","id":2,"_rescued_data":"{\"new\":true,\"_file\":\"$F\"}"}`},
		{"json-failfast", "a.json", `{"id":2,"amount":"abc","user":"bob"}` + "\n", false, rescue.FailFast,
			`{"user":"bob","id":2,"_rescued_data":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			p := e.write(tc.file, tc.data, time.Minute)
			cfg := ddl(t, "id long, amount long, user string")
			cfg.CSV = csvrow.Options{Header: tc.header}
			cfg.Mode, cfg.Columns = tc.mode, []string{"user", "id"}
			got := e.mustRun(cfg, runOpts{})
			if want := strings.ReplaceAll(tc.want, "$F", p); strings.Join(got.rows, "|") != want {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got.rows, "|"), want)
			}
			if s := schema.DDL(got.schema); s != "user string, id bigint, _rescued_data string" {
				t.Errorf("schema %s", s)
			}
		})
	}
}

// TestColumnsOfTheCheckpointSchema checks that the checkpoint keeps the whole stream schema:
// a run may select other columns than the one before it, and an inferred schema is
// projected like a given one.
func TestColumnsOfTheCheckpointSchema(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.json", `{"id":1,"name":"x","n":5}`+"\n", time.Minute)
	got := e.mustRun(Config{Columns: []string{"name"}}, runOpts{})
	if s, rows := schema.DDL(got.schema), strings.Join(got.rows, "|"); s != "name string, _rescued_data string" || rows != `{"name":"x","_rescued_data":null}` {
		t.Fatalf("run 1: %s: %s", s, rows)
	}
	e.write("b.json", `{"id":2,"name":"y","n":"six"}`+"\n", time.Minute)
	got = e.mustRun(Config{Columns: []string{"id", "name"}}, runOpts{})
	if s, rows := schema.DDL(got.schema), strings.Join(got.rows, "|"); s != "id bigint, name string, _rescued_data string" || rows != `{"id":2,"name":"y","_rescued_data":null}` {
		t.Fatalf("run 2: %s: %s", s, rows)
	}
}

// TestColumnsErrors checks the usage errors of --columns: an unknown column (with the closest
// one), _rescued_data, a column given twice, and stdin without a schema.
func TestColumnsErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cols []string
		want string
	}{
		{[]string{"usr"}, "--columns: no column `usr` in the stream schema (did you mean `user`?)"},
		{[]string{"user", "_rescued_data"}, "--columns: _rescued_data is always kept"},
		{[]string{"id", "id"}, "--columns: id is given twice"},
	} {
		e := newEnv(t)
		e.write("a.csv", "id,user\n1,ann\n", time.Minute)
		cfg := ddl(t, "id long, user string")
		cfg.Columns = tc.cols
		_, serr, _ := e.run(cfg, runOpts{})
		if !isUsage(serr) || !strings.Contains(serr.Error(), tc.want) {
			t.Errorf("%q: %v; want a usage error with %q", tc.cols, serr, tc.want)
		}
	}
	_, err := New(Config{Patterns: []string{"-"}, Format: formats.JSON, Columns: []string{"a"}})
	if !isUsage(err) || !strings.Contains(err.Error(), "--columns with - (stdin) needs --schema") {
		t.Errorf("stdin: %v", err)
	}
}
