package expect

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/expr"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/tools/cli"
)

// Command returns the cobra command of `streamkit expect`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit expect`: its usage, help, flags and examples (docs/cli/expect.md).
func CommandSpec() cli.Spec {
	var cfg Config
	var raw []rawExpectation
	o := stage.Options{Tool: "expect"}
	return cli.Spec{
		Use:   "expect",
		Short: "Check data-quality expectations on every row: count, drop or fail (Lakeflow expectations)",
		Long: `expect checks named conditions on every row, as Lakeflow's (Delta Live Tables') expectations:

  --expect 'NAME: PREDICATE'          keep a row that violates it; count it
  --expect-or-drop 'NAME: PREDICATE'  drop the row; count it (ON VIOLATION DROP ROW)
  --expect-or-fail 'NAME: PREDICATE'  stop the run at the row (ON VIOLATION FAIL UPDATE)

PREDICATE is a boolean Spark SQL expression over the input's columns (the language of select
and filter: dot paths, CASE, CAST, LIKE, IN, functions). Each flag may be repeated; NAME
(letters, digits, _ - . and spaces) must be unique. A row violates an expectation when the
predicate is false; NULL is no violation (as a SQL CHECK constraint: the failed rows are
COUNT(*) FILTER (WHERE NOT predicate)); write 'x IS NOT NULL AND …' to fail nulls. Every
expectation is evaluated over every input row, also over rows that another one drops, so each
counts passed + failed = the rows read.

--expect-or-fail exits 1 at the first violating row, naming the expectation, the row's source
position and the values of the columns the predicate references. It stops before the epoch's
barrier, so nothing of that epoch reaches the sink (write-delta commits nothing of it); an
earlier epoch that the sink was still committing when the stream broke off is replayed by the
next run.

Per epoch and since the first epoch, each expectation's passed_records and failed_records (and
the dropped_records of the stage) are counted with the names of Lakeflow's event log
(flow_progress.data_quality), shown in the status line and in --progress=json (member
data_quality), and kept in the checkpoint: a restart after a crash continues from the committed
epoch, so the counts are exactly those of an uninterrupted run. state-dump DIR/expect shows
each retained epoch's counts; state-dump DIR --stage expect the totals, one row per
expectation. A restart with other expectations is refused. Without a checkpoint the counts
start at 0 on every run. Dropped rows count as set aside for --max-bad-ratio (and the warning
when most rows of an epoch were).

--dropped-output FILE keeps the dropped rows, with a last column _failed_expectations (the
names of the --expect-or-drop expectations each row failed): an Arrow IPC stream (.arrow) or
JSON lines (.ndjson), synced at every barrier and, with a checkpoint, continued from the
committed epoch on a restart.

A predicate that does not parse or type-check is a usage error (exit 2) before the first row;
an evaluation error (ANSI: overflow, division by zero, a bad cast) exits 1 naming the row.

Functions: ` + strings.Join(expr.FunctionNames(), ", ") + `.`,
		Examples: []string{
			"# Count rows without an id or with a negative amount, keep them all\nstreamkit read-files 'orders/*.csv' | streamkit expect --expect 'has_id: id IS NOT NULL' --expect 'amount_ok: amount >= 0' | streamkit print",
			"# Drop rows with a bad amount (kept in dropped.ndjson), fail on a row without an id\nstreamkit read-files 'orders/*.csv' | streamkit expect --expect-or-drop 'amount_ok: amount >= 0' --expect-or-fail 'has_id: id IS NOT NULL' --dropped-output dropped.ndjson | streamkit write-delta ./lake/orders",
			"# Exactly-once counters with the pipeline's checkpoints, then each retained epoch's counts and the totals\nexport STREAMKIT_CHECKPOINT=./ckpt\nstreamkit read-files 'orders/*.csv' | streamkit expect --expect 'amount_ok: amount >= 0' | streamkit write-delta ./lake/orders\nstreamkit state-dump ./ckpt/expect",
		},
		Args: cli.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) error {
			cli.Fill(&o, cmd)
			for _, r := range raw {
				e, err := ParseExpectation(r.action, r.value)
				if err != nil {
					return err
				}
				cfg.Expectations = append(cfg.Expectations, e)
			}
			if cfg.Dataset == "" {
				cfg.Dataset = o.StageName()
			}
			x, err := New(cfg)
			if err != nil {
				return err
			}
			return stage.RunOperator(cmd.Context(), o, x)
		},
		Flags: func(f *pflag.FlagSet) {
			f.Var(expectFlag{Warn, &raw}, "expect", "an expectation 'NAME: PREDICATE': count the rows that violate it, keep them (repeatable)")
			f.Var(expectFlag{Drop, &raw}, "expect-or-drop", "an expectation 'NAME: PREDICATE': count and drop the rows that violate it (repeatable)")
			f.Var(expectFlag{Fail, &raw}, "expect-or-fail", "an expectation 'NAME: PREDICATE': fail the run (exit 1) at the first row that violates it, before its epoch commits (repeatable)")
			f.StringVar(&cfg.Dataset, "dataset", "", "the data set's name in the counters (Lakeflow's dataset; default: the stage name)")
			f.StringVar(&cfg.DroppedOutput, "dropped-output", "", "file for the rows --expect-or-drop drops, with their failed expectations: .arrow (Arrow IPC stream) or .ndjson (JSON lines)")
			cli.StageFlags(f, &o)
		},
	}
}
