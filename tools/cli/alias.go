package cli

import (
	"github.com/spf13/pflag"
)

// Alias makes --old another name of the flag name already defined on f: the same value
// (whichever of the two is given, the last one wins), hidden from --help and the docs, with
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
	a := f.VarPF(fl.Value, old, "", "old name of --"+name)
	a.DefValue, a.NoOptDefVal, a.Hidden = fl.DefValue, fl.NoOptDefVal, true
	if values, ok := fl.Annotations[choicesAnnotation]; ok {
		Choices(f, old, values...)
	}
	fl.Usage += " (old name: --" + old + ")"
}
