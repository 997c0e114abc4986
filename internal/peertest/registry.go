package peertest

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	registryOnce sync.Once
	registryURL  string
	registryErr  string
)

// SchemaRegistry returns the base URL of the real schema registry of scripts/registry.sh
// (Apicurio Registry, Confluent-compatible API: e.g. http://127.0.0.1:9100/apis/ccompat/v7).
// The URL comes from STREAMKIT_SCHEMA_REGISTRY when set (eval "$(scripts/registry.sh env)");
// otherwise SchemaRegistry runs `scripts/registry.sh start` (idempotent; installed by
// scripts/peers.sh registry) and leaves it running for other packages: `scripts/registry.sh
// stop` (or make test) stops it. Without the distribution or a registry that answers GET
// /subjects the test is skipped, or fails under STREAMKIT_REQUIRE_PEERS=1.
func SchemaRegistry(t testing.TB) string {
	t.Helper()
	registryOnce.Do(func() { registryURL, registryErr = startRegistry(Root(t)) })
	if registryURL == "" {
		missing(t, "schema registry: "+registryErr)
	}
	return registryURL
}

func startRegistry(root string) (string, string) {
	url := os.Getenv("STREAMKIT_SCHEMA_REGISTRY")
	if url == "" {
		script := filepath.Join(root, "scripts", "registry.sh")
		if _, err := os.Stat(filepath.Join(root, ".it", "registry", "app", "quarkus-run.jar")); err != nil {
			return "", "no Apicurio Registry in .it/registry (run scripts/peers.sh registry)"
		}
		cmd := exec.Command(script, "start")
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			return "", "scripts/registry.sh start: " + err.Error()
		}
		url = strings.TrimSpace(string(out))
	}
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url + "/subjects")
	if err != nil {
		return "", "registry not reachable at " + url + ": " + err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "registry at " + url + " answers GET /subjects with " + resp.Status
	}
	return url, ""
}

// RegistryLogTail returns the last n lines of the log of the registry scripts/registry.sh runs
// (.it/registry-run/registry.log), for a failing test's message: the registry's side of a
// request that failed or hung. A missing log gives a line saying so.
func RegistryLogTail(t testing.TB, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Root(t), ".it", "registry-run", "registry.log"))
	if err != nil {
		return "(no registry log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
