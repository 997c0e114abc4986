package expr

import (
	"fmt"
	"testing"
)

// TestColumnRefs: every column reference of an expression, once, in order of appearance,
// through every kind of node.
func TestColumnRefs(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"a > 1 AND `b c`.d IS NOT NULL", "[[a] [b c d]]"},
		{"CASE x WHEN 1 THEN y ELSE -z END", "[[x] [y] [z]]"},
		{"CASE WHEN p THEN q END", "[[p] [q]]"},
		{"n IN (m, 3) OR k BETWEEN lo AND hi OR s LIKE pat OR NOT CAST(u AS INT) = upper(v, a)", "[[n] [m] [k] [lo] [hi] [s] [pat] [u] [v] [a]]"},
		{"1 + 2", "[]"},
	} {
		n, err := Parse(c.src)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(ColumnRefs(n)); got != c.want {
			t.Errorf("%s: %s, want %s", c.src, got, c.want)
		}
	}
}
