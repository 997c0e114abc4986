package window

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/streamkit/streamkit/codec"
)

// Aggregate function names accepted by ParseAggs. Names, argument forms and results are Spark
// SQL's (https://spark.apache.org/docs/latest/api/sql/).
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

	FuncMedian           = "median"                // median(x): exact, percentile(x, 0.5) → float64; keeps every value of the window
	FuncPercentile       = "percentile"            // percentile(x, p | array(p, …)): exact, linearly interpolated → float64 or array<float64>; keeps every value
	FuncPercentileApprox = "percentile_approx"     // percentile_approx(x, p | array(p, …)[, accuracy]): a value of x (x's type) within rank error ⌈n/accuracy⌉ (accuracy default 10000)
	FuncApproxPercentile = "approx_percentile"     // Spark's other name of percentile_approx
	FuncStddev           = "stddev"                // stddev(x): sample standard deviation → float64; null for fewer than 2 rows
	FuncStd              = "std"                   // Spark's other name of stddev
	FuncStddevSamp       = "stddev_samp"           // stddev_samp(x): as stddev
	FuncStddevPop        = "stddev_pop"            // stddev_pop(x): population standard deviation → float64; null for no rows
	FuncVariance         = "variance"              // variance(x): sample variance → float64; null for fewer than 2 rows
	FuncVarSamp          = "var_samp"              // var_samp(x): as variance
	FuncVarPop           = "var_pop"               // var_pop(x): population variance → float64; null for no rows
	FuncApproxDistinct   = "approx_count_distinct" // approx_count_distinct(x[, relativeSD]): HyperLogLog estimate of the distinct non-null x → int64 (default relativeSD 0.05)
	FuncCollectList      = "collect_list"          // collect_list(x): the non-null x in arrival order → array<x's type>
	FuncCollectSet       = "collect_set"           // collect_set(x): the distinct non-null x in order of first arrival → array<x's type>
	FuncMaxBy            = "max_by"                // max_by(x, ord): x of the row with the largest non-null ord (ties: earliest arrival) → x's type
	FuncMinBy            = "min_by"                // min_by(x, ord): x of the row with the smallest non-null ord
)

// Defaults of the optional arguments, as Spark's.
const (
	DefaultAccuracy   = 10000 // percentile_approx: relative rank error 1/accuracy
	DefaultRelativeSD = 0.05  // approx_count_distinct: relative standard deviation of the estimate
)

// funcNames lists the accepted functions in the order error messages name them.
var funcNames = []string{FuncCount, FuncSum, FuncTrySum, FuncMin, FuncMax, FuncAvg, FuncFirst, FuncLast, FuncCountDistinct,
	FuncMedian, FuncPercentile, FuncPercentileApprox, FuncApproxPercentile, FuncStddev, FuncStd, FuncStddevSamp, FuncStddevPop,
	FuncVariance, FuncVarSamp, FuncVarPop, FuncApproxDistinct, FuncCollectList, FuncCollectSet, FuncMaxBy, FuncMinBy}

// ErrAggSpec reports an aggregate spec that does not parse or does not fit the input schema.
var ErrAggSpec = errors.New("bad aggregate spec")

// ErrPath reports a dot path that names no field of the schema (codec.ResolvePath), or a field
// of an unsupported type for its use (key, event time, aggregate input). It is codec.ErrPath.
var ErrPath = codec.ErrPath

// AggCall is one aggregate of a spec: Func over the column at dot path Arg ("" for count(*)),
// output column Name, with the further arguments of the functions that take them.
type AggCall struct {
	Func string // one of the Func* constants
	Arg  string // dot path of the input column; "" for count(*)
	Name string // output column name
	// By is the ordering column (dot path) of max_by and min_by.
	By string
	// Percentages are the p of percentile and percentile_approx, each in [0, 1]; PArray says
	// they were given as array(…), so the result is an array (also of one element).
	Percentages []float64
	PArray      bool
	// Accuracy is percentile_approx's accuracy (> 0; the relative rank error is 1/Accuracy).
	Accuracy int64
	// RelativeSD is approx_count_distinct's maximum relative standard deviation.
	RelativeSD float64
}

// String renders c in spec syntax, e.g. "sum(value.amount) as revenue", with every optional
// argument spelled out ("percentile_approx(x, 0.5, 10000) as p").
func (c AggCall) String() string {
	args := []string{c.Arg}
	if c.Arg == "" {
		args[0] = "*"
	}
	switch c.Func {
	case FuncMaxBy, FuncMinBy:
		args = append(args, c.By)
	case FuncPercentile, FuncPercentileApprox, FuncApproxPercentile:
		ps := make([]string, len(c.Percentages))
		for i, p := range c.Percentages {
			ps[i] = strconv.FormatFloat(p, 'g', -1, 64)
		}
		p := strings.Join(ps, ", ")
		if c.PArray {
			p = "array(" + p + ")"
		}
		args = append(args, p)
		if c.Func != FuncPercentile {
			args = append(args, strconv.FormatInt(c.Accuracy, 10))
		}
	case FuncApproxDistinct:
		args = append(args, strconv.FormatFloat(c.RelativeSD, 'g', -1, 64))
	}
	return fmt.Sprintf("%s(%s) as %s", c.Func, strings.Join(args, ", "), c.Name)
}

var (
	aggItemRE = regexp.MustCompile(`^(?i)([a-z_]+)\s*(?:\((.*)\))?(?:\s+as\s+([A-Za-z_][A-Za-z0-9_]*))?$`)
	arrayRE   = regexp.MustCompile(`^(?i)array\s*\((.*)\)$`)
	pathRE    = regexp.MustCompile(`^[^(),]+$`)
)

// splitTop splits s at the commas outside parentheses; ok is false for unbalanced ones.
func splitTop(s string) (parts []string, ok bool) {
	depth, from := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			if depth--; depth < 0 {
				return nil, false
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[from:i])
				from = i + 1
			}
		}
	}
	return append(parts, s[from:]), depth == 0
}

// ParseAggs parses a comma-separated aggregate spec such as
// 'count, sum(value.amount) as revenue, avg(x), percentile_approx(x, array(0.5, 0.9)) as q'.
// Function names are case-insensitive; "count" alone and "count(*)" count rows; the first
// argument is a dot path, max_by and min_by take a second path, percentile and
// percentile_approx a percentage or array(p, …) of them (and percentile_approx an integer
// accuracy), approx_count_distinct an optional relativeSD — the forms of Spark SQL. Without
// "as", the output column is the function name for count(*) and func_leaf otherwise
// ("sum_amount", "count_distinct_u"). Errors wrap ErrAggSpec and name the offending item;
// duplicate output names are refused.
func ParseAggs(spec string) ([]AggCall, error) {
	var calls []AggCall
	seen := map[string]bool{}
	items, ok := splitTop(spec)
	if !ok {
		return nil, fmt.Errorf("%w: unbalanced parentheses in %q", ErrAggSpec, spec)
	}
	for _, item := range items {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("%w: empty item in %q", ErrAggSpec, spec)
		}
		m := aggItemRE.FindStringSubmatch(item)
		if m == nil {
			return nil, fmt.Errorf("%w: cannot parse %q (want func(path) [as name])", ErrAggSpec, item)
		}
		c := AggCall{Func: strings.ToLower(m[1]), Name: m[3]}
		var args []string
		if a := strings.TrimSpace(m[2]); a != "" {
			args, _ = splitTop(a)
			for i := range args {
				args[i] = strings.TrimSpace(args[i])
			}
			c.Arg = args[0]
		}
		if c.Arg == "*" {
			c.Arg = ""
		}
		if c.Arg != "" && !pathRE.MatchString(c.Arg) {
			return nil, fmt.Errorf("%w: cannot parse %q: %q is not a column path", ErrAggSpec, item, c.Arg)
		}
		if err := c.bindArgs(item, args); err != nil {
			return nil, err
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

// bindArgs checks the argument count of c's function and parses the arguments after the
// first (args[0] is c.Arg) into c, with Spark's defaults and range checks.
func (c *AggCall) bindArgs(item string, args []string) error {
	nargs := func(lo, hi int, form string) error {
		switch {
		case c.Arg == "" && lo > 0:
			return fmt.Errorf("%w: %s needs a column in %q", ErrAggSpec, c.Func, item)
		case len(args) < lo || len(args) > hi:
			return fmt.Errorf("%w: %q: want %s", ErrAggSpec, item, form)
		}
		return nil
	}
	switch c.Func {
	case FuncCount:
		return nargs(0, 1, "count, count(*) or count(path)")
	case FuncSum, FuncTrySum, FuncMin, FuncMax, FuncAvg, FuncFirst, FuncLast, FuncCountDistinct,
		FuncMedian, FuncStddev, FuncStd, FuncStddevSamp, FuncStddevPop, FuncVariance, FuncVarSamp, FuncVarPop,
		FuncCollectList, FuncCollectSet:
		return nargs(1, 1, c.Func+"(path)")
	case FuncMaxBy, FuncMinBy:
		if err := nargs(2, 2, c.Func+"(path, ordering path)"); err != nil {
			return err
		}
		if c.By = args[1]; !pathRE.MatchString(c.By) {
			return fmt.Errorf("%w: %q: %q is not a column path", ErrAggSpec, item, c.By)
		}
	case FuncPercentile:
		if err := nargs(2, 2, "percentile(path, p) or percentile(path, array(p, …)), p in [0, 1]"); err != nil {
			return err
		}
		return c.percentages(item, args[1])
	case FuncPercentileApprox, FuncApproxPercentile:
		if err := nargs(2, 3, c.Func+"(path, p[, accuracy]) or "+c.Func+"(path, array(p, …)[, accuracy])"); err != nil {
			return err
		}
		if err := c.percentages(item, args[1]); err != nil {
			return err
		}
		c.Accuracy = DefaultAccuracy
		if len(args) == 3 {
			a, err := strconv.ParseInt(args[2], 10, 64)
			if err != nil || a <= 0 || a > math.MaxInt32 {
				return fmt.Errorf("%w: %q: the accuracy must be an integer in (0, 2147483647] (Spark's range), got %q", ErrAggSpec, item, args[2])
			}
			c.Accuracy = a
		}
	case FuncApproxDistinct:
		if err := nargs(1, 2, "approx_count_distinct(path[, relativeSD])"); err != nil {
			return err
		}
		c.RelativeSD = DefaultRelativeSD
		if len(args) == 2 {
			sd, err := strconv.ParseFloat(args[1], 64)
			if err != nil || !(sd > 0) {
				return fmt.Errorf("%w: %q: relativeSD must be a positive number, got %q", ErrAggSpec, item, args[1])
			}
			if _, err := hllPrecision(sd); err != nil {
				return fmt.Errorf("%w: %q: %v", ErrAggSpec, item, err)
			}
			c.RelativeSD = sd
		}
	default:
		return fmt.Errorf("%w: unknown function %q in %q (want %s)", ErrAggSpec, c.Func, item, strings.Join(funcNames, ", "))
	}
	return nil
}

// percentages parses p or array(p, …) into c.Percentages and c.PArray.
func (c *AggCall) percentages(item, arg string) error {
	list := []string{arg}
	if m := arrayRE.FindStringSubmatch(arg); m != nil {
		c.PArray = true
		list, _ = splitTop(m[1])
	}
	for _, s := range list {
		s = strings.TrimSpace(s)
		p, err := strconv.ParseFloat(s, 64)
		if err != nil || !(p >= 0 && p <= 1) {
			return fmt.Errorf("%w: %q: the percentage must be a number between 0.0 and 1.0 (as Spark), got %q", ErrAggSpec, item, s)
		}
		c.Percentages = append(c.Percentages, p)
	}
	return nil
}
