// Package archtest holds the architecture test of DESIGN.md §6: it reads the import graph of
// every package in the module (go list) and fails when a layer imports one above it.
package archtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/streamkit/streamkit"

// graph maps a package path relative to the module root ("tools/dedup") to the module
// packages it imports (non-test imports: what the shipped code depends on).
type graph map[string][]string

// under reports whether pkg is root or inside it ("sink" holds "sink/delta").
func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// tool is the tool a package under tools/ belongs to ("tools/delta/x" → "tools/delta"), or "".
func tool(pkg string) string {
	parts := strings.Split(pkg, "/")
	if len(parts) < 2 || parts[0] != "tools" {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

// violations lists every import that breaks a layering rule, one line each, sorted.
func violations(g graph) []string {
	var out []string
	bad := func(from, to, why string) { out = append(out, fmt.Sprintf("%s imports %s: %s", from, to, why)) }
	for from, imports := range g {
		for _, to := range imports {
			switch {
			case tool(to) != "" && tool(from) == "" && !under(from, "cmd"):
				bad(from, to, "only tools/ and cmd/ may import tools/")
			case tool(to) != "" && tool(from) != "" && tool(from) != tool(to) && tool(to) != "tools/cli":
				bad(from, to, "a tool imports no other tool (shared code belongs below tools/ or in tools/cli)")
			}
			for _, low := range []string{"codec", "state", "delta", "stage"} {
				if !under(from, low) {
					continue
				}
				for _, high := range []string{"source", "sink", "window", "expr"} {
					if under(to, high) {
						bad(from, to, low+" is below "+high)
					}
				}
			}
			if under(from, "stage") && under(to, "delta") {
				bad(from, to, "the stage runtime imports nothing above codec and state")
			}
			if under(from, "storage") && !under(to, "storage") && !under(to, "internal") {
				bad(from, to, "storage is the bottom layer: it imports only storage/... and internal/...")
			}
		}
	}
	sort.Strings(out)
	return out
}

// load runs go list over the module and returns its import graph.
func load(t *testing.T) graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := graph{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		from := strings.TrimPrefix(fields[0], module+"/")
		g[from] = nil
		for _, imp := range fields[1:] {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				g[from] = append(g[from], rel)
			}
		}
	}
	if len(g) < 10 {
		t.Fatalf("go list found only %d packages: %s", len(g), out)
	}
	return g
}

// TestLayering fails on any import that breaks DESIGN.md §6 in the module as it is.
func TestLayering(t *testing.T) {
	for _, v := range violations(load(t)) {
		t.Error(v)
	}
}

// TestRulesCatchViolations checks that each rule fires on a graph that breaks it, and stays
// quiet on allowed imports.
func TestRulesCatchViolations(t *testing.T) {
	g := graph{
		"source/kafka":   {"tools/stagex", "codec"},        // below tools imports a tool
		"tools/backfill": {"tools/readfiles", "tools/cli"}, // tool imports tool (cli is fine)
		"tools/delta":    {"tools/delta/sub", "delta"},     // own subpackage is fine
		"codec/jsonrow":  {"window"},                       // codec above window
		"state":          {"sink/delta"},                   // state above sink
		"delta":          {"source/files", "state"},        // delta above source; state is fine
		"stage":          {"delta", "codec"},               // stage above delta
		"cmd/streamkit":  {"tools/backfill"},               // fine
		"sink/delta":     {"delta", "codec", "stage"},      // fine
		"storage":        {"storage/atomicfile", "codec"},  // storage above codec
	}
	want := []string{
		"codec/jsonrow imports window",
		"delta imports source/files",
		"source/kafka imports tools/stagex",
		"stage imports delta",
		"state imports sink/delta",
		"storage imports codec",
		"tools/backfill imports tools/readfiles",
	}
	got := violations(g)
	if len(got) != len(want) {
		t.Fatalf("got %d violations, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]+":") {
			t.Errorf("violation %d = %q, want %q…", i, got[i], want[i])
		}
	}
}
