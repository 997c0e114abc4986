// Package delta is the Delta Lake source behind `streamkit read-delta` (DESIGN.md §1, §3) and
// the table reader backfill uses. The transaction log itself (commits, checkpoints, snapshot
// replay, protocol checks) is package github.com/streamkit/streamkit/delta; this package
// turns a snapshot's files into Arrow record batches and a table's history into a replayable
// stream.
//
// # Reading files ([Reader], [Scan])
//
// A [Reader] is bound to one table schema (metaData), an optional projection and an optional
// read-delta --where [Predicate]: Spark SQL over any column (package expr), evaluated on every
// batch of the files that are read, and used to skip the files whose partition values or
// add-action statistics prove that no row matches ([Reader.Verdict], prune.go); a condition
// the older partition syntax accepts is a partition [Filter] with that syntax's meaning.
// backfill --from-where and delta optimize --where take the partition syntax only
// ([ParseTableFilter], [Filter.MatchPartitionValues]). A
// [Scan] reads a list of data files in order: a planner opens each file's footer and splits it
// into work units of whole row groups (about 256K rows), workers decode units concurrently
// with pqarrow, and the consumer receives the batches in file order, each tagged with the file
// row it ends at, then one Done marker per file. Memory is bounded by the workers (two batches each plus a row group's chunks).
//
// Every batch has the table's canonical Arrow schema ([dl.StructType.ToArrow]) projected to
// the selected columns. Partition columns are built from the add action's partitionValues
// (never from directory names; an empty value is null), columns a file lacks are null, and
// file types are conformed as readers must accept them from other writers: INT96 and
// ms/ns timestamps become µs (floored, as Spark reads them; a top-level INT96 column is decoded
// by int96.go straight to µs, years 1 to 9999), zone-less Parquet timestamps in a timestamp column keep their
// instant, large/view strings, dictionaries, unsigned and narrower integers, float32 and other
// decimal widths are cast, and nested fields are matched by name whatever the Parquet list,
// map and struct naming (DELTA.md "Types").
//
// Spark's LEGACY rebase modes (int96.go): a file marked org.apache.spark.legacyINT96 (or
// written by Spark before 3.1.0) holds INT96 instants before 1582-10-15 as hybrid Julian
// readings, rebased as they are decoded; a file marked org.apache.spark.legacyDateTime (or
// written by Spark before 3.0.0) holds DATE and INT64 TIMESTAMP values so, rebased
// per batch in the file's types, leaf by leaf by Parquet column (int96.RebaseLegacyDateTime): INT96
// leaves only by their own key, TIMESTAMP_NTZ never, so no value is rebased twice. --where
// prunes files by the Delta log's statistics, which Spark writes from the values (proleptic
// Gregorian, whatever the file's mode); Parquet row-group statistics, Julian in such files,
// are not used.
//
// Reader safety (DELTA.md "Reader safety"): the protocol is checked by package delta when a
// snapshot loads (unknown reader features are refused naming the feature; column mapping is
// read, colmap.go; type widening, widen.go); the rows a file's deletion vector marks are dropped
// (dv.go: row indexes are positions in the Parquet file, whatever is skipped); every logged path
// is validated before anything is read ([resolvePath]: percent-decoding, no "..", ".", empty
// segments, backslashes, NUL or _delta_log, absolute paths and URLs only inside the table
// root); local files are opened through an [os.Root] of the table directory so a symlink
// cannot escape it, bucket objects through the table's storage.Store, with the column chunks
// of each work unit fetched in coalesced ranged reads (prefetch.go).
//
// No row of a file that then fails on a value is emitted: the conversions of conformData
// cannot fail on a value except the ones listed here, and INT96 timestamps, top-level or
// inside structs, lists and maps, are decoded straight to µs over years 1 to 9999 (codec/int96, int96.go;
// only a nested INT96 under an Arrow extension type from an ARROW:schema still goes through
// pqarrow's nanoseconds, range-checked by the file's first work unit before its first batch,
// int96.CheckNested). Still value-dependent, mid-file: an s/ms timestamp
// beyond ±292,000 years (Spark fails on it too), a file column wider than the table's type
// (an integer or decimal that does not fit; Delta writers produce none), and errors of a
// --where predicate's evaluation (ANSI casts and arithmetic).
//
// # The stream ([Source])
//
// The source's position (the offsets WAL entry of each epoch) is
//
//	{"table_id": "…", "version": V, "initial": true|false, "file": F, "row": R}
//
// — the next row to read is row R of file F of the change set of version V: the live files of
// the snapshot at V sorted by path when initial, else the add actions of commit V in file
// order. Indices count every file, also those skipped by --where or because they carry no data
// change, so positions do not depend on the filter. An epoch spans from the previous epoch's
// position to its own, i.e. a range of table versions (and files within them); replaying it
// reads exactly up to the recorded position, splitting a batch at the recorded row, so a
// replay reproduces the epoch exactly whatever the batch size.
//
// A bounded read (no Follow) reads the snapshot of the chosen version (latest, --version,
// --timestamp) and ends; restarted from a checkpoint it reads the commits since, up to the
// latest version at its start ("available now"). Follow first reads the snapshot (or, with
// StartingVersion, the commits from that version), then polls for the next commit file. As
// in Spark's Delta source, only appends are followed: a commit removing data with
// dataChange=true fails the stream unless IgnoreDeletes (commits that only delete),
// SkipChangeCommits (every such commit is skipped) or IgnoreChanges (also rewrites: their
// added files are read again; a file put back with a new deletion vector is one); compactions
// (dataChange=false) are skipped; a schema change that older data cannot be read into fails
// the stream with a message asking for a restart, which then reads with the new schema.
package delta
