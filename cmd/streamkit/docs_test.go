package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/tools/cli"
)

// docs are the pages of docs/cli generated from the specs: <tool>.md for every tool and the
// index README.md, by file name.
func docs() map[string]string {
	root := newRoot()
	out := map[string]string{"README.md": cli.Index(root.Short, root.Long, specs())}
	for _, s := range specs() {
		out[s.Name()+".md"] = cli.Markdown(s)
	}
	return out
}

// TestCLIDocs fails when a committed page under docs/cli differs from what the tools' specs
// generate, or when a page no longer has a tool; -update (make docs) rewrites them.
func TestCLIDocs(t *testing.T) {
	dir := filepath.Join("..", "..", cli.DocsDir)
	want := docs()
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range want {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range got {
		name := filepath.Base(path)
		if _, ok := want[name]; ok {
			continue
		}
		if *update {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: no tool generates this page any more; %s", path, cli.RegenerateHint)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v; %s", path, err, cli.RegenerateHint)
			continue
		}
		if g, w := string(b), want[name]; g != w {
			t.Errorf("%s differs from its tool's spec at line %d:\n  committed: %q\n  generated: %q\n%s",
				path, diffLine(g, w)+1, line(g, diffLine(g, w)), line(w, diffLine(g, w)), cli.RegenerateHint)
		}
	}
}

// diffLine is the index of the first line in which a and b differ.
func diffLine(a, b string) int {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range la {
		if i >= len(lb) || la[i] != lb[i] {
			return i
		}
	}
	return len(la)
}

// line is line i of s, "" past its end.
func line(s string, i int) string {
	if l := strings.Split(s, "\n"); i < len(l) {
		return l[i]
	}
	return ""
}
