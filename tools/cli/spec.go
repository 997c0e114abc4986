package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Spec declares one subcommand: its name and usage, summary, description, flags with their
// defaults and help, examples, positional arguments and what it runs. The cobra command
// (Command), its --help and its page docs/cli/<name>.md (Markdown) all come from it, so they
// cannot drift apart. A tool package exposes its spec as a function, CommandSpec(), that builds a
// fresh value each call: Flags binds the flags to variables that Run reads, and every command
// built needs its own.
type Spec struct {
	// Use is the usage line, the command name first: "write-delta TABLE",
	// "window tumbling|sliding|session|count|global". cobra's help appends " [flags]".
	Use string
	// Short is the one-line summary: the command list of the parent's help, the page's lead.
	Short string
	// Long is the description of --help: plain text, lines wrapped at about 95 columns,
	// paragraphs separated by an empty line, indented lines kept as they are.
	Long string
	// Examples are example invocations, each "# what it does\ncommand line"; TestExamples in
	// cmd/streamkit parses every one with the tools' flags.
	Examples []string
	// Args validates the positional arguments (NoArgs, ExactArgs(n) or a function of the
	// tool's); nil accepts any.
	Args cobra.PositionalArgs
	// Flags registers the command's flags, each with its default and help, on f; nil when
	// it has none. Hidden flags (pflag's MarkHidden) stay out of --help and the docs.
	Flags func(f *pflag.FlagSet)
	// Required names flags that must be given (cobra's MarkFlagRequired).
	Required []string
	// Run runs the command with its positional arguments (cobra's RunE); nil for a group of
	// subcommands.
	Run func(cmd *cobra.Command, args []string) error
	// Commands are the subcommands (window tumbling, delta vacuum …), in the order of the docs.
	Commands []Spec
}

// Name is the command's name: the first word of Use.
func (s Spec) Name() string {
	name, _, _ := strings.Cut(s.Use, " ")
	return name
}

// Command builds the cobra command of s and of its subcommands.
func Command(s Spec) *cobra.Command {
	cmd := &cobra.Command{
		Use:   s.Use,
		Short: s.Short,
		Long:  s.Long,
		Args:  s.Args,
		RunE:  s.Run,
	}
	if len(s.Examples) > 0 {
		cmd.Example = Examples(s.Examples...)
	}
	if s.Flags != nil {
		s.Flags(cmd.Flags())
		registerChoices(cmd, cmd.Flags())
	}
	for _, name := range s.Required {
		if err := cmd.MarkFlagRequired(name); err != nil {
			panic("cli: spec " + s.Name() + ": required flag: " + err.Error()) // a typo in a spec
		}
	}
	for _, sub := range s.Commands {
		cmd.AddCommand(Command(sub))
	}
	if s.Run == nil && len(s.Commands) > 0 {
		// cobra shows the help of a group that cannot run and exits 0, whatever the
		// arguments: `delta histroy t` printed help on stdout. A group runs its arguments'
		// check (an unknown subcommand is a usage error) and shows its help only without any.
		cmd.Args = GroupArgs
		cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	return cmd
}
