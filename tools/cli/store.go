package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
)

// OpenStore opens loc — a local path, a file:// URL, or a bucket URL (s3://, s3a://, gs://,
// az://, abfss://; see package storage for credentials and endpoints) — as a storage.Store.
// A malformed URL, an unknown scheme or credentials in the URL are usage errors (exit 2),
// named with the redacted URL; a missing bucket, refused credentials or an unreachable store
// are runtime errors (exit 1). unsafeSingleWriter is the --unsafe-single-writer flag: it lets
// a store without conditional writes be used by a single writer.
func OpenStore(ctx context.Context, loc string, unsafeSingleWriter bool) (storage.Store, error) {
	if loc == "" {
		return nil, stage.Usagef("the path is empty")
	}
	s, err := storage.Open(ctx, loc, storage.Options{UnsafeSingleWriter: unsafeSingleWriter})
	var ue *storage.URLError
	if errors.As(err, &ue) {
		return nil, stage.Usagef("%s", ue.Error())
	}
	return s, err
}

// TableError is an [OpenStore] error about the table argument of tool, prefixed with the
// tool's name ("write-delta: …"); a usage error stays one (exit 2), anything else is a
// runtime error (exit 1). Both already name the redacted URL.
func TableError(tool string, err error) error {
	var ue *stage.UsageError
	if errors.As(err, &ue) {
		return stage.Usagef("%s: %s", tool, ue.Msg)
	}
	return fmt.Errorf("%s: %w", tool, err)
}

// UnsafeSingleWriterFlag registers --unsafe-single-writer into v (see [OpenStore]).
func UnsafeSingleWriterFlag(f *pflag.FlagSet, v *bool) {
	f.BoolVar(v, "unsafe-single-writer", false, "let a store without conditional writes (put-if-absent) be used by exactly one writer; two writers could then overwrite each other's commits")
}

// PatternStore opens the store of a read-files bucket pattern (its bucket and literal
// prefix, source/files Config.OpenStore) with OpenStore: a source only reads, so it needs no
// conditional writes.
func PatternStore(ctx context.Context, url string) (storage.Store, error) {
	return OpenStore(ctx, url, false)
}
