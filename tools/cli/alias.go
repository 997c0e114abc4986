package cli

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Alias makes --old another name of the flag name already defined on f: the same value
// (given twice under the two names with different values, the second is refused: a usage
// error naming both), hidden from --help and the docs, with
// name's help saying "(old name: --old)". It keeps command lines written before a flag was
// renamed working unchanged, without a warning, so scripts and their captured stderr stay as
// they were: window --time is --event-time since the event-time column has one name in every
// tool, --bad-records is --bad-records-output since side files are --<what>-output. It
// panics when name is not defined or old is, a typo in a spec.
func Alias(f *pflag.FlagSet, name, old string) {
	fl := f.Lookup(name)
	if fl == nil || f.Lookup(old) != nil {
		panic("cli: Alias --" + old + " of --" + name + ": the flag is missing, or the alias is taken")
	}
	shared := &aliasState{}
	fl.Value = &aliasValue{Value: fl.Value, name: name, st: shared}
	a := f.VarPF(&aliasValue{Value: fl.Value.(*aliasValue).Value, name: old, st: shared}, old, "", "old name of --"+name)
	a.DefValue, a.NoOptDefVal, a.Hidden = fl.DefValue, fl.NoOptDefVal, true
	if values, ok := fl.Annotations[choicesAnnotation]; ok {
		Choices(f, old, values...)
	}
	fl.Usage += " (old name: --" + old + ")"
}

// aliasState is what a flag and its alias have been given so far on one command line.
type aliasState struct {
	name, value string // the first name used and its value; name "" before any
}

// aliasValue is one name of an aliased flag: it refuses a value that contradicts the one the
// other name was given (window --time ts --event-time k would otherwise use k silently).
type aliasValue struct {
	pflag.Value
	name string
	st   *aliasState
}

func (v *aliasValue) Set(s string) error {
	if v.st.name != "" && v.st.name != v.name && v.st.value != s {
		return fmt.Errorf("--%s %s and --%s %s are one flag under two names: give one", v.st.name, v.st.value, v.name, s)
	}
	if v.st.name == "" {
		v.st.name, v.st.value = v.name, s
	}
	return v.Value.Set(s)
}
