package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// choicesAnnotation is the pflag annotation under which Choices records a flag's values.
const choicesAnnotation = "streamkit_choices"

// Choices declares the values the flag name of f takes (e.g. print --format: table, json,
// csv), for shell completion: `streamkit completion bash|zsh|fish|powershell` then offers them
// after the flag (cobra's RegisterFlagCompletionFunc, registered by Command and
// AddGlobalFlags). It does not validate: the tool's constructor does, with its own message.
// It panics on a flag that is not defined, a typo in a spec.
func Choices(f *pflag.FlagSet, name string, values ...string) {
	if err := f.SetAnnotation(name, choicesAnnotation, values); err != nil {
		panic("cli: Choices: " + err.Error())
	}
}

// registerChoices registers the completion of every flag of fs that Choices annotated, on cmd.
func registerChoices(cmd *cobra.Command, fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		values, ok := f.Annotations[choicesAnnotation]
		if !ok {
			return
		}
		if err := cmd.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)); err != nil {
			panic("cli: completion of --" + f.Name + ": " + err.Error())
		}
	})
}
