package main

import (
	"github.com/spf13/cobra"

	"github.com/streamkit/streamkit/tools/backfill"
	"github.com/streamkit/streamkit/tools/dedup"
	"github.com/streamkit/streamkit/tools/keyby"
	"github.com/streamkit/streamkit/tools/print"
	"github.com/streamkit/streamkit/tools/readdelta"
	"github.com/streamkit/streamkit/tools/statedump"
)

// commands lists every tool's cobra command; each tool lives in tools/<tool>.
func commands() []*cobra.Command {
	return []*cobra.Command{
		backfill.Command(),
		dedup.Command(),
		keyby.Command(),
		print.Command(),
		readdelta.Command(),
		statedump.Command(),
	}
}
