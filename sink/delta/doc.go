// Package delta writes the Parquet data files of streamkit's write-delta sink (DESIGN.md §5)
// and turns them into [delta.Add] actions for a commit to the Delta log, which package
// github.com/streamkit/streamkit/delta reads and writes.
//
// [NewDataWriter] streams Arrow record batches into Parquet data files (pqarrow, or a direct
// column writer for flat schemas), conforming input columns to the table's types, rolling
// files at a target size and splitting rows into Hive-style partition directories
// ([PartitionDir]). It dictionary-encodes int64, timestamp, string and binary columns itself
// while a chunk's dictionary stays small (dictenc.go). Close returns one [delta.Add] per file
// with exact statistics (numRecords, min/max, nullCount, following
// delta.dataSkippingNumIndexedCols), its partition values and its URI-encoded path.
package delta
