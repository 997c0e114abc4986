// Package schemaregistry is streamkit's view of a Confluent-compatible schema registry (the
// REST API Confluent Schema Registry, Apicurio Registry's /apis/ccompat/v7, Redpanda and
// Karapace serve), for read-kafka and write-kafka: Avro schemas by id, the latest version of a
// subject, looking a schema up in a subject, and registering one, with HTTP basic auth and an
// optional CA for TLS.
//
// The HTTP requests are made by franz-go's schema registry client (github.com/twmb/franz-go/pkg/sr,
// sr.Client). This package is the thin layer over it that keeps what sr.Client leaves to its
// callers, on purpose (its package doc: "the client does not automatically cache schemas"):
//   - a cache of schemas by id for the client's lifetime (an id never changes its schema), and
//     failed look-ups remembered for RetryAfter, so an unreachable registry is not asked once per
//     record. sr.Serde, which caches, needs a Go type registered per schema id before decoding;
//     read-kafka learns writer schemas from the records' ids and resolves each into an Arrow
//     reader schema (codec/avrorow), so it does not fit;
//   - the --schema-registry* flags, the password read from a file or the environment;
//   - Avro only: a schema of another type is a *NotAvroError;
//   - the error messages read-kafka and write-kafka print (and rescue rows with): "schema
//     registry URL unreachable: …", "METHOD PATH: STATUS: message", the --schema-registry-user
//     hint on 401/403, *NotFoundError, and Permanent to tell them from passing failures;
//     sr.Client's errors name the full request URL or carry only the registry's message.
//
// The Confluent wire-format header itself (magic byte 0, big-endian schema id) is read and
// written by codec/avrorow with sr.ConfluentHeader.
package schemaregistry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/sr"
)

// Config are the registry options shared by read-kafka and write-kafka.
type Config struct {
	// URL is the registry's base URL (--schema-registry), e.g. http://host:8081 or
	// http://host:8080/apis/ccompat/v7 for Apicurio (which serves the Confluent API under that
	// path; a 404 from a bare host that is not a Confluent answer says so).
	URL string
	// User enables HTTP basic auth (--schema-registry-user); the password comes from
	// PasswordFile (--schema-registry-password-file) or the environment variable PasswordEnv
	// (--schema-registry-password-env, default STREAMKIT_SCHEMA_REGISTRY_PASSWORD), never from
	// the command line.
	User, PasswordFile, PasswordEnv string
	// CA is a PEM file of CAs to verify an https registry with (--schema-registry-ca).
	CA string
	// Timeout bounds one request (default 10 s).
	Timeout time.Duration
	// RetryAfter is how long a failed look-up (registry unreachable, HTTP 5xx) is answered from
	// memory before the registry is asked again (default 5 s).
	RetryAfter time.Duration
}

// DefaultPasswordEnv is the default of --schema-registry-password-env.
const DefaultPasswordEnv = "STREAMKIT_SCHEMA_REGISTRY_PASSWORD"

// AddFlags registers the --schema-registry* flags.
func (c *Config) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&c.URL, "schema-registry", "", "Confluent-compatible schema registry URL, e.g. http://host:8081 (Confluent wire format: magic byte 0 + 4-byte schema id); Apicurio Registry: http://host:8080/apis/ccompat/v7")
	f.StringVar(&c.User, "schema-registry-user", "", "schema registry basic-auth user (password from --schema-registry-password-file or -env)")
	f.StringVar(&c.PasswordFile, "schema-registry-password-file", "", "file holding the schema registry password")
	f.StringVar(&c.PasswordEnv, "schema-registry-password-env", DefaultPasswordEnv, "environment variable holding the schema registry password")
	f.StringVar(&c.CA, "schema-registry-ca", "", "PEM file of CAs that verify an https schema registry")
}

// Client talks to one registry through an sr.Client. Safe for concurrent use.
type Client struct {
	base       string
	sr         *sr.Client
	retryAfter time.Duration
	now        func() time.Time

	mu     sync.Mutex
	byID   map[uint32]string
	failed map[uint32]failure
}

type failure struct {
	err error
	at  time.Time
}

// NotFoundError is the registry's 404 answer (error codes 40401 subject, 40402 version, 40403
// schema not found).
type NotFoundError struct {
	What string
	Msg  string
}

func (e *NotFoundError) Error() string { return e.What + " not found in the schema registry: " + e.Msg }

// New returns a client; errors: an unusable URL, an unreadable password file or CA, a user
// without a password.
func New(c Config) (*Client, error) {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--schema-registry %q: want an http:// or https:// URL", c.URL)
	}
	cl := &Client{base: strings.TrimRight(c.URL, "/"), retryAfter: c.RetryAfter, now: time.Now,
		byID: map[uint32]string{}, failed: map[uint32]failure{}}
	if cl.retryAfter <= 0 {
		cl.retryAfter = 5 * time.Second
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	opts := []sr.ClientOpt{sr.URLs(cl.base), sr.UserAgent("streamkit"), sr.HTTPClient(&http.Client{Transport: tr, Timeout: timeout})}
	if c.User != "" {
		pass, err := password(c)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sr.BasicAuth(c.User, pass))
	}
	if c.CA != "" {
		pem, err := os.ReadFile(c.CA)
		if err != nil {
			return nil, fmt.Errorf("--schema-registry-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--schema-registry-ca %s: no PEM certificate in it", c.CA)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if cl.sr, err = sr.NewClient(opts...); err != nil {
		return nil, fmt.Errorf("--schema-registry %q: %w", c.URL, err)
	}
	return cl, nil
}

// password is the basic-auth password of c.User: c.PasswordFile without its trailing line
// breaks, else the environment variable c.PasswordEnv (default DefaultPasswordEnv).
func password(c Config) (string, error) {
	if c.PasswordFile != "" {
		b, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return "", fmt.Errorf("--schema-registry-password-file: %w", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	env := c.PasswordEnv
	if env == "" {
		env = DefaultPasswordEnv
	}
	p, ok := os.LookupEnv(env)
	if !ok {
		return "", fmt.Errorf("--schema-registry-user %s needs a password: --schema-registry-password-file or the environment variable %s", c.User, env)
	}
	return p, nil
}

// URL is the registry's base URL.
func (c *Client) URL() string { return c.base }

// bareHost reports whether the base URL has no path (http://host:port), where Apicurio does
// not serve the Confluent API.
func (c *Client) bareHost() bool {
	u, err := url.Parse(c.base)
	return err == nil && strings.Trim(u.Path, "/") == ""
}

// explain turns an error of sr.Client for the request method path into streamkit's: the
// registry unreachable, its HTTP error answer (a *NotFoundError for 404), or an answer that
// does not decode.
func (c *Client) explain(method, path string, err error) error {
	if err == nil {
		return nil
	}
	var re *sr.ResponseError
	if errors.As(err, &re) {
		msg := re.Message
		if len(re.Raw) == 0 {
			msg = "" // sr's "no response" stands for an empty body
		} else if msg == "" {
			msg = string(re.Raw)
		}
		status := fmt.Sprintf("%d %s", re.StatusCode, http.StatusText(re.StatusCode))
		switch re.StatusCode {
		case http.StatusNotFound:
			if re.ErrorCode < 10000 && c.bareHost() {
				// Not a Confluent answer (its codes are 404xx): Apicurio answers so on its
				// host's root, since it serves the Confluent API under a path.
				msg += "; the registry's answer is not the Confluent API's: Apicurio Registry serves it under /apis/ccompat/v7, --schema-registry " + c.base + "/apis/ccompat/v7"
			}
			return &NotFoundError{What: path, Msg: msg}
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("schema registry %s %s: %s (check --schema-registry-user and its password): %s", method, path, status, msg)
		}
		return fmt.Errorf("schema registry %s %s: %s: %s", method, path, status, msg)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("schema registry %s unreachable: %w", c.base, ue)
	}
	if cause := errors.Unwrap(err); cause != nil {
		err = cause // sr wraps the JSON decoder's error
	}
	return fmt.Errorf("schema registry %s %s: bad answer: %w", method, path, err)
}

// SchemaByID returns the Avro schema registered under id (GET /schemas/ids/{id}), from the
// cache when known. An unknown id is a *NotFoundError; a schema of another type (PROTOBUF,
// JSON) is an error naming it.
func (c *Client) SchemaByID(ctx context.Context, id uint32) (string, error) {
	c.mu.Lock()
	if s, ok := c.byID[id]; ok {
		c.mu.Unlock()
		return s, nil
	}
	if f, ok := c.failed[id]; ok && c.now().Sub(f.at) < c.retryAfter {
		c.mu.Unlock()
		return "", f.err
	}
	c.mu.Unlock()
	r, err := c.sr.SchemaByID(ctx, int(id))
	err = c.explain(http.MethodGet, fmt.Sprintf("/schemas/ids/%d", id), err)
	if err == nil && r.Type != sr.TypeAvro {
		err = &NotAvroError{ID: id, Type: r.Type.String()}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.failed[id] = failure{err: err, at: c.now()}
		return "", err
	}
	delete(c.failed, id)
	c.byID[id] = r.Schema
	return r.Schema, nil
}

// NotAvroError is a schema id whose schema is not Avro.
type NotAvroError struct {
	ID   uint32
	Type string
}

func (e *NotAvroError) Error() string {
	return fmt.Sprintf("schema id %d is a %s schema, not Avro", e.ID, e.Type)
}

// Permanent reports whether err will not change by asking again: an unknown id or a schema
// that is not Avro (as opposed to an unreachable or failing registry).
func Permanent(err error) bool {
	var nf *NotFoundError
	var na *NotAvroError
	return errors.As(err, &nf) || errors.As(err, &na)
}

// Version is a subject's registered schema.
type Version struct {
	Subject string
	Version int
	ID      uint32
	Schema  string
}

// Latest returns the latest version of subject (GET /subjects/{subject}/versions/latest).
func (c *Client) Latest(ctx context.Context, subject string) (Version, error) {
	r, err := c.sr.SchemaByVersion(ctx, subject, -1)
	if err := c.explain(http.MethodGet, "/subjects/"+url.PathEscape(subject)+"/versions/latest", err); err != nil {
		return Version{}, err
	}
	if r.Type != sr.TypeAvro {
		return Version{}, &NotAvroError{ID: uint32(r.ID), Type: r.Type.String()}
	}
	c.mu.Lock()
	c.byID[uint32(r.ID)] = r.Schema.Schema
	c.mu.Unlock()
	return Version{Subject: r.Subject, Version: r.Version, ID: uint32(r.ID), Schema: r.Schema.Schema}, nil
}

// Lookup finds schema among the versions of subject (POST /subjects/{subject}): its id and
// version, or a *NotFoundError when the subject does not hold it.
func (c *Client) Lookup(ctx context.Context, subject, schema string) (Version, error) {
	r, err := c.sr.LookupSchema(ctx, subject, sr.Schema{Schema: schema, Type: sr.TypeAvro})
	if err := c.explain(http.MethodPost, "/subjects/"+url.PathEscape(subject), err); err != nil {
		return Version{}, err
	}
	return Version{Subject: subject, Version: r.Version, ID: uint32(r.ID), Schema: schema}, nil
}

// Register registers an Avro schema under subject (POST /subjects/{subject}/versions) and
// returns its id; registering a schema the subject already has returns the existing id. The
// registry's compatibility rules apply (HTTP 409 when incompatible).
func (c *Client) Register(ctx context.Context, subject, schema string) (uint32, error) {
	n, err := c.sr.RegisterSchema(ctx, subject, sr.Schema{Schema: schema, Type: sr.TypeAvro}, -1, -1)
	if err := c.explain(http.MethodPost, "/subjects/"+url.PathEscape(subject)+"/versions", err); err != nil {
		return 0, err
	}
	id := uint32(n)
	c.mu.Lock()
	c.byID[id] = schema
	c.mu.Unlock()
	return id, nil
}
