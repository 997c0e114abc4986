package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// DocsDir is where the generated pages live, relative to the repository root.
const DocsDir = "docs/cli"

// RegenerateHint says how to bring docs/cli up to date; tests print it when a page differs.
const RegenerateHint = "run 'make docs' (or 'go generate ./cmd/streamkit') and commit docs/cli"

// generated heads every page; it names the spec so that an edit goes to the right place.
const generated = "<!-- Generated from the command's spec (tools/%s, cli.Spec) by 'make docs'. Do not edit: change the spec and regenerate. -->\n"

// Markdown renders the page docs/cli/<name>.md of a top-level command: usage, description,
// flags (name, type, default, help), examples, then each subcommand the same way. The page's
// header names the tool's package, tools/<name without dashes>. The text is the spec's own,
// so a page and --help say the same.
func Markdown(s Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, generated, strings.ReplaceAll(s.Name(), "-", ""))
	writeCommand(&b, s, "streamkit", 1)
	return b.String()
}

// writeCommand writes the section of s (a heading of level), then its subcommands one level
// down; parent is the command path above s.
func writeCommand(b *strings.Builder, s Spec, parent string, level int) {
	path := parent + " " + s.Name()
	h := strings.Repeat("#", level)
	fmt.Fprintf(b, "\n%s %s\n\n%s\n", h, path, escape(s.Short))
	// The usage lines of cobra's help: the command line of a runnable command, the command
	// path of a group.
	var usage []string
	if s.Run != nil {
		usage = append(usage, parent+" "+s.Use+" [flags]")
	}
	if len(s.Commands) > 0 {
		usage = append(usage, path+" [command]")
	}
	fmt.Fprintf(b, "\n%s# Usage\n\n```text\n%s\n```\n", h, strings.Join(usage, "\n"))
	if s.Long != "" {
		fmt.Fprintf(b, "\n%s# Description\n\n%s", h, text(s.Long))
	}
	if len(s.Commands) > 0 {
		fmt.Fprintf(b, "\n%s# Commands\n\n", h)
		for _, sub := range s.Commands {
			fmt.Fprintf(b, "- [%s %s](#%s): %s\n", path, sub.Name(), anchor(path+" "+sub.Name()), escape(sub.Short))
		}
	}
	if fs := s.flagSet(); fs != nil && fs.HasAvailableFlags() {
		fmt.Fprintf(b, "\n%s# Flags\n\n", h)
		writeFlags(b, fs)
	}
	if len(s.Examples) > 0 {
		fmt.Fprintf(b, "\n%s# Examples\n", h)
		for _, ex := range s.Examples {
			writeExample(b, ex)
		}
	}
	fmt.Fprintf(b, "\nGlobal flags (--log-level, --log-format, --progress) and exit codes: see [the index](README.md).\n")
	for _, sub := range s.Commands {
		writeCommand(b, sub, path, level+1)
	}
}

// writeFlags writes fs as a table: the flag (with its shorthand), the type of its value as
// --help names it, its default (empty when --help shows none) and its help text.
func writeFlags(b *strings.Builder, fs *pflag.FlagSet) {
	b.WriteString("| Flag | Value | Default | Description |\n|---|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		typ, usage := pflag.UnquoteUsage(f)
		def := ""
		if !zeroDefault(typ, f.DefValue) {
			def = "`" + strings.ReplaceAll(f.DefValue, "|", `\|`) + "`"
		}
		if typ == "" {
			typ = f.Value.Type() // bool, which --help leaves out
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, typ, def, strings.ReplaceAll(escape(usage), "\n", " "))
	})
}

// zeroDefault reports whether --help leaves out the default of a flag whose value type is typ
// (as pflag.UnquoteUsage names it), as pflag does for zero values.
func zeroDefault(typ, def string) bool {
	switch typ {
	case "":
		return def == "false" || def == ""
	case "duration":
		return def == "0" || def == "0s"
	case "int", "int8", "int16", "int32", "uint", "uint8", "uint16", "uint32", "float", "float32", "count":
		return def == "0"
	case "string":
		return def == ""
	case "strings", "stringArray", "ints":
		return def == "[]"
	}
	return def == "false" || def == "<nil>" || def == "" || def == "0"
}

// writeExample writes one example, "# comment\ncommand", as the comment in prose and the
// command in a shell block.
func writeExample(b *strings.Builder, ex string) {
	var prose, code []string
	for _, line := range strings.Split(ex, "\n") {
		if c, ok := strings.CutPrefix(line, "# "); ok && len(code) == 0 {
			prose = append(prose, c)
		} else {
			code = append(code, line)
		}
	}
	b.WriteString("\n")
	if len(prose) > 0 {
		fmt.Fprintf(b, "%s:\n\n", escape(strings.Join(prose, " ")))
	}
	fmt.Fprintf(b, "```sh\n%s\n```\n", strings.Join(code, "\n"))
}

// text renders help text as Markdown: paragraphs stay paragraphs (their line breaks are soft),
// runs of indented lines (lists, tables of values) become preformatted blocks, and Markdown's
// special characters are escaped, so the page reads as --help does.
func text(s string) string {
	var blocks []string
	var cur []string
	pre := false // cur holds indented lines
	flush := func() {
		if len(cur) == 0 {
			return
		}
		if pre {
			blocks = append(blocks, "```text\n"+strings.Join(cur, "\n")+"\n```")
		} else {
			blocks = append(blocks, strings.Join(cur, "\n"))
		}
		cur = nil
	}
	for _, line := range strings.Split(s, "\n") {
		indented := strings.HasPrefix(line, " ")
		switch {
		case strings.TrimSpace(line) == "":
			flush()
			continue
		case indented != pre:
			flush()
			pre = indented
		}
		if !pre {
			line = escapeLine(line)
		}
		cur = append(cur, line)
	}
	flush()
	return strings.Join(blocks, "\n\n") + "\n"
}

// escapeLine escapes a line of prose, including what would start a list, a heading or a quote
// at the beginning of a line.
func escapeLine(line string) string {
	e := escape(line)
	if e != "" && strings.ContainsRune("-+=>#", rune(e[0])) {
		return `\` + e
	}
	if i := strings.IndexFunc(e, func(r rune) bool { return r < '0' || r > '9' }); i > 0 && (e[i] == '.' || e[i] == ')') {
		return e[:i] + `\` + e[i:]
	}
	return e
}

// mdSpecial are the characters that mean something inline in CommonMark; a backslash makes
// each literal.
var mdSpecial = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", `\<`, ">", `\>`, "|", `\|`, "~", `\~`, "$", `\$`)

// escape makes s literal text in Markdown.
func escape(s string) string { return mdSpecial.Replace(s) }

// anchor is the heading anchor GitHub gives a heading of text: lower case, spaces to dashes,
// punctuation dropped.
func anchor(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Index renders docs/cli/README.md: the root command's description (exit codes,
// environment), the global flags, and one line per tool linking its page.
func Index(rootShort, rootLong string, tools []Spec) string {
	var b strings.Builder
	b.WriteString("<!-- Generated from the commands' specs (cli.Spec) by 'make docs'. Do not edit: change the specs and regenerate. -->\n")
	fmt.Fprintf(&b, "\n# streamkit command reference\n\n%s\n\n%s", escape(rootShort), text(rootLong))
	b.WriteString("\n## Tools\n\n| Tool | Summary |\n|---|---|\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "| [%s](%s.md) | %s |\n", t.Name(), t.Name(), escape(t.Short))
	}
	b.WriteString("\n## Global flags\n\nEvery tool takes these.\n\n")
	fs := pflag.NewFlagSet("streamkit", pflag.ContinueOnError)
	addGlobalFlags(fs, &Globals{})
	writeFlags(&b, fs)
	return b.String()
}

// flagSet is the flag set that s.Flags declares, for the docs; nil without flags.
func (s Spec) flagSet() *pflag.FlagSet {
	if s.Flags == nil {
		return nil
	}
	fs := pflag.NewFlagSet(s.Name(), pflag.ContinueOnError)
	fs.SortFlags = true
	s.Flags(fs)
	return fs
}
