// Package writedelta is the `streamkit write-delta` tool: an exactly-once Delta Lake sink
// (DESIGN.md §3, §5). It turns its flags into a sink/delta StreamConfig and runs the
// sink/delta StreamWriter as the stage's operator: every epoch of the input stream becomes
// one Delta commit holding the epoch's Parquet data files and a txn action {appId = flow id,
// version = epoch}, so each input row lands in the table exactly once (delta.StreamWriter
// documents the protocol, also for rows after the last barrier). The Delta protocol itself is
// implemented by packages delta and sink/delta.
package writedelta

import "github.com/streamkit/streamkit/sink/delta"

// Tool is the subcommand name; it is also the `by` of the commit markers write-delta writes.
const Tool = delta.StreamTool
