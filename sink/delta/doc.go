// Package delta reads and writes the Delta Lake transaction log and Parquet data files for
// streamkit's write-delta sink (DESIGN.md §5). No Go Delta library exists, so the protocol is
// implemented here, following the Delta Transaction Log Protocol (PROTOCOL.md in
// github.com/delta-io/delta) and the project checklist (shared/DELTA.md).
//
// The pieces, in the order a sink uses them:
//
//   - [Table] binds a table root directory; [Table.Snapshot] replays `_delta_log` (newest
//     complete checkpoint ≤ the target version, then JSON commits) into a [Snapshot]: protocol,
//     metadata, live files keyed by path, tombstones and the txn version per appId
//     ([Snapshot.TxnVersion], for exactly-once sinks).
//   - [NewTableMetadata] builds the protocol and metaData of a new table from an Arrow schema
//     ([FromArrowSchema] documents the type mapping).
//   - [NewDataWriter] streams Arrow record batches into Parquet data files (pqarrow), rolling
//     files at a target size and splitting rows into Hive-style partition directories; Close
//     returns one [Add] action per file with exact statistics.
//   - [MergeSchema] and [EvolveMetadata] add new input columns to the table schema
//     (--merge-schema), upgrading the protocol when a timestamp_ntz column appears.
//   - [Table.Commit] writes one commit (commitInfo, protocol/metaData, txn, adds, removes) with
//     put-if-absent semantics and optimistic-concurrency retries, and writes a classic Parquet
//     checkpoint every delta.checkpointInterval commits, after which expired log files are
//     deleted ([Table.CleanupLog], delta.logRetentionDuration).
//   - [ValidateProperties] checks delta.* table properties as delta-spark does.
//   - [LockFlow] takes the per-flow lock file `_streamkit/flows/<flow>.lock` in the table
//     (not part of the Delta protocol) that keeps two writers from committing one txn appId.
//
// Only local POSIX file systems are supported: put-if-absent is a hard link of an fsynced
// temporary file, which is atomic and never replaces an existing commit.
package delta
