// Package readkafka is the `streamkit read-kafka` tool: Kafka topics in, an Arrow IPC stream
// out, with Spark's Kafka source columns and replayable offsets (source/kafka).
package readkafka

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/source/kafka"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/tools/cli"
)

// Command returns the cobra command of `streamkit read-kafka`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit read-kafka`: its usage, help, flags and examples (docs/cli/read-kafka.md).
func CommandSpec() cli.Spec {
	var cfg kafka.Config
	var progressTable string
	so := stage.SourceOptions{Options: stage.Options{Tool: "read-kafka"}}
	return cli.Spec{
		Use:   "read-kafka -b HOST:PORT (-t TOPIC... | --pattern REGEX | --assign TOPIC:P,...) [--member I/N]",
		Short: "Read Kafka topics as an Arrow stream with replayable offsets",
		Long: `read-kafka consumes Kafka topic partitions and writes them as an Arrow IPC stream with the
columns of Spark's Kafka source: key (binary), value (binary), topic, partition (int32),
offset (int64), timestamp (timestamp[us, UTC]), timestampType (int32: 0 CreateTime,
1 LogAppendTime) and headers (list<struct<key string, value binary>>, null when a record has
none; order, repeated keys and null values kept). A null key or value (tombstone) stays null,
an empty one stays empty.

Partitions: -t (repeatable, several topics into one stream), --pattern (a regular expression
matching whole topic names; topics created later are picked up) or --assign topic:0,2.
--member I/N (with -t or --pattern) reads only partitions p with p mod N = I of each topic,
partitions added later too: N copies of one pipeline, --member 0/N to N-1/N, each with its
own checkpoint (on object storage, so any machine can run member I), share the topics
statically, also when a stateful stage (dedup, window) runs in between, which a consumer
group refuses. The checkpoint records I/N: a restart with another I/N is refused (changing
N needs new checkpoints, a new flow, for every member). Each member's write-delta commits as
its own flow (docs/protocol.md §13).

Positions are offsets per partition, written to the checkpoint's offsets WAL before every
barrier; a restart resumes after the last epoch the sink committed and replays later epochs
exactly. --start only applies to a checkpoint without a position:
  earliest (default) | latest | @2024-05-01T00:00:00Z or @<epoch ms> | -N (last N per
  partition) | Spark offsets JSON {"orders":{"0":42,"1":-2}} (-2 earliest, -1 latest)
--until ends the run: never (default, live) | now (every partition's end at start-up — the
last stable offset under read_committed — then, as --end says, end=pause with a checkpoint (the
next run continues after it: "available now", for cron) and end=final without one) |
@<time> | offsets JSON.

--isolation read_committed (default) never shows records of aborted or open transactions;
transaction markers are consumed but never emitted, so positions (and --group commits) end
past them. A checkpointed position that left the log (retention) or lies beyond its end
fails naming topic, partition and both ranges, unless --on-data-loss earliest|latest says
where to continue (Spark's failOnDataLoss). Positions also record each topic's ID (KIP-516,
{"orders":{"0":42,"topicId":"vG1lUgy4QnOxGfVtqsxKxQ"}}), so a topic deleted and re-created
under the same name is data loss too, even when the new log is longer than the checkpoint's
offset: the run fails naming the topic and both IDs; --on-data-loss earliest reads the new
topic from its earliest offset, latest from its end, with a warning. A checkpoint written
before IDs were recorded is read as it is and records the IDs from then on. In consumer-group
mode the progress table records each topic's ID beside its txn actions, with the same check
(docs/protocol.md §13).

--group ID commits each epoch's offsets to a consumer group once the sink has committed the
epoch, so kafka-consumer-groups.sh and lag monitors see progress; the checkpoint remains the
source of truth.

Consumer groups: --consumer-group NAME --progress-table TABLE joins the Kafka consumer group
NAME (cooperative-sticky balancer) and reads the partitions of the -t topics assigned to this
member; start as many copies as you like, on any machine, each ending in
"write-delta TABLE". Each partition's progress is a txn action in TABLE (appId
<flow>-<topic>-<partition>, version = the last offset consumed, as kafka-delta-ingest writes
it), committed by write-delta with the partition's rows; a member resumes a partition it is
assigned from there, so no checkpoint is kept (--checkpoint is refused) and a new machine with
an empty disk can take over. A revoked partition's epoch is cut, committed and then released; a
member that lost its partitions (session timeout) fails without committing more, and one that
commits late (a paused zombie) has its commit refused by the table. --until now fixes each
partition's end when it is assigned. --flow names the appIds (default: the group name), so
kafka-delta-ingest with --app_id <flow>-<topic> continues the table and the other way round;
--app-id APP (one topic) names them APP-<partition>, to continue a kafka-delta-ingest table of
another app_id. --session-timeout and --revoke-wait tune the group (docs/protocol.md §13).

Decoding: --key-format/--value-format string keeps UTF-8 text (other bytes leave the column
null and are rescued); json with --key-schema/--value-schema (Spark DDL such as
'order_id BIGINT, user STRUCT<id: STRING>', a JSON Schema, an Avro schema; inline, @file, or
the path of an existing file such as orders.json when the text is not valid DDL)
turns the key or value into a struct column, so value.user.id works downstream. Fields that do
not fit go to the struct's _rescued_data member (a field that is not valid UTF-8: null, its
verbatim value base64 under <field>_base64, one warning per partition); a key or value that is not a JSON object
leaves the struct null and lands, raw, in the top-level _rescued_data column with the reason
and its topic/partition@offset. Nothing is dropped silently.

Avro: --value-format avro (or --key-format) with --value-schema FILE.avsc reads plain Avro
binary written with that schema. With --schema-registry URL values are in the Confluent wire
format (magic byte 0, 4-byte big-endian schema id, Avro binary): each writer schema is fetched
once per id (GET /schemas/ids/{id}) and resolved into the reader schema by the Avro
specification's schema resolution (fields added with defaults, removed fields, promotions,
enum defaults, union branches). The reader schema is --value-schema when given, else the
latest version of subject <topic>-value at start-up (one topic only). Types: records →
struct (value.user.id works downstream), arrays → list, maps → map<string,V>, [null,T] →
nullable T, other unions → struct with one member per branch, enums → string, bytes →
binary, fixed → fixed_size_binary, decimal → decimal128, date → date32, timestamp-millis/
-micros → timestamp[us, UTC], local-timestamp-* → timestamp[us], uuid → string. The column's
field metadata holds streamkit.avro_schema and, from the registry, streamkit.schema_id,
streamkit.schema_subject and streamkit.schema_version. A bad magic byte, truncated or
corrupt Avro, an unknown schema id or an unreachable registry leave the column null and rescue
the raw record with the reason. A writer schema that the reader schema cannot resolve (a
reader field without a default that the writer lacks, a type that neither matches nor
promotes) is a configuration error, not a bad record: the run fails at the first record of
that schema id, naming both schema ids and the field, unless --on-schema-mismatch rescue
(Spark's from_avro PERMISSIVE; fail is its FAILFAST) rescues those records. Registry basic auth:
--schema-registry-user with the password from --schema-registry-password-file or the
variable named by --schema-registry-password-env (never on the command line);
--schema-registry-ca verifies https.

--columns chooses the output columns in order, as Spark's select does: names of the columns
above, key.* / value.* to flatten a json or avro key or value into its members, and dot paths
such as value.seq or value.user.id to pick one member (named by its last part, as Spark names
it). Members are nullable: a tombstone or undecodable record makes them null. E.g. --columns
'value.*,partition,offset' is Spark's select("v.*", "partition", "offset"). _rescued_data
always stays, last; when members of a json value (or key) are chosen, its own
_rescued_data member joins it: with members of one of them, a row's _rescued_data is that
member's object as it is, or, when the record also has a top-level object, that object with
the member's under "value._rescued_data" (or "key._rescued_data"); with members of both key
and value, every member object goes under its label, "key._rescued_data" and
"value._rescued_data", so the origin of a field is always known. An avro record with a field
of its own named _rescued_data cannot be picked apart (a usage error): output the whole value,
or rename the field in --value-schema. With --schema-registry and no --value-schema the
members are those of the registry's latest schema. Columns left out are not written
downstream.

--bad-records-output PATH also writes every record that did not decode as a JSON line (topic,
partition, offset, timestamp, reason, key and value as text or *_base64). With the checkpoint
it is exactly once: a restart cuts the lines of uncommitted epochs, which their replay writes
again.

Security: --tls-ca, --tls-cert/--tls-key (mTLS), --sasl-mechanism PLAIN|SCRAM-SHA-256|
SCRAM-SHA-512 with --sasl-user and the password from --sasl-password-file or the environment
variable named by --sasl-password-env (default STREAMKIT_KAFKA_PASSWORD); it is never taken
from the command line and never logged.`,
		Examples: []string{
			"# Everything in a topic now, then stop (cron-friendly, resumes next time)\nstreamkit read-kafka -b 127.0.0.1:9092 -t orders --until now --checkpoint ckpt/orders | streamkit print --checkpoint ckpt/print",
			"# Live, two topics, string values, at most 100k records per epoch\nstreamkit read-kafka -b 127.0.0.1:9092 -t orders -t refunds --value-format string --max-records-per-epoch 100000 | streamkit print --format json",
			"# Avro values in the Confluent wire format, writer schemas from a schema registry\nstreamkit read-kafka -b 127.0.0.1:9092 -t orders --value-format avro --schema-registry http://127.0.0.1:8081 --bad-records-output bad.ndjson | streamkit keyby value.user_id",
			"# Member 1 of 3 static members, its checkpoint in a bucket (run 0/3 and 2/3 likewise, on any machines)\nexport STREAMKIT_CHECKPOINT=s3://lake/ckpt/orders_dedup/member-1\nstreamkit read-kafka -b kafka:9092 -t orders --member 1/3 --value-format json --value-schema orders.json --columns 'value.*,partition,offset' | streamkit dedup --key order_id | streamkit write-delta s3://lake/orders_dedup",
			"# SCRAM over TLS, password from a file\nstreamkit read-kafka -b kafka:9094 -t orders --tls-ca ca.pem --sasl-mechanism SCRAM-SHA-512 --sasl-user app --sasl-password-file /run/secrets/kafka | streamkit print",
		},
		Args: cli.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) error {
			cli.Fill(&so.Options, cmd)
			if progressTable != "" {
				store, err := cli.OpenStore(cmd.Context(), progressTable, false)
				if err != nil {
					return cli.TableError("read-kafka: --progress-table", err)
				}
				cfg.ProgressTable = store
			}
			if cfg.ConsumerGroup != "" && so.Options.CheckpointDir() != "" {
				return stage.Usagef("read-kafka: --consumer-group keeps its progress in --progress-table, not in a checkpoint: run it without --checkpoint (and without $%s)", stage.EnvCheckpoint)
			}
			src, err := kafka.New(cfg)
			if err != nil {
				return err
			}
			so.StateOptions = cfg.StateOptions()
			err = stage.RunSource(cmd.Context(), so, src)
			var ie *state.IncompatibleError
			if cfg.Member != "" && errors.As(err, &ie) {
				return fmt.Errorf("%w (--member I/N reads partitions p mod N = I, so another member count would read other partitions than the checkpoint holds: give every member a new checkpoint, a new flow, to change N)", err)
			}
			return err
		},
		Flags: func(f *pflag.FlagSet) {
			cli.KafkaFlags(f, &cfg.Conn)
			f.StringArrayVarP(&cfg.Topics, "topic", "t", nil, "topic to read (repeatable)")
			f.StringVar(&cfg.Pattern, "pattern", "", "read every topic whose whole name matches this regular expression")
			f.StringArrayVar(&cfg.Assign, "assign", nil, "read these partitions only: topic:0,2 or topic:0-3 (repeatable)")
			f.StringVar(&cfg.Member, "member", "", "be member I of N static members (I/N, 0 ≤ I < N): read partitions p mod N = I of the -t or --pattern topics; recorded in the checkpoint")
			f.StringVar(&cfg.Start, "start", "earliest", "where a new checkpoint starts: earliest, latest, @<RFC 3339|epoch ms>, -N, or offsets JSON")
			f.StringVar(&cfg.Until, "until", "never", "where reading ends: never (live), now (the end at start-up; then end=pause with a checkpoint, final without), @<time>, or offsets JSON")
			f.StringVar(&cfg.Isolation, "isolation", kafka.ReadCommitted, "read_committed (skip aborted and open transactions) or read_uncommitted")
			f.StringVar(&cfg.OnDataLoss, "on-data-loss", kafka.DataLossFail, "a position outside the log or a re-created topic (new topic ID): fail, or continue at the earliest or latest offset")
			cli.Choices(f, "on-data-loss", "fail", "earliest", "latest")
			f.StringVar(&cfg.Group, "group", "", "commit each committed epoch's offsets to this consumer group (monitoring only)")
			f.StringVar(&cfg.ConsumerGroup, "consumer-group", "", "join this Kafka consumer group and read the partitions it assigns to this member, resuming each from --progress-table")
			f.StringVar(&progressTable, "progress-table", "", "with --consumer-group: the Delta table write-delta writes, whose per-partition txn actions are the group's progress")
			f.StringVar(&cfg.Flow, "flow", "", "with --consumer-group: the flow naming the table's txn appIds <flow>-<topic>-<partition> (default: the group name)")
			f.StringVar(&cfg.AppID, "app-id", "", "with --consumer-group and one -t topic: name the txn appIds <app>-<partition> instead, as kafka-delta-ingest's --app_id does")
			cli.DurationVar(f, &cfg.SessionTimeout, "session-timeout", 0, "with --consumer-group: the group session timeout (default 45s)")
			cli.DurationVar(f, &cfg.RevokeWait, "revoke-wait", 0, "with --consumer-group: how long a revoked partition waits for its last epoch in --progress-table before it is released (default 30s)")
			cli.DurationVar(f, &cfg.GroupCommitWait, "group-commit-wait", 0, "at the end of a run, wait this long for the sink's last commit before committing --group (default 10s)")
			f.Int64Var(&cfg.MaxRecordsPerEpoch, "max-records-per-epoch", 0, "at most this many records per epoch (0: no limit), spread over the partitions in proportion to their lag (Spark's maxOffsetsPerTrigger)")
			f.StringVar(&cfg.KeyFormat, "key-format", kafka.FormatBinary, "decode keys as binary, string, json (with --key-schema) or avro (--key-schema and/or --schema-registry)")
			cli.Choices(f, "key-format", "binary", "string", "json", "avro")
			f.StringVar(&cfg.ValueFormat, "value-format", kafka.FormatBinary, "decode values as binary, string, json (with --value-schema) or avro (--value-schema and/or --schema-registry)")
			cli.Choices(f, "value-format", "binary", "string", "json", "avro")
			f.StringVar(&cfg.KeySchema, "key-schema", "", "schema of json keys (Spark DDL, JSON Schema, Avro or Spark JSON: inline, @file, or a file path that is not valid DDL), or the Avro reader schema of avro keys")
			f.StringVar(&cfg.ValueSchema, "value-schema", "", "schema of json values (Spark DDL, JSON Schema, Avro or Spark JSON: inline, @file, or a file path that is not valid DDL such as orders.json), or the Avro reader schema of avro values")
			cfg.Registry.AddFlags(f)
			f.StringVar(&cfg.OnSchemaMismatch, "on-schema-mismatch", kafka.SchemaMismatchFail, "an avro writer schema the reader schema cannot resolve: fail (naming both schema ids and the field) or rescue (column null, record in _rescued_data)")
			f.StringVar(&cfg.BadRecords, "bad-records-output", "", "also write records whose key or value did not decode to this JSON-lines file (topic, partition, offset, reason, raw bytes)")
			cli.Alias(f, "bad-records-output", "bad-records")
			f.StringSliceVar(&cfg.Columns, "columns", nil, "output only these columns, in order (e.g. value.*,partition,offset: value.* flattens a json or avro value, value.seq picks one member); _rescued_data is always kept")
			cli.DurationVar(f, &cfg.DiscoveryInterval, "discovery-interval", 0, "how often live reading looks for new partitions and topics (default 10s)")
			cli.SourceFlags(f, &so)
		},
	}
}
