// Package window is the pure logic behind the window and dedup tools (DESIGN.md §4): window
// assigners, event-time extraction, watermarks, aggregate functions and the keyed window state
// with its triggers. It reads Arrow record batches and produces Arrow record batches, but never
// touches pipes, files or the wall clock: the stage loop (tools/stage) drives it and injects
// the clock.
//
// Semantics follow Apache Flink's DataStream windows
// (https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/datastream/operators/windows/):
//
//   - Time is int64 microseconds since the Unix epoch, UTC, everywhere in this package. A window
//     is the half-open interval [Start, End).
//   - A watermark W promises that no record with event time < W follows (DESIGN.md §2). Flink's
//     watermark is inclusive ("no element with timestamp ≤ W"), so Flink's W equals ours − 1 µs;
//     all Flink rules below are translated accordingly.
//   - A window fires (emit = on_time) when the watermark reaches its end (Flink EventTimeTrigger:
//     maxTimestamp = end − 1 ≤ watermark). Its state is kept until watermark ≥ end + allowed
//     lateness (Flink's cleanup time); a record arriving for a fired window before then updates
//     it and fires it again at once (emit = late_update). A record whose windows are all past
//     cleanup is late: it is returned to the caller for the side output and counted.
//   - Session windows merge like Flink's MergingWindowSet: a record opens [t, t+gap), windows
//     that overlap or touch are merged, so a late record can bridge two sessions.
//   - Count windows follow Flink's countWindow(size, slide): GlobalWindows + CountTrigger(slide)
//   - CountEvictor(size), per key, in arrival order.
//
// Processing is deterministic for event time: the watermark advances record by record (not per
// batch), so results do not depend on how the input was cut into batches.
package window
