package expr

import (
	"fmt"
	"math/rand"
	"strconv"
)

// The third generated set of the differential test, over diffTable: date arithmetic
// (DATE ± int, DATE - DATE, date_add, datediff, add_months, months_between), year-month
// intervals, casts between numbers and timestamps, the epoch functions (timestamp_seconds …
// unix_date), greatest/least, repeat and round/bround with a negative scale. DuckDB
// differs from Spark in nearly all of them (date - date is a bigint there, no year-month
// interval type, no unix_date, no bround, other NULL rules in greatest), so pyspark is the
// reference. Days added to a date come from j (within ±1000) so that every result stays
// within the years 1 to 9999 that Python's datetime (which pyspark collects into) holds.

type dateGen struct{ r *rand.Rand }

func (g *dateGen) of(vals ...string) string { return vals[g.r.Intn(len(vals))] }

func (g *dateGen) date() string {
	return g.of("dt", "dt", "DATE '2024-01-31'", "DATE '2024-02-29'", "CAST(ts AS DATE)", "(dt + 1)")
}
func (g *dateGen) ts() string {
	return g.of("ts", "ts", "TIMESTAMP '2024-01-31 10:30:00.5'", "CAST(dt AS TIMESTAMP)")
}
func (g *dateGen) days() string { return g.of("j", "j", "7", "-31", "(j % 40)", "CAST(NULL AS INT)") }
func (g *dateGen) ym() string {
	return g.of("INTERVAL 1 MONTH", "INTERVAL '13' MONTH", "INTERVAL 2 YEARS", "INTERVAL '1-2' YEAR TO MONTH",
		"INTERVAL -'1-11' YEAR TO MONTH", "INTERVAL 1 YEAR 3 MONTHS", "(- INTERVAL 25 MONTH)", "(INTERVAL 1 YEAR + INTERVAL 1 MONTH)")
}
func (g *dateGen) num() string {
	return g.of("i", "j", "l", "f", "g", "m", "-125", "1250L", "1234.5D", "-0.125D", "2.5D", "-2.5D", "12345.675")
}

func (g *dateGen) expr() string {
	switch g.r.Intn(32) {
	case 0:
		return fmt.Sprintf("(%s + %s)", g.date(), g.days())
	case 1:
		return fmt.Sprintf("(%s + %s)", g.days(), g.date())
	case 2:
		return fmt.Sprintf("(%s - %s)", g.date(), g.days())
	case 3:
		return fmt.Sprintf("(%s - %s)", g.date(), g.date())
	case 4:
		return fmt.Sprintf("%s(%s, %s)", g.of("date_add", "date_sub"), g.of(g.date(), g.ts(), "'2024-02-29'"), g.days())
	case 5:
		return fmt.Sprintf("datediff(%s, %s)", g.of(g.date(), g.ts()), g.of(g.date(), g.ts(), "'2000-03-01'"))
	case 6:
		return fmt.Sprintf("(%s - %s)", g.ts(), g.of(g.ts(), g.date()))
	case 7:
		return fmt.Sprintf("add_months(%s, %s)", g.of(g.date(), g.ts()), g.days())
	case 8:
		return fmt.Sprintf("(%s %s %s)", g.of(g.date(), g.ts()), g.of("+", "-"), g.ym())
	case 9:
		return fmt.Sprintf("(%s + %s)", g.ym(), g.of(g.date(), g.ts()))
	case 10:
		return fmt.Sprintf("CAST(%s AS STRING)", g.of(g.ym(), "("+g.ym()+" + "+g.ym()+")", "("+g.ym()+" - "+g.ym()+")"))
	case 11:
		return fmt.Sprintf("(%s %s %s)", g.ym(), g.of("=", "<", ">=", "<=>"), g.ym())
	case 12:
		return fmt.Sprintf("months_between(%s, %s%s)", g.of(g.ts(), g.date()), g.of(g.ts(), g.date(), "TIMESTAMP '2024-02-29 12:00:00'"), g.of("", ", false", ", true", ", b"))
	case 13:
		return fmt.Sprintf("CAST(%s AS TIMESTAMP)", g.of("j", "i", "f", "g", "m", "1.5D", "-1.0000005D", "CAST(l % 10000000000 AS BIGINT)"))
	case 14:
		return fmt.Sprintf("TRY_CAST(%s AS TIMESTAMP)", g.of("f", "g"))
	case 15:
		return fmt.Sprintf("CAST(%s AS %s)", g.ts(), g.of("BIGINT", "DOUBLE", "INT"))
	case 16:
		return fmt.Sprintf("timestamp_seconds(%s)", g.of("i", "j", "f", "m", "1.5", "-1.0000005D", "(l % 10000000000)"))
	case 17:
		if g.r.Intn(2) == 0 {
			return fmt.Sprintf("timestamp_millis(%s)", g.of("l", "j", "(l % 100000000000000)"))
		}
		return fmt.Sprintf("timestamp_micros(%s)", g.of("j", "(l % 10000000000000000)"))
	case 18:
		return fmt.Sprintf("%s(%s)", g.of("unix_seconds", "unix_millis", "unix_micros"), g.ts())
	case 19:
		return fmt.Sprintf("unix_date(%s)", g.date())
	case 20:
		return fmt.Sprintf("date_from_unix_date(%s)", g.of("j", "(j * 20)", "unix_date(dt)"))
	case 21:
		t := g.r.Intn(5)
		args := []func() string{g.num, func() string { return g.of("s", "'abc'", "'b'", "CAST(NULL AS STRING)") }, g.date, g.ts,
			func() string { return g.of("f", "g", "1.5D", "CAST('NaN' AS DOUBLE)", "CAST(NULL AS DOUBLE)") }}[t]
		n := 2 + g.r.Intn(3)
		s := g.of("greatest", "least") + "(" + args()
		for k := 1; k < n; k++ {
			s += ", " + args()
		}
		return s + ")"
	case 22:
		return fmt.Sprintf("repeat(%s, %s)", g.of("s", "'ab'", "''", "CAST(i AS STRING)"), g.of("3", "0", "-1", "(j % 4)", "CAST(NULL AS INT)"))
	case 23, 24:
		return fmt.Sprintf("%s(%s, %s)", g.of("round", "bround"), g.num(), g.of("-1", "-2", "-3", "-10", "-20", "0", "1", "2"))
	case 25:
		return fmt.Sprintf("bround(%s)", g.num())
	case 26:
		return fmt.Sprintf("unix_date(%s)", g.of("(dt + j)", "date_sub(dt, j)", "add_months(dt, j)", "(dt + INTERVAL 1 MONTH)"))
	case 27:
		return fmt.Sprintf("(%s + %s + %s)", g.date(), g.days(), g.days())
	case 30:
		// Spark's interval text; a literal's own single unit (INTERVAL '02' HOUR) is not kept
		return fmt.Sprintf("CAST(%s AS STRING)", g.of("(dt - DATE '2000-01-01')", "(ts - dt)", "(ts - TIMESTAMP '2020-06-01 12:00:00.25')", "(DATE '2024-02-29' - dt + INTERVAL 1 DAY)"))
	case 29:
		// an interval of whole days keeps a date a date
		return fmt.Sprintf(g.of("(%s + %s)", "(%s - %s)"), g.date(), g.of("INTERVAL 3 DAYS", "INTERVAL '-1' DAY", "INTERVAL 2 WEEKS", "(DATE '2024-02-29' - dt)"))
	case 28:
		return fmt.Sprintf("(%s - %s)", g.of("(dt - DATE '2000-01-01')", "(ts - dt)"), g.of("(DATE '2024-02-29' - dt)", "(TIMESTAMP '2000-01-01 00:00:00' - ts)"))
	}
	return fmt.Sprintf("CASE WHEN b THEN %s ELSE %s END", g.date(), "("+g.date()+" + "+g.days()+")")
}

// dateCases are 120 generated expressions of dateGen, all against pyspark.
func dateCases() []diffCase {
	g := &dateGen{r: rand.New(rand.NewSource(2327))}
	var cases []diffCase
	seen := map[string]bool{}
	for len(cases) < 120 {
		e := g.expr()
		if seen[e] {
			continue
		}
		seen[e] = true
		cases = append(cases, diffCase{ID: strconv.Itoa(len(cases)), Spark: e, Engine: "spark"})
	}
	return cases
}
