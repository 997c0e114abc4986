// Package writekafka is the `streamkit write-kafka` tool: an Arrow IPC stream in, Kafka
// records out (sink/kafka).
package writekafka

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/sink/kafka"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/tools/cli"
)

// Command returns the cobra command of `streamkit write-kafka`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit write-kafka`: its usage, help, flags and examples (docs/cli/write-kafka.md).
func CommandSpec() cli.Spec {
	var cfg kafka.Config
	o := stage.Options{Tool: "write-kafka"}
	return cli.Spec{
		Use:   "write-kafka -b HOST:PORT [-t TOPIC]",
		Short: "Produce each row of an Arrow stream as a Kafka record",
		Long: `write-kafka produces one Kafka record per input row, as Spark's Kafka sink does: key, value,
headers and timestamp come from the columns "key", "value", "headers"
(list<struct<key, value>>) and "timestamp" when the input has them (read-kafka's columns), or
from the columns named by --key, --value, --headers, --timestamp ("none" disables one). Binary
and string columns are written as their bytes, other types as JSON; --value-format json writes
the whole row as a JSON object, spelled as Spark's to_json writes it, so read-kafka
--value-format json reads it back unchanged: NaN and infinities as "NaN", "Infinity" and
"-Infinity" at every depth, timestamps as ISO 8601 with the fraction digits they need (nine
for nanoseconds), timestamp_ntz without a zone, maps as objects, and null fields left out
(Spark's ignoreNullFields), so a row without rescued data has no "_rescued_data" member.

Kafka timestamps are milliseconds since 1970 and cannot be negative (-1 means "none"): a
timestamp before 1970 stops write-kafka naming the row, unless --pre-epoch-timestamp now
(such records get no timestamp, so the producer stamps its clock, as for a null one).

--value-format avro writes the --value column, or without --value the whole row as a record,
as Avro binary; --key-format avro does so for the key column. The writer schema is
--value-schema/--key-schema (inline JSON, @file or FILE.avsc; columns are matched to fields by
name, missing ones take the field default) or derived from the Arrow types (struct → record,
list → array, map → map, nullable → ["null", T], decimal → bytes decimal, date32 → date,
timestamp with a zone → timestamp-millis/-micros, without → local-timestamp-*). With
--schema-registry URL the schema is registered under subject <topic>-value (<topic>-key) and
records are written in the Confluent wire format (magic byte 0, 4-byte schema id, Avro), as
Confluent's serializers do; basic auth: --schema-registry-user with the password from
--schema-registry-password-file or the variable --schema-registry-password-env names. A row
that does not fit the schema stops the stage naming the row and the field.

The topic is -t, or each row's "topic" column. A topic that does not exist is created by the
broker, as for Kafka's own producers, when the broker allows it (auto.create.topics.enable, the
default; with its num.partitions and default.replication.factor); otherwise write-kafka stops
saying so (create it with kafka-topics.sh --create). Records are partitioned by key (murmur2, as
the Java client), with an idempotent producer and acks=all.

On every barrier it flushes the epoch and fails unless every record was acknowledged; then it
writes commit markers (at-least-once). With --transactional-id ID every epoch is one Kafka
transaction committed at its barrier, together with the epoch number (consumer group ID,
topic partition 0), so a replay after a crash never commits an epoch twice: read_committed
consumers see each record exactly once. Epochs up to the one Kafka holds are aborted as
replays, so --transactional-id requires a replayable input (its source, and dedup or window
in between, keep a checkpoint; schema metadata streamkit.replayable=true): a stream from a source without a checkpoint, which
numbers its epochs from 1 on every run, is refused at its first barrier (exit 2).`,
		Examples: []string{
			"# Copy a topic (keys, values, headers and timestamps preserved)\nstreamkit read-kafka -b 127.0.0.1:9092 -t orders --until now | streamkit write-kafka -b 127.0.0.1:9092 -t orders-copy",
			"# Exactly once into Kafka\nexport STREAMKIT_CHECKPOINT=ckpt\nstreamkit read-kafka -b 127.0.0.1:9092 -t in | streamkit write-kafka -b 127.0.0.1:9092 -t out --transactional-id copy-in-out",
			"# Rows as Avro in the Confluent wire format, schema registered under orders-value\nstreamkit read-files 'orders/*.parquet' | streamkit write-kafka -b 127.0.0.1:9092 -t orders --value-format avro --schema-registry http://127.0.0.1:8081",
			"# Rows as JSON values keyed by a column\nstreamkit read-files 'orders/*.csv' | streamkit write-kafka -b 127.0.0.1:9092 -t orders --key order_id --value-format json",
		},
		Args: cli.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) error {
			cli.Fill(&o, cmd)
			s, err := kafka.New(cfg)
			if err != nil {
				return err
			}
			o.StateOptions = cfg.StateOptions()
			return stage.RunOperator(cmd.Context(), o, s)
		},
		Flags: func(f *pflag.FlagSet) {
			cli.KafkaFlags(f, &cfg.Conn)
			f.StringVarP(&cfg.Topic, "topic", "t", "", "topic to write (default: each row's \"topic\" column)")
			f.StringVar(&cfg.Key, "key", "", "key column (default: \"key\" when present; none: no key)")
			f.StringVar(&cfg.Value, "value", "", "value column (default: \"value\")")
			f.StringVar(&cfg.ValueFormat, "value-format", "", "json: the whole row as a JSON object; avro: the --value column, or the whole row, as Avro (default: the value column's bytes)")
			cli.Choices(f, "value-format", "json", "avro")
			f.StringVar(&cfg.KeyFormat, "key-format", "", "avro: the key column as Avro (default: the key column's bytes)")
			cli.Choices(f, "key-format", "avro")
			f.StringVar(&cfg.ValueSchema, "value-schema", "", "Avro writer schema of --value-format avro (inline, @file or FILE.avsc; default: derived from the columns)")
			f.StringVar(&cfg.KeySchema, "key-schema", "", "Avro writer schema of --key-format avro (default: derived from the key column)")
			cfg.Registry.AddFlags(f)
			f.StringVar(&cfg.Headers, "headers", "", "headers column, list<struct<key, value>> (default: \"headers\" when present; none: no headers)")
			f.StringVar(&cfg.Timestamp, "timestamp", "", "timestamp column (default: \"timestamp\" when present; none: the producer's clock)")
			f.StringVar(&cfg.PreEpochTimestamp, "pre-epoch-timestamp", kafka.PreEpochFail, "a timestamp before 1970, which Kafka cannot store: fail (stop, naming the row) or now (no timestamp: the producer's clock)")
			f.StringVar(&cfg.TransactionalID, "transactional-id", "", "one Kafka transaction per epoch under this id (exactly-once to read_committed consumers)")
			cli.DurationVar(f, &cfg.TransactionTimeout, "transaction-timeout", 0, "broker-side transaction timeout; an epoch must finish within it (default 60s)")
			cli.StageFlags(f, &o)
		},
	}
}
