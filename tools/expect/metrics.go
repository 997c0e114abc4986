package expect

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/expr"
	"github.com/streamkit/streamkit/sink/sideoutput"
)

// DataQuality is the counts of a stage's expectations, as Lakeflow's event log records them in
// flow_progress.data_quality (docs.databricks.com/aws/en/dlt/monitor-event-log-schema): what
// --progress=json prints, what each epoch's checkpoint keeps and state-dump shows.
type DataQuality struct {
	// DroppedRecords is the rows dropped by at least one --expect-or-drop.
	DroppedRecords int64 `json:"dropped_records"`
	// Expectations are the expectations' counts, in command-line order.
	Expectations []Metrics `json:"expectations"`
}

// Metrics is one expectation's counts (Lakeflow: name, dataset, passed_records,
// failed_records); Action is streamkit's addition (warn, drop or fail).
type Metrics struct {
	Name          string `json:"name"`
	Dataset       string `json:"dataset"`
	Action        string `json:"action"`
	PassedRecords int64  `json:"passed_records"`
	FailedRecords int64  `json:"failed_records"`
}

// epochReport is the counts of one completed epoch.
type epochReport struct {
	Epoch       uint64      `json:"epoch"`
	DataQuality DataQuality `json:"data_quality"`
}

// extra is what expect keeps in each epoch manifest besides the keyed counters: the epoch's
// own counts, the total of dropped rows and the --dropped-output file.
type extra struct {
	DroppedRecords int64            `json:"dropped_records"`
	Epoch          *DataQuality     `json:"epoch_data_quality,omitempty"`
	Dropped        *sideoutput.Mark `json:"dropped_output,omitempty"`
}

// report returns the counts since the first epoch, or those of the epoch being processed.
func (x *Expect) report(epoch bool) DataQuality {
	q := DataQuality{DroppedRecords: x.dropped.Load(), Expectations: make([]Metrics, len(x.cnt))}
	if epoch {
		q.DroppedRecords = x.epochDropped.Load()
	}
	for i, e := range x.cfg.Expectations {
		m := Metrics{Name: e.Name, Dataset: x.cfg.Dataset, Action: string(e.Action)}
		if epoch {
			m.PassedRecords, m.FailedRecords = x.cnt[i].epochPassed.Load(), x.cnt[i].epochFailed.Load()
		} else {
			m.PassedRecords, m.FailedRecords = x.cnt[i].passed.Load(), x.cnt[i].failed.Load()
		}
		q.Expectations[i] = m
	}
	return q
}

// progressJSON is the data_quality member of a --progress=json line: the totals, the epoch
// being processed and the last completed epoch.
type progressJSON struct {
	DataQuality
	Current *DataQuality `json:"current_epoch"`
	Last    *epochReport `json:"last_epoch,omitempty"`
}

// ProgressJSON returns the counters for --progress=json (stage.DataQuality).
func (x *Expect) ProgressJSON() any {
	cur := x.report(true)
	return progressJSON{DataQuality: x.report(false), Current: &cur, Last: x.last.Load()}
}

// ProgressText returns the status-line part: the failed rows of each expectation.
func (x *Expect) ProgressText() string {
	parts := make([]string, len(x.cnt))
	for i, e := range x.cfg.Expectations {
		parts[i] = fmt.Sprintf("%s failed %s", e.Name, strconv.FormatInt(x.cnt[i].failed.Load(), 10))
	}
	s := "expect " + strings.Join(parts, ", ")
	if d := x.dropped.Load(); d > 0 {
		s += fmt.Sprintf(" (dropped %d)", d)
	}
	return s
}

// FailError is the error of a row that violates an --expect-or-fail expectation.
type FailError struct {
	Name      string // the expectation
	Predicate string
	Pos       string   // the row's source position
	Values    []string // "column=value" of the columns the predicate references
	Epoch     uint64   // the epoch of the row, 0 when unknown
}

func (e *FailError) Error() string {
	epoch := "the epoch"
	if e.Epoch > 0 {
		epoch = fmt.Sprintf("epoch %d", e.Epoch)
	}
	vals := ""
	if len(e.Values) > 0 {
		vals = " with " + strings.Join(e.Values, ", ")
	}
	return fmt.Sprintf("expect: expectation %s (--expect-or-fail) violated at %s: %s is false%s; failing before %s commits (nothing of it reaches the sink)",
		e.Name, e.Pos, e.Predicate, vals, epoch)
}

// failure returns the FailError of row r of rec, which violates expectation i.
func (x *Expect) failure(ctx context.Context, rec arrow.RecordBatch, pos expr.RowPos, i, r int) error {
	e := x.cfg.Expectations[i]
	fe := &FailError{Name: e.Name, Predicate: e.Predicate, Pos: fmt.Sprintf("row %d", r), Epoch: x.next}
	if pos != nil {
		fe.Pos = pos(r)
	}
	row := rec.NewSlice(int64(r), int64(r+1))
	defer row.Release()
	for _, path := range expr.ColumnRefs(e.parsed) {
		name := strings.Join(path, ".")
		quoted := make([]string, len(path))
		for k, p := range path {
			quoted[k] = "`" + strings.ReplaceAll(p, "`", "``") + "`"
		}
		p, err := expr.Compile(strings.Join(quoted, "."), rec.Schema(), expr.Options{Mem: x.env.Mem})
		if err != nil {
			continue
		}
		a, err := p.Eval(ctx, row, nil)
		if err != nil {
			continue
		}
		fe.Values = append(fe.Values, name+"="+valueText(a))
		a.Release()
	}
	return fe
}

// valueText renders the one value of a for a message: NULL, a quoted string, or as Arrow
// prints it.
func valueText(a arrow.Array) string {
	if a.IsNull(0) {
		return "NULL"
	}
	switch a := a.(type) {
	case *array.String:
		return strconv.Quote(a.Value(0))
	case *array.LargeString:
		return strconv.Quote(a.Value(0))
	}
	return a.ValueStr(0)
}
