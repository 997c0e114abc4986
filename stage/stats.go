package stage

import (
	"sync/atomic"
	"time"
)

// Stats are a stage's live counters, read by the progress reporter from another goroutine.
type Stats struct {
	RecordsIn  atomic.Int64
	RecordsOut atomic.Int64
	BatchesIn  atomic.Int64
	Epoch      atomic.Uint64 // last epoch completed (barrier passed)
	Committed  atomic.Uint64 // newest committed epoch known to this stage
	watermark  atomic.Int64  // µs since the Unix epoch; 0 = none
	Lag        atomic.Int64  // records behind the source's end, -1 = unknown
	StateKeys  atomic.Int64  // keys held by the operator's state, -1 = stateless
	StateBytes atomic.Int64  // bytes of memory the operator's state holds, -1 = unknown
	Partitions atomic.Int64  // source partitions a consumer-group member holds, -1 = not a group member
	BadRecords atomic.Int64  // records set aside: bad records, _rescued_data, late rows (see Reject)
	// FilesPruned is the number of data files a source skipped without opening them because
	// their partition values or statistics rule out its filter (read-delta --where), -1 = the
	// source prunes no files.
	FilesPruned atomic.Int64

	rejects [numRejectKinds]atomic.Int64 // BadRecords by kind (Reject)

	quality atomic.Pointer[qualityReporter] // SetDataQuality; nil: the stage checks no expectations
}

// DataQuality is what a stage that checks data-quality expectations (expect) reports in its
// progress: Lakeflow's flow_progress.data_quality. Its methods are called from the progress
// reporter's goroutine, so they must be safe for concurrent use with the stage's own.
type DataQuality interface {
	// ProgressJSON returns the counters as a JSON-marshalable value; --progress=json prints
	// it as the member "data_quality" of each line.
	ProgressJSON() any
	// ProgressText is the counters for the status line, short ("failed valid_id 3, …").
	ProgressText() string
}

type qualityReporter struct{ q DataQuality }

// SetDataQuality makes the progress reports include q (call it from Open).
func (s *Stats) SetDataQuality(q DataQuality) { s.quality.Store(&qualityReporter{q}) }

// dataQuality returns what SetDataQuality set, nil when nothing.
func (s *Stats) dataQuality() DataQuality {
	if r := s.quality.Load(); r != nil {
		return r.q
	}
	return nil
}

func newStats() *Stats {
	s := &Stats{}
	s.Lag.Store(-1)
	s.StateKeys.Store(-1)
	s.StateBytes.Store(-1)
	s.Partitions.Store(-1)
	s.FilesPruned.Store(-1)
	return s
}

// SetWatermark records the current watermark.
func (s *Stats) SetWatermark(t time.Time) { s.watermark.Store(t.UnixMicro()) }

// Watermark returns the current watermark, ok=false when none was seen.
func (s *Stats) Watermark() (time.Time, bool) {
	v := s.watermark.Load()
	if v == 0 {
		return time.Time{}, false
	}
	return time.UnixMicro(v).UTC(), true
}
