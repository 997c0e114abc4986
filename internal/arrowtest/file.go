package arrowtest

import (
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// WriteFile writes recs (one schema) to path as an Arrow IPC file (the file format, which
// pyarrow.ipc.open_file reads), for Python peers that take rows from a file. Errors fail t.
func WriteFile(t testing.TB, path string, recs ...arrow.RecordBatch) {
	t.Helper()
	WriteFileSchema(t, path, recs[0].Schema(), recs...)
}

// WriteFileSchema is [WriteFile] with the schema given, so that recs may be empty (a file of
// no rows). Errors fail t.
func WriteFileSchema(t testing.TB, path string, sc *arrow.Schema, recs ...arrow.RecordBatch) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(sc))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
