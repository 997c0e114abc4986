package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// testSpec is a command with a subcommand, flags of several types and a required flag.
func testSpec(ran *[]string) Spec {
	var size int
	var name string
	return Spec{
		Use:   "tool",
		Short: "A tool",
		Commands: []Spec{{
			Use:      "sub ARG",
			Short:    "Its sub_command",
			Long:     "First *paragraph*\nwrapped.\n\n  indented | kept\n  as it is\n\n--flag starts a line\n1. is not a list",
			Examples: []string{"# Do it\nstreamkit tool sub x --size 3"},
			Args:     ExactArgs(1),
			Required: []string{"size"},
			Flags: func(f *pflag.FlagSet) {
				f.IntVar(&size, "size", 0, "the size")
				f.StringVarP(&name, "name", "n", "a|b", "the name")
				f.Bool("quiet", false, "say less")
				f.Int("secret", 0, "hidden")
				f.MarkHidden("secret")
			},
			Run: func(_ *cobra.Command, args []string) error {
				*ran = append(*ran, args[0], name)
				return nil
			},
		}},
	}
}

func TestCommand(t *testing.T) {
	var ran []string
	cmd := Command(testSpec(&ran))
	cmd.SetArgs([]string{"sub", "x", "--size", "3", "-n", "y"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(ran, ","), "x,y"; got != want {
		t.Errorf("ran %q, want %q", got, want)
	}
	sub, _, _ := cmd.Find([]string{"sub"})
	if got, want := sub.Example, "  # Do it\n  streamkit tool sub x --size 3"; got != want {
		t.Errorf("Example = %q, want %q", got, want)
	}
	cmd = Command(testSpec(&ran)) // flags keep their state after a parse
	cmd.SetArgs([]string{"sub", "x"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `"size" not set`) {
		t.Errorf("without the required flag: %v", err)
	}
}

func TestMarkdown(t *testing.T) {
	got := Markdown(testSpec(new([]string)))
	for _, want := range []string{
		"(tools/tool, cli.Spec)",
		"# streamkit tool\n\nA tool\n",
		"## Usage\n\n```text\nstreamkit tool [command]\n```\n",
		"- [streamkit tool sub](#streamkit-tool-sub): Its sub\\_command\n",
		"## streamkit tool sub\n",
		"### Usage\n\n```text\nstreamkit tool sub ARG [flags]\n```\n",
		"First \\*paragraph\\*\nwrapped.\n\n```text\n  indented | kept\n  as it is\n```\n\n\\--flag starts a line\n1\\. is not a list\n",
		"| `-n`, `--name` | string | `a\\|b` | the name |\n",
		"| `--quiet` | bool |  | say less |\n",
		"| `--size` | int |  | the size |\n",
		"Do it:\n\n```sh\nstreamkit tool sub x --size 3\n```\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("page lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "secret") {
		t.Errorf("page shows a hidden flag:\n%s", got)
	}
}
