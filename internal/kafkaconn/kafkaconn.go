// Package kafkaconn holds what read-kafka and write-kafka share to reach a cluster: the seed
// brokers, TLS (server verification and client certificates for mTLS) and SASL (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512), turned into franz-go client options.
//
// Secrets never travel on the command line and are never logged: the SASL password comes from
// a file (--sasl-password-file) or an environment variable (--sasl-password-env, default
// STREAMKIT_KAFKA_PASSWORD), and error messages name where the password came from, never the
// password itself.
package kafkaconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// EnvPassword is the default environment variable holding the SASL password.
const EnvPassword = "STREAMKIT_KAFKA_PASSWORD"

// SASL mechanisms accepted by --sasl-mechanism.
const (
	MechPlain       = "PLAIN"
	MechScramSHA256 = "SCRAM-SHA-256"
	MechScramSHA512 = "SCRAM-SHA-512"
)

// Config is how to connect to a cluster.
type Config struct {
	// Brokers are the seed brokers, host:port (-b, repeatable or comma-separated). Required.
	Brokers []string
	// TLS enables TLS with the system roots (--tls); implied by TLSCA, TLSCert and TLSKey.
	TLS bool
	// TLSCA is a PEM file of CA certificates that verify the brokers (--tls-ca).
	TLSCA string
	// TLSCert and TLSKey are the client certificate and key (PEM) for mTLS (--tls-cert, --tls-key).
	TLSCert, TLSKey string
	// TLSServerName overrides the name verified in the broker certificates (--tls-server-name).
	TLSServerName string
	// SASLMechanism is "", PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (--sasl-mechanism).
	SASLMechanism string
	// SASLUser is the SASL user name (--sasl-user).
	SASLUser string
	// SASLPasswordFile is a file whose content (without a trailing newline) is the password.
	SASLPasswordFile string
	// SASLPasswordEnv names the environment variable holding the password when no file is
	// given (default EnvPassword).
	SASLPasswordEnv string
	// ClientID is sent to the brokers (default "streamkit").
	ClientID string
	// DialTimeout bounds one connection attempt (default 10 s).
	DialTimeout time.Duration
}

// UsageError is a configuration mistake (bad flag combination, unreadable file); tools map it
// to a usage error.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// Opts validates c and returns the franz-go options that connect with it. log receives the
// client's warnings and errors (never secrets: franz-go does not log credentials).
func (c *Config) Opts(log *slog.Logger) ([]kgo.Opt, error) {
	var brokers []string
	for _, b := range c.Brokers {
		for _, s := range strings.Split(b, ",") {
			if s = strings.TrimSpace(s); s != "" {
				brokers = append(brokers, s)
			}
		}
	}
	if len(brokers) == 0 {
		return nil, usagef("no brokers: give -b host:port")
	}
	id := c.ClientID
	if id == "" {
		id = "streamkit"
	}
	dial := c.DialTimeout
	if dial <= 0 {
		dial = 10 * time.Second
	}
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID(id), kgo.DialTimeout(dial)}
	if log != nil {
		opts = append(opts, kgo.WithLogger(logger{log}))
	}
	tcfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	if tcfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tcfg))
	}
	mech, err := c.mechanism()
	if err != nil {
		return nil, err
	}
	if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	return opts, nil
}

func (c *Config) tlsConfig() (*tls.Config, error) {
	if !c.TLS && c.TLSCA == "" && c.TLSCert == "" && c.TLSKey == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.TLSServerName}
	if c.TLSCA != "" {
		pem, err := os.ReadFile(c.TLSCA)
		if err != nil {
			return nil, usagef("--tls-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usagef("--tls-ca %s: no PEM certificate found", c.TLSCA)
		}
		cfg.RootCAs = pool
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, usagef("--tls-cert and --tls-key go together (mutual TLS)")
	}
	if c.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return nil, usagef("--tls-cert %s / --tls-key %s: %v", c.TLSCert, c.TLSKey, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// passwordSource describes where the password comes from, for messages.
func (c *Config) passwordSource() string {
	if c.SASLPasswordFile != "" {
		return "--sasl-password-file " + c.SASLPasswordFile
	}
	return "$" + c.envName()
}

func (c *Config) envName() string {
	if c.SASLPasswordEnv != "" {
		return c.SASLPasswordEnv
	}
	return EnvPassword
}

func (c *Config) password() (string, error) {
	if c.SASLPasswordFile != "" {
		b, err := os.ReadFile(c.SASLPasswordFile)
		if err != nil {
			return "", usagef("--sasl-password-file: %v", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	p, ok := os.LookupEnv(c.envName())
	if !ok || p == "" {
		return "", usagef("--sasl-mechanism %s needs a password: give --sasl-password-file FILE or set $%s", c.SASLMechanism, c.envName())
	}
	return p, nil
}

func (c *Config) mechanism() (sasl.Mechanism, error) {
	m := strings.ToUpper(strings.TrimSpace(c.SASLMechanism))
	if m == "" {
		if c.SASLUser != "" || c.SASLPasswordFile != "" {
			return nil, usagef("--sasl-user/--sasl-password-file need --sasl-mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
		}
		return nil, nil
	}
	if c.SASLUser == "" {
		return nil, usagef("--sasl-mechanism %s needs --sasl-user", m)
	}
	pw, err := c.password()
	if err != nil {
		return nil, err
	}
	switch m {
	case MechPlain:
		return plain.Auth{User: c.SASLUser, Pass: pw}.AsMechanism(), nil
	case MechScramSHA256:
		return scram.Auth{User: c.SASLUser, Pass: pw}.AsSha256Mechanism(), nil
	case MechScramSHA512:
		return scram.Auth{User: c.SASLUser, Pass: pw}.AsSha512Mechanism(), nil
	}
	return nil, usagef("--sasl-mechanism must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got %q", c.SASLMechanism)
}

// Describe returns a one-line description of the connection for logs (no secrets).
func (c *Config) Describe() string {
	var b strings.Builder
	b.WriteString(strings.Join(c.Brokers, ","))
	if c.TLS || c.TLSCA != "" || c.TLSCert != "" {
		b.WriteString(" tls")
		if c.TLSCert != "" {
			b.WriteString("+client-cert")
		}
	}
	if c.SASLMechanism != "" {
		fmt.Fprintf(&b, " sasl=%s user=%s", strings.ToUpper(c.SASLMechanism), c.SASLUser)
	}
	return b.String()
}

// Explain wraps a connection error with a hint: authentication failures name the mechanism,
// the user and where the password came from (never the password); unreachable brokers name
// the addresses.
func (c *Config) Explain(err error) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState),
		errors.Is(err, kerr.UnsupportedSaslMechanism), isSASLErr(err):
		return fmt.Errorf("kafka %s: authentication failed (SASL %s as user %q, password from %s): %w",
			strings.Join(c.Brokers, ","), strings.ToUpper(c.SASLMechanism), c.SASLUser, c.passwordSource(), err)
	case errors.As(err, &ke) && (ke.Code == kerr.TopicAuthorizationFailed.Code || ke.Code == kerr.ClusterAuthorizationFailed.Code ||
		ke.Code == kerr.GroupAuthorizationFailed.Code || ke.Code == kerr.TransactionalIDAuthorizationFailed.Code):
		return fmt.Errorf("kafka %s: not authorized: %w", strings.Join(c.Brokers, ","), err)
	case isTLSErr(err):
		return fmt.Errorf("kafka %s: TLS handshake failed (check --tls-ca, --tls-cert, --tls-key and that the listener speaks TLS): %w",
			strings.Join(c.Brokers, ","), err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("kafka %s: no answer in time (are the brokers reachable, and is this the right listener for the security settings?): %w",
			strings.Join(c.Brokers, ","), err)
	}
	return fmt.Errorf("kafka %s: %w", strings.Join(c.Brokers, ","), err)
}

func isSASLErr(err error) bool {
	s := err.Error()
	return strings.Contains(s, "SASL") && (strings.Contains(s, "authentic") || strings.Contains(s, "credential"))
}

func isTLSErr(err error) bool {
	var rec tls.RecordHeaderError
	var cve *tls.CertificateVerificationError
	if errors.As(err, &rec) || errors.As(err, &cve) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "tls:") || strings.Contains(s, "x509:") || strings.Contains(s, "certificate")
}

// Fatal reports whether err is a connection problem that retrying will not fix (bad
// credentials, TLS failure, missing authorization).
func Fatal(err error) bool {
	if err == nil {
		return false
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return !ke.Retriable
	}
	return isSASLErr(err) || isTLSErr(err)
}

// logger adapts slog to franz-go's Logger at warn level and above (franz-go's info level is
// chatty: every metadata refresh and connection).
type logger struct{ l *slog.Logger }

func (l logger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l logger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var lv slog.Level
	switch level {
	case kgo.LogLevelError:
		lv = slog.LevelError
	case kgo.LogLevelWarn:
		lv = slog.LevelWarn
	case kgo.LogLevelInfo:
		lv = slog.LevelInfo
	default:
		lv = slog.LevelDebug
	}
	l.l.Log(context.Background(), lv, "kafka client: "+msg, keyvals...)
}
