package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"gocloud.dev/gcerrors"
)

// Retry is the retry policy of a bucket store's calls: up to Attempts tries, sleeping
// Base·2^n (capped at Max, with ±50% jitter) between them, each try bounded by Timeout.
type Retry struct {
	// Attempts is the number of tries of one call, ≥ 1; default 6.
	Attempts int
	// Base is the first backoff; default 100ms.
	Base time.Duration
	// Max caps the backoff; default 5s.
	Max time.Duration
	// Timeout bounds one try (a read or write of one object); default 2m.
	Timeout time.Duration
}

// DefaultRetry is the policy of [Open] when [Options.Retry] is zero: 6 tries over about 3 s of
// backoff, 2 minutes per try.
var DefaultRetry = Retry{Attempts: 6, Base: 100 * time.Millisecond, Max: 5 * time.Second, Timeout: 2 * time.Minute}

func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = DefaultRetry.Attempts
	}
	if r.Base <= 0 {
		r.Base = DefaultRetry.Base
	}
	if r.Max <= 0 {
		r.Max = DefaultRetry.Max
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultRetry.Timeout
	}
	return r
}

// backoff is the sleep before try n+1 (n ≥ 1).
func (r Retry) backoff(n int) time.Duration {
	d := r.Base << (n - 1)
	if d > r.Max || d <= 0 {
		d = r.Max
	}
	return d/2 + time.Duration(rand.Int64N(int64(d)))
}

// transient reports whether err is worth another try: the store said it is busy or failed
// inside (5xx, throttling), the connection broke, or the try timed out.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if code := httpStatus(err); code >= 400 && code < 500 {
		// The store refused the request: only its "try again" refusals are worth another
		// try. A 2xx whose body broke off (a reset mid-response) and a 5xx are transient.
		return code == 408 || code == 429
	}
	switch gcerrors.Code(err) {
	case gcerrors.Internal, gcerrors.Unknown, gcerrors.ResourceExhausted, gcerrors.DeadlineExceeded, gcerrors.Canceled:
		// gocloud maps an unclassified SDK error (a reset, a refused connection, a 5xx)
		// to Unknown; Canceled here is a try's own timeout (the caller's context is checked
		// above).
		return true
	case gcerrors.NotFound, gcerrors.FailedPrecondition, gcerrors.PermissionDenied, gcerrors.InvalidArgument,
		gcerrors.AlreadyExists, gcerrors.Unimplemented:
		return false
	}
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded)
}

// httpStatus is the HTTP status of the store's answer inside err (the SDKs' response errors
// carry it), or 0 when there was no answer.
func httpStatus(err error) int {
	var hs interface{ HTTPStatusCode() int }
	if errors.As(err, &hs) {
		return hs.HTTPStatusCode()
	}
	return 0
}

// OpError is a bucket call that failed for good: after its last try, or at once when the error
// is not transient. It names the operation, the redacted URL of the object and how many tries
// were made.
type OpError struct {
	Op    string
	URL   string
	Tries int
	Err   error
}

func (e *OpError) Error() string {
	if e.Tries > 1 {
		return fmt.Sprintf("%s %s: %s (after %d tries)", e.Op, e.URL, Redact(e.Err.Error()), e.Tries)
	}
	return fmt.Sprintf("%s %s: %s", e.Op, e.URL, Redact(e.Err.Error()))
}
func (e *OpError) Unwrap() error { return e.Err }

// do runs one try of fn per attempt, each under its own timeout, until it succeeds, fails for
// good, or the attempts are used up. unknown is set on each failure that may have taken effect
// on the store (a write whose response was lost); fn reads it to resolve its own outcome.
func (r Retry) do(ctx context.Context, op, loc string, fn func(ctx context.Context, try int) error) error {
	var err error
	n := 0
	for n = 1; ; n++ {
		tctx, cancel := context.WithTimeout(ctx, r.Timeout)
		err = fn(tctx, n)
		cancel()
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrExist) || errors.Is(err, errNotExistSentinel) || !transient(err) || n >= r.Attempts || ctx.Err() != nil {
			break
		}
		t := time.NewTimer(r.backoff(n))
		select {
		case <-ctx.Done():
			t.Stop()
			return &OpError{Op: op, URL: loc, Tries: n, Err: ctx.Err()}
		case <-t.C:
		}
	}
	if gcerrors.Code(err) == gcerrors.NotFound {
		return &notExist{op: op, loc: loc, err: err}
	}
	if errors.Is(err, ErrExist) {
		return fmt.Errorf("%s %s: %w", op, loc, ErrExist)
	}
	return &OpError{Op: op, URL: loc, Tries: n, Err: err}
}

// errNotExistSentinel marks a NotFound that fn already classified; never retried.
var errNotExistSentinel = errors.New("not found")
