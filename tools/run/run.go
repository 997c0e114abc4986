// Package run is the `streamkit run` tool: its flags become a stage/parallel Config, which
// starts N copies of a consumer-group pipeline on one machine and merges their progress and
// exit codes.
package run

import (
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/stage/parallel"
	"github.com/streamkit/streamkit/tools/cli"
)

// Command returns the cobra command of `streamkit run`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit run`: its usage, help, flags and examples (docs/cli/run.md).
func CommandSpec() cli.Spec {
	cfg := parallel.Config{}
	return cli.Spec{
		Use:   "run --parallel N [flags] -- PIPELINE",
		Short: "Run N copies of a consumer-group pipeline on one machine, with one progress view and exit code",
		Long: `run starts N copies ("members") of a pipeline and supervises them: the way to use several
cores for a topic with enough partitions. The pipeline is a consumer-group pipeline
(read-kafka --consumer-group G --progress-table T … | write-delta T): Kafka's group protocol
shares the topic's partitions among the members and the table holds every partition's
progress, so the members need nothing else from each other (docs/protocol.md §13).

PIPELINE is one argument, a shell command line run by sh -c (quote it, pipes and all), or
several arguments, a command and its arguments run as they are. Flags of run go before it;
"--" ends them. Each member runs in a process group of its own, in run's directory, with run's
environment and:
  STREAMKIT_MEMBER    the member's index, 0 to N-1
  STREAMKIT_MEMBERS   N
  STREAMKIT_PROGRESS  json (the stages' default --progress: run merges their progress lines)
  PATH                with the directory of this streamkit binary first, so "streamkit" in
                      the pipeline is this one

Output. run writes nothing to stdout. The members' stdin is /dev/null and their stdout is
discarded (N Arrow streams cannot be merged into one; a member that writes to stdout gets a
warning): a pipeline whose output is wanted redirects it itself, e.g. "… | streamkit print >
out.$STREAMKIT_MEMBER.txt". On stderr, each member's log lines are prefixed "[member i] "
(a JSON log line gets a "member" field instead). With --progress=auto on a terminal run draws
one live view: a line per member with each of its stages (records, rate, lag, partitions
held, committed epoch) and the totals per stage, replaced by a summary line at the end
(without a terminal the summary is a log line). With --progress=json every progress line of
every member's stages is forwarded with "member": i as its first field, and each member's end
is a line {"time", "member", "event": "exit", "exit_code", "elapsed_s"}.

Exit code: 0 when every member exited 0. The first member that exits with another code
stops the others (SIGINT to each member's process group, so its stages finish their epoch;
SIGKILL after --grace), and run exits with that member's code, naming it and quoting its last
lines of stderr. SIGINT or SIGTERM to run (Ctrl-C) is forwarded as SIGINT to every member, and
run exits 130 once they stopped; a second one kills them at once.

N copies of a pipeline that is not a group pipeline read the same data N times: a PIPELINE
that runs read-kafka without --consumer-group is refused (usage error) unless it uses
$STREAMKIT_MEMBER (to split the work itself); one that shows neither (a script) runs with a
warning.`,
		Examples: []string{
			"# Three members share the topic's partitions; every record lands once in the table\nstreamkit run --parallel 3 -- 'streamkit read-kafka -b 127.0.0.1:9092 -t orders --consumer-group orders-stream --progress-table ./lake/orders_stream --value-format json --value-schema orders.json | streamkit write-delta ./lake/orders_stream'",
			"# Two members until the end of the topic, their progress as JSON lines, each with its member index\nstreamkit run --parallel 2 --progress=json -- 'streamkit read-kafka -b 127.0.0.1:9092 -t orders --consumer-group orders-stream --progress-table ./lake/orders_stream --value-format json --value-schema orders.json --until now | streamkit write-delta ./lake/orders_stream'",
		},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return stage.Usagef("run: no pipeline given; usage: streamkit run --parallel N -- 'PIPELINE'")
			}
			return nil
		},
		Required: []string{"parallel"},
		Run: func(cmd *cobra.Command, args []string) error {
			if cfg.N < 1 {
				return stage.Usagef("run: --parallel must be at least 1, got %d", cfg.N)
			}
			if err := checkGroup(args, cfg.N); err != nil {
				return err
			}
			cfg.Command = args
			cfg.Progress = cli.G.Progress
			cfg.Stderr = cmd.ErrOrStderr()
			cfg.Env = os.Environ()
			cfg.Log = slog.Default()
			return parallel.Run(cmd.Context(), cfg)
		},
		Flags: func(f *pflag.FlagSet) {
			f.SetInterspersed(false) // the pipeline's own flags are not run's
			f.IntVarP(&cfg.N, "parallel", "n", 0, "number of members (copies of the pipeline) to run")
			cli.DurationVar(f, &cfg.Grace, "grace", 30*time.Second, "how long members may take to stop after SIGINT (a failure, Ctrl-C) before they are killed")
		},
	}
}

// checkGroup refuses N > 1 copies of a pipeline that runs read-kafka outside a consumer group
// (each would read every partition), unless it splits the work by $STREAMKIT_MEMBER, and
// warns when the command line shows neither (a script: run cannot see into it).
func checkGroup(args []string, n int) error {
	text := strings.Join(args, " ")
	group := strings.Contains(text, "--consumer-group")
	split := strings.Contains(text, parallel.EnvMember)
	switch {
	case n == 1 || group || split:
		return nil
	case strings.Contains(text, "read-kafka"):
		return stage.Usagef("run: the pipeline runs read-kafka without --consumer-group: its %d copies would each read every partition, "+
			"the same records %d times; add --consumer-group NAME --progress-table TABLE (docs/protocol.md §13), or split the work by $%s", n, n, parallel.EnvMember)
	}
	slog.Warn("run: the pipeline shows no --consumer-group and no $"+parallel.EnvMember+": unless it is a group pipeline, its copies read the same data", "members", n)
	return nil
}
