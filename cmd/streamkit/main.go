// Command streamkit is a toolkit of composable, Unix-style stream tools that exchange Arrow
// IPC streams over pipes, with checkpoints for exactly-once delivery (see README.md).
package main

// The pages docs/cli/*.md are generated from the tools' specs; see TestCLIDocs.
//go:generate go test -count=1 -run ^TestCLIDocs$ . -update

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/tools/cli"
)

func main() {
	// A closed stdout (EPIPE) must come back as a write error, not kill us with SIGPIPE, so
	// stages can stop quietly when a downstream reader (e.g. `| head`) goes away.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	// A second Ctrl-C ends the process at once (exit 130), even when the stage is blocked in a
	// read or write that its cancelled context cannot interrupt.
	stage.AbortHook = func() {
		time.AfterFunc(abortGrace, func() {
			stage.StopView(abortGrace) // a stage still blocked would leave its frame on the terminal
			os.Exit(stage.ExitInterrupted)
		})
	}
	stage.UseColorProfile() // print's tables and state-dump's summary on TERM=screen
	stopProfile := startCPUProfile()
	root := newRoot()
	cmd, err := root.ExecuteContextC(context.Background())
	stopProfile()
	if stdoutClosed(err) {
		err = nil // `streamkit delta history t | head -2`: the reader had what it wanted
	}
	var usage *stage.UsageError
	if err != nil && !errors.As(err, &usage) && isCobraUsage(err) { // flag errors come wrapped already (cli.FlagError)
		err = stage.Usagef("%v; see 'streamkit --help'", err)
	}
	code := stage.ExitCode(err)
	// An empty pipe on stdin: the stage upstream failed and said why; a second message
	// (the input is empty) would only bury it. The exit code is still 1.
	if err != nil && !errors.Is(err, stage.ErrInterrupted) && !errors.Is(err, stage.ErrEmptyPipe) {
		// Through the console: on a terminal the message goes above a pipeline's view.
		fmt.Fprintf(stage.Console(os.Stderr, cli.G.Progress), "streamkit: %s\n", withTool(cmd, root, err))
	}
	os.Exit(code)
}

// abortGrace is how long a stage may take to return after a second interrupt before the
// process ends anyway.
const abortGrace = 200 * time.Millisecond

// stdoutClosed reports whether err is a write to our stdout that failed because its reader
// went away (EPIPE), which is success, as for any Unix filter: the stages' run loops stop
// quietly on it already, and this covers the commands that print text (delta history,
// state-dump …). A broken pipe of anything else (a broker connection, a keyby child) stays
// an error.
func stdoutClosed(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Path == os.Stdout.Name() && errors.Is(pe.Err, syscall.EPIPE)
}

// withTool prefixes err with the tool that failed (in a pipeline several stages share stderr),
// unless the message already names it.
func withTool(cmd, root *cobra.Command, err error) string {
	msg := err.Error()
	if cmd == nil || cmd == root {
		return msg
	}
	for cmd.Parent() != nil && cmd.Parent() != root {
		cmd = cmd.Parent() // "window tumbling" → "window"
	}
	if strings.HasPrefix(msg, cmd.Name()+":") || strings.HasPrefix(msg, cmd.Name()+" ") {
		return msg
	}
	return cmd.Name() + ": " + msg
}

// isCobraUsage recognises the usage errors cobra returns as plain errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "required flag", "invalid argument", "accepts ", "flag needs an argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "streamkit",
		Short: "Composable stream tools over Arrow IPC pipes",
		Long: `streamkit is a toolkit of Unix-style stream tools. Each subcommand reads and/or writes an
Apache Arrow IPC stream, so tools chain with pipes; each checkpoints its own offsets and
state, so a shell pipeline gets exactly-once delivery, windows, watermarks and deduplication.

Exit codes:
  0    success (also when a downstream reader closed the pipe)
  1    runtime or data error
  2    usage error (bad flags or arguments, or options a checkpoint refuses on restart)
  130  interrupted (SIGINT/SIGTERM: the current epoch was finished and committed)

Environment:
  STREAMKIT_CHECKPOINT  checkpoint root; each stage uses $STREAMKIT_CHECKPOINT/<name>
  STREAMKIT_PROGRESS    default of --progress (run --parallel sets json for its members)
  NO_COLOR              disables colour on terminals`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return cli.Setup(cmd.ErrOrStderr())
		},
	}
	root.SetFlagErrorFunc(cli.FlagError)
	root.Version = version()
	root.SetVersionTemplate("{{.Version}}")
	// As every group's (cli.Command): an unknown subcommand is a usage error on one line,
	// and the help is shown only without arguments.
	root.Args = cli.GroupArgs
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	// A group runs (to check its arguments) but its usage stays "streamkit delta [command]",
	// without a "[flags]" line of its own: cobra's template, with that one condition added.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "{{if .Runnable}}", "{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	cli.AddGlobalFlags(root)
	for _, s := range specs() {
		root.AddCommand(cli.Command(s))
	}
	return root
}
