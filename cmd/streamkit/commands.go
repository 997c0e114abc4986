package main

import (
	"github.com/spf13/cobra"

	"github.com/streamkit/streamkit/tools/dedup"
	deltacmd "github.com/streamkit/streamkit/tools/delta"
	"github.com/streamkit/streamkit/tools/keyby"
	"github.com/streamkit/streamkit/tools/print"
	"github.com/streamkit/streamkit/tools/statedump"
	"github.com/streamkit/streamkit/tools/writedelta"
)

// commands lists every tool's cobra command; each tool lives in tools/<tool>.
func commands() []*cobra.Command {
	return []*cobra.Command{
		dedup.Command(),
		deltacmd.Command(),
		keyby.Command(),
		print.Command(),
		statedump.Command(),
		writedelta.Command(),
	}
}
