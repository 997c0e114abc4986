package selecttool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/peertest"
)

// stageExpr is one transform stage of an agreement case: streamkit select LIST (pyspark: SELECT
// LIST FROM the previous result, the parser of selectExpr) or streamkit filter PREDICATE
// (pyspark: DataFrame.filter).
type stageExpr struct {
	Kind string `json:"kind"` // "select" or "filter"
	Expr string `json:"expr"`
}

type agreeCase struct {
	ID     string      `json:"id"`
	Stages []stageExpr `json:"stages"`
	Out    string      `json:"out"` // the Arrow IPC stream streamkit wrote
}

func sel(e string) stageExpr { return stageExpr{"select", e} }
func flt(e string) stageExpr { return stageExpr{"filter", e} }

// sparkJobCases are expressions as they appear in Spark jobs over data like the demo flights
// (date timestamp, delay and distance bigint, origin and destination strings).
var sparkJobCases = [][]stageExpr{
	{sel("CAST(delay AS DOUBLE) / 60 AS delay_hours")},
	{sel("CAST(distance AS INT) AS d, CAST(delay AS STRING) AS s, CAST(CAST(distance AS STRING) AS BIGINT) AS back")},
	{sel("CAST(date AS DATE) AS day, to_date(CAST(date AS STRING)) AS day2")},
	{sel("date_trunc('HOUR', date) AS hour, date_trunc('MONTH', date) AS month, date_trunc('WEEK', date) AS week")},
	{sel("CASE WHEN delay > 60 THEN 'severe' WHEN delay > 15 THEN 'late' WHEN delay < 0 THEN 'early' ELSE 'on time' END AS status")},
	{sel("coalesce(NULLIF(delay, 0), -1) AS delay_or_default, nvl(NULLIF(origin, 'SFO'), 'San Francisco') AS o")},
	{sel("concat_ws('-', origin, destination) AS route, concat(origin, '/', destination) AS route2, origin || destination AS route3")},
	{sel("lower(origin) AS o, upper(lower(destination)) AS d, trim(concat('  ', origin, '  ')) AS t, ltrim(concat(' ', origin)) AS l, rtrim(concat(origin, ' ')) AS r")},
	{sel("substring(origin, 1, 2) AS o2, substring(destination, -1) AS dlast, substr(concat(origin, destination), 2, 3) AS mid")},
	{sel("round(distance / 60.0, 2) AS r2, round(CAST(delay AS DOUBLE) * 1.15, 1) AS r1, round(delay / 7) AS r0")},
	{sel("year(date) AS y, month(date) AS m, day(date) AS d, hour(date) AS h, minute(date) AS mi, second(date) AS s")},
	{sel("IF(distance > 1000, 'long', 'short') AS haul, IF(delay IS NULL, 0, delay) AS delay0")},
	{sel("delay * distance AS product, distance % 7 AS mod7, distance div 100 AS hundreds, -delay AS neg")},
	{sel("length(concat(origin, destination)) AS len, char_length(origin) AS l2")},
	{sel("abs(delay) AS a, ceil(distance / 7.0) AS c, floor(delay / 3.0) AS f")},
	{sel("* EXCEPT (date, _rescued_data), distance * 1.609344 AS km")},
	{sel("try_divide(distance, delay) AS per_min, TRY_CAST(origin AS INT) AS none")},
	{sel("delay > 15 AND distance < 500 AS late_short, delay BETWEEN -5 AND 5 AS punctual, origin IN ('SFO', 'OAK', 'SJC') AS bay")},
	{flt("origin IN ('SFO', 'LAX', 'ORD') AND delay > 0")},
	{flt("distance BETWEEN 500 AND 1000")},
	{flt("origin LIKE 'S%' OR destination LIKE '%X'")},
	{flt("NOT (delay <= 15) AND destination NOT IN ('JFK', 'LGA')")},
	{flt("date >= TIMESTAMP '2001-02-01 00:00:00' AND date < TIMESTAMP '2001-03-01 00:00:00'")},
	{flt("coalesce(delay, 0) > 30 AND origin RLIKE '^[A-C]'")},
	{flt("CAST(date AS DATE) = DATE '2001-01-15' OR hour(date) = 23")},
	{flt("delay / distance > 0.1"), sel("origin, destination, round(delay / distance, 3) AS ratio")},
	{flt("destination = 'ORD'"), sel("origin, delay"), flt("delay IS NOT NULL AND delay <> 0")},
}

// readmeCases are the pipelines of the README's Transform section: each ```sh block's
// pipelines, their streamkit filter/select stages in order (flags such as --dropped-output
// are not part of the comparison).
func readmeCases(t *testing.T, root string) [][]stageExpr {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Transform")
	if !ok {
		t.Fatal("README.md has no Transform section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	stageRe := regexp.MustCompile(`streamkit (select|filter) (?:"((?:[^"\\]|\\.)*)"|'([^']*)')`)
	var out [][]stageExpr
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(sec, -1) {
		for _, pipeline := range strings.Split(strings.ReplaceAll(block[1], "\\\n", " "), "\n") {
			var stages []stageExpr
			for _, m := range stageRe.FindAllStringSubmatch(pipeline, -1) {
				e := m[2] + m[3]
				stages = append(stages, stageExpr{m[1], strings.ReplaceAll(e, `\"`, `"`)})
			}
			if len(stages) > 0 {
				out = append(out, stages)
			}
		}
	}
	if len(out) < 3 {
		t.Fatalf("README.md's Transform section has %d pipelines with select or filter, want at least 3", len(out))
	}
	return out
}

// TestSparkAgreement runs the README's transform examples and expressions from Spark jobs
// through the streamkit binary (read-files | filter/select …) on the demo flights and through
// pyspark's filter and selectExpr (SELECT) on the same Parquet files, and compares the rows.
// It also checks that the comparison catches a difference (a case whose streamkit side
// computes something else must be reported).
func TestSparkAgreement(t *testing.T) {
	bin := peertest.Binary(t)
	python := peertest.Python(t)
	root := peertest.Root(t)
	data := filepath.Join(root, "testdata", "demo", "landing")
	work := t.TempDir()

	all := append(readmeCases(t, root), sparkJobCases...)
	var cases []agreeCase
	for i, stages := range all {
		id := fmt.Sprintf("c%02d", i)
		if i < len(all)-len(sparkJobCases) {
			id = fmt.Sprintf("readme%d", i)
		}
		c := agreeCase{ID: id, Stages: stages, Out: filepath.Join(work, id+".arrows")}
		runStreamkit(t, bin, filepath.Join(data, "*.parquet"), c.Stages, c.Out)
		cases = append(cases, c)
	}
	// The control: streamkit computes delay + 1, pyspark delay; the comparison must differ.
	control := agreeCase{ID: "control", Stages: []stageExpr{sel("origin, delay AS d")}, Out: filepath.Join(work, "control.arrows")}
	runStreamkit(t, bin, filepath.Join(data, "*.parquet"), []stageExpr{sel("origin, delay + 1 AS d")}, control.Out)
	cases = append(cases, control)

	spec := filepath.Join(work, "spec.json")
	b, _ := json.Marshal(cases)
	if err := os.WriteFile(spec, b, 0o644); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(work, "result.json")
	// About a minute alone; a run beside a loaded build took over 8 minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, filepath.Join("testdata", "spark_agree.py"), data, spec, res)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	if out, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "No module named 'pyspark'") {
			peertest.Missing(t, "pyspark in "+python)
		}
		t.Fatalf("pyspark: %v\n%s", err, out)
	}
	var got map[string]struct {
		OK   bool   `json:"ok"`
		Rows int    `json:"rows"`
		Diff string `json:"diff"`
	}
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases[:len(cases)-1] {
		r, ok := got[c.ID]
		switch {
		case !ok:
			t.Errorf("%s: no result", c.ID)
		case !r.OK:
			t.Errorf("%s %v: streamkit and pyspark differ: %s", c.ID, c.Stages, r.Diff)
		case r.Rows == 0:
			t.Errorf("%s %v: no rows on either side: the case tests nothing", c.ID, c.Stages)
		}
	}
	if r := got["control"]; r.OK || r.Diff == "" {
		t.Errorf("the control case (delay + 1 against delay) was not reported as a difference: %+v", r)
	}
	t.Logf("%d cases (%d from the README) agree with pyspark", len(cases)-1, len(all)-len(sparkJobCases))
}

// runStreamkit runs read-files PATTERN | streamkit <stage> … > out with the binary.
func runStreamkit(t *testing.T, bin, pattern string, stages []stageExpr, out string) {
	t.Helper()
	script := `"$SK" read-files "$DATA"`
	env := append(os.Environ(), "SK="+bin, "DATA="+pattern)
	for i, st := range stages {
		script += fmt.Sprintf(` | "$SK" %s "$E%d"`, st.Kind, i)
		env = append(env, fmt.Sprintf("E%d=%s", i, st.Expr))
	}
	cmd := exec.Command("bash", "-o", "pipefail", "-c", script+` > "$OUT"`)
	cmd.Env = append(env, "OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", stages, err, b)
	}
}
