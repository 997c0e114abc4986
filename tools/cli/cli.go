// Package cli holds what every subcommand shares: the global flags (--log-level,
// --log-format, --progress), the logger, and the conversion of flags into stage options.
package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/streamkit/streamkit/stage"
)

// Globals are the root command's persistent flags.
type Globals struct {
	LogLevel  string // debug|info|warn|error, default info
	LogFormat string // text|json, default text
	Progress  string // auto|json|off, default auto
	Stderr    io.Writer
}

// G is set by the root command before any subcommand runs.
var G = Globals{LogLevel: "info", LogFormat: "text", Progress: stage.ProgressAuto, Stderr: os.Stderr}

// AddGlobalFlags registers the persistent flags on root.
func AddGlobalFlags(root *cobra.Command) {
	addGlobalFlags(root.PersistentFlags(), &G)
	registerChoices(root, root.PersistentFlags())
}

// addGlobalFlags registers the global flags on pf, bound to g.
func addGlobalFlags(pf *pflag.FlagSet, g *Globals) {
	pf.StringVar(&g.LogLevel, "log-level", "info", "log level on stderr: debug, info, warn or error")
	pf.StringVar(&g.LogFormat, "log-format", "text", "log format on stderr: text or json")
	progress := stage.ProgressAuto
	if v := os.Getenv(stage.EnvProgress); v != "" {
		progress = v // run --parallel's members report to it (checked by Setup as the flag is)
	}
	pf.StringVar(&g.Progress, "progress", progress, "progress on stderr: auto (on a terminal, the last stage draws one live view of the pipeline), json (JSON lines), off")
	Choices(pf, "log-level", "debug", "info", "warn", "error")
	Choices(pf, "log-format", "text", "json")
	Choices(pf, "progress", stage.ProgressAuto, "json", "off")
}

// Setup validates the global flags and installs the logger; the root's PersistentPreRunE.
func Setup(stderr io.Writer) error {
	G.Stderr = stderr
	var lvl slog.Level
	switch strings.ToLower(G.LogLevel) {
	case "debug":
		lvl = slog.LevelDebug
	case "info":
		lvl = slog.LevelInfo
	case "warn", "warning":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		return stage.Usagef("--log-level must be debug, info, warn or error, got %q", G.LogLevel)
	}
	switch G.Progress {
	case stage.ProgressAuto, stage.ProgressJSON, stage.ProgressOff:
	default:
		return stage.Usagef("--progress must be auto, json or off, got %q", G.Progress)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	// On a terminal, log lines go above the pipeline's live view, never through it.
	logOut := stage.Console(stderr, G.Progress)
	var h slog.Handler
	switch G.LogFormat {
	case "text":
		h = slog.NewTextHandler(logOut, opts)
	case "json":
		h = slog.NewJSONHandler(logOut, opts)
	default:
		return stage.Usagef("--log-format must be text or json, got %q", G.LogFormat)
	}
	slog.SetDefault(slog.New(h))
	return nil
}

// Fill completes o with the global settings and the command's streams.
func Fill(o *stage.Options, cmd *cobra.Command) {
	o.Progress = G.Progress
	o.Log = slog.Default()
	o.Stdin = cmd.InOrStdin()
	o.Stdout = cmd.OutOrStdout()
	o.Stderr = cmd.ErrOrStderr()
}

// ExactArgs is cobra.ExactArgs with a usage error (exit 2) naming the command.
func ExactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return stage.Usagef("%s takes %d argument(s), got %d; see '%s --help'", cmd.Name(), n, len(args), cmd.CommandPath())
		}
		return nil
	}
}

// NoArgs rejects positional arguments with a usage error.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return stage.Usagef("%s takes no arguments, got %q; see '%s --help'", cmd.Name(), args, cmd.CommandPath())
	}
	return nil
}

// FlagError wraps cobra's flag parsing errors as usage errors. On a group of subcommands
// (window, delta), a word before the bad flag is the subcommand that was meant: `window
// tumblin --size 5m` names "tumblin" (GroupArgs), not --size.
func FlagError(cmd *cobra.Command, err error) error {
	if cmd.HasSubCommands() {
		if args := cmd.Flags().Args(); len(args) > 0 {
			return GroupArgs(cmd, args)
		}
	}
	hint := ""
	if strings.HasPrefix(err.Error(), "unknown shorthand flag") && cmd.Args != nil {
		// select '-x AS y': an expression (or any argument) that starts with a minus
		hint = "; an argument that starts with '-' goes after '--', e.g. streamkit " + cmd.Name() + " -- '-x …'"
	}
	return stage.Usagef("%v%s; see '%s --help'", err, hint, cmd.CommandPath())
}

// GroupArgs is the Args of a group of subcommands (the root, window, delta): any positional
// argument is an unknown subcommand, a usage error that names it and, on the same line, the
// subcommands it may be a misspelling of (cobra's SuggestionsFor: Levenshtein distance ≤ 2 or
// a prefix).
func GroupArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, which it sets on the root only
	}
	hint := ""
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		hint = " (did you mean " + strings.Join(s, " or ") + "?)"
	}
	return stage.Usagef("unknown command %q for %q%s; see '%s --help'", args[0], cmd.CommandPath(), hint, cmd.CommandPath())
}

// KeyList splits a comma-separated list of column paths (a --key flag, keyby's KEY), with
// spaces around each trimmed. An empty list or an empty part ("a,,b", "a,") is a usage error
// naming what (e.g. "dedup: --key"): a forgotten column must not pass silently.
func KeyList(what, s string) ([]string, error) {
	var out []string
	for i, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k == "" {
			if strings.TrimSpace(s) == "" {
				return nil, stage.Usagef("%s: no column given", what)
			}
			return nil, stage.Usagef("%s %q: column %d is empty", what, s, i+1)
		}
		out = append(out, k)
	}
	return out, nil
}

// Examples joins example command lines (each "# comment\ncommand") into cobra's Example text.
func Examples(ex ...string) string {
	var b strings.Builder
	for i, e := range ex {
		if i > 0 {
			b.WriteString("\n\n")
		}
		for j, line := range strings.Split(e, "\n") {
			if j > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "  %s", line)
		}
	}
	return b.String()
}

// Color reports whether output to w may be coloured: w is a terminal and NO_COLOR is unset.
func Color(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && os.Getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd()))
}

// Usage turns err, a bad argument of tool found by a library (an expression that does not
// parse or type-check), into a usage error (exit 2) whose message starts with "tool: " once.
func Usage(tool string, err error) error {
	msg := err.Error()
	if !strings.HasPrefix(msg, tool+": ") {
		msg = tool + ": " + msg
	}
	return &stage.UsageError{Msg: msg}
}
