// Package files is the incremental file source behind `streamkit read-files` (DESIGN.md §1,
// §3): it lists doublestar globs, reads CSV/TSV, NDJSON/JSON arrays, Parquet, Avro and Arrow
// IPC files (codec/formats, gzip/zstd transparently) into one Arrow stream, and remembers
// which files it has read so that every file is read exactly once across runs — Databricks
// Auto Loader's model, in a checkpoint directory.
//
// # Discovery
//
// A listing walks every pattern (doublestar, with "**"; a directory means everything below
// it) and skips hidden and temporary names anywhere below the pattern's base (".x", "_x",
// TempSuffixes) unless the pattern spells them out.
//
// A bucket URL (s3://, s3a://, gs://, az://, abfss://; package storage opens it, with the SDKs'
// credentials and endpoints) is a glob over object names: s3://b/landing/**/*.json lists the
// longest literal directory prefix before the first glob character (landing/) with
// storage.Store.Walk, page by page, and matches the rest (**/*.json) against each name below
// it with doublestar, with the same hidden-name rules. A literal URL is one object, or, if no
// object has that name, every object below it. Names are used as they are (spaces, "#", "%",
// "[", "*" need no escaping); a name with an empty segment ("a//b"), which no store can open,
// is skipped with a warning. Objects are read through Store.Open: text and Avro as one
// streamed range up to the listed size, Parquet and Arrow IPC files by ranged reads
// (formats.OpenFile). An object is identified like a file, by its URL (Entry.Path), size and
// modification time, plus the listing's ETag (Entry.ETag); its fingerprint is "etag:" + the
// ETag when the listing gives one (a content hash, with no request), else the hash of its
// first bytes (one ranged read, up to 16 at a time). A file is read only once it is stable:
// nothing has changed it for StableAfter — its modification time is that old, or an earlier
// listing at least StableAfter ago saw the same size and time; a file whose size or time
// changes between listings is left until it stops changing. An "available now" run lists
// once (if some files are still too fresh it waits for them at most StableAfter, lists again,
// and leaves the ones still changing for the next run); a --follow run lists every
// PollInterval.
//
// Files are identified by path, size, modification time and a fingerprint (SHA-256 of the
// first FingerprintBytes), never by a time cutoff: two files sharing a modification time, or
// a file that appears late with an old time, are each read once. A known path whose size or
// time changed is a rewrite (--on-rewrite): skip with a warning (default), reprocess it as a
// new file, or fail; a file that was only touched (same size and fingerprint) is ignored. A
// matched file whose extension names no format (without --format) is skipped with a warning.
// Skipped versions are recorded in the files log (Entry.Skip), so each is reported once.
//
// # The files log and the position (checkpoint layout)
//
// New stable files are *planned* before any of them is read: appended, oldest modification
// time first (ties by path), to the files log, a sequence of atomically written, checksummed
// records <checkpoint>/files/<seq>.json {"seq","first","entries":[{path,size,mtime_ns,fp}]}
// (plus "etag" for objects). The log is written through the checkpoint's storage.Store, so it
// lives wherever the checkpoint does: replaced atomically on a local disk, put-if-absent on a
// bucket (every record has a new name; a process that lost the checkpoint's lease cannot
// overwrite the new owner's record, and writes none once it knows).
// Entry i of the log is the i-th file the checkpoint ever read, so the log is the set of files
// already read (or about to be), across runs. Every 64 records the log is compacted into one
// record holding all entries (first = 0; older records are then deleted; loading applies
// records in order, so a crash in between is harmless). The stream schema, fixed by the first
// run (from --schema or inference), is kept beside it in files/schema.json (DDL for people, an
// Arrow IPC schema message for the loader), so every later run and every replay decodes with
// the same schema; a --schema that resolves differently is refused.
//
// The source's position (the offsets WAL entry of each epoch, stage.Position) is
//
//	{"next": i, "row": r, "files": [{"index": k, "path", "size", "mtime_ns", "fp"}, ...]}
//
// — the cursor at the end of the epoch (the next file of the log to read, and how many rows
// of it were read already when an epoch was cut inside a file) and the epoch's file list
// (every file it read rows from, with the version read). A restart restores the committed
// epoch's cursor, replays the uncommitted WAL epochs exactly (each epoch's file list is
// checked against the log, and reading stops at its cursor, splitting a batch if needed), and
// then reads the planned files after the cursor before listing again. Since plans are
// durable before reading and positions before barriers, no file is read twice downstream of a
// committed epoch and none is skipped, whatever the moment of a kill -9. A planned file that
// changes before it is first read is recorded as "unread" and its new version planned by a
// later listing once stable; one that changes after rows of it were emitted is replayed as
// planned (sequential formats read at most the planned size, so an appended file replays the
// same).
//
// Memory: the set of known files is held in memory (about 150 bytes per file plus its path)
// and on disk in the log; a WAL entry holds only its epoch's files, bounded by
// --max-files-per-epoch (default 1000, as Auto Loader's maxFilesPerTrigger). Reading holds one
// batch being decoded plus one read ahead (to know where a file ends): memory is bounded by
// the batch size, not the file size.
//
// # Schema and bad records
//
// Text formats decode against the stream schema with codec/csvrow and codec/jsonrow: fields
// not in the schema, or whose values do not parse as the column type, go to _rescued_data
// (JSON naming the fields and the file) and the column is null; records that do not parse at
// all go to the bad-records handler (an NDJSON file with file, line, byte offset, reason and
// raw text, or the log), counted in the stage's progress and at exit; --mode selects Spark's
// permissive / dropmalformed / failfast. Binary formats are conformed by column name: equal
// types pass through, other types are cast (arrow compute, safe) and a column whose values
// cannot be cast is null with its values rescued (a column whose type no cast converts at
// all is a *SchemaMismatchError unless Config.RescueSchemaMismatch); columns the schema lacks are rescued with an
// inferred schema and left out (not read, for Parquet) with an explicit --schema; a missing
// nullable column is null.
//
// Inference samples the first InferRows records of the first planned files (csvrow/jsonrow
// rules, dates and RFC 3339 timestamps included) and widens across files with
// schema.WidenFields (integer with double → double, conflicting kinds → string, structs
// merged member-wise); a binary file contributes its own schema. Inferred columns are
// nullable, then --schema-hints (schema.Merge) pin types.
package files
