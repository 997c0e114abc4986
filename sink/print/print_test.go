package print

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/stage"
)

// batch returns the rows (1, "a"), (null, ""), (3, null) of schema (n long, s string).
func batch(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
	t.Helper()
	s := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 0, 3}, []bool{true, false, true})
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "", ""}, []bool{true, true, false})
	return b.NewRecordBatch()
}

func TestFormats(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Format: FormatJSON}, `{"n":1,"s":"a"}` + "\n" + `{"n":null,"s":""}` + "\n" + `{"n":3,"s":null}` + "\n"},
		{Config{Format: FormatCSV}, "n,s\n1,a\n,\"\"\n3,\n"},
		{Config{Format: FormatCSV, NullValue: "NULL"}, "n,s\n1,a\nNULL,\"\"\n3,NULL\n"},
		{Config{Format: FormatJSON, Limit: 2}, `{"n":1,"s":"a"}` + "\n" + `{"n":null,"s":""}` + "\n"},
	} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var out bytes.Buffer
		p, err := New(c.cfg, &out)
		if err != nil {
			t.Fatal(err)
		}
		rec := batch(t, mem)
		p.Start(rec.Schema())
		err = p.Process(context.Background(), rec, nil)
		rec.Release()
		if c.cfg.Limit > 0 && !errors.Is(err, stage.ErrStop) {
			t.Errorf("%+v: Process = %v, want ErrStop at the limit", c.cfg, err)
		} else if c.cfg.Limit == 0 && err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != c.want {
			t.Errorf("%+v:\ngot  %q\nwant %q", c.cfg, got, c.want)
		}
		mem.AssertSize(t, 0)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Format: "xml"},
		{Format: FormatJSON, NullValue: "NULL"},
		{Format: FormatCSV, NullValue: "a,b"},
		{Limit: -1},
		{Tail: -1},
		{Sample: -2},
		{Tail: 3, Sample: 3},
		{Tail: 3, ShowControl: true},
		{Sample: 3, ShowControl: true},
		{Tail: 3, Limit: 3},
		{Sample: 5, Limit: 2},
		{Seeded: true},
		{Tail: 3, Seeded: true},
		{Binary: "raw"},
	} {
		var ue *stage.UsageError
		if _, err := New(cfg, &bytes.Buffer{}); !errors.As(err, &ue) {
			t.Errorf("New(%+v) = %v, want a usage error", cfg, err)
		}
	}
}

// TestBinaryDefaults: binary values as text in a table (hex when not text), base64 in JSON,
// hex in CSV; --binary overrides each.
func TestBinaryDefaults(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.Binary}}, nil)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Format: FormatJSON}, `{"k":"dXNlci0x"}` + "\n" + `{"k":"AAAAAQ=="}` + "\n"},
		{Config{Format: FormatJSON, Binary: BinaryText}, `{"k":"user-1"}` + "\n" + `{"k":"\\x00000001"}` + "\n"},
		{Config{Format: FormatCSV}, "k\n757365722d31\n00000001\n"},
		{Config{Format: FormatCSV, Binary: BinaryBase64}, "k\ndXNlci0x\nAAAAAQ==\n"},
		{Config{}, "┌────────────┐\n│ k          │\n├────────────┤\n│ user-1     │\n│ \\x00000001 │\n└────────────┘\n"},
		{Config{Binary: BinaryHex}, "┌──────────────┐\n│ k            │\n├──────────────┤\n│ 757365722d31 │\n│ 00000001     │\n└──────────────┘\n"},
	} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
		b.AppendValues([][]byte{[]byte("user-1"), {0, 0, 0, 1}}, nil)
		col := b.NewArray()
		rec := array.NewRecordBatch(s, []arrow.Array{col}, 2)
		var out bytes.Buffer
		p, err := New(c.cfg, &out)
		if err != nil {
			t.Fatal(err)
		}
		p.Start(s)
		if err := p.Process(context.Background(), rec, nil); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		col.Release()
		b.Release()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != c.want {
			t.Errorf("%+v:\ngot  %q\nwant %q", c.cfg, got, c.want)
		}
		mem.AssertSize(t, 0)
	}
}
