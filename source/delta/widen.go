package delta

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	dl "github.com/streamkit/streamkit/delta"
)

// widening reports whether a data file column of Arrow type src is read into a table column
// of type dst by a type widening (PROTOCOL.md "Type Widening", supported type changes): the
// file was written before the column's type changed. The changes and their Arrow forms:
// byte → short → integer → long (Int8…Int64), float → double, byte/short/integer → double,
// date → timestamp_ntz (Date32 → Timestamp(µs) without zone: midnight), decimal to a wider
// decimal and byte/short/integer/long to decimal (Decimal128, rescaled; decimalWidening).
func widening(src, dst arrow.DataType) bool {
	switch dst.ID() {
	case arrow.INT16:
		return src.ID() == arrow.INT8
	case arrow.INT32:
		return src.ID() == arrow.INT8 || src.ID() == arrow.INT16
	case arrow.INT64:
		return src.ID() == arrow.INT8 || src.ID() == arrow.INT16 || src.ID() == arrow.INT32
	case arrow.FLOAT64:
		return src.ID() == arrow.FLOAT32 || src.ID() == arrow.INT8 || src.ID() == arrow.INT16 || src.ID() == arrow.INT32
	case arrow.TIMESTAMP:
		return src.ID() == arrow.DATE32 && dst.(*arrow.TimestampType).TimeZone == ""
	case arrow.DECIMAL128:
		return decimalWidening(src, dst.(*arrow.Decimal128Type))
	}
	return false
}

// decimalWidening reports whether src widens to the decimal dst as the protocol allows:
// decimal(p, s) to decimal(p + k1, s + k2) with k1 ≥ k2 ≥ 0 (no scale or integer digit is
// lost), byte, short and integer to a decimal with at least 10 integer digits, long to one
// with at least 20. A narrower decimal is not a widening: a follow that meets one in a later
// schema stops instead of reading wider values into the old type.
func decimalWidening(src arrow.DataType, dst *arrow.Decimal128Type) bool {
	var prec, scale int32
	switch src.ID() {
	case arrow.DECIMAL128:
		d := src.(*arrow.Decimal128Type)
		prec, scale = d.Precision, d.Scale
	case arrow.INT8, arrow.INT16, arrow.INT32:
		prec = 10
	case arrow.INT64:
		prec = 20
	default:
		return false
	}
	return dst.Scale >= scale && dst.Precision-dst.Scale >= prec-scale
}

// widenData converts the values of a column written under an older, narrower type to the
// table's current type dst with one vectorized Arrow cast (values are exact in the wider
// type; a decimal that does not fit its new precision is an error naming the column). ok is
// false when src → dst is not a widening, and conformData goes on with its other rules.
func widenData(ctx context.Context, d arrow.ArrayData, dst arrow.DataType, path string) (out arrow.ArrayData, ok bool, err error) {
	if !widening(d.DataType(), dst) {
		return nil, false, nil
	}
	arr := array.MakeFromData(d)
	defer arr.Release()
	res, err := compute.CastArray(ctx, arr, compute.SafeCastOptions(dst))
	if err != nil {
		return nil, true, fmt.Errorf("column %s: widen %s to %s: %w", path, d.DataType(), typeName(dst), err)
	}
	defer res.Release()
	res.Data().Retain()
	return res.Data(), true, nil
}

// widenedFromFloat reports whether field f was a float column before a type widening to
// double (its delta.typeChanges lists float → double for the field itself).
func widenedFromFloat(f dl.StructField) bool {
	tcs, err := f.TypeChanges()
	if err != nil {
		return false
	}
	for _, tc := range tcs {
		if tc.FieldPath == "" && tc.FromType == dl.TypeFloat {
			return true
		}
	}
	return false
}

// widenFloatStat loosens a statistic v (min, or max when hi) of a double column that was a
// float: a file written before the widening has its statistics in float's shortest text
// ("1.1"), whose reading as a double (1.1) is not the value the file holds
// (1.100000023841858), so the bound takes the farther of both readings.
func widenFloatStat(raw json.RawMessage, v dval, hi bool) dval {
	f, err := strconv.ParseFloat(strings.Trim(strings.TrimSpace(string(raw)), `"`), 32)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return v
	}
	if hi && f > v.f || !hi && f < v.f {
		v.f = f
	}
	return v
}
