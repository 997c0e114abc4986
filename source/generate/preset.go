package generate

import (
	"sort"
	"strings"
)

// Preset is a named schema with its generators (--preset).
type Preset struct {
	// DDL is the schema (Spark DDL).
	DDL string
	// Gens are the generators of its columns (--gen options may override any of them).
	Gens []string
	// EventTime is the column declared as the stream's event time.
	EventTime string
}

// Presets are the built-in presets. nexmark-bids is the Bid stream of the Nexmark benchmark
// (see nexmark.go for the distributions).
var Presets = map[string]Preset{
	"nexmark-bids": {
		DDL: NexmarkBidsDDL,
		Gens: []string{"auction=nexmark(auction)", "bidder=nexmark(bidder)", "price=nexmark(price)",
			"channel=nexmark(channel)", "url=nexmark(url)", "date_time=nexmark(date_time)", "extra=nexmark(extra)"},
		EventTime: "date_time",
	},
}

// PresetNames lists the presets, sorted.
func PresetNames() string {
	var names []string
	for n := range Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// MergeGens returns base with every option of over replacing base's option for the same path
// (over's other options appended).
func MergeGens(base, over []string) []string {
	pathOf := func(s string) string { p, _, _ := strings.Cut(s, "="); return strings.TrimSpace(p) }
	overridden := map[string]bool{}
	for _, o := range over {
		overridden[pathOf(o)] = true
	}
	var out []string
	for _, b := range base {
		if !overridden[pathOf(b)] {
			out = append(out, b)
		}
	}
	return append(out, over...)
}
