// Package generate is the `streamkit generate` tool: deterministic synthetic data as an Arrow
// IPC stream, the toolkit's answer to Spark's rate source and Flink's datagen connector. It is
// a replayable source: row i is a pure function of --seed, the column and i, so its offsets WAL
// holds just the next row index and a restart replays the uncommitted epochs exactly.
package generate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/codec/schema"
	gen "github.com/streamkit/streamkit/source/generate"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/tools/cli"
)

const long = `generate writes synthetic rows as an Arrow IPC stream: --rows N then the end (bounded), or
--rate R live (rows released as the clock advances), or as fast as the pipe takes them when
neither is given. Without --schema or --preset the rows are those of Spark's rate source:
timestamp (timestamp) and value (bigint: 0, 1, 2 …). Each column has a generator
(--gen 'COLUMN=SPEC', repeatable, dot paths for nested fields, COLUMN.element for a list's
elements); a column without one gets its type's default.

Determinism: row i's values are a pure function of --seed, the column path and i (a
counter-based splitmix64 generator), independent of --batch-rows, of other columns and of
restarts. The checkpoint position is the next row index, so a replay after a crash reproduces
exactly the same epochs; a restart with another --schema, --gen, --seed, --duplicates or
--rate is refused (--rows may grow: the next run continues where the last one ended).

Spec grammar:  COLUMN=GENERATOR[(ARG, …)] [nulls=FRACTION]
  Arguments are bare text or quoted ('a, b' or "a, b"); quote values containing , ( ) or :.
  nulls=F makes a fraction F of the column's values null (nulls=F alone keeps the default).

Generators:
  sequence[(start[, step])]    start + i·step (default 0, 1; times: a time and a duration)
  uniform(min, max)            uniform; integers and times inclusive, floats in [min, max)
  normal(mean, stddev)         Gaussian (rounded on integer columns)
  zipf(s[, v[, imax]])         skewed keys k in [0, imax], P(k) ∝ (v+k)^−s; s > 1, v ≥ 1
                               (defaults v = 1, imax = 1000000); as Go's rand.NewZipf
  choice(a, b, …)              one of the values; weights as value:weight, e.g.
                               choice(web:6, mobile:3, api:1)
  constant(value)              always value
  words[(n)] | words(min, max) n (or min…max) words from a 256-word English list
  names                        "First Last" from 64 × 65 names
  uuid                         random version-4 UUID (text; 16 bytes on binary columns)
  timestamp[(start[, rate[, jitter]])]
                               start + i/rate; start is RFC 3339, a date or now (the run's
                               start, kept in the checkpoint); rate like 1000/s or 5/ms; each
                               value minus a uniform jitter in [0, jitter] (e.g. 2s) for
                               out-of-order event times. Timestamps, dates, integers (epoch
                               ms) and strings (RFC 3339).
  list(min, max) | list(n)     length of a list column (default list(0, 3))
  nexmark(FIELD)               a field of Nexmark's Bid events (see --preset)

Defaults: integers uniform(0, 1000) (tinyint 0…100), floats uniform(0, 1), decimals
uniform(0, 1000), strings words(1, 3), booleans a fair coin, binary uuid, dates uniform over
2024, timestamps timestamp(2024-01-01T00:00:00Z, 1000/s), or live timestamp(now, --rate).

--duplicates F makes each row (but the first), with probability F, an exact copy of an
earlier row chosen uniformly among the previous --duplicates-within rows (for dedup tests).

--preset nexmark-bids is the Bid stream of the Nexmark benchmark (nexmark-flink):
  auction   1000 + a hot auction (p = 1/2), else uniform over the ~110 auctions in flight
  bidder    2000 + a hot bidder (p = 3/4), else uniform over the 1000 active people
  price     round(100·10^(6u)) cents, log-uniform from 1.00 to 1,000,000.00
  channel   Google, Facebook, Baidu or Apple (p = 1/2), else channel-N, N uniform < 10000
  url       a fixed random nexmark.com url per channel (&channel_id=… for 9 in 10 channels)
  date_time 10,000 events/s (46 of 50 events are bids) from 2024-01-01 (live: now, at
            --rate), millisecond precision; declared as the event time
  extra     54–81 random letters (a bid of ~100 bytes)`

// RateDDL is the schema without --schema or --preset: Spark's rate source (value counts from 0,
// timestamp advances at --rate, or 1000/s).
const RateDDL = "timestamp timestamp, value bigint"

// Command returns the cobra command of `streamkit generate`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit generate`: its usage, help, flags and examples (docs/cli/generate.md).
func CommandSpec() cli.Spec {
	var cfg gen.Config
	var ddl, rate, preset string
	var gens []string
	o := stage.SourceOptions{Options: stage.Options{Tool: "generate"}}
	return cli.Spec{
		Use:   "generate",
		Short: "Deterministic synthetic data: distributions, rates, duplicates, Nexmark bids",
		Long:  long,
		Examples: []string{
			"# Spark's rate source: timestamp and value, 100 rows per second\nstreamkit generate --rate 100/s | streamkit print",
			"# 1000 rows of three columns, as CSV\nstreamkit generate --schema 'id bigint, user string, amount double' --gen id=sequence --gen user=names --gen 'amount=normal(100, 15) nulls=0.05' --rows 1000 | streamkit print --format csv",
			"# A live, checkpointed stream of skewed keys at 1000 rows per second\nstreamkit generate --schema 'k int, v double, ts timestamp' --gen 'k=zipf(1.2, 1, 1000)' --rate 1000/s --checkpoint ./ckpt/gen | streamkit print",
			"# Out-of-order event times and 10% duplicates, for dedup\nstreamkit generate --schema 'id bigint, ts timestamp' --gen id=sequence --gen 'ts=timestamp(2024-05-01T00:00:00Z, 100/s, 2s)' --duplicates 0.1 --rows 100000 | streamkit dedup --key id | streamkit print --limit 5",
			"# Nested fields and lists\nstreamkit generate --schema 'user struct<id:int, name:string>, tags array<string>' --gen user.name=names --gen 'tags=list(1, 3)' --gen 'tags.element=choice(red, green, blue)' --rows 10 | streamkit print --format json",
			"# The Nexmark Bid stream\nstreamkit generate --preset nexmark-bids --rows 1000000 | streamkit print --limit 10",
		},
		Args: cli.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) error {
			cli.Fill(&o.Options, cmd)
			src, err := build(&cfg, ddl, rate, preset, gens, cmd.Flags().Changed("watermark-delay"))
			if err != nil {
				return err
			}
			o.StateOptions = stateOptions(&cfg, src)
			return stage.RunSource(cmd.Context(), o, src)
		},
		Flags: func(f *pflag.FlagSet) {
			f.StringVar(&ddl, "schema", "", "columns as Spark DDL ('id bigint, user struct<name:string>'), a JSON/Avro schema, or @file (or a file path that is not valid DDL)")
			f.StringArrayVar(&gens, "gen", nil, "a column's generator, 'COLUMN=SPEC' (repeatable; see above)")
			f.StringVar(&preset, "preset", "", "a built-in schema with generators: "+gen.PresetNames())
			f.Int64Var(&cfg.Rows, "rows", 0, "end after this many rows (0: unbounded)")
			f.StringVar(&rate, "rate", "", "live: rows per second, e.g. 1000 or 1000/s or 5/ms (default: as fast as the pipe takes them)")
			f.Uint64Var(&cfg.Seed, "seed", 0, "seed of all generators; the same seed gives the same rows")
			f.Float64Var(&cfg.Duplicates, "duplicates", 0, "fraction of rows that copy an earlier row exactly")
			f.Int64Var(&cfg.DuplicatesWithin, "duplicates-within", gen.DefaultDuplicatesWithin, "a duplicate copies one of this many previous rows")
			f.Int64Var(&cfg.MaxRecordsPerEpoch, "max-records-per-epoch", 0, "at most this many rows per epoch (0: no limit); Spark's maxOffsetsPerTrigger")
			f.StringVar(&cfg.EventTime, "event-time", "", "declare this timestamp column as the event time (default: the preset's)")
			cli.DurationVar(f, &cfg.WatermarkDelay, "watermark-delay", 0, "emit watermarks: max event time so far − delay (needs --event-time)")
			cli.SourceFlags(f, &o)
		},
	}
}

func build(cfg *gen.Config, ddl, rate, preset string, gens []string, watermarks bool) (*gen.Source, error) {
	if preset != "" {
		p, ok := gen.Presets[preset]
		if !ok {
			return nil, stage.Usagef("generate: --preset %q: want one of %s", preset, gen.PresetNames())
		}
		if ddl != "" {
			return nil, stage.Usagef("generate: give --schema or --preset, not both")
		}
		ddl = p.DDL
		gens = gen.MergeGens(p.Gens, gens)
		if cfg.EventTime == "" {
			cfg.EventTime = p.EventTime
		}
	}
	if ddl == "" {
		// Spark's rate source: timestamp and value, one row per 1/rate seconds.
		ddl = RateDDL
		gens = gen.MergeGens([]string{"value=sequence"}, gens)
	}
	s, err := schema.Load(ddl)
	if err != nil {
		return nil, stage.Usagef("generate: --schema: %v", err)
	}
	if rate != "" {
		r, err := gen.ParseRate(rate)
		if err != nil {
			return nil, stage.Usagef("generate: --rate: %v", err)
		}
		cfg.Rate = r
	}
	cfg.Schema, cfg.Gens, cfg.Watermarks = s, gens, watermarks
	return gen.NewSource(*cfg)
}

// stateOptions are the options that shape the rows: a restart with other values would not
// replay the same epochs, so metadata.json records them and a mismatch is refused. --rows
// may change (a longer run continues where the last one ended).
func stateOptions(cfg *gen.Config, src *gen.Source) map[string]string {
	return map[string]string{
		"schema":            schema.DDL(src.Generator().Schema()),
		"gen":               strings.Join(cfg.Gens, "\n"),
		"seed":              strconv.FormatUint(cfg.Seed, 10),
		"duplicates":        fmt.Sprint(cfg.Duplicates),
		"duplicates-within": strconv.FormatInt(cfg.DuplicatesWithin, 10),
		"rate":              fmt.Sprint(cfg.Rate),
	}
}
