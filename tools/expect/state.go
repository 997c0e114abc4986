package expect

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// value is an expectation's entry in the keyed state (key: its name): its counts since the
// first epoch. state-dump --stage shows one row per expectation with these columns.
type value struct {
	Action  string
	Dataset string
	Passed  int64
	Failed  int64
}

// valueCodec maps value to the state file columns action, dataset, passed_records,
// failed_records (the names of Lakeflow's event log).
type valueCodec struct{}

func (valueCodec) Fields() []arrow.Field {
	return []arrow.Field{
		{Name: "action", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "dataset", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "passed_records", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "failed_records", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}
}

func (valueCodec) Append(bs []array.Builder, v value) {
	bs[0].(*array.StringBuilder).Append(v.Action)
	bs[1].(*array.StringBuilder).Append(v.Dataset)
	bs[2].(*array.Int64Builder).Append(v.Passed)
	bs[3].(*array.Int64Builder).Append(v.Failed)
}

func (valueCodec) Decode(cols []arrow.Array, i int) (value, error) {
	return value{
		Action:  cols[0].(*array.String).Value(i),
		Dataset: cols[1].(*array.String).Value(i),
		Passed:  cols[2].(*array.Int64).Value(i),
		Failed:  cols[3].(*array.Int64).Value(i),
	}, nil
}
