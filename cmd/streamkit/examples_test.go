package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// planned are the tools of DESIGN.md §1. An example may pipe through one that is not
// registered yet (print's examples start with read-files); such a segment is skipped, while a
// name that is neither registered nor planned is an error (a typo in an example).
var planned = map[string]bool{
	"read-kafka": true, "read-files": true, "read-delta": true, "keyby": true, "dedup": true,
	"window": true, "write-delta": true, "write-kafka": true, "backfill": true,
	"state-dump": true, "print": true, "generate": true,
}

// TestExamples walks every subcommand's Example text: each command has examples, one of them
// runs the command itself, and every `streamkit <tool> …` segment of every example pipeline
// parses with that tool's flags and positional-argument rules (DESIGN.md §7.2).
// TestExamplesRun (examples_run_test.go) executes them.
func TestExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			t.Run(strings.ReplaceAll(sub.CommandPath(), " ", "_"), func(t *testing.T) {
				if sub.Runnable() && !sub.HasSubCommands() && strings.TrimSpace(sub.Example) == "" {
					t.Fatalf("%s has no Example", sub.CommandPath())
				}
				self := false
				for _, line := range exampleLines(sub.Example) {
					parsed, err := checkExample(line)
					if err != nil {
						t.Errorf("example %q: %v", line, err)
					}
					for _, p := range parsed {
						self = self || p == sub.CommandPath()
					}
				}
				if sub.Runnable() && !sub.HasSubCommands() && !self {
					t.Errorf("no example of %s runs %s itself", sub.CommandPath(), sub.CommandPath())
				}
			})
			walk(sub)
		}
	}
	walk(newRoot())
}

// TestCheckExample shows that checkExample catches what it is meant to catch.
func TestCheckExample(t *testing.T) {
	// A planned tool that is not registered: its segments are skipped.
	planned["future-tool"] = true
	defer delete(planned, "future-tool")
	tests := []struct {
		line       string
		wantParsed []string // command paths parsed
		wantErr    string   // "" = no error
	}{
		{"streamkit print --format json", []string{"streamkit print"}, ""},
		{"streamkit future-tool data.csv | streamkit print --limit 20", []string{"streamkit print"}, ""},
		{"streamkit print --format csv > out.csv", []string{"streamkit print"}, ""},
		{"streamkit print --format csv >out.csv 2> err.log", []string{"streamkit print"}, ""},
		{"STREAMKIT_CHECKPOINT=./ckpt streamkit print --checkpoint ./ckpt/p", []string{"streamkit print"}, ""},
		{`streamkit keyby 'a|b' | streamkit print --format "json"`, []string{"streamkit keyby", "streamkit print"}, ""},
		{"streamkit --log-level debug print --show-control", []string{"streamkit print"}, ""},
		{"cat x.arrows | streamkit print | head -5", []string{"streamkit print"}, ""},
		{"streamkit print --colour", nil, "unknown flag: --colour"},
		{"streamkit print --limit many", nil, `invalid argument "many"`},
		{"streamkit print extra", nil, "takes no arguments"},
		{"streamkit keyby", nil, "takes 1 argument(s), got 0"},
		{"streamkit prnt", nil, `unknown tool "prnt"`},
		{"streamkit print | streamkit keyby a --nope", nil, "unknown flag: --nope"},
		{"streamkit print --format 'json", nil, "unterminated quote"},
		// keyby --shards N -- CMD: a streamkit tool after "--" is checked too.
		{"streamkit keyby id --shards 2 -- print --format json", []string{"streamkit keyby", "streamkit print"}, ""},
		{"streamkit keyby id --shards 2 -- streamkit print", []string{"streamkit keyby", "streamkit print"}, ""},
		{"streamkit keyby id --shards 2 -- future-tool --key id", []string{"streamkit keyby"}, ""},
		{"streamkit keyby id --shards 2 -- python3 op.py --any-flag", []string{"streamkit keyby"}, ""},
		{"streamkit keyby id --shards 2 -- print --nope", nil, "unknown flag: --nope"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			parsed, err := checkExample(tt.line)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("got error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
			}
			if tt.wantErr == "" && fmt.Sprint(parsed) != fmt.Sprint(tt.wantParsed) {
				t.Errorf("parsed: got %v, want %v", parsed, tt.wantParsed)
			}
		})
	}
}

// exampleLines returns the command lines of an Example text: comments and blank lines
// dropped, backslash continuations joined.
func exampleLines(example string) []string {
	var lines []string
	cur := ""
	for _, l := range strings.Split(example, "\n") {
		l = strings.TrimSpace(l)
		if cur == "" && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if c, ok := strings.CutSuffix(l, `\`); ok {
			cur += c + " "
			continue
		}
		lines = append(lines, cur+l)
		cur = ""
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// checkExample splits a shell pipeline into segments on unquoted "|" and parses every
// `streamkit …` segment with a fresh root command: the subcommand must exist (or be a planned
// tool, then it is skipped), its flags must parse, required flags and flag groups must hold,
// and its positional arguments must satisfy its Args rule. A command after "--" that names a
// streamkit tool (keyby --shards N -- dedup …) is checked the same way. It returns the command
// paths it parsed.
func checkExample(line string) ([]string, error) {
	segs, err := splitPipeline(line)
	if err != nil {
		return nil, err
	}
	var parsed []string
	for _, words := range segs {
		for len(words) > 0 && isAssignment(words[0]) {
			words = words[1:]
		}
		if len(words) == 0 || words[0] != "streamkit" {
			continue // another program: cat, head, jq …
		}
		p, err := checkStreamkit(words[1:])
		parsed = append(parsed, p...)
		if err != nil {
			return parsed, err
		}
	}
	return parsed, nil
}

// checkStreamkit checks the arguments of one `streamkit ARGS…` command line.
func checkStreamkit(args []string) ([]string, error) {
	root := newRoot()
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root {
		name := firstNonFlag(args)
		if planned[name] {
			return nil, nil
		}
		return nil, fmt.Errorf("unknown tool %q in %q", name, "streamkit "+strings.Join(args, " "))
	}
	path := cmd.CommandPath()
	if err := cmd.ParseFlags(rest); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	positional := cmd.Flags().Args()
	if cmd.Args != nil {
		if err := cmd.Args(cmd, positional); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	parsed := []string{path}
	if dash := cmd.ArgsLenAtDash(); dash >= 0 && dash < len(positional) {
		child := positional[dash:]
		if child[0] == "streamkit" {
			child = child[1:]
		}
		if len(child) > 0 && (planned[child[0]] || isTool(child[0])) {
			p, err := checkStreamkit(child)
			parsed = append(parsed, p...)
			if err != nil {
				return parsed, fmt.Errorf("%s -- %w", path, err)
			}
		}
	}
	return parsed, nil
}

// isTool reports whether name is a registered subcommand.
func isTool(name string) bool {
	for _, c := range newRoot().Commands() {
		if c.Name() == name {
			return true
		}
	}
	return false
}

func isAssignment(w string) bool {
	i := strings.IndexByte(w, '=')
	return i > 0 && !strings.HasPrefix(w, "-")
}

func firstNonFlag(args []string) string {
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "--log-") || args[i] == "--progress" {
			if !strings.Contains(args[i], "=") {
				i++ // the flag's value
			}
			continue
		}
		if !strings.HasPrefix(args[i], "-") {
			return args[i]
		}
	}
	return ""
}

// splitPipeline splits a shell command line into pipeline segments of words, honouring
// single quotes, double quotes and backslash escapes, and dropping redirections (> f, >> f,
// < f, 2> f, >f). It is a small POSIX-shell subset, enough for help examples.
func splitPipeline(line string) ([][]string, error) {
	var segs [][]string
	var words []string
	var cur strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated quote")
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte(`"\$`+"`", line[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, errors.New("unterminated quote")
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == ' ' || c == '\t':
			endWord()
		case c == '|':
			endWord()
			segs = append(segs, dropRedirections(words))
			words = nil
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	endWord()
	return append(segs, dropRedirections(words)), nil
}

func dropRedirections(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		w := strings.TrimLeft(words[i], "0123456789")
		if strings.HasPrefix(w, ">") || strings.HasPrefix(w, "<") {
			if strings.Trim(w, "<>&") == "" {
				i++ // "> file": the target is the next word
			}
			continue
		}
		out = append(out, words[i])
	}
	return out
}
