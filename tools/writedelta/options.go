package writedelta

import (
	"strings"

	"github.com/streamkit/streamkit/stage"
)

// parseKV splits "key=value" (the value may contain '='); the key must not be empty.
func parseKV(flag, s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return "", "", stage.Usagef("%s %q: want KEY=VALUE", flag, s)
	}
	return k, v, nil
}
