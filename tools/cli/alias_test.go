package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestAlias checks that an old flag name sets the same variable as the new one, is hidden,
// keeps the default, the choices and a bool's bare form, and that the new name's help names it.
func TestAlias(t *testing.T) {
	type vars struct {
		col  string
		d    time.Duration
		on   bool
		mode string
	}
	define := func(v *vars) *pflag.FlagSet {
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f.StringVar(&v.col, "event-time", "", "event-time column")
		DurationVar(f, &v.d, "retain", 5*time.Second, "how long")
		f.BoolVar(&v.on, "follow", false, "keep going")
		f.StringVar(&v.mode, "mode", "a", "a or b")
		Choices(f, "mode", "a", "b")
		Alias(f, "event-time", "time")
		Alias(f, "retain", "retention")
		Alias(f, "follow", "tail")
		Alias(f, "mode", "how")
		return f
	}
	for _, tc := range []struct {
		args []string
		want vars
	}{
		{nil, vars{"", 5 * time.Second, false, "a"}},
		{[]string{"--time", "ts", "--retention", "1d", "--tail", "--how", "b"}, vars{"ts", 24 * time.Hour, true, "b"}},
		{[]string{"--event-time=ts", "--retain=1d", "--follow", "--mode=b"}, vars{"ts", 24 * time.Hour, true, "b"}},
		{[]string{"--time", "ts", "--event-time", "ts", "--tail", "--follow"}, vars{"ts", 5 * time.Second, true, "a"}}, // both names, one value
	} {
		var got vars
		f := define(&got)
		if err := f.Parse(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if got != tc.want {
			t.Errorf("%q: got %+v, want %+v", tc.args, got, tc.want)
		}
	}
	// Two names with contradicting values: a usage error naming both, not the last one silently.
	if err := define(new(vars)).Parse([]string{"--time", "old", "--event-time", "new"}); err == nil || !strings.Contains(err.Error(), "--time old and --event-time new are one flag under two names") {
		t.Errorf("--time old --event-time new: %v", err)
	}
	f := define(new(vars))
	for old, name := range map[string]string{"time": "event-time", "retention": "retain", "tail": "follow", "how": "mode"} {
		o, n := f.Lookup(old), f.Lookup(name)
		if !o.Hidden || n.Hidden {
			t.Errorf("--%s hidden %v, --%s hidden %v", old, o.Hidden, name, n.Hidden)
		}
		if o.DefValue != n.DefValue || o.NoOptDefVal != n.NoOptDefVal {
			t.Errorf("--%s default %q/%q, --%s %q/%q", old, o.DefValue, o.NoOptDefVal, name, n.DefValue, n.NoOptDefVal)
		}
		if !strings.HasSuffix(n.Usage, "(old name: --"+old+")") {
			t.Errorf("--%s help %q does not name --%s", name, n.Usage, old)
		}
	}
	if got := f.Lookup("how").Annotations[choicesAnnotation]; strings.Join(got, ",") != "a,b" {
		t.Errorf("--how choices %q", got)
	}
	if strings.Contains(f.FlagUsages(), "--time ") {
		t.Errorf("help shows the alias:\n%s", f.FlagUsages())
	}
	for _, names := range [][2]string{{"nope", "x"}, {"event-time", "mode"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Alias(%q, %q) did not panic", names[0], names[1])
				}
			}()
			Alias(f, names[0], names[1])
		}()
	}
}
