// Package delta is the Delta Lake sink: the Parquet data files of a table and the exactly-once
// stream writer that commits them (DESIGN.md §3, §5). The Delta log itself — snapshots,
// commits and conflict checks, flow locks — is package github.com/streamkit/streamkit/delta.
//
// [StreamWriter] is write-delta's operator: every epoch of the stream becomes one Delta commit
// with the epoch's data files and a txn action {appId = flow, version = epoch}, replayed
// epochs are skipped by that txn (stream*.go). [WriterPool] spreads the Parquet encoding of
// an epoch (or of a whole backfill) over parallel [DataWriter]s, and [Augmenter] adds constant
// and promoted partition columns to the batches written; backfill uses both.
//
// [NewDataWriter] streams Arrow record batches into Parquet data files (pqarrow, or a direct
// column writer for flat schemas), conforming input columns to the table's types, rolling
// files at a target size and splitting rows into Hive-style partition directories
// ([PartitionDir]). It dictionary-encodes int64, timestamp, string and binary columns itself
// while a chunk's dictionary stays small (dictenc.go). Close returns one [delta.Add] per file
// with exact statistics (numRecords, min/max, nullCount, following
// delta.dataSkippingNumIndexedCols), its partition values and its URI-encoded path.
package delta
