package s3test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Bucket gives a new empty bucket per call, and its cleanup removes the bucket with everything
// in it, including an unfinished multipart upload.
func TestBucketLifecycle(t *testing.T) {
	c := Server(t).Client()
	ctx := context.Background()
	var name string
	t.Run("use", func(t *testing.T) {
		name = Bucket(t)
		if other := Bucket(t); other == name {
			t.Fatalf("two buckets named %s", name)
		}
		if !strings.HasPrefix(name, "st-testbucketlifecycle-use-") || len(name) > 63 {
			t.Fatalf("bucket name %q", name)
		}
		list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
		if err != nil || len(list.Contents) != 0 {
			t.Fatalf("new bucket: %v objects, err %v", len(list.Contents), err)
		}
		// More than one page of ListObjectsV2 and of DeleteObjects (1000 each), by 8 writers.
		const objects, writers = 1100, 8
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < objects && errs[w] == nil; i += writers {
					_, errs[w] = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name),
						Key: aws.String(fmt.Sprintf("d/%04d", i)), Body: bytes.NewReader([]byte("x"))})
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(name), Key: aws.String("big")}); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)}); status(err) != 404 {
		t.Fatalf("after the subtest's cleanup, HEAD %s: want 404, got %v", name, err)
	}
}
