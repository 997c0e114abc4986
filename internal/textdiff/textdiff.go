// Package textdiff shows where two texts differ, for the messages of golden-file tests.
package textdiff

import (
	"strconv"
	"strings"
)

// Lines shows the first five lines (1-based) where got and want differ, each as
// "line N:\n  got:  …\n  want: …", then "…" when more differ; "" when they are equal.
func Lines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl == wl {
			continue
		}
		b.WriteString("line " + strconv.Itoa(i+1) + ":\n  got:  " + gl + "\n  want: " + wl + "\n")
		if shown++; shown == 5 {
			b.WriteString("…\n")
			break
		}
	}
	return b.String()
}
