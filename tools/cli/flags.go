package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/stage"
)

// StageFlags registers the flags every stage shares on f, into o: --checkpoint, --name and
// --max-bad-ratio (see stage.Options for what each does).
func StageFlags(f *pflag.FlagSet, o *stage.Options) {
	f.StringVar(&o.Checkpoint, "checkpoint", "", "checkpoint directory of this stage (default $"+stage.EnvCheckpoint+"/<name> when set; none otherwise)")
	f.StringVar(&o.Name, "name", "", "stage name, used for the checkpoint directory under $"+stage.EnvCheckpoint+" (default: the tool name)")
	f.Var(&o.MaxBadRatio, "max-bad-ratio", "fail (exit 1) before an epoch commits when more than this share (0..1) of the records this stage read in it were set aside by this stage: a source's bad records and _rescued_data rows, window's late or bad-time rows, dedup's rows older than the watermark (not counts of stages upstream: give the flag to the stage that sets rows aside; default off: warn when most were)")
}

// SourceFlags registers the stage flags and those of sources on f, into o: --epoch-interval
// (default 5 s), --batch-rows (65536), --linger (100 ms) and --end (see stage.SourceOptions).
func SourceFlags(f *pflag.FlagSet, o *stage.SourceOptions) {
	StageFlags(f, &o.Options)
	f.DurationVar(&o.EpochInterval, "epoch-interval", 5*time.Second, "cut a checkpoint epoch every interval, also while no rows arrive (an idle epoch is one barrier; sinks commit nothing for it)")
	f.IntVar(&o.BatchRows, "batch-rows", 64*1024, "maximum rows per Arrow batch")
	f.DurationVar(&o.Linger, "linger", 100*time.Millisecond, "longest wait to fill a batch before sending it")
	f.StringVar(&o.End, "end", "", "end of input sends end=final or end=pause (default: pause with a checkpoint, final without)")
}
