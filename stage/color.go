package stage

import (
	"io"
	"os"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// ColorRenderer returns a lipgloss renderer for out, with ColorProfile's colour profile when
// out is a terminal and none otherwise.
func ColorRenderer(out io.Writer) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(out)
	if isTerminal(out) {
		r.SetColorProfile(ColorProfile(r.ColorProfile()))
	}
	return r
}

// ColorProfile is the colour profile streamkit draws a terminal with, given the one termenv
// detected: none with NO_COLOR set (no-color.org) or TERM empty or "dumb", else at least the
// 16 ANSI colours, the only ones streamkit's styles use. termenv detects no colour at all for
// TERM=screen, what tmux and screen set when the machine lacks a 256-colour terminfo entry,
// although those terminals draw the 16 colours.
func ColorProfile(detected termenv.Profile) termenv.Profile {
	switch t := os.Getenv("TERM"); {
	case os.Getenv("NO_COLOR") != "", t == "", t == "dumb":
		return termenv.Ascii
	case detected == termenv.Ascii:
		return termenv.ANSI
	}
	return detected
}

// UseColorProfile sets the colour profile of lipgloss's default renderer, the one
// lipgloss.NewStyle draws with on stdout, when stdout is a terminal.
func UseColorProfile() {
	if isTerminal(os.Stdout) {
		lipgloss.SetColorProfile(ColorProfile(lipgloss.ColorProfile()))
	}
}
