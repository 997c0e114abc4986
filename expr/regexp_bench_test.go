package expr

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// BenchmarkRegexpExtract: regexp_extract over 1M short strings (the select benchmark
// has one among its 5 computed columns), per pattern shape.
func BenchmarkRegexpExtract(b *testing.B) {
	batches := benchBatches(b)
	for _, tc := range []struct{ name, src string }{
		{"prefix-digits", `regexp_extract(t, 'k(\\d+)', 1)`},
		{"anchored", `regexp_extract(t, '^k0*([1-9][0-9]*)$', 1)`},
		{"class-sep", `regexp_extract(s, '([A-Za-z]+)-([A-Za-z]+)', 2)`},
		{"literal", `regexp_extract(s, 'Force', 0)`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p, err := Compile(tc.src, batches[0].Schema(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			runBatches(b, batches, func(ctx context.Context, rec arrow.RecordBatch, pos RowPos) (arrow.RecordBatch, error) {
				a, err := p.Eval(ctx, rec, pos)
				if err != nil {
					return nil, err
				}
				defer a.Release()
				return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: a.DataType()}}, nil), []arrow.Array{a}, int64(a.Len())), nil
			})
		})
	}
}

// BenchmarkSelectRegexp: the select benchmark shape, 5 computed columns (arithmetic,
// a cast, lower, date_trunc, regexp_extract), over the 10-column stream.
func BenchmarkSelectRegexp(b *testing.B) {
	batches := benchBatches(b)
	p, err := CompileSelect(`id, a * 2 + b AS ab, CAST(x AS BIGINT) AS xi, lower(s) AS ls, date_trunc('HOUR', ts) AS hr, regexp_extract(t, 'k(\\d+)', 1) AS tk`,
		batches[0].Schema(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	runBatches(b, batches, p.Eval)
}
