package main

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/source/files"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/tools/backfill"
	"github.com/streamkit/streamkit/tools/cli"
	"github.com/streamkit/streamkit/tools/readfiles"
)

// TestFromFlagsAreReadFiles (moved here from tools/backfill: a tool does not import another
// tool) checks that backfill --from takes read-files' decoding options:
// the same flags (cli.AddDecodeFlags) with the same defaults, types and visibility, and
// none of the options about following and epochs.
func TestFromFlagsAreReadFiles(t *testing.T) {
	dec := pflag.NewFlagSet("decode", pflag.ContinueOnError)
	cli.AddDecodeFlags(dec, &files.Config{}, "")
	rf, bf := readfiles.Command().Flags(), backfill.Command().Flags()
	n := 0
	dec.VisitAll(func(d *pflag.Flag) {
		n++
		for tool, fs := range map[string]*pflag.FlagSet{"read-files": rf, "backfill": bf} {
			f := fs.Lookup(d.Name)
			if f == nil {
				t.Errorf("%s lacks --%s", tool, d.Name)
				continue
			}
			if f.DefValue != d.DefValue || f.Value.Type() != d.Value.Type() || f.Hidden != d.Hidden {
				t.Errorf("%s --%s: default %q type %s hidden %v; want %q %s %v", tool, d.Name, f.DefValue, f.Value.Type(), f.Hidden,
					d.DefValue, d.Value.Type(), d.Hidden)
			}
		}
	})
	if n < 15 {
		t.Fatalf("only %d decoding flags", n)
	}
	for _, name := range []string{"follow", "poll-interval", "on-rewrite", "max-files-per-epoch", "max-bytes-per-epoch", "checkpoint"} {
		if bf.Lookup(name) != nil {
			t.Errorf("backfill registers read-files' --%s", name)
		}
	}
	// --stable-after is a listing option, not a decoding one: backfill keeps its own default
	// (read every file at once), read-files waits 2 s.
	if d, err := time.ParseDuration(bf.Lookup("stable-after").DefValue); err != nil || d != 0 {
		t.Errorf("backfill --stable-after default %s", d)
	}
}

// TestDurationFlagsTakeDays checks that every duration flag of every subcommand parses with
// the one parser (internal/duration): days and weeks are accepted everywhere, as `delta
// vacuum --retain 7d` always was (issue #23: `dedup --ttl 1d` and `window --size 1d` were
// refused).
func TestDurationFlagsTakeDays(t *testing.T) {
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "duration" {
				return
			}
			n++
			if err := f.Value.Set("1d"); err != nil {
				t.Errorf("%s --%s 1d: %v", c.CommandPath(), f.Name, err)
			} else if f.Value.String() != "24h0m0s" {
				t.Errorf("%s --%s 1d: %s", c.CommandPath(), f.Name, f.Value.String())
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot())
	if n < 20 {
		t.Fatalf("found %d duration flags, want the 20 or more the tools declare", n)
	}
}

// TestVersion checks `streamkit --version`: the version, the commit and the Go version, one per
// line, from the binary's build information.
func TestVersion(t *testing.T) {
	root := newRoot()
	var out strings.Builder
	root.SetOut(&out)
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "streamkit ") || !strings.HasPrefix(lines[1], "commit ") || !strings.HasPrefix(lines[2], runtime.Version()+" ") {
		t.Fatalf("--version printed %q", out.String())
	}
}

// TestUnknownCommand checks that an unknown subcommand, of the root or of a group, is a usage
// error on one line that suggests the command meant (cobra printed the root's suggestion over
// four lines, and a group's help with exit 0).
func TestUnknownCommand(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"windw", `unknown command "windw" for "streamkit" (did you mean window?)`},
		{"nosuchtool", `unknown command "nosuchtool" for "streamkit"; see`},
		{"delta vacum t", `unknown command "vacum" for "streamkit delta" (did you mean vacuum?)`},
		{"window tumblin --size 5m", `unknown command "tumblin" for "streamkit window" (did you mean tumbling?)`},
	} {
		root := newRoot()
		var out strings.Builder
		root.SetOut(&out)
		root.SetArgs(strings.Fields(tc.args))
		err := root.Execute()
		var usage *stage.UsageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || out.Len() > 0 {
			t.Errorf("%s: error %v, stdout %q; want a one-line usage error with %q", tc.args, err, out.String(), tc.want)
		}
	}
}

// TestFlagValueCompletion checks that shell completion offers the values of enumerated flags
// (cli.Choices), for a tool's flag and a global one.
func TestFlagValueCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "print", "--format", ""}, "table\njson\ncsv\n:4\n"},
		{[]string{"__complete", "read-kafka", "--on-data-loss", ""}, "fail\nearliest\nlatest\n:4\n"},
		{[]string{"__complete", "write-delta", "t", "--mode", ""}, "append\noverwrite\n:4\n"},
		{[]string{"__complete", "--progress", ""}, "auto\njson\noff\n:4\n"},
	} {
		root := newRoot()
		var out strings.Builder
		root.SetOut(&out)
		root.SetErr(&strings.Builder{})
		root.SetArgs(tc.args)
		if err := root.Execute(); err != nil || out.String() != tc.want {
			t.Errorf("%q: %v, %q; want %q", tc.args, err, out.String(), tc.want)
		}
	}
}

// TestOneFlagNamePerConcept checks the names of issue #23: the event-time column is
// --event-time in every tool that takes one (window's --time is a hidden old name of it), and a
// side file is --<what>-output (--late-output, --dropped-output, --bad-records-output; the
// --bad-records of read-files, read-kafka and backfill is a hidden old name). An old name
// sets the same variable as the new one, and no command shows it.
func TestOneFlagNamePerConcept(t *testing.T) {
	want := map[string][]string{ // command path → flag, or "flag=old" for a hidden old name
		"streamkit dedup":           {"event-time", "dropped-output"},
		"streamkit generate":        {"event-time"},
		"streamkit filter":          {"dropped-output"},
		"streamkit expect":          {"dropped-output"},
		"streamkit read-files":      {"bad-records-output=bad-records"},
		"streamkit read-kafka":      {"bad-records-output=bad-records"},
		"streamkit backfill":        {"bad-records-output=bad-records"},
		"streamkit window tumbling": {"event-time=time", "late-output"},
		"streamkit window sliding":  {"event-time=time", "late-output"},
		"streamkit window session":  {"event-time=time", "late-output"},
		"streamkit window count":    {"event-time=time", "late-output"},
		"streamkit window global":   {"event-time=time", "late-output"},
	}
	seen := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		fs := c.LocalFlags()
		fs.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && (f.Name == "time" || f.Name == "bad-records") {
				t.Errorf("%s shows --%s, an old name", c.CommandPath(), f.Name)
			}
		})
		if names, ok := want[c.CommandPath()]; ok {
			seen++
			for _, n := range names {
				name, old, _ := strings.Cut(n, "=")
				f := fs.Lookup(name)
				if f == nil || f.Hidden {
					t.Errorf("%s has no visible --%s", c.CommandPath(), name)
					continue
				}
				if old == "" {
					continue
				}
				// The same value: what the old name is given, the new name holds.
				o := fs.Lookup(old)
				if o == nil || !o.Hidden || o.Value.Set("old-name-value") != nil || f.Value.String() != "old-name-value" {
					t.Errorf("%s --%s is not a hidden old name of --%s", c.CommandPath(), old, name)
				}
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot())
	if seen != len(want) {
		t.Errorf("found %d of the %d commands", seen, len(want))
	}
}
