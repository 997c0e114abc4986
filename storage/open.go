package storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // registers azblob:// with application-default credentials
	_ "gocloud.dev/blob/gcsblob"   // registers gs:// with application-default credentials
	"gocloud.dev/blob/s3blob"
)

// bucketSchemes maps each accepted URL scheme to its backend.
var bucketSchemes = map[string]string{
	"s3": "s3", "s3a": "s3", "gs": "gs", "az": "az", "azblob": "az", "abfs": "az", "abfss": "az",
}

// openBucket opens a bucket URL (see [Open]).
//
// S3 (s3://BUCKET/PATH, s3a:// as Spark writes it): the AWS SDK's default chain gives the
// credentials and region (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, IMDS); the
// region defaults to us-east-1 when none is configured. An S3-compatible endpoint comes from
// AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (the SDK's own variables, which delta-rs reads too),
// or the URL parameter endpoint=; with a custom endpoint requests use path-style addressing
// unless AWS_VIRTUAL_HOSTED_STYLE_REQUEST=true (delta-rs' name) or use_path_style=false.
// URL parameters region= and use_path_style= override the environment.
//
// GCS (gs://BUCKET/PATH): application default credentials (GOOGLE_APPLICATION_CREDENTIALS,
// gcloud's login, the metadata server).
//
// Azure (az://CONTAINER/PATH with AZURE_STORAGE_ACCOUNT, or
// abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH): AZURE_STORAGE_KEY,
// AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_CONNECTION_STRING, or the default Azure credential
// (environment, workload identity, managed identity, az login).
func openBucket(ctx context.Context, loc string, opts Options) (Store, error) {
	scheme, bucket, prefix, q, err := parseBucketURL(loc)
	if err != nil {
		return nil, err
	}
	kind := bucketSchemes[scheme]
	for k := range q {
		if kind != "s3" || (k != "region" && k != "endpoint" && k != "use_path_style") {
			// A misspelt parameter would be ignored silently; a secret in one is never echoed.
			allowed := "none"
			if kind == "s3" {
				allowed = "region=, endpoint=, use_path_style="
			}
			return nil, &URLError{URL: strings.SplitN(loc, "?", 2)[0], Err: fmt.Errorf("unknown URL parameter %q (%s URLs take %s; credentials come from the environment)", k, scheme, allowed)}
		}
	}
	var b *blob.Bucket
	var client *s3.Client
	switch kind {
	case "s3":
		b, client, err = openS3(ctx, bucket, q)
	case "gs":
		b, err = blob.OpenBucket(ctx, (&url.URL{Scheme: "gs", Host: bucket}).String())
	case "az":
		b, err = openAzure(ctx, scheme, bucket)
	}
	if err != nil {
		return nil, &OpError{Op: "open", URL: Redact(loc), Tries: 1, Err: err}
	}
	s := newBucketStore(b, kind, strings.SplitN(loc, "?", 2)[0], prefix, opts)
	s.shared.s3, s.shared.name = client, bucket
	if err := s.checkAccess(ctx, bucket); err != nil {
		b.Close()
		return nil, err
	}
	return s, nil
}

// openS3 opens an S3 bucket with the SDK's default configuration and the settings above.
func openS3(ctx context.Context, bucket string, q url.Values) (*blob.Bucket, *s3.Client, error) {
	var lopts []func(*awsconfig.LoadOptions) error
	if r := q.Get("region"); r != "" {
		lopts = append(lopts, awsconfig.WithRegion(r))
	}
	// Our own retry policy (see Retry) is the only one, so that its tries and backoff are what
	// the messages say.
	lopts = append(lopts, awsconfig.WithRetryMaxAttempts(1))
	// The SDK's own log lines (IMDS fallbacks, checksum notes) would go to stderr unformatted;
	// what matters reaches the user in the error.
	lopts = append(lopts, awsconfig.WithLogger(logging.Nop{}))
	cfg, err := awsconfig.LoadDefaultConfig(ctx, lopts...)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	endpoint := q.Get("endpoint")
	if endpoint == "" {
		endpoint = firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	}
	pathStyle := endpoint != ""
	if v := os.Getenv("AWS_VIRTUAL_HOSTED_STYLE_REQUEST"); v != "" {
		if hosted, err := strconv.ParseBool(v); err == nil {
			pathStyle = !hosted
		}
	}
	if v := q.Get("use_path_style"); v != "" {
		ps, err := strconv.ParseBool(v)
		if err != nil {
			return nil, nil, fmt.Errorf("use_path_style=%q: %w", v, err)
		}
		pathStyle = ps
	}
	if endpoint != "" && !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	if endpoint != "" {
		// S3-compatible servers differ in the checksum trailers they accept; send checksums
		// only where the API requires them, as gocloud advises for third-party stores.
		cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = pathStyle
	})
	b, err := s3blob.OpenBucket(ctx, client, bucket, &s3blob.Options{RequestChecksumCalculation: cfg.RequestChecksumCalculation})
	return b, client, err
}

// openAzure opens an Azure Blob Storage container; abfs(s) URLs name the account in the host
// (CONTAINER@ACCOUNT.dfs.core.windows.net).
func openAzure(ctx context.Context, scheme, host string) (*blob.Bucket, error) {
	container, account := host, ""
	if strings.HasPrefix(scheme, "abfs") {
		c, rest, ok := strings.Cut(host, "@")
		if !ok {
			return nil, errors.New("an abfss URL names CONTAINER@ACCOUNT.dfs.core.windows.net")
		}
		container = c
		account, _, _ = strings.Cut(rest, ".")
	}
	u := &url.URL{Scheme: "azblob", Host: container}
	if account != "" {
		u.RawQuery = url.Values{"storage_account": {account}}.Encode()
	}
	return blob.OpenBucket(ctx, u.String())
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}
