package generate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/stage"
)

// Config configures a Source.
type Config struct {
	Options
	// Rows ends the stream after this many rows (0: unbounded).
	Rows int64
	// MaxRecordsPerEpoch caps the rows of an epoch (0: no cap); Spark's maxOffsetsPerTrigger.
	MaxRecordsPerEpoch int64
	// EventTime names a top-level timestamp column declared as the stream's event time
	// (schema metadata streamkit.event_time).
	EventTime string
	// Watermarks makes the source emit watermarks: max event time so far − WatermarkDelay.
	Watermarks     bool
	WatermarkDelay time.Duration
	// Sleep waits d or until ctx is done (live pacing with Rate); default a real timer. Tests
	// inject one that advances their clock.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Position is the source's replayable position (the offsets WAL entry): the index of the next
// row, and the run's "now" when a timestamp starts at now.
type Position struct {
	Next  int64  `json:"next"`
	NowUs *int64 `json:"now_us,omitempty"`
}

// Source is the generate source (stage.Source, stage.EpochLimiter, stage.SourceWatermarker).
// Row i is a pure function of the seed and i, so the position is just the next row index and
// a replay reproduces every epoch exactly. With Rate, rows are released as the clock (env.Now)
// advances: row i is due at start + (i − first)/Rate, where start is when the run opened.
type Source struct {
	cfg       Config
	g         *Generator
	mem       memory.Allocator
	now       func() time.Time
	batchRows int64
	linger    time.Duration

	next, base int64
	nowUs      *int64
	t0         time.Time
	inEpoch    int64

	etCol  int
	etUnit arrow.TimeUnit
	maxET  int64
	sawET  bool
}

var (
	_ stage.Source            = (*Source)(nil)
	_ stage.EpochLimiter      = (*Source)(nil)
	_ stage.SourceWatermarker = (*Source)(nil)
)

// NewSource validates cfg and builds the generator. Errors are usage errors.
func NewSource(cfg Config) (*Source, error) {
	if cfg.Rows < 0 {
		return nil, stage.Usagef("generate: --rows must be ≥ 0, got %d", cfg.Rows)
	}
	if cfg.Rate < 0 || math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0) {
		return nil, stage.Usagef("generate: --rate must be a positive number of rows per second")
	}
	if cfg.MaxRecordsPerEpoch < 0 {
		return nil, stage.Usagef("generate: --max-records-per-epoch must be ≥ 0, got %d", cfg.MaxRecordsPerEpoch)
	}
	g, err := New(cfg.Options)
	if err != nil {
		return nil, err
	}
	s := &Source{cfg: cfg, g: g, etCol: -1}
	if cfg.EventTime != "" {
		idx := g.schema.FieldIndices(cfg.EventTime)
		if len(idx) != 1 {
			return nil, stage.Usagef("generate: --event-time %s: no such top-level column", cfg.EventTime)
		}
		ts, ok := g.schema.Field(idx[0]).Type.(*arrow.TimestampType)
		if !ok {
			return nil, stage.Usagef("generate: --event-time %s: want a timestamp column, got %s", cfg.EventTime, g.schema.Field(idx[0]).Type)
		}
		s.etCol, s.etUnit = idx[0], ts.Unit
	} else if cfg.Watermarks {
		return nil, stage.Usagef("generate: --watermark-delay needs --event-time")
	}
	if s.cfg.Sleep == nil {
		s.cfg.Sleep = sleep
	}
	return s, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Generator returns the source's generator.
func (s *Source) Generator() *Generator { return s.g }

// Open positions the source after committed (nil: row 0) and returns the schema.
func (s *Source) Open(_ context.Context, env *stage.Env, committed stage.Position) (*arrow.Schema, error) {
	s.mem, s.now = env.Mem, env.Now
	s.batchRows, s.linger = int64(env.BatchRows), env.Linger
	if s.batchRows <= 0 {
		s.batchRows = 64 * 1024
	}
	if s.linger <= 0 {
		s.linger = 100 * time.Millisecond
	}
	var p Position
	if committed != nil {
		if err := json.Unmarshal(committed, &p); err != nil {
			return nil, fmt.Errorf("generate: position %s: %w", committed, err)
		}
	}
	s.next = p.Next
	if s.g.UsesNow() {
		if p.NowUs == nil {
			us := env.Now().UnixMicro()
			p.NowUs = &us
		}
		s.nowUs = p.NowUs
		s.g.SetNow(*p.NowUs)
	}
	s.base, s.t0 = s.next, env.Now()
	out := s.g.Schema()
	if s.cfg.EventTime != "" {
		info := codec.Info(out)
		info.EventTime = s.cfg.EventTime
		out = codec.WithInfo(out, info)
	}
	return out, nil
}

// Position is the next row's index (and "now", see Position).
func (s *Source) Position() stage.Position {
	b, _ := json.Marshal(Position{Next: s.next, NowUs: s.nowUs})
	return b
}

// Read returns the next batch: at most --batch-rows rows, never past limit (a replay) or
// --rows; with Rate only rows that are due, waiting at most the linger interval.
func (s *Source) Read(ctx context.Context, limit stage.Position) (arrow.RecordBatch, error) {
	if limit != nil {
		var p Position
		if err := json.Unmarshal(limit, &p); err != nil {
			return nil, fmt.Errorf("generate: position %s: %w", limit, err)
		}
		if s.next >= p.Next {
			return nil, io.EOF
		}
		return s.emit(min(s.batchRows, p.Next-s.next))
	}
	end := int64(math.MaxInt64)
	if s.cfg.Rows > 0 {
		end = s.cfg.Rows
	}
	if s.next >= end {
		return nil, io.EOF
	}
	n := min(s.batchRows, end-s.next)
	if m := s.cfg.MaxRecordsPerEpoch; m > 0 {
		if s.inEpoch >= m {
			return nil, nil
		}
		n = min(n, m-s.inEpoch)
	}
	if s.cfg.Rate > 0 {
		now := s.now()
		due := s.base + int64(math.Floor(now.Sub(s.t0).Seconds()*s.cfg.Rate))
		avail := due - s.next
		firstDue := s.dueTime(s.next + 1)
		if avail >= n || (avail > 0 && !now.Before(firstDue.Add(s.linger))) {
			n = min(n, avail)
		} else {
			wake := s.dueTime(s.next + n)
			if t := firstDue.Add(s.linger); t.Before(wake) {
				wake = t
			}
			d := min(max(wake.Sub(now), time.Millisecond), s.linger)
			if err := s.cfg.Sleep(ctx, d); err != nil {
				return nil, nil // interrupted: the stage loop sees the cancelled context
			}
			return nil, nil
		}
	}
	s.inEpoch += n
	return s.emit(n)
}

// dueTime is when rows up to (excluding) row r are due.
func (s *Source) dueTime(r int64) time.Time {
	return s.t0.Add(time.Duration(float64(r-s.base) / s.cfg.Rate * float64(time.Second)))
}

func (s *Source) emit(n int64) (arrow.RecordBatch, error) {
	rec, err := s.g.Batch(s.mem, s.next, int(n))
	if err != nil {
		return nil, err
	}
	s.next += n
	if s.etCol >= 0 {
		col := rec.Column(s.etCol).(*array.Timestamp)
		for i, v := range col.Values() {
			if col.IsValid(i) && (!s.sawET || int64(v) > s.maxET) {
				s.maxET, s.sawET = int64(v), true
			}
		}
	}
	return rec, nil
}

// EpochFull reports whether the epoch holds MaxRecordsPerEpoch rows.
func (s *Source) EpochFull() bool {
	return s.cfg.MaxRecordsPerEpoch > 0 && s.inEpoch >= s.cfg.MaxRecordsPerEpoch
}

// EpochCut starts counting a new epoch.
func (s *Source) EpochCut() { s.inEpoch = 0 }

// Watermark is the max event time so far − WatermarkDelay (with Watermarks).
func (s *Source) Watermark() (time.Time, bool) {
	if !s.cfg.Watermarks || !s.sawET {
		return time.Time{}, false
	}
	return arrow.Timestamp(s.maxET).ToTime(s.etUnit).Add(-s.cfg.WatermarkDelay).UTC(), true
}

// Close releases nothing: batches belong to the stage once returned.
func (s *Source) Close() error { return nil }
