package expect

import (
	"fmt"
	"strings"

	"github.com/streamkit/streamkit/expr"
	"github.com/streamkit/streamkit/stage"
)

// Action is what an expectation does with a row that violates it, as Lakeflow's ON VIOLATION.
type Action string

// The actions: Lakeflow's expect, expect_or_drop and expect_or_fail.
const (
	Warn Action = "warn" // keep the row and count it (@dp.expect; no ON VIOLATION)
	Drop Action = "drop" // drop the row and count it (ON VIOLATION DROP ROW)
	Fail Action = "fail" // stop the run before the epoch commits (ON VIOLATION FAIL UPDATE)
)

// Flag is the command-line flag of the action.
func (a Action) Flag() string {
	switch a {
	case Drop:
		return "--expect-or-drop"
	case Fail:
		return "--expect-or-fail"
	}
	return "--expect"
}

// Expectation is one named data-quality constraint.
type Expectation struct {
	// Name identifies the expectation in counters, messages and state; unique per stage
	// (compared case-insensitively, as Lakeflow requires a unique name per dataset).
	Name string
	// Predicate is a boolean Spark SQL expression (package expr) every row should satisfy; a
	// row violates it when it is false. NULL is no violation (see the package comment).
	Predicate string
	Action    Action
	parsed    expr.Node
}

// ParseExpectation parses the value of --expect, --expect-or-drop or --expect-or-fail:
// 'NAME: PREDICATE'. NAME is letters, digits and _ - . or spaces (trimmed); PREDICATE must
// parse (expr.Parse). Errors are usage errors naming the flag, with the expression and a caret
// for a syntax error.
func ParseExpectation(a Action, v string) (Expectation, error) {
	name, pred, ok := strings.Cut(v, ":")
	name, pred = strings.TrimSpace(name), strings.TrimSpace(pred)
	if !ok || name == "" || !validName(name) {
		return Expectation{}, stage.Usagef("expect: %s %q: want 'NAME: PREDICATE', a name (letters, digits, _ - . and spaces), a colon, then the condition every row should meet, e.g. %s 'valid_id: id IS NOT NULL AND id > 0'", a.Flag(), v, a.Flag())
	}
	if pred == "" {
		return Expectation{}, stage.Usagef("expect: %s %q: the expectation %s has no condition after the colon", a.Flag(), v, name)
	}
	n, err := expr.Parse(pred)
	if err != nil {
		return Expectation{}, stage.Usagef("expect: %s %s: %v", a.Flag(), name, err)
	}
	return Expectation{Name: name, Predicate: pred, Action: a, parsed: n}, nil
}

func validName(s string) bool {
	for _, r := range s {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ':
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		default:
			return false
		}
	}
	return true
}

// rawExpectation is one flag value before parsing.
type rawExpectation struct {
	action Action
	value  string
}

// expectFlag is the pflag.Value of one of the three flags: each value is appended to one list
// shared by all three, so the expectations keep their command-line order; Run parses them
// (ParseExpectation), so that a malformed one is a usage error with its own message.
type expectFlag struct {
	action Action
	list   *[]rawExpectation
}

func (f expectFlag) Set(v string) error {
	*f.list = append(*f.list, rawExpectation{f.action, v})
	return nil
}

func (f expectFlag) String() string { return "" }
func (f expectFlag) Type() string   { return "'NAME: PREDICATE'" }

// checkNames refuses two expectations with one name (case-insensitively) and an empty list.
func checkNames(es []Expectation) error {
	if len(es) == 0 {
		return stage.Usagef("expect: no expectation given; add --expect, --expect-or-drop or --expect-or-fail 'NAME: PREDICATE'")
	}
	seen := map[string]Expectation{}
	for _, e := range es {
		k := strings.ToLower(e.Name)
		if prev, ok := seen[k]; ok {
			return stage.Usagef("expect: two expectations are named %q (%s and %s); names must be unique, as in Lakeflow: rename one", e.Name, describe(prev), describe(e))
		}
		seen[k] = e
	}
	return nil
}

func describe(e Expectation) string {
	return fmt.Sprintf("%s '%s: %s'", e.Action.Flag(), e.Name, e.Predicate)
}
