package main

import (
	"github.com/streamkit/streamkit/tools/backfill"
	"github.com/streamkit/streamkit/tools/cli"
	"github.com/streamkit/streamkit/tools/dedup"
	deltacmd "github.com/streamkit/streamkit/tools/delta"
	"github.com/streamkit/streamkit/tools/expect"
	"github.com/streamkit/streamkit/tools/filter"
	"github.com/streamkit/streamkit/tools/generate"
	"github.com/streamkit/streamkit/tools/keyby"
	"github.com/streamkit/streamkit/tools/print"
	"github.com/streamkit/streamkit/tools/readdelta"
	"github.com/streamkit/streamkit/tools/readfiles"
	"github.com/streamkit/streamkit/tools/readkafka"
	runtool "github.com/streamkit/streamkit/tools/run"
	schematool "github.com/streamkit/streamkit/tools/schema"
	selecttool "github.com/streamkit/streamkit/tools/select"
	"github.com/streamkit/streamkit/tools/statedump"
	windowtool "github.com/streamkit/streamkit/tools/window"
	"github.com/streamkit/streamkit/tools/writedelta"
	"github.com/streamkit/streamkit/tools/writekafka"
)

// specs lists every tool's spec, from which its cobra command and its page docs/cli/<tool>.md
// come; each tool lives in tools/<tool without dashes>.
func specs() []cli.Spec {
	return []cli.Spec{
		backfill.CommandSpec(),
		dedup.CommandSpec(),
		deltacmd.CommandSpec(),
		expect.CommandSpec(),
		filter.CommandSpec(),
		generate.CommandSpec(),
		keyby.CommandSpec(),
		print.CommandSpec(),
		readdelta.CommandSpec(),
		readfiles.CommandSpec(),
		readkafka.CommandSpec(),
		runtool.CommandSpec(),
		schematool.CommandSpec(),
		selecttool.CommandSpec(),
		writekafka.CommandSpec(),
		statedump.CommandSpec(),
		windowtool.CommandSpec(),
		writedelta.CommandSpec(),
	}
}
