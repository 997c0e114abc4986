package main

import (
	"github.com/spf13/cobra"

	"github.com/streamkit/streamkit/tools/backfill"
	"github.com/streamkit/streamkit/tools/dedup"
	deltacmd "github.com/streamkit/streamkit/tools/delta"
	"github.com/streamkit/streamkit/tools/generate"
	"github.com/streamkit/streamkit/tools/keyby"
	"github.com/streamkit/streamkit/tools/print"
	"github.com/streamkit/streamkit/tools/readdelta"
	"github.com/streamkit/streamkit/tools/readfiles"
	"github.com/streamkit/streamkit/tools/readkafka"
	"github.com/streamkit/streamkit/tools/statedump"
	windowtool "github.com/streamkit/streamkit/tools/window"
	"github.com/streamkit/streamkit/tools/writedelta"
	"github.com/streamkit/streamkit/tools/writekafka"
)

// commands lists every tool's cobra command; each tool lives in tools/<tool>.
func commands() []*cobra.Command {
	return []*cobra.Command{
		backfill.Command(),
		dedup.Command(),
		deltacmd.Command(),
		generate.Command(),
		keyby.Command(),
		print.Command(),
		readdelta.Command(),
		readfiles.Command(),
		readkafka.Command(),
		writekafka.Command(),
		statedump.Command(),
		windowtool.Command(),
		writedelta.Command(),
	}
}
