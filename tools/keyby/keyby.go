// Package keyby is the `streamkit keyby` tool: it declares the stream's key columns in the
// schema metadata (streamkit.key) so dedup and window default to them. Data batches pass
// through unaltered.
package keyby

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/tools/cli"
)

// Declare is the keyby operator without shards: it validates the key paths against the input
// schema and sets streamkit.key on the output schema.
type Declare struct {
	Key []string // dot paths, at least one
}

// Open validates the key columns (errors name a missing path) and returns the input schema
// with streamkit.key set.
func (d *Declare) Open(_ context.Context, _ *stage.Env, in *arrow.Schema) (*arrow.Schema, error) {
	for _, k := range d.Key {
		if _, err := codec.ResolvePath(in, k); err != nil {
			return nil, stage.Usagef("keyby: %v", err)
		}
	}
	info := codec.Info(in)
	info.Key = d.Key
	return codec.WithInfo(in, info), nil
}

// Process forwards rec unchanged (same buffers; only the stream schema's metadata differs).
func (d *Declare) Process(_ context.Context, rec arrow.RecordBatch, emit stage.Emit) error {
	rec.Retain()
	return emit(rec)
}

// Watermark is forwarded by the stage loop.
func (d *Declare) Watermark(context.Context, time.Time, stage.Emit) error { return nil }

// Barrier: keyby without shards keeps no state.
func (d *Declare) Barrier(context.Context, uint64, stage.Emit) error { return nil }

// End has nothing to flush.
func (d *Declare) End(context.Context, codec.EndKind, stage.Emit) error { return nil }

// Close releases nothing.
func (d *Declare) Close() error { return nil }

// Command returns the cobra command of `streamkit keyby`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit keyby`: its usage, help, flags and examples (docs/cli/keyby.md).
func CommandSpec() cli.Spec {
	o := stage.Options{Tool: "keyby"}
	var shards int
	return cli.Spec{
		Use:   "keyby COL[,COL...] [--shards N -- CMD ARGS...]",
		Short: "Declare the stream's key columns (dot paths) for dedup and window",
		Long: `keyby declares the key of the stream: the columns (dot paths into structs, e.g.
value.user_id) are recorded in the stream schema's metadata (streamkit.key), and dedup and
window use them when no --key is given. Rows pass through unchanged.

With --shards N -- CMD ARGS..., keyby runs N copies of CMD as child processes (CMD may be a
streamkit tool name, e.g. dedup, or any program speaking the protocol), sends every row to
child XXH3-64(encoded key) mod N — the same key always reaches the same child, across runs —,
and merges the children's outputs on stdout: epoch n's barrier is forwarded once every child
emitted it, the watermark is the minimum over the children. Child i keeps its checkpoint in
"<its directory>.shard-i" (STREAMKIT_SHARD=i is set for it). A failing child fails the whole
command with its exit code; a restart with another N is refused.`,
		Examples: []string{
			"# Key a Kafka stream by a field of its JSON value\nstreamkit read-kafka -b 127.0.0.1:9092 -t orders --value-format json --value-schema orders.json | streamkit keyby value.customer_id | streamkit print",
			"# Deduplicate on both cores: two dedup processes, each owning half of the keys\nstreamkit read-files 'events/*.json' | streamkit keyby user_id --shards 2 -- dedup --key user_id,event_id | streamkit print",
		},
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				return cli.ExactArgs(1)(cmd, args)
			}
			if dash != 1 || len(args) < 2 {
				return stage.Usagef("keyby: usage: keyby COL[,COL...] --shards N -- CMD ARGS...")
			}
			return nil
		},
		Run: func(cmd *cobra.Command, args []string) error {
			cli.Fill(&o, cmd)
			key, err := cli.KeyList("keyby: KEY", args[0])
			if err != nil {
				return err
			}
			if dash := cmd.ArgsLenAtDash(); dash >= 0 || shards > 0 {
				if shards < 1 || dash < 0 {
					return stage.Usagef("keyby: --shards N (≥ 1) and -- CMD ARGS... go together")
				}
				tools := toolNames(cmd.Root())
				s := &Sharded{Key: key, N: shards, Cmd: selfTool(args[dash:], tools), Tools: tools}
				return s.Run(cmd.Context(), o)
			}
			return stage.RunOperator(cmd.Context(), o, &Declare{Key: key})
		},
		Flags: func(f *pflag.FlagSet) {
			f.IntVar(&shards, "shards", 0, "run N copies of the command after -- and route each key to one of them")
			cli.StageFlags(f, &o)
		},
	}
}

// selfTool returns args without its first word when that word is a path to this very
// executable followed by a streamkit tool name (-- /usr/local/bin/streamkit dedup ...): the
// child is then the tool itself, which keyby recognises (see Sharded.Tools); otherwise args.
func selfTool(args []string, tools map[string]bool) []string {
	if len(args) < 2 || tools[args[0]] || !tools[args[1]] {
		return args
	}
	self, err := os.Executable()
	if err != nil {
		return args
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return args
	}
	a, aerr := filepath.EvalSymlinks(path)
	b, berr := filepath.EvalSymlinks(self)
	if aerr != nil || berr != nil {
		return args
	}
	if sa, err := os.Stat(a); err == nil {
		if sb, err := os.Stat(b); err == nil && os.SameFile(sa, sb) {
			return args[1:]
		}
	}
	return args
}

// toolNames is the set of streamkit subcommand names under root.
func toolNames(root *cobra.Command) map[string]bool {
	tools := map[string]bool{}
	for _, c := range root.Commands() {
		tools[c.Name()] = true
	}
	return tools
}
