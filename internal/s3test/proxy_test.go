package s3test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestLostCommitResponse is the ambiguity a bucket commit must resolve, on the real server: a
// conditional put whose response is lost has taken effect, so the SDK's retry of it is refused
// with 412 although no other writer exists. Only reading the object back tells the writer it
// won.
func TestLostCommitResponse(t *testing.T) {
	bucket := Bucket(t)
	via, proxy := Proxied(t, 1)
	c := via.Client()
	ctx := context.Background()
	put := func(key string, b []byte) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b), IfNoneMatch: aws.String("*"),
		})
		return err
	}
	mine := []byte(`{"commitInfo":{"writer":"me"}}`)
	proxy.DropNextResponses(1)
	err := put("_delta_log/00000000000000000000.json", mine)
	if st := proxy.Stats(); st.Dropped != 1 {
		t.Fatalf("the proxy dropped %d responses, want 1 (err %v)", st.Dropped, err)
	}
	if status(err) != 412 || code(err) != "PreconditionFailed" {
		t.Fatalf("the SDK's retry after the lost response: want 412 PreconditionFailed, got %v", err)
	}
	got, err := Server(t).Client().GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(bucket), Key: aws.String("_delta_log/00000000000000000000.json"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Body.Close()
	b, _ := io.ReadAll(got.Body)
	if !bytes.Equal(b, mine) {
		t.Fatalf("the object holds %q, want the lost request's %q", b, mine)
	}
	// With the fault off, the same path works as usual.
	if err := put("_delta_log/00000000000000000001.json", mine); err != nil {
		t.Fatal(err)
	}
}
