package window

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

// sparkAgg is one aggregate of TestAggregatesLikeSpark: the same text in --agg and in Spark's
// agg(expr(…)), and how testdata/spark_aggs.py compares the results.
type sparkAgg struct {
	Name     string  `json:"name"`
	Expr     string  `json:"expr"`
	Check    string  `json:"check,omitempty"` // exact (default), multiset, rank, hll
	Col      string  `json:"col,omitempty"`   // rank, hll: the input column
	P        any     `json:"p,omitempty"`     // rank: the percentage(s)
	Accuracy float64 `json:"accuracy,omitempty"`
	RSD      float64 `json:"rsd,omitempty"`
}

var sparkAggs = []sparkAgg{
	{Name: "med", Expr: "median(x)"},
	{Name: "p30", Expr: "percentile(x, 0.3)"},
	{Name: "pf", Expr: "percentile(f, array(0.1, 0.5, 0.95))"},
	{Name: "pa", Expr: "percentile_approx(x, 0.5)", Check: "rank", Col: "x", P: 0.5, Accuracy: 10000},
	{Name: "paf", Expr: "percentile_approx(f, array(0.25, 0.75), 50)", Check: "rank", Col: "f", P: []float64{0.25, 0.75}, Accuracy: 50},
	{Name: "pa20", Expr: "approx_percentile(x, array(0.1, 0.9), 20)", Check: "rank", Col: "x", P: []float64{0.1, 0.9}, Accuracy: 20},
	{Name: "sd", Expr: "stddev(x)"},
	{Name: "sd2", Expr: "std(x)"},
	{Name: "sdf", Expr: "stddev_samp(f)"},
	{Name: "sdp", Expr: "stddev_pop(x)"},
	{Name: "vf", Expr: "variance(f)"},
	{Name: "vs", Expr: "var_samp(x)"},
	{Name: "vp", Expr: "var_pop(f)"},
	{Name: "acd", Expr: "approx_count_distinct(s)", Check: "hll", Col: "s", RSD: 0.05},
	{Name: "acdx", Expr: "approx_count_distinct(x, 0.02)", Check: "hll", Col: "x", RSD: 0.02},
	{Name: "cl", Expr: "collect_list(x)", Check: "multiset"},
	{Name: "cs", Expr: "collect_set(s)", Check: "multiset"},
	{Name: "mbs", Expr: "max_by(s, id)"},
	{Name: "mbx", Expr: "min_by(x, id)"},
	{Name: "mbf", Expr: "max_by(id, f)"},
}

// TestAggregatesLikeSpark runs window tumbling and sliding with every Spark aggregate over
// rows with nulls, a key whose values are all null and a window of 6000 rows, and compares
// each (window, key) with pyspark's groupBy(window(ts, …), k).agg(…) over the same rows
// (testdata/spark_aggs.py says how each aggregate is compared), result types included.
func TestAggregatesLikeSpark(t *testing.T) {
	py := peertest.Python(t)
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "spark_aggs.py"))
	if err != nil {
		t.Fatal(err)
	}
	in, pq := filepath.Join(dir, "in.arrows"), filepath.Join(dir, "in.parquet")
	peertest.RunPython(t, py, string(script), "gen", in, pq)
	var list []string
	for _, a := range sparkAggs {
		list = append(list, a.Expr+" as "+a.Name)
	}
	type sparkCase struct {
		Name  string     `json:"name"`
		Size  string     `json:"size"`
		Slide string     `json:"slide,omitempty"`
		Out   string     `json:"out"`
		Aggs  []sparkAgg `json:"aggs"`
	}
	cases := []sparkCase{
		{Name: "tumbling", Size: "30 seconds", Out: filepath.Join(dir, "tumbling.arrows"), Aggs: sparkAggs},
		{Name: "sliding", Size: "40 seconds", Slide: "20 seconds", Out: filepath.Join(dir, "sliding.arrows"), Aggs: sparkAggs},
	}
	for _, c := range cases[:2] {
		kind := "tumbling --size 30s"
		if c.Slide != "" {
			kind = "sliding --size 40s --slide 20s"
		}
		cmd := fmt.Sprintf("$SK window %s --time ts --key k --agg '%s' < in.arrows > %s", kind, strings.Join(list, ", "), c.Out)
		if _, stderr, code := peertest.Pipeline(t, dir, nil, cmd); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.Name, code, stderr)
		}
	}
	// The control: Spark's stddev_samp against streamkit's stddev_pop must be reported.
	cases = append(cases, sparkCase{Name: "control", Size: "30 seconds", Out: cases[0].Out, Aggs: []sparkAgg{{Name: "sdp", Expr: "stddev_samp(x)"}}})
	spec := filepath.Join(dir, "spec.json")
	b, _ := json.Marshal(cases)
	if err := os.WriteFile(spec, b, 0o644); err != nil {
		t.Fatal(err)
	}
	res := string(peertest.RunPython(t, py, string(script), "compare", pq, spec))
	t.Log(res)
	for _, c := range cases {
		line := ""
		for _, l := range strings.Split(res, "\n") {
			if strings.HasPrefix(l, "case "+c.Name+" ") {
				line = strings.TrimPrefix(l, "case "+c.Name+" ")
			}
		}
		switch {
		case line == "":
			t.Errorf("%s: no result", c.Name)
		case c.Name == "control":
			if !strings.Contains(line, "differ:") || !strings.Contains(line, "sdp") {
				t.Errorf("the control (stddev_pop against Spark's stddev_samp) was not reported as a difference: %s", line)
			}
		case !strings.HasPrefix(line, "ok "):
			t.Errorf("%s: window aggregates differ from Spark's: %s", c.Name, line)
		}
	}
}
