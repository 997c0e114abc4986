// Package window is the pure logic behind the window and dedup tools (DESIGN.md §4): window
// assigners, event-time extraction, watermarks, aggregate functions and the keyed window state
// with its triggers. It reads Arrow record batches and produces Arrow record batches, but never
// touches pipes, files or the wall clock: the stage loop (stage) drives it and injects
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
//   - Count windows follow Flink's countWindow(size, slide): GlobalWindows with
//     CountTrigger(slide) and CountEvictor(size), per key, in arrival order.
//
// Processing is deterministic for event time: the watermark advances record by record (not per
// batch), so results do not depend on how the input was cut into batches, and windows that
// fire together are emitted in a canonical order (by end, then creation), also after a
// restore.
//
// # Wiring (what the window operator calls)
//
//	asg, _ := window.NewTumbling(5*time.Minute, 0, loc)        // or NewSliding, NewSession, NewCount, NewGlobal
//	aggs, _ := window.ParseAggs("count, sum(value.amount) as revenue")
//	m, err := window.New(inSchema, window.Config{Assigner: asg, Key: keys, Time: "timestamp",
//		TimeOptions: window.TimeOptions{Location: tz}, Aggs: aggs, AllowedLateness: lateness,
//		Watermark: window.WatermarkOptions{Generate: true, Delay: delay, IdleTimeout: idle},
//		Emit: window.EmitUpdate, Every: every, Now: env.Now, Mem: env.Mem, Changelog: env.Dir != nil})
//	out := m.Schema()                           // Open
//	rej, err := m.Process(rec)                  // Process: then emit m.TakeOutput(),
//	side, _ := window.TakeRows(mem, rec, rej.Late) //   and the rejected rows to --late-output
//	m.OnWatermark(window.Micros(wm))            // Watermark (upstream control batch)
//	m.OnProcessingTime()                        // periodically: idleness, heartbeats, early firings
//	m.Watermark()                               // the watermark to forward (WatermarkOwner)
//	m.Final()                                   // End(final): everything fires; End(pause): nothing
//	st := &checkpoint.Store{M: m}               // Barrier n: st.Checkpoint(mem, env.Dir, n)
//	st.Restore(mem, env.Dir.Path, env.Committed) // before Open returns
//
// The dedup tool uses TimeExtractor and Watermarks; KeyCodec encodes keys exactly like
// codec.KeyEncoder.
package window
