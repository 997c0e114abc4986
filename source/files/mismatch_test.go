package files

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/rescue"
)

// TestConverterSchemaMismatch: a binary file's column whose type no cast converts to the
// stream schema's is a *SchemaMismatchError naming the column and both types, unless strict is
// off (--on-schema-mismatch rescue); a cast that depends on the values (string to double) and
// equal types pass.
func TestConverterSchemaMismatch(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	user := arrow.StructOf(arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true})
	file := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "user", Type: user},
		{Name: "amount", Type: arrow.BinaryTypes.String},
	}, nil)
	dec := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "user", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: rescue.Column, Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	e := &Entry{Path: "/in/orders.avro"}
	_, err := newConverter(mem, dec, dec, false, e, false, file, true, nil)
	var me *SchemaMismatchError
	if !errors.As(err, &me) || me.Column != "user" || !arrow.TypeEqual(me.FileType, user) {
		t.Fatalf("got %v, want a SchemaMismatchError for column user", err)
	}
	for _, want := range []string{"column user", "struct<name: utf8", "int64", "--on-schema-mismatch rescue"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if _, err := newConverter(mem, dec, dec, false, e, false, file, false, nil); err != nil {
		t.Fatalf("not strict: %v", err)
	}
	ok := arrow.NewSchema([]arrow.Field{file.Field(0), file.Field(2)}, nil)
	if _, err := newConverter(mem, dec, dec, false, e, false, ok, true, nil); err != nil {
		t.Fatalf("castable columns: %v", err)
	}
}
