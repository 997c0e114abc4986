package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/internal/duration"
	"github.com/streamkit/streamkit/internal/kafkaconn"
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
	DurationVar(f, &o.EpochInterval, "epoch-interval", 5*time.Second, "cut a checkpoint epoch every interval, also while no rows arrive (an idle epoch is one barrier; sinks commit nothing for it)")
	f.IntVar(&o.BatchRows, "batch-rows", 64*1024, "maximum rows per Arrow batch")
	DurationVar(f, &o.Linger, "linger", 100*time.Millisecond, "longest wait to fill a batch before sending it")
	f.StringVar(&o.End, "end", "", "end of input sends end=final or end=pause (default: pause with a checkpoint, final without)")
}

// KafkaFlags registers the Kafka connection flags on f, into c: -b/--brokers, TLS (--tls,
// --tls-ca, --tls-cert, --tls-key, --tls-server-name) and SASL (--sasl-mechanism, --sasl-user,
// --sasl-password-file, --sasl-password-env; the password is never a flag). read-kafka,
// write-kafka and state-dump --lag connect with them.
func KafkaFlags(f *pflag.FlagSet, c *kafkaconn.Config) {
	f.StringSliceVarP(&c.Brokers, "brokers", "b", nil, "seed brokers, host:port (repeatable or comma-separated)")
	f.BoolVar(&c.TLS, "tls", false, "connect with TLS, verifying brokers with the system roots (implied by --tls-ca/--tls-cert)")
	f.StringVar(&c.TLSCA, "tls-ca", "", "PEM file of the CA certificates that verify the brokers")
	f.StringVar(&c.TLSCert, "tls-cert", "", "PEM client certificate for mutual TLS (with --tls-key)")
	f.StringVar(&c.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&c.TLSServerName, "tls-server-name", "", "name to verify in the broker certificates (default: the broker host)")
	f.StringVar(&c.SASLMechanism, "sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default: no SASL)")
	f.StringVar(&c.SASLUser, "sasl-user", "", "SASL user name")
	f.StringVar(&c.SASLPasswordFile, "sasl-password-file", "", "file holding the SASL password (default: the variable named by --sasl-password-env)")
	f.StringVar(&c.SASLPasswordEnv, "sasl-password-env", kafkaconn.EnvPassword, "environment variable holding the SASL password when no --sasl-password-file is given")
}

// DurationVar defines the duration flag name on f, into p, with default value: it takes Go's
// syntax plus the units d (24 h) and w (7 d), e.g. 250ms, 1h30m, 7d, 2w (internal/duration),
// the same in every tool. Help shows it as pflag's duration flags ("duration", default "5s").
func DurationVar(f *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	f.Var((*duration.Value)(p), name, usage)
	if value == 0 {
		// pflag leaves a zero default out of the help only for its own duration type; "0"
		// is zero for every type, so the help reads as before.
		f.Lookup(name).DefValue = "0"
	}
}
