// Package delta is the Delta Lake transaction log: it reads a table's `_delta_log` into
// snapshots and writes commits and checkpoints to it, for streamkit's Delta sink, source and
// maintenance tools (DESIGN.md §5, §6). No Go Delta library exists, so the protocol is
// implemented here, following the Delta Transaction Log Protocol (PROTOCOL.md in
// github.com/delta-io/delta) and the project checklist (shared/DELTA.md). Data files are not
// its business: sink/delta writes Parquet files and hands their [Add] actions to a commit,
// source/delta scans the files of a [Snapshot].
//
// The files follow the split delta-rs makes between its kernel, transactions, checkpoints and
// log cleanup:
//
//   - Kernel. actions.go: the actions of a commit ([Add], [Remove], [Metadata], [Protocol],
//     [Txn], [CommitInfo], …) and their JSON. schema.go: Delta schema JSON ↔ Arrow
//     ([ParseSchema], [FromArrowSchema], [StructType.ToArrow]); evolve.go: --merge-schema
//     evolution ([MergeSchema], [EvolveMetadata]). protocol.go: reader/writer versions and
//     table features ([Snapshot.CheckRead], [Snapshot.CheckWrite]) and a new table's protocol
//     and metaData ([NewTableMetadata]); the features' own files: colmap.go (column mapping),
//     clustering.go, typewidening.go, icebergcompat.go (IcebergCompatV2 writer requirements,
//     nested ids), dv.go. properties.go: delta.* table properties
//     ([ValidateProperties]). path.go: add/remove path encoding ([EncodePath],
//     [DecodePath]). table.go: [Table], a table root. log.go: listing and parsing
//     `_delta_log`. snapshot.go: [Table.Snapshot] replays the log (newest complete
//     checkpoint ≤ the target version, then JSON commits) into a [Snapshot]: protocol,
//     metadata, live files, tombstones and the txn version per appId ([Snapshot.TxnVersion],
//     for exactly-once sinks). history.go, versions.go: commit versions, time travel by
//     timestamp.
//   - Transactions. commit.go: [Table.Commit] writes one commit with put-if-absent and
//     optimistic-concurrency retries; conflict.go: the conflict checker deciding whether a
//     concurrent commit conflicts with ours ([ConflictError]), including a changed clustering
//     domain (checkDomains).
//   - Checkpoints. checkpoint.go writes a checkpoint every delta.checkpointInterval commits
//     and `_last_checkpoint`: a classic Parquet one, or for a table with
//     delta.checkpointPolicy=v2 a UUID-named v2 one (JSON top-level file + Parquet sidecar);
//     checkpointread.go reads classic, multi-part and v2 checkpoints (JSON or Parquet
//     top-level file, sidecars in `_delta_log/_sidecars`).
//   - Log cleanup. logclean.go: [Table.CleanupLog] deletes log files older than
//     delta.logRetentionDuration that no retained version needs, after a checkpoint.
//   - flowlock.go: [Table.LockFlow] takes the per-flow lock `_streamkit/flows/<flow>.lock` in
//     the table (not part of the Delta protocol) that keeps two writers from committing one
//     txn appId: flock(2) on a local disk, a lease ([storage.AcquireLease]) on a bucket.
//
// A table lives in a [storage.Store] ([OpenTable]; [NewTable] for a local directory): a local
// directory or a bucket prefix (s3://, gs://, az://). Every file of the log goes through it.
// A commit is a put-if-absent of `_delta_log/<version>.json` ([storage.Store.PutIfAbsent]): on
// a local POSIX file system a hard link of an fsynced temporary file, which is atomic and never
// replaces an existing commit (storage/atomicfile); on a bucket the store's conditional write
// (S3 If-None-Match: *, GCS ifGenerationMatch=0, Azure If-None-Match: *), with no lock service
// and no rename. Checkpoints and `_last_checkpoint` are atomic replaces, checkpoint Parquet is
// read by ranged reads, and version times (time travel, log cleanup) are the files'
// modification times from one listing of `_delta_log`.
package delta
