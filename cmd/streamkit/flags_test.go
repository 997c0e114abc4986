package main

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/source/files"
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
	if d := bf.Lookup("stable-after").DefValue; d != "0s" {
		t.Errorf("backfill --stable-after default %s", d)
	}
}
