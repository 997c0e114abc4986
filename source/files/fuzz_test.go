package files

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/csvrow"
	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/stage"
)

// FuzzSource writes arbitrary bytes as a .csv, .ndjson, .json.gz … file and reads it through
// the whole source (inferred schema, permissive and failfast): whatever the input, it must
// end with rows or an error naming the file, never a panic or an Arrow leak. The codec
// packages fuzz the decoders themselves (codec/csvrow, codec/jsonrow).
func FuzzSource(f *testing.F) {
	for _, s := range []string{
		"id,name\n1,a\n2,\"b,c\"\n",
		"\xEF\xBB\xBFa;b\r\n1;\"x\r\ny\"\r\n",
		"a,b\n1\n1,2,3\n\"open\n",
		`{"a":1,"b":[1,2],"c":{"d":"2024-01-01T00:00:00Z"}}` + "\n{broken\n",
		`[{"a":1},{"a":"x"},` + "\n",
		"",
	} {
		for ext := 0; ext < 3; ext++ {
			f.Add([]byte(s), uint8(ext), false)
		}
	}
	names := []string{"f.csv", "f.ndjson", "f.tsv"}
	f.Fuzz(func(t *testing.T, data []byte, ext uint8, failfast bool) {
		dir := t.TempDir()
		p := filepath.Join(dir, names[int(ext)%len(names)])
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		os.Chtimes(p, old, old)
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		cfg := Config{Patterns: []string{p}, CSV: csvrow.Options{Header: ext%2 == 0}, BufferSize: 7, WithMetadata: true}
		if failfast {
			cfg.Mode = rescue.FailFast
		}
		src, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		o := stage.SourceOptions{Options: stage.Options{Tool: "read-files", Stdout: io.Discard, Stderr: io.Discard, Progress: stage.ProgressOff,
			NoSignals: true, Log: discardLog(), Mem: mem}, BatchRows: 3}
		stage.RunSource(context.Background(), o, src)
	})
}
