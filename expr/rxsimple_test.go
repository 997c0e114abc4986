package expr

import (
	"math/rand"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSimpleRxAgreesWithRegexp: on random patterns and strings, the simple matcher (where
// it takes the pattern) finds what regexp finds, groups included.
func TestSimpleRxAgreesWithRegexp(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	atoms := []string{"a", "b", "k", "[a-c]", "[^a]", "\\d", "[0-9]", ".", "ü", "[ü-ÿ]", "(?i:a)", "\\s", "[A-Za-z]", "-", "x", "\\pL", "\\PL", "[^\\pN]"}
	quants := []string{"", "", "", "*", "+", "?", "{2}", "{1,3}", "{2,}", "*?"}
	alphabet := []string{"a", "b", "c", "k", "0", "7", "-", " ", "A", "ü", "é", "\n", "x", "\xff"}
	var patterns []string
	for len(patterns) < 3000 {
		var b strings.Builder
		if r.Intn(4) == 0 {
			b.WriteString("^")
		}
		open := false
		for n := 1 + r.Intn(5); n > 0; n-- {
			if !open && r.Intn(4) == 0 {
				b.WriteString("(")
				open = true
			}
			b.WriteString(atoms[r.Intn(len(atoms))] + quants[r.Intn(len(quants))])
			if open && r.Intn(3) == 0 {
				b.WriteString(")")
				open = false
			}
		}
		if open {
			b.WriteString(")")
		}
		if r.Intn(4) == 0 {
			b.WriteString("$")
		}
		patterns = append(patterns, b.String())
	}
	simple, checked := 0, 0
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			continue
		}
		m := compileSimple(p)
		if m == nil {
			continue
		}
		simple++
		caps := make([]int, 2*(re.NumSubexp()+1))
		for k := 0; k < 30; k++ {
			var s strings.Builder
			for n := r.Intn(9); n > 0; n-- {
				s.WriteString(alphabet[r.Intn(len(alphabet))])
			}
			want := re.FindStringSubmatchIndex(s.String())
			got := m.find(s.String(), caps)
			checked++
			if !slices.Equal(want, got) {
				t.Fatalf("pattern %q on %q: simple %v, regexp %v", p, s.String(), got, want)
			}
		}
	}
	if simple < 500 {
		t.Fatalf("only %d of %d patterns took the simple matcher", simple, len(patterns))
	}
	t.Logf("%d patterns took the simple matcher; %d matches compared", simple, checked)
}
