package readdelta_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

const schemaJSON = `{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}`

func craft(t *testing.T, protocol, add string) string {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "_delta_log")
	os.MkdirAll(log, 0o755)
	lines := protocol + "\n" +
		`{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"` + schemaJSON + `","partitionColumns":[],"configuration":{},"createdTime":1}}` + "\n"
	if add != "" {
		lines += add + "\n"
	}
	if err := os.WriteFile(filepath.Join(log, "00000000000000000000.json"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCLIRefusals runs the binary on crafted logs and bad command lines: exit codes and the
// messages a user sees.
func TestCLIRefusals(t *testing.T) {
	bin := peertest.Binary(t)
	v1 := `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`
	add := func(p string) string {
		return `{"add":{"path":"` + p + `","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}`
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"traversal", []string{craft(t, v1, add("../../etc/passwd"))}, 1, "unsafe path in Delta log"},
		{"absolute", []string{craft(t, v1, add("/etc/passwd"))}, 1, "outside the table root"},
		{"unknown reader feature", []string{craft(t, `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["fancyNewThing"],"writerFeatures":["fancyNewThing"]}}`, "")}, 1, `reader feature "fancyNewThing"`},
		{"follow unknown feature", []string{"--follow", craft(t, `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["variantType"],"writerFeatures":["variantType"]}}`, "")}, 1, `reader feature "variantType"`},
		{"not a table", []string{t.TempDir()}, 1, "not a Delta table"},
		{"version and timestamp", []string{"--version", "1", "--timestamp", "2024-01-01", "x"}, 2, "not both"},
		{"bad timestamp", []string{"--timestamp", "yesterday", "x"}, 2, "--timestamp"},
		{"bad starting version", []string{"--follow", "--starting-version", "soon", "x"}, 2, "--starting-version"},
		{"no table", nil, 2, "takes 1 argument"},
		{"where on a data column", []string{"--where", "id = 1", craft(t, v1, "")}, 0, ""},
		{"where on an unknown column", []string{"--where", "idd = 1", craft(t, v1, "")}, 2, "unknown column `idd` (did you mean `id`?)"},
		{"where that does not parse", []string{"--where", "id = = 1", craft(t, v1, "")}, 2, "syntax error at position 6"},
		{"where that is not boolean", []string{"--where", "id + 1", craft(t, v1, "")}, 2, "must be boolean"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"read-delta", "--progress", "off"}, c.args...)...)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != c.code || !strings.Contains(string(out), c.want) {
				t.Fatalf("exit %d, want %d; output %q, want %q", code, c.code, out, c.want)
			}
		})
	}
}
