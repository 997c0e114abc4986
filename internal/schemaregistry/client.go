// Package schemaregistry is a small client of the Confluent Schema Registry REST API (the
// API Confluent Schema Registry, Apicurio Registry's /apis/ccompat/v7, Redpanda and Karapace
// serve): schemas by id, the latest version of a subject, and registering a schema, with
// HTTP basic auth and an optional CA for TLS. Schemas by id are cached for the client's
// lifetime (an id never changes its schema); failed look-ups are remembered for RetryAfter so
// an unreachable registry is not asked once per record.
package schemaregistry

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
)

// Config are the registry options shared by read-kafka and write-kafka.
type Config struct {
	// URL is the registry's base URL (--schema-registry), e.g. http://host:8081 or
	// http://host:8080/apis/ccompat/v7 for Apicurio.
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
	f.StringVar(&c.URL, "schema-registry", "", "Confluent-compatible schema registry URL (Confluent wire format: magic byte 0 + 4-byte schema id)")
	f.StringVar(&c.User, "schema-registry-user", "", "schema registry basic-auth user (password from --schema-registry-password-file or -env)")
	f.StringVar(&c.PasswordFile, "schema-registry-password-file", "", "file holding the schema registry password")
	f.StringVar(&c.PasswordEnv, "schema-registry-password-env", DefaultPasswordEnv, "environment variable holding the schema registry password")
	f.StringVar(&c.CA, "schema-registry-ca", "", "PEM file of CAs that verify an https schema registry")
}

// Client talks to one registry. Safe for concurrent use.
type Client struct {
	base       string
	user, pass string
	hc         *http.Client
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
	if c.User != "" {
		cl.user = c.User
		switch {
		case c.PasswordFile != "":
			b, err := os.ReadFile(c.PasswordFile)
			if err != nil {
				return nil, fmt.Errorf("--schema-registry-password-file: %w", err)
			}
			cl.pass = strings.TrimRight(string(b), "\r\n")
		default:
			env := c.PasswordEnv
			if env == "" {
				env = DefaultPasswordEnv
			}
			p, ok := os.LookupEnv(env)
			if !ok {
				return nil, fmt.Errorf("--schema-registry-user %s needs a password: --schema-registry-password-file or the environment variable %s", c.User, env)
			}
			cl.pass = p
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
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
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	cl.hc = &http.Client{Transport: tr, Timeout: timeout}
	return cl, nil
}

// URL is the registry's base URL.
func (c *Client) URL() string { return c.base }

type schemaResp struct {
	Subject    string `json:"subject"`
	Version    int    `json:"version"`
	ID         uint32 `json:"id"`
	Schema     string `json:"schema"`
	SchemaType string `json:"schemaType"`
}

func (c *Client) do(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json, application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	if c.user != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("schema registry %s unreachable: %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("schema registry %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Code    int    `json:"error_code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &e)
		msg := e.Message
		if msg == "" {
			msg = strings.TrimSpace(string(data))
		}
		if resp.StatusCode == http.StatusNotFound {
			return &NotFoundError{What: path, Msg: msg}
		}
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			return fmt.Errorf("schema registry %s %s: %s (check --schema-registry-user and its password): %s", method, path, resp.Status, msg)
		}
		return fmt.Errorf("schema registry %s %s: %s: %s", method, path, resp.Status, msg)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("schema registry %s %s: bad answer: %w", method, path, err)
	}
	return nil
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
	var r schemaResp
	err := c.do(ctx, http.MethodGet, fmt.Sprintf("/schemas/ids/%d", id), nil, &r)
	if err == nil && r.SchemaType != "" && !strings.EqualFold(r.SchemaType, "AVRO") {
		err = &NotAvroError{ID: id, Type: r.SchemaType}
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
	var r schemaResp
	if err := c.do(ctx, http.MethodGet, "/subjects/"+url.PathEscape(subject)+"/versions/latest", nil, &r); err != nil {
		return Version{}, err
	}
	if r.SchemaType != "" && !strings.EqualFold(r.SchemaType, "AVRO") {
		return Version{}, &NotAvroError{ID: r.ID, Type: r.SchemaType}
	}
	c.mu.Lock()
	c.byID[r.ID] = r.Schema
	c.mu.Unlock()
	return Version{Subject: r.Subject, Version: r.Version, ID: r.ID, Schema: r.Schema}, nil
}

// Lookup finds schema among the versions of subject (POST /subjects/{subject}): its id and
// version, or a *NotFoundError when the subject does not hold it.
func (c *Client) Lookup(ctx context.Context, subject, schema string) (Version, error) {
	var r schemaResp
	body := map[string]string{"schema": schema, "schemaType": "AVRO"}
	if err := c.do(ctx, http.MethodPost, "/subjects/"+url.PathEscape(subject), body, &r); err != nil {
		return Version{}, err
	}
	return Version{Subject: subject, Version: r.Version, ID: r.ID, Schema: schema}, nil
}

// Register registers an Avro schema under subject (POST /subjects/{subject}/versions) and
// returns its id; registering a schema the subject already has returns the existing id. The
// registry's compatibility rules apply (HTTP 409 when incompatible).
func (c *Client) Register(ctx context.Context, subject, schema string) (uint32, error) {
	var r struct {
		ID uint32 `json:"id"`
	}
	body := map[string]string{"schema": schema, "schemaType": "AVRO"}
	if err := c.do(ctx, http.MethodPost, "/subjects/"+url.PathEscape(subject)+"/versions", body, &r); err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.byID[r.ID] = schema
	c.mu.Unlock()
	return r.ID, nil
}
