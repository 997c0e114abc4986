package statedump

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/state"
)

// The expect tool's checkpoint (tools/expect): each manifest's extra holds the epoch's counts
// as Lakeflow's event log records them (flow_progress.data_quality), the keyed state the
// counts since the first epoch, one entry per expectation name.

// expectExtra is the part of an expect manifest's extra that state-dump shows.
type expectExtra struct {
	DroppedRecords int64        `json:"dropped_records"` // since the first epoch
	Epoch          *dataQuality `json:"epoch_data_quality"`
}

// dataQuality is Lakeflow's flow_progress.data_quality.
type dataQuality struct {
	DroppedRecords int64                `json:"dropped_records"`
	Expectations   []expectationMetrics `json:"expectations"`
}

type expectationMetrics struct {
	Name          string `json:"name"`
	Dataset       string `json:"dataset"`
	Action        string `json:"action,omitempty"`
	PassedRecords int64  `json:"passed_records"`
	FailedRecords int64  `json:"failed_records"`
}

// epochQuality is one epoch's counts in a summary.
type epochQuality struct {
	Epoch       uint64      `json:"epoch"`
	Committed   bool        `json:"committed"`
	DataQuality dataQuality `json:"data_quality"`
}

// expectQuality is what a summary of an expect stage adds: the counts of every retained epoch
// and, as of the committed epoch, since the first one.
type expectQuality struct {
	Epochs []epochQuality `json:"data_quality_epochs"`
	Total  *epochQuality  `json:"data_quality_total,omitempty"`
}

// expectQualityOf reads the counts of the expect stage at path summarised in s.
func expectQualityOf(cfg Config, path string, s *state.Summary) (expectQuality, error) {
	var q expectQuality
	for _, e := range s.Epochs {
		var x expectExtra
		if len(e.Extra) == 0 || json.Unmarshal(e.Extra, &x) != nil || x.Epoch == nil {
			continue
		}
		q.Epochs = append(q.Epochs, epochQuality{Epoch: e.Epoch, Committed: e.Committed, DataQuality: *x.Epoch})
	}
	if s.Committed == 0 {
		return q, nil
	}
	rec, man, err := keyedAt(cfg.Mem, path, 0)
	if err != nil {
		return q, err
	}
	defer rec.Release()
	var x expectExtra
	if len(man.Extra) > 0 {
		if err := json.Unmarshal(man.Extra, &x); err != nil {
			return q, fmt.Errorf("state-dump: %s epoch %d: extra: %w", path, man.Epoch, err)
		}
	}
	t := &epochQuality{Epoch: man.Epoch, Committed: true, DataQuality: dataQuality{DroppedRecords: x.DroppedRecords}}
	sc := rec.Schema()
	col := func(name string) int {
		if i := sc.FieldIndices(name); len(i) == 1 {
			return i[0]
		}
		return -1
	}
	ni, ai, di, pi, fi := col("name"), col("action"), col("dataset"), col("passed_records"), col("failed_records")
	if ni < 0 || pi < 0 || fi < 0 {
		return q, fmt.Errorf("state-dump: %s: not the state of expect (columns %v)", path, sc)
	}
	names, ok1 := rec.Column(ni).(*array.String)
	passed, ok2 := rec.Column(pi).(*array.Int64)
	failed, ok3 := rec.Column(fi).(*array.Int64)
	if !ok1 || !ok2 || !ok3 {
		return q, fmt.Errorf("state-dump: %s: not the state of expect (columns %v)", path, sc)
	}
	str := func(c, r int) string {
		if c < 0 {
			return ""
		}
		if a, ok := rec.Column(c).(*array.String); ok && a.IsValid(r) {
			return a.Value(r)
		}
		return ""
	}
	// In the order of the committed epoch's counts (the command line's); the keyed state is
	// sorted by key.
	order := map[string]int{}
	if len(q.Epochs) > 0 {
		for i, m := range q.Epochs[len(q.Epochs)-1].DataQuality.Expectations {
			order[m.Name] = i + 1
		}
	}
	for r := 0; r < int(rec.NumRows()); r++ {
		t.DataQuality.Expectations = append(t.DataQuality.Expectations, expectationMetrics{Name: names.Value(r),
			Dataset: str(di, r), Action: str(ai, r), PassedRecords: passed.Value(r), FailedRecords: failed.Value(r)})
	}
	es := t.DataQuality.Expectations
	for i := 1; i < len(es); i++ { // insertion sort by command-line order: a handful of rows
		for j := i; j > 0 && order[es[j].Name] < order[es[j-1].Name]; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
	q.Total = t
	return q, nil
}

// printExpectQuality writes the counts of q as a table.
func printExpectQuality(out io.Writer, style styleSet, q expectQuality) {
	if len(q.Epochs) == 0 && q.Total == nil {
		return
	}
	fmt.Fprintln(out, "  expectations (flow_progress.data_quality)")
	w := 12
	for _, e := range q.Epochs {
		for _, m := range e.DataQuality.Expectations {
			w = max(w, len(m.Name))
		}
	}
	if q.Total != nil {
		for _, m := range q.Total.DataQuality.Expectations {
			w = max(w, len(m.Name))
		}
	}
	fmt.Fprintln(out, style.dim.Render(fmt.Sprintf("  %-9s %-*s %-7s %-15s %-15s %s", "epoch", w, "expectation", "action", "passed_records", "failed_records", "dropped_records")))
	row := func(epoch string, dq dataQuality) {
		for i, m := range dq.Expectations {
			dropped := ""
			if i == 0 {
				dropped = fmt.Sprint(dq.DroppedRecords)
			}
			line := fmt.Sprintf("  %-9s %-*s %-7s %-15d %-15d %s", epoch, w, m.Name, m.Action, m.PassedRecords, m.FailedRecords, dropped)
			fmt.Fprintln(out, strings.TrimRight(line, " "))
			epoch = ""
		}
	}
	for _, e := range q.Epochs {
		label := fmt.Sprint(e.Epoch)
		if !e.Committed {
			label += " (no)"
		}
		row(label, e.DataQuality)
	}
	if q.Total != nil {
		row("total", q.Total.DataQuality)
		fmt.Fprintln(out, style.dim.Render(fmt.Sprintf("  (total: since the first epoch, as of the committed epoch %d; (no): not committed)", q.Total.Epoch)))
	}
}
