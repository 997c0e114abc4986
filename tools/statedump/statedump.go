// Package statedump is the `streamkit state-dump` tool: it opens a checkpoint directory
// read-only and shows its stages, epochs, source positions and watermarks, compares Kafka
// positions with the brokers' end offsets, or reconstructs a stage's keyed state as of an
// epoch and prints or streams it (DESIGN.md §3, docs/protocol.md §6–8, issue #9).
//
// It never takes a stage's lock and never writes, so it is safe on a running pipeline: it
// reads only files that exist whole (checkpoint files are written atomically, an operator's
// epoch exists once its manifest, written last, does), a file that the running stage
// garbage-collects while it is read makes a dump of the committed epoch start over on the
// newer committed epoch, and a corrupt file is reported with its path and reason while the
// other epochs still show.
package statedump

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/internal/kafkaconn"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/tools/cli"
)

// Output formats of --format.
const (
	FormatTable = "table" // aligned text (lipgloss on a terminal)
	FormatJSON  = "json"  // JSON lines for rows; one indented document for a stage summary
	FormatCSV   = "csv"   // a header and rows
	FormatArrow = "arrow" // an Arrow IPC stream ending with end=final
)

// Config are state-dump's options.
type Config struct {
	// Dir is a $STREAMKIT_CHECKPOINT root or one stage's directory.
	Dir string
	// Stage names the stage (a directory under Dir) whose state to reconstruct.
	Stage string
	// Epoch is the epoch to reconstruct; 0 means the committed one.
	Epoch uint64
	// Format is table (default), json, csv or arrow; summaries take table or json.
	Format string
	// Key is a "column=value" filter on the dumped rows (a key column or a value column,
	// named by its dot path, e.g. value.user_id=42).
	Key string
	// Diff holds two epochs A and B: list keys added, removed and changed from A to B.
	Diff []uint64
	// Expiring keeps the keys that expire within this long of the stage's watermark (dedup
	// --ttl, window --allowed-lateness) or, for dedup --ttl-processing, of Now.
	Expiring time.Duration
	// Offsets shows the source positions of the source stages: committed and newest WAL
	// position, per Kafka partition, files read and pending, Delta versions unread, or as
	// recorded.
	Offsets bool
	// Lag (implies Offsets) compares read-kafka positions with the brokers' end offsets;
	// Conn says how to reach them (-b and the TLS/SASL flags of read-kafka).
	Lag  bool
	Conn kafkaconn.Config
	// Timeout bounds the broker requests of Lag (default 30 s).
	Timeout time.Duration
	// Flow, with Offsets, reads Dir as the Delta table of a consumer group (read-kafka
	// --consumer-group) and shows the progress its txn actions of this flow record (group.go).
	Flow string
	// AppID, with Offsets, reads Dir as the table of a group whose txn appIds are
	// "<app>-<partition>" of the one topic Topic (read-kafka --app-id, kafka-delta-ingest's
	// app_id) instead of a flow's.
	AppID, Topic string
	// Color enables lipgloss styling (a terminal without NO_COLOR).
	Color bool
	// Now is the clock of --expiring with processing-time TTLs (default time.Now).
	Now func() time.Time
	// Mem allocates the Arrow buffers of the dump (default memory.DefaultAllocator).
	Mem memory.Allocator
}

// Run executes state-dump, writing to out.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	if cfg.Format == "" {
		cfg.Format = FormatTable
	}
	switch cfg.Format {
	case FormatTable, FormatJSON, FormatCSV, FormatArrow:
	default:
		return stage.Usagef("state-dump: --format must be table, json, csv or arrow, got %q", cfg.Format)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Mem == nil {
		cfg.Mem = memory.DefaultAllocator
	}
	if cfg.Lag {
		cfg.Offsets = true
	}
	if cfg.AppID != "" || cfg.Topic != "" {
		switch {
		case cfg.Flow != "":
			return stage.Usagef("state-dump: --flow and --app-id name a group's txn appIds in two ways: give one")
		case cfg.AppID == "" || cfg.Topic == "":
			return stage.Usagef("state-dump: --app-id APP needs --topic TOPIC and the other way round: the appIds APP-<partition> do not name the topic")
		}
	}
	if cfg.Flow != "" || cfg.AppID != "" {
		if !cfg.Offsets || cfg.Stage != "" || cfg.Epoch != 0 || cfg.Key != "" || len(cfg.Diff) > 0 || cfg.Expiring > 0 {
			return stage.Usagef("state-dump: --flow and --app-id read a consumer group's progress from a Delta table: use them with --offsets (and --lag) only")
		}
		return groupOffsets(ctx, cfg, cfg.Dir, out)
	}
	if state.IsURL(cfg.Dir) {
		if _, err := state.StoreAt(cfg.Dir); err != nil {
			return fmt.Errorf("state-dump: %w", err)
		}
	} else if _, err := os.Stat(cfg.Dir); err != nil {
		return fmt.Errorf("state-dump: %w", err)
	}
	dump := cfg.Stage != "" && !cfg.Offsets || cfg.Epoch != 0 || cfg.Key != "" || len(cfg.Diff) > 0 || cfg.Expiring > 0
	if cfg.Offsets && dump {
		return stage.Usagef("state-dump: --offsets shows source positions; it does not combine with --epoch, --key, --diff or --expiring")
	}
	path := cfg.Dir
	if cfg.Stage != "" {
		switch shards := shardDirs(cfg.Dir, cfg.Stage); {
		case state.IsStageDir(state.Join(cfg.Dir, cfg.Stage)):
			path = state.Join(cfg.Dir, cfg.Stage)
		case state.IsStageDir(cfg.Dir) && state.Base(cfg.Dir) == cfg.Stage:
		case len(shards) > 0 && dump && !cfg.Offsets:
			return dumpShards(cfg, shards, out)
		case len(shards) > 0:
			return stage.Usagef("state-dump: %s ran as %d shards of keyby --shards: name one with --stage (%s.shard-0 … %s.shard-%d)", cfg.Stage, len(shards), cfg.Stage, cfg.Stage, len(shards)-1)
		default:
			stages, _ := state.Stages(cfg.Dir)
			return stage.Usagef("state-dump: no stage %q in %s (stages: %s)", cfg.Stage, cfg.Dir, strings.Join(stages, ", "))
		}
	}
	if cfg.Offsets {
		return offsets(ctx, cfg, path, out)
	}
	if !dump {
		if cfg.Format != FormatTable && cfg.Format != FormatJSON {
			return stage.Usagef("state-dump: a summary is shown as table or json; --format %s is for dumps of state (--stage NAME)", cfg.Format)
		}
		if state.IsStageDir(path) {
			return summary(cfg, path, out)
		}
		return listStages(cfg, path, out)
	}
	if !state.IsStageDir(path) {
		stages, _ := state.Stages(path)
		return stage.Usagef("state-dump: %s is a checkpoint root; name a stage with --stage (stages: %s)", path, strings.Join(stages, ", "))
	}
	return dumpState(cfg, path, out)
}

// Command returns the cobra command of `streamkit state-dump`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit state-dump`: its usage, help, flags and examples (docs/cli/state-dump.md).
func CommandSpec() cli.Spec {
	var cfg Config
	var epoch int64
	var diffSpec []uint
	return cli.Spec{
		Use:   "state-dump DIR",
		Short: "Inspect, filter, diff and export the checkpointed state and offsets of a pipeline",
		Long: `state-dump opens a checkpoint directory read-only: it never takes a stage's lock and never
writes, so it is safe on a running pipeline, and it reads only epochs whose files are complete.

  state-dump ROOT                 lists the stages under a $STREAMKIT_CHECKPOINT root
  state-dump STAGE_DIR            shows a stage: tool, options, fingerprint, committed epoch,
                                  retained epochs with sizes and times, source positions,
                                  watermark, state key counts (--format json: one document)
  state-dump ROOT --stage NAME    reconstructs the stage's keyed state as of the committed epoch
                                  (--epoch N for another) from its snapshot and changelogs, one
                                  row per key: the key columns, then the state columns; as a
                                  table, JSON lines, CSV, or an Arrow IPC stream (--format arrow);
                                  a stage run by keyby --shards (NAME.shard-0, NAME.shard-1, …)
                                  as one table with a first column _shard
  state-dump ROOT --offsets       the source positions: per Kafka partition the committed and
                                  the newest write-ahead-log offset (--lag -b BROKERS adds the
                                  brokers' log start and end offsets and the lag), files read
                                  and planned for read-files, the table's newest version for
                                  read-delta, other sources as recorded
  state-dump TABLE --offsets --flow F
                                  a consumer group's progress (read-kafka --consumer-group):
                                  per partition the txn action of flow F in the Delta table
                                  TABLE (committed = version + 1, the next offset to read;
                                  committed_epoch = the table version); --lag as above

--key 'column=value' keeps matching rows (dot paths, key or state columns); --diff A,B lists
the keys added, removed and changed from epoch A to B; --expiring D keeps the keys that a TTL
(dedup) or the allowed lateness (window) will expire within D of the current watermark.

An expect stage's summary adds each retained epoch's passed_records and failed_records per
expectation and its dropped_records, and the totals as of the committed epoch (--format json:
data_quality_epochs, data_quality_total, with the names of Lakeflow's event log); its rows
(--stage) are the totals, one per expectation.

A window stage's rows are its open windows: window_start, window_end, the partial aggregates'
accumulators, and fired (the window was emitted and is kept for late rows). At end=final every
window with fired=false is emitted with these aggregates.

--lag connects like read-kafka: -b, --tls-ca, --tls-cert/--tls-key, --sasl-mechanism with
--sasl-user and the password from --sasl-password-file or $STREAMKIT_KAFKA_PASSWORD. The end
offset is the last stable offset under read_committed (the stage's --isolation, the default),
the high watermark under read_uncommitted; lag = end − committed position, wal_lag = end −
newest WAL position. topic_id is the topic's ID (KIP-516) the checkpoint recorded (empty in a
checkpoint written before IDs were recorded); with --lag, a topic whose ID on the brokers
differs has the status "topic re-created" (read-kafka refuses it unless --on-data-loss says
otherwise).

A corrupt or truncated file is reported with its path and the reason (exit 1); the other
epochs still show.`,
		Examples: []string{
			"# What does each stage of a pipeline remember?\nstreamkit state-dump ./ckpt/orders",
			"# One stage: epochs, sizes, watermark, positions\nstreamkit state-dump ./ckpt/orders/dedup --format json",
			"# The dedup state as JSON lines, filtered to one key\nstreamkit state-dump ./ckpt/orders --stage dedup --format json --key value.order_id=42",
			"# Keys added, removed or changed between epochs 10 and 12\nstreamkit state-dump ./ckpt/orders --stage window --diff 10,12",
			"# Windows whose allowed lateness runs out within 5 minutes of the watermark\nstreamkit state-dump ./ckpt/orders --stage window --expiring 5m",
			"# How far behind the brokers is the pipeline?\nstreamkit state-dump ./ckpt/orders --offsets --lag -b 127.0.0.1:9092",
			"# Export the window state into a Delta table\nstreamkit state-dump ./ckpt/orders --stage window --format arrow | streamkit write-delta ./lake/window_state --mode overwrite",
		},
		Args: cli.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) error {
			cfg.Dir = args[0]
			if epoch < 0 {
				return stage.Usagef("state-dump: --epoch must be ≥ 1")
			}
			cfg.Epoch = uint64(epoch)
			if len(diffSpec) > 0 {
				if len(diffSpec) != 2 {
					return stage.Usagef("state-dump: --diff takes two epochs, e.g. --diff 10,12")
				}
				cfg.Diff = []uint64{uint64(diffSpec[0]), uint64(diffSpec[1])}
			}
			if len(cfg.Conn.Brokers) > 0 && !cfg.Lag {
				return stage.Usagef("state-dump: -b is for --lag (compare Kafka positions with the brokers' end offsets)")
			}
			if cfg.Lag && len(cfg.Conn.Brokers) == 0 {
				return stage.Usagef("state-dump: --lag needs the brokers: -b HOST:PORT")
			}
			cfg.Color = cli.Color(cmd.OutOrStdout())
			err := Run(cmd.Context(), cfg, cmd.OutOrStdout())
			if errors.Is(err, stage.ErrStop) || errors.Is(err, syscall.EPIPE) {
				return nil // the reader of stdout went away (| head): done, as print is
			}
			return err
		},
		Flags: func(f *pflag.FlagSet) {
			f.StringVar(&cfg.Stage, "stage", "", "stage whose keyed state to reconstruct (a directory name under DIR)")
			f.Int64Var(&epoch, "epoch", 0, "epoch to reconstruct (default: the newest committed one)")
			f.StringVar(&cfg.Format, "format", FormatTable, "output: table, json (JSON lines; an indented document for a stage summary), csv, or arrow (an IPC stream)")
			f.StringVar(&cfg.Key, "key", "", "keep only rows whose column equals a value, e.g. value.user_id=42")
			f.UintSliceVar(&diffSpec, "diff", nil, "two epochs A,B: list keys added, removed and changed from A to B")
			cli.DurationVar(f, &cfg.Expiring, "expiring", 0, "keep keys a TTL (dedup) or allowed lateness (window) expires within this long of the watermark")
			f.BoolVar(&cfg.Offsets, "offsets", false, "show the source positions: Kafka offsets per partition, files read and pending, Delta versions, other sources as recorded")
			f.BoolVar(&cfg.Lag, "lag", false, "with --offsets: compare Kafka positions with the brokers' end offsets (needs -b)")
			cli.DurationVar(f, &cfg.Timeout, "timeout", 30*time.Second, "with --lag: bound on the broker requests")
			f.StringVar(&cfg.Flow, "flow", "", "with --offsets: DIR is the Delta table of a consumer group; show the progress its txn actions of this flow record")
			f.StringVar(&cfg.AppID, "app-id", "", "with --offsets and --topic: as --flow, for the txn appIds <app>-<partition> (read-kafka --app-id, kafka-delta-ingest's app_id)")
			f.StringVar(&cfg.Topic, "topic", "", "with --app-id: the topic whose partitions its appIds name")
			cli.KafkaFlags(f, &cfg.Conn)
		},
	}
}

// shardDirs are the stage directories of stage name run as shards of keyby --shards, under dir
// (name.shard-0, name.shard-1, …, without gaps), shard i at index i; nil when there are none.
func shardDirs(dir, name string) []string {
	var out []string
	for i := 0; ; i++ {
		p := state.Join(dir, name+".shard-"+strconv.Itoa(i))
		if !state.IsStageDir(p) {
			return out
		}
		out = append(out, p)
	}
}
