package window

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/streamkit/streamkit/codec"
)

// Aggregate function names accepted by ParseAggs.
const (
	FuncCount         = "count"          // count(*) or count(x): rows, or non-null x → int64
	FuncSum           = "sum"            // sum(x): integers → int64, failing on overflow (Spark ANSI: ARITHMETIC_OVERFLOW); floats → float64; null if no non-null x
	FuncTrySum        = "try_sum"        // try_sum(x): sum, but null on an integer overflow (Spark's try_sum)
	FuncMin           = "min"            // min(x): same type as x (numbers, temporal, strings, binary, bool); NaN is the largest float (Spark)
	FuncMax           = "max"            // max(x): same type as x; NaN if any x is NaN
	FuncAvg           = "avg"            // avg(x): numbers → float64; null if no non-null x
	FuncFirst         = "first"          // first(x): non-null x with the smallest event time (ties: earliest arrival)
	FuncLast          = "last"           // last(x): non-null x with the largest event time (ties: latest arrival)
	FuncCountDistinct = "count_distinct" // count_distinct(x): distinct non-null x → int64 (exact)
)

// ErrAggSpec reports an aggregate spec that does not parse or does not fit the input schema.
var ErrAggSpec = errors.New("bad aggregate spec")

// ErrPath reports a dot path that names no field of the schema (codec.ResolvePath), or a field
// of an unsupported type for its use (key, event time, aggregate input). It is codec.ErrPath.
var ErrPath = codec.ErrPath

// AggCall is one aggregate of a spec: Func over the column at dot path Arg ("" for count(*)),
// output column Name.
type AggCall struct {
	Func string // one of the Func* constants
	Arg  string // dot path of the input column; "" for count(*)
	Name string // output column name
}

// String renders c in spec syntax, e.g. "sum(value.amount) as revenue".
func (c AggCall) String() string {
	arg := c.Arg
	if arg == "" {
		arg = "*"
	}
	return fmt.Sprintf("%s(%s) as %s", c.Func, arg, c.Name)
}

var aggItemRE = regexp.MustCompile(`^(?i)([a-z_]+)\s*(?:\(\s*([^()]*?)\s*\))?(?:\s+as\s+([A-Za-z_][A-Za-z0-9_]*))?$`)

// ParseAggs parses a comma-separated aggregate spec such as
// 'count, sum(value.amount) as revenue, avg(x), count_distinct(u) as n'. Function names are
// case-insensitive; "count" alone and "count(*)" count rows; arguments are dot paths. Without
// "as", the output column is the function name for count(*) and func_leaf otherwise
// ("sum_amount", "count_distinct_u"). Errors wrap ErrAggSpec and name the offending item;
// duplicate output names are refused.
func ParseAggs(spec string) ([]AggCall, error) {
	var calls []AggCall
	seen := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("%w: empty item in %q", ErrAggSpec, spec)
		}
		m := aggItemRE.FindStringSubmatch(item)
		if m == nil {
			return nil, fmt.Errorf("%w: cannot parse %q (want func(path) [as name])", ErrAggSpec, item)
		}
		c := AggCall{Func: strings.ToLower(m[1]), Arg: m[2], Name: m[3]}
		if c.Arg == "*" {
			c.Arg = ""
		}
		switch c.Func {
		case FuncCount:
		case FuncSum, FuncTrySum, FuncMin, FuncMax, FuncAvg, FuncFirst, FuncLast, FuncCountDistinct:
			if c.Arg == "" {
				return nil, fmt.Errorf("%w: %s needs a column in %q", ErrAggSpec, c.Func, item)
			}
		default:
			return nil, fmt.Errorf("%w: unknown function %q in %q (want count, sum, try_sum, min, max, avg, first, last, count_distinct)", ErrAggSpec, c.Func, item)
		}
		if c.Name == "" {
			c.Name = c.Func
			if c.Arg != "" {
				c.Name += "_" + c.Arg[strings.LastIndexByte(c.Arg, '.')+1:]
			}
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("%w: output column %q appears twice; rename one with 'as'", ErrAggSpec, c.Name)
		}
		seen[c.Name] = true
		calls = append(calls, c)
	}
	return calls, nil
}
