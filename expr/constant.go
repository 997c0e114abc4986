package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Constant type-checks n, an expression that reads no column (a literal, -5, DATE '2024-05-01',
// CAST('5' AS BIGINT) …), and returns its Spark type and folded value, as Compile would fold
// it inside a larger expression: the same literal typing and the same ANSI casts. ok is false
// when n reads a column, does not type-check, or has no value before the first row (a cast
// that fails stays unfolded and fails per row, as in Spark). A NULL literal gives type void
// and an invalid scalar. read-delta's file pruning (source/delta) uses it to know a
// comparison's constant side exactly as the evaluated predicate sees it.
func Constant(n Node) (t Type, v scalar.Scalar, ok bool) {
	c := &checker{schema: arrow.NewSchema(nil, nil)}
	x, err := c.check(n)
	if err != nil {
		return Type{}, nil, false
	}
	k, isConst := x.(*constNode)
	if !isConst {
		return Type{}, nil, false
	}
	return k.t, k.sc, true
}
