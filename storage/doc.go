// Package storage is streamkit's one interface to where files live: a local directory or a
// prefix of a bucket on S3 (s3://, s3a://), Google Cloud Storage (gs://) or Azure Blob Storage
// (az://, abfss://). Delta tables, file sources and checkpoints all go through a [Store]
// (DESIGN.md §7).
//
// A Store offers what those three need and nothing more: whole-object reads and ranged reads
// ([Store.Open] gives an io.ReaderAt for Parquet), streaming writes that become visible only
// when closed, atomic replace ([Store.WriteFile]), put-if-absent ([Store.PutIfAbsent], the Delta
// commit primitive), listing by directory or by prefix, paginated, and removal.
//
// Two backends:
//   - local: os calls with today's guarantees: temporary file, fsync, rename or hard link,
//     directory fsync (package storage/atomicfile). A crash leaves the old file or the new one.
//   - bucket: gocloud.dev/blob over the SDKs' standard credential chains (AWS env, profile and
//     IMDS; GCP application default credentials; Azure default credential). Put-if-absent is
//     the store's conditional write (S3 If-None-Match: *, GCS ifGenerationMatch=0, Azure
//     If-None-Match: *). Every call is retried on transient errors (5xx, throttling, resets,
//     timeouts) with exponential backoff; after the last try the error names the operation, the
//     redacted URL and the storage error. A put-if-absent whose outcome is unknown (the response
//     was lost) and whose retry finds the object present reads it back: the same bytes mean our
//     write won, other bytes mean we lost. Nothing is ever written twice blindly.
//
// Names inside a store are slash-separated and relative to its root; "..", "." and empty
// segments are refused. Missing objects give errors matching fs.ErrNotExist; put-if-absent on
// an existing name gives [ErrExist].
//
// Leases ([AcquireLease]) replace flock on a bucket: a chain of put-if-absent generation
// objects, so that of two processes only one can own a checkpoint or a Delta flow.
//
// Credentials never appear in a Store's [Store.Location] or in its errors: URLs pass through
// [Redact].
package storage
