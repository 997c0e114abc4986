// Package s3test gives tests the real S3-compatible object store of scripts/s3.sh (S3Proxy on
// loopback): its endpoint and test credentials, fresh buckets that are removed after the test,
// and the environment a child streamkit process needs to reach it.
//
// The server is found through the environment `eval "$(scripts/s3.sh env)"` exports
// (STREAMKIT_S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION); make test
// starts the server and exports them. Without them, or when the endpoint does not answer, a
// test is skipped, or fails under STREAMKIT_REQUIRE_PEERS=1 (internal/peertest's rule).
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/streamkit/streamkit/internal/faultproxy"
	"github.com/streamkit/streamkit/internal/peertest"
)

// S3 describes the running test server. The secret is a fixed test key, but tests still keep
// it out of argv and logs, like a real one.
type S3 struct {
	// Endpoint is the server's base URL, http://127.0.0.1:PORT (path-style addressing only).
	Endpoint string
	// HostPort is Endpoint without the scheme, 127.0.0.1:PORT (DuckDB's ENDPOINT wants it so).
	HostPort string
	// Region is the signing region, us-east-1 unless AWS_REGION says otherwise.
	Region string
	// AccessKey and SecretKey are the test credentials (AWS signature V2 or V4).
	AccessKey, SecretKey string
}

var (
	serverOnce sync.Once
	server     *S3
	serverErr  string
)

// Server returns the test server from the environment (see the package comment), checked
// once per test process with an unsigned GET / that must get an HTTP answer. A missing
// variable or a server that does not answer skips t, or fails it under
// STREAMKIT_REQUIRE_PEERS=1.
func Server(t testing.TB) *S3 {
	t.Helper()
	serverOnce.Do(func() { server, serverErr = fromEnv() })
	if server == nil {
		peertest.Missing(t, "S3 server: "+serverErr)
	}
	return server
}

func fromEnv() (*S3, string) {
	s := &S3{
		Endpoint:  strings.TrimRight(os.Getenv("STREAMKIT_S3_ENDPOINT"), "/"),
		Region:    os.Getenv("AWS_REGION"),
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
	}
	if s.Endpoint == "" || s.AccessKey == "" || s.SecretKey == "" {
		return nil, "STREAMKIT_S3_ENDPOINT, AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY not set " +
			`(scripts/s3.sh start; eval "$(scripts/s3.sh env)")`
	}
	if s.Region == "" {
		s.Region = "us-east-1"
	}
	host, ok := strings.CutPrefix(s.Endpoint, "http://")
	if !ok {
		return nil, "STREAMKIT_S3_ENDPOINT=" + s.Endpoint + " is not an http:// URL"
	}
	s.HostPort = host
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(s.Endpoint + "/")
	if err != nil {
		return nil, "not reachable at " + s.Endpoint + ": " + err.Error()
	}
	resp.Body.Close()
	return s, ""
}

// Client returns an S3 client for the server: static credentials, path-style addressing (the
// server has no virtual-host buckets), the SDK's default checksums.
func (s *S3) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// Env returns the variables a child streamkit process (or a Python reader) needs to reach the
// server, as KEY=VALUE for exec.Cmd.Env: STREAMKIT_S3_ENDPOINT, AWS_ENDPOINT_URL,
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION and AWS_ALLOW_HTTP=true. Skips or
// fails t like Server.
func Env(t testing.TB) []string {
	t.Helper()
	return Server(t).Env()
}

// Env returns the variables that reach s, as the package-level Env describes (through the
// proxy for an S3 from Proxied).
func (s *S3) Env() []string {
	return []string{
		"STREAMKIT_S3_ENDPOINT=" + s.Endpoint,
		"AWS_ENDPOINT_URL=" + s.Endpoint,
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=" + s.Region,
		"AWS_ALLOW_HTTP=true",
	}
}

// Proxied returns the server as seen through a new fault proxy (internal/faultproxy, seeded
// with seed, no faults set yet) and the proxy, closed at cleanup. The returned S3's Endpoint,
// Client and Env go through the proxy; buckets are the server's. Skips or fails t like Server.
func Proxied(t testing.TB, seed uint64) (*S3, *faultproxy.Proxy) {
	t.Helper()
	s := Server(t)
	p, err := faultproxy.New(s.HostPort, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	via := *s
	via.HostPort = p.Addr()
	via.Endpoint = "http://" + p.Addr()
	return &via, p
}

var notBucketChar = regexp.MustCompile(`[^a-z0-9]+`)

// Bucket creates a new, empty bucket with a unique name (st-<test name>-<12 hex digits>,
// lowercase, at most 63 characters) and returns the name. At cleanup its objects, unfinished
// multipart uploads and the bucket itself are deleted; a failure there fails t. Skips or
// fails t like Server when there is no server.
func Bucket(t testing.TB) string {
	t.Helper()
	s := Server(t)
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	stem := strings.Trim(notBucketChar.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(stem) > 45 {
		stem = strings.TrimRight(stem[:45], "-")
	}
	name := "st-" + stem + "-" + hex.EncodeToString(rnd[:])
	c := s.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := RemoveBucket(context.Background(), c, name); err != nil {
			t.Errorf("remove bucket %s: %v", name, err)
		}
	})
	return name
}

// RemoveBucket deletes every object and unfinished multipart upload of bucket, then the
// bucket. A bucket that does not exist is not an error.
func RemoveBucket(ctx context.Context, c *s3.Client, bucket string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if noBucket(err) {
		return nil
	}
	if err == nil {
		for _, u := range ups.Uploads {
			if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(bucket), Key: u.Key, UploadId: u.UploadId,
			}); err != nil {
				return err
			}
		}
	}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if noBucket(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]types.ObjectIdentifier, len(page.Contents))
		for i, o := range page.Contents {
			ids[i] = types.ObjectIdentifier{Key: o.Key}
		}
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
		})
		if err != nil {
			return err
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return errors.New("delete " + aws.ToString(e.Key) + ": " + aws.ToString(e.Code) + " " + aws.ToString(e.Message))
		}
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil && !noBucket(err) {
		return err
	}
	return nil
}

func noBucket(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "NoSuchBucket"
}
