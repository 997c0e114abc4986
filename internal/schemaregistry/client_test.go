package schemaregistry

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/peertest"
)

// TestFake: an in-process registry checks basic auth, caching per id, 404 and 5xx handling.
func TestFake(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if u, p, ok := r.BasicAuth(); !ok || u != "app" || p != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error_code":40101,"message":"Unauthorized"}`))
			return
		}
		switch r.URL.Path {
		case "/schemas/ids/1":
			_, _ = w.Write([]byte(`{"schema":"\"long\""}`))
		case "/schemas/ids/2":
			_, _ = w.Write([]byte(`{"schema":"syntax = \"proto3\";","schemaType":"PROTOBUF"}`))
		case "/schemas/ids/3":
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error_code":40403,"message":"Schema not found"}`))
		}
	}))
	defer srv.Close()
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{URL: srv.URL, User: "app", PasswordFile: pw, RetryAfter: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if s, err := c.SchemaByID(ctx, 1); err != nil || s != `"long"` {
			t.Fatalf("id 1: %q, %v", s, err)
		}
	}
	if _, err := c.SchemaByID(ctx, 2); err == nil || !strings.Contains(err.Error(), "PROTOBUF schema, not Avro") || !Permanent(err) {
		t.Errorf("id 2: %v", err)
	}
	if _, err := c.SchemaByID(ctx, 7); err == nil || !strings.Contains(err.Error(), "Schema not found") || !Permanent(err) {
		t.Errorf("id 7: %v", err)
	}
	_, err = c.SchemaByID(ctx, 3)
	if err == nil || Permanent(err) || !strings.Contains(err.Error(), "503") {
		t.Errorf("id 3: %v", err)
	}
	_, _ = c.SchemaByID(ctx, 3) // remembered for RetryAfter
	if n := hits.Load(); n != 4 {
		t.Errorf("%d requests, want 4 (one per id)", n)
	}
	bad, err := New(Config{URL: srv.URL, User: "app", PasswordEnv: "STREAMKIT_TEST_NO_SUCH_VAR"})
	if err == nil || bad != nil || !strings.Contains(err.Error(), "STREAMKIT_TEST_NO_SUCH_VAR") {
		t.Errorf("missing password: %v", err)
	}
	t.Setenv("STREAMKIT_TEST_SR_PW", "wrong")
	wrong, err := New(Config{URL: srv.URL, User: "app", PasswordEnv: "STREAMKIT_TEST_SR_PW"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.SchemaByID(ctx, 1); err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong password: %v", err)
	}
	if _, err := New(Config{URL: "localhost:8081"}); err == nil {
		t.Error("a URL without scheme was accepted")
	}
}

// TestTLS: --schema-registry-ca verifies an https registry; without it the system roots
// reject the test certificate.
func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"schema":"\"string\""}`))
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{URL: srv.URL, CA: ca})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.SchemaByID(context.Background(), 1); err != nil || s != `"string"` {
		t.Fatalf("with the CA: %q, %v", s, err)
	}
	plain, _ := New(Config{URL: srv.URL})
	if _, err := plain.SchemaByID(context.Background(), 1); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v", err)
	}
	if _, err := New(Config{URL: srv.URL, CA: filepath.Join(t.TempDir(), "none.pem")}); err == nil {
		t.Fatal("a missing CA file was accepted")
	}
}

// TestApicurio: register, look up by id and latest version against the real registry.
func TestApicurio(t *testing.T) {
	url := peertest.SchemaRegistry(t)
	c, err := New(Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	subject := "sr-test-" + strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", "") + "-value"
	doc := `{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}`
	id, err := c.Register(ctx, subject, doc)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Register(ctx, subject, doc)
	if err != nil || again != id {
		t.Fatalf("registering again: id %d, %v (first %d)", again, err, id)
	}
	fresh, _ := New(Config{URL: url})
	s, err := fresh.SchemaByID(ctx, id)
	if err != nil || !strings.Contains(s, `"name":"a"`) {
		t.Fatalf("by id %d: %q, %v", id, s, err)
	}
	v, err := fresh.Latest(ctx, subject)
	if err != nil || v.ID != id || v.Version != 1 {
		t.Fatalf("latest: %+v, %v", v, err)
	}
	if _, err := fresh.SchemaByID(ctx, 987654); err == nil || !Permanent(err) {
		t.Fatalf("unknown id: %v", err)
	}
}

// TestBareHostHint checks that a 404 which is not a Confluent answer, from a registry URL
// without a path, names Apicurio's /apis/ccompat/v7 (its host's root serves another API),
// and that Confluent's own 404s, or any 404 under a path, carry no such hint.
func TestBareHostHint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		if strings.HasPrefix(r.URL.Path, "/confluent/") {
			_, _ = w.Write([]byte(`{"error_code":40403,"message":"Schema 7 not found"}`))
		} else {
			_, _ = w.Write([]byte(`Resource not found`))
		}
	}))
	defer srv.Close()
	hint := "Apicurio Registry serves it under /apis/ccompat/v7, --schema-registry " + srv.URL + "/apis/ccompat/v7"
	for _, tc := range []struct {
		base string
		hint bool
	}{{srv.URL, true}, {srv.URL + "/", true}, {srv.URL + "/confluent", false}, {srv.URL + "/other", false}} {
		c, err := New(Config{URL: tc.base})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.SchemaByID(context.Background(), 7)
		var nf *NotFoundError
		if !errors.As(err, &nf) || !Permanent(err) || strings.Contains(err.Error(), hint) != tc.hint {
			t.Errorf("%s: %v; want a NotFoundError, hint %v", tc.base, err, tc.hint)
		}
	}
}
