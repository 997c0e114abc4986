package delta

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamkit/streamkit/delta"
)

// Statistics rules (PROTOCOL.md "Per-file Statistics", DELTA.md "stats"):
//
//   - numRecords: rows in the file.
//   - nullCount: for every indexed leaf column, including array and map columns; a value is
//     null when the leaf or any enclosing struct is null.
//   - minValues/maxValues: only numeric, decimal, date, timestamp(_ntz) and string leaves;
//     omitted when every value is null; float bounds omitted when the column holds a NaN and
//     a bound that is ±Inf is omitted (JSON has no such number).
//   - strings: min is the first StatsStringPrefix code points; a longer max is cut to that
//     prefix plus a tie-breaker (U+007F when the next code point is below it, else U+10FFFF),
//     as Spark's truncateMaxStringAgg, so it stays ≥ every value in UTF-8 byte order.
//   - timestamps: "2006-01-02T15:04:05.000Z" (timestamp_ntz without the Z), truncated down
//     to the millisecond (readers add 1 ms to max).
//   - the first delta.dataSkippingNumIndexedCols leaf columns (default 32, -1 = all) in
//     schema order, partition columns excluded.

// StatsStringPrefix is the number of code points kept of string min/max statistics.
const StatsStringPrefix = 32

type statsKind int

const (
	kindStruct statsKind = iota
	kindNullOnly
	kindInt
	kindFloat
	kindDecimal
	kindString
	kindDate
	kindTimestamp
	kindTimestampNTZ
)

type colStats struct {
	name     string
	kind     statsKind
	children []*colStats
	scale    int32

	nullCount int64
	has       bool
	nan       bool
	imin      int64
	imax      int64
	fmin      float64
	fmax      float64
	dmin      decimal128.Num
	dmax      decimal128.Num
	smin      string
	smax      string
}

// statsCollector accumulates exact statistics of the batches written to one data file.
type statsCollector struct {
	numRecords int64
	cols       []*colStats // parallel to the data schema's fields; nil = not indexed
}

// newStatsCollector prepares stats for a data schema (partition columns already removed),
// indexing the first numIndexed leaves (-1: all).
func newStatsCollector(sc *arrow.Schema, numIndexed int) *statsCollector {
	budget := numIndexed
	if budget < 0 {
		budget = math.MaxInt
	}
	c := &statsCollector{}
	for _, f := range sc.Fields() {
		c.cols = append(c.cols, buildColStats(f.Name, f.Type, &budget))
	}
	return c
}

func buildColStats(name string, dt arrow.DataType, budget *int) *colStats {
	if st, ok := dt.(*arrow.StructType); ok {
		cs := &colStats{name: name, kind: kindStruct}
		any := false
		for _, f := range st.Fields() {
			ch := buildColStats(f.Name, f.Type, budget)
			cs.children = append(cs.children, ch)
			any = any || ch != nil
		}
		if !any {
			return nil
		}
		return cs
	}
	if *budget <= 0 {
		return nil
	}
	*budget--
	cs := &colStats{name: name, kind: kindNullOnly}
	switch t := dt.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		cs.kind = kindInt
	case *arrow.Float32Type, *arrow.Float64Type:
		cs.kind = kindFloat
	case *arrow.Decimal128Type:
		cs.kind, cs.scale = kindDecimal, t.Scale
	case *arrow.StringType:
		cs.kind = kindString
	case *arrow.Date32Type:
		cs.kind = kindDate
	case *arrow.TimestampType:
		cs.kind = kindTimestamp
		if t.TimeZone == "" {
			cs.kind = kindTimestampNTZ
		}
	}
	return cs
}

// update folds a record batch (canonical data schema) into the statistics.
func (c *statsCollector) update(rec arrow.RecordBatch) {
	c.numRecords += rec.NumRows()
	for i, cs := range c.cols {
		if cs != nil {
			cs.update(rec.Column(i), nil)
		}
	}
}

// updateColumn folds arr, column i of a batch (canonical data schema), into the statistics;
// the caller counts the rows (numRecords).
func (c *statsCollector) updateColumn(i int, arr arrow.Array) {
	if cs := c.cols[i]; cs != nil {
		cs.update(arr, nil)
	}
}

// updateDictionary folds a flat column i given as its distinct values dict (no nulls) and
// its count of nulls into the statistics: min/max depend only on the set of values.
func (c *statsCollector) updateDictionary(i int, dict arrow.Array, nulls int64) {
	if cs := c.cols[i]; cs != nil {
		cs.nullCount += nulls
		cs.update(dict, nil)
	}
}

// update folds arr into cs. parentValid, when non-nil, marks the rows whose enclosing
// structs are all non-null.
func (cs *colStats) update(arr arrow.Array, parentValid []bool) {
	n := arr.Len()
	valid := func(i int) bool { return arr.IsValid(i) && (parentValid == nil || parentValid[i]) }
	if cs.kind == kindStruct {
		sa := arr.(*array.Struct)
		pv := make([]bool, n)
		for i := range pv {
			pv[i] = valid(i)
		}
		for j, ch := range cs.children {
			if ch != nil {
				ch.update(sa.Field(j), pv)
			}
		}
		return
	}
	allValid := parentValid == nil && arr.NullN() == 0
	if !allValid {
		for i := 0; i < n; i++ {
			if !valid(i) {
				cs.nullCount++
			}
		}
	}
	switch a := arr.(type) {
	case *array.Int8:
		updInts(cs, a.Int8Values(), allValid, valid)
	case *array.Int16:
		updInts(cs, a.Int16Values(), allValid, valid)
	case *array.Int32:
		updInts(cs, a.Int32Values(), allValid, valid)
	case *array.Int64:
		updInts(cs, a.Int64Values(), allValid, valid)
	case *array.Date32:
		updInts(cs, a.Date32Values(), allValid, valid)
	case *array.Timestamp:
		updInts(cs, a.TimestampValues(), allValid, valid)
	case *array.Float32:
		updFloats(cs, a.Float32Values(), allValid, valid)
	case *array.Float64:
		updFloats(cs, a.Float64Values(), allValid, valid)
	case *array.Decimal128:
		for i := 0; i < n; i++ {
			if allValid || valid(i) {
				v := a.Value(i)
				if !cs.has {
					cs.dmin, cs.dmax, cs.has = v, v, true
					continue
				}
				if v.Less(cs.dmin) {
					cs.dmin = v
				}
				if cs.dmax.Less(v) {
					cs.dmax = v
				}
			}
		}
	case *array.String:
		var lo, hi string
		has := false
		for i := 0; i < n; i++ {
			if allValid || valid(i) {
				v := a.Value(i)
				if !has {
					lo, hi, has = v, v, true
					continue
				}
				if v < lo {
					lo = v
				}
				if v > hi {
					hi = v
				}
			}
		}
		if has {
			if !cs.has || lo < cs.smin {
				cs.smin = strings.Clone(lo)
			}
			if !cs.has || hi > cs.smax {
				cs.smax = strings.Clone(hi)
			}
			cs.has = true
		}
	}
}

type intLike interface {
	~int8 | ~int16 | ~int32 | ~int64
}

func updInts[T intLike](cs *colStats, vals []T, allValid bool, valid func(int) bool) {
	for i, v := range vals {
		if !allValid && !valid(i) {
			continue
		}
		x := int64(v)
		if !cs.has {
			cs.imin, cs.imax, cs.has = x, x, true
			continue
		}
		if x < cs.imin {
			cs.imin = x
		}
		if x > cs.imax {
			cs.imax = x
		}
	}
}

func updFloats[T float32 | float64](cs *colStats, vals []T, allValid bool, valid func(int) bool) {
	for i, v := range vals {
		if !allValid && !valid(i) {
			continue
		}
		x := float64(v)
		if x != x {
			cs.nan = true
			continue
		}
		if !cs.has {
			cs.fmin, cs.fmax, cs.has = x, x, true
			continue
		}
		if x < cs.fmin {
			cs.fmin = x
		}
		if x > cs.fmax {
			cs.fmax = x
		}
	}
}

// json renders the statistics as the add.stats JSON document.
func (c *statsCollector) json(dataSchema *arrow.Schema) string {
	var b bytes.Buffer
	b.WriteString(`{"numRecords":`)
	b.WriteString(strconv.FormatInt(c.numRecords, 10))
	for _, part := range []string{"minValues", "maxValues", "nullCount"} {
		b.WriteString(`,"` + part + `":`)
		writeStatsObject(&b, c.cols, dataSchema.Fields(), part)
	}
	b.WriteByte('}')
	return b.String()
}

func writeStatsObject(b *bytes.Buffer, cols []*colStats, fields []arrow.Field, part string) bool {
	b.WriteByte('{')
	n := 0
	for i, cs := range cols {
		if cs == nil {
			continue
		}
		mark := b.Len()
		if n > 0 {
			b.WriteByte(',')
		}
		delta.WriteJSONString(b, fields[i].Name)
		b.WriteByte(':')
		ok := false
		if cs.kind == kindStruct {
			ok = writeStatsObject(b, cs.children, fields[i].Type.(*arrow.StructType).Fields(), part)
		} else if part == "nullCount" {
			b.WriteString(strconv.FormatInt(cs.nullCount, 10))
			ok = true
		} else {
			ok = cs.writeBound(b, part == "minValues")
		}
		if ok {
			n++
		} else {
			b.Truncate(mark)
		}
	}
	b.WriteByte('}')
	return n > 0
}

// writeBound writes the min (or max) of a leaf, or reports false when there is none.
func (cs *colStats) writeBound(b *bytes.Buffer, isMin bool) bool {
	if !cs.has {
		return false
	}
	switch cs.kind {
	case kindInt:
		v := cs.imax
		if isMin {
			v = cs.imin
		}
		b.WriteString(strconv.FormatInt(v, 10))
	case kindFloat:
		v := cs.fmax
		if isMin {
			v = cs.fmin
		}
		if cs.nan || math.IsInf(v, 0) {
			return false
		}
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	case kindDecimal:
		v := cs.dmax
		if isMin {
			v = cs.dmin
		}
		b.WriteString(decimalString(v, cs.scale))
	case kindDate:
		v := cs.imax
		if isMin {
			v = cs.imin
		}
		t := time.Unix(v*86400, 0).UTC()
		if t.Year() < 1 || t.Year() > 9999 {
			return false
		}
		delta.WriteJSONString(b, t.Format("2006-01-02"))
	case kindTimestamp, kindTimestampNTZ:
		v := cs.imax
		if isMin {
			v = cs.imin
		}
		ms := v / 1000
		if v%1000 < 0 {
			ms-- // floor
		}
		t := time.UnixMilli(ms).UTC()
		if t.Year() < 1 || t.Year() > 9999 {
			return false
		}
		layout := "2006-01-02T15:04:05.000Z"
		if cs.kind == kindTimestampNTZ {
			layout = "2006-01-02T15:04:05.000"
		}
		delta.WriteJSONString(b, t.Format(layout))
	case kindString:
		var s string
		var ok bool
		if isMin {
			s, ok = truncateMin(cs.smin), true
		} else {
			s, ok = truncateMax(cs.smax)
		}
		if !ok || !utf8.ValidString(s) {
			return false
		}
		delta.WriteJSONString(b, s)
	default:
		return false
	}
	return true
}

// truncateMin keeps the first StatsStringPrefix code points of s (a prefix is ≤ s).
func truncateMin(s string) string {
	n := 0
	for i := range s {
		if n == StatsStringPrefix {
			return s[:i]
		}
		n++
	}
	return s
}

// truncateMax returns a string ≥ s (UTF-8 byte order) of at most ~StatsStringPrefix code
// points plus a tie-breaker, or false if none fits within twice the prefix (Spark's rule).
func truncateMax(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	if utf8.RuneCountInString(s) <= StatsStringPrefix {
		return s, true
	}
	n := 0
	for i, r := range s {
		if n < StatsStringPrefix {
			n++
			continue
		}
		if n >= 2*StatsStringPrefix {
			return "", false
		}
		if r == utf8.MaxRune {
			n++
			continue // cannot break a tie with the largest code point; keep it
		}
		if r < 0x7f {
			return s[:i] + "\x7f", true
		}
		return s[:i] + string(utf8.MaxRune), true
	}
	return s, true
}
