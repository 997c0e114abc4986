package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob/memblob"
)

// stores returns the same tests' two backends: a local directory and an in-memory bucket
// (gocloud's memblob, which implements IfNotExist atomically under a mutex).
func stores(t *testing.T) map[string]Store {
	t.Helper()
	l, err := Local(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	b := memblob.OpenBucket(nil)
	t.Cleanup(func() { b.Close() })
	return map[string]Store{
		"local":  l,
		"bucket": newBucketStore(b, "mem", "mem://test/root", "root/", Options{Retry: Retry{Attempts: 2, Base: time.Millisecond}}),
	}
}

func TestStoreContract(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := s.ReadFile(ctx, "a/missing"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("ReadFile missing: %v, want fs.ErrNotExist", err)
			}
			if _, err := s.Stat(ctx, "missing"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Stat missing: %v", err)
			}
			if err := s.PutIfAbsent(ctx, "_delta_log/00.json", []byte("one")); err != nil {
				t.Fatal(err)
			}
			if err := s.PutIfAbsent(ctx, "_delta_log/00.json", []byte("two")); !errors.Is(err, ErrExist) {
				t.Fatalf("second PutIfAbsent: %v, want ErrExist", err)
			}
			if b, _ := s.ReadFile(ctx, "_delta_log/00.json"); string(b) != "one" {
				t.Fatalf("content after lost race = %q, want one", b)
			}
			if err := s.WriteFile(ctx, "_delta_log/_last_checkpoint", []byte("x")); err != nil {
				t.Fatal(err)
			}
			if err := s.WriteFile(ctx, "_delta_log/_last_checkpoint", []byte("yy")); err != nil {
				t.Fatal(err)
			}
			w, err := s.Create(ctx, "p=1/part-0.parquet")
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(w, "0123456789")
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			w, _ = s.Create(ctx, "p=1/part-1.parquet")
			io.WriteString(w, "gone")
			w.Abort()
			if _, err := s.Stat(ctx, "p=1/part-1.parquet"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("aborted object exists: %v", err)
			}
			f, err := s.Open(ctx, "p=1/part-0.parquet")
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 4)
			if n, err := f.ReadAt(buf, 3); n != 4 || err != nil || string(buf) != "3456" {
				t.Fatalf("ReadAt = %d %v %q", n, err, buf)
			}
			if n, err := f.ReadAt(buf, 8); n != 2 || err != io.EOF {
				t.Fatalf("ReadAt at end = %d %v", n, err)
			}
			f.Seek(5, io.SeekStart)
			rest, _ := io.ReadAll(f)
			if string(rest) != "56789" || f.Size() != 10 {
				t.Fatalf("Read after Seek = %q size %d", rest, f.Size())
			}
			f.Close()
			ents, err := s.ReadDir(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range ents {
				got = append(got, fmt.Sprintf("%s:%v", e.Name, e.IsDir))
			}
			if strings.Join(got, " ") != "_delta_log:true p=1:true" {
				t.Fatalf("ReadDir root = %v", got)
			}
			ents, _ = s.ReadDir(ctx, "_delta_log")
			if len(ents) != 2 || ents[0].Name != "00.json" || ents[1].Name != "_last_checkpoint" || ents[1].Size != 2 {
				t.Fatalf("ReadDir _delta_log = %+v", ents)
			}
			if ents, err := s.ReadDir(ctx, "nope"); err != nil || len(ents) != 0 {
				t.Fatalf("ReadDir missing = %v %v", ents, err)
			}
			got = nil
			if err := s.Walk(ctx, "", func(in Info) error { got = append(got, in.Name); return nil }); err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != "_delta_log/00.json _delta_log/_last_checkpoint p=1/part-0.parquet" {
				t.Fatalf("Walk = %v", got)
			}
			if err := s.Remove(ctx, "p=1/part-0.parquet"); err != nil {
				t.Fatal(err)
			}
			if err := s.Remove(ctx, "p=1/part-0.parquet"); err != nil {
				t.Fatalf("Remove missing: %v", err)
			}
			sub := s.Sub("_delta_log")
			if b, err := sub.ReadFile(ctx, "00.json"); err != nil || string(b) != "one" {
				t.Fatalf("Sub read = %q %v", b, err)
			}
			for _, bad := range []string{"../x", "a/../b", "/abs", "a//b", ""} {
				if _, err := s.ReadFile(ctx, bad); err == nil || errors.Is(err, fs.ErrNotExist) {
					t.Errorf("name %q accepted: %v", bad, err)
				}
			}
		})
	}
}

// TestPutIfAbsentRace: of 8 concurrent creators of one name, exactly one wins, each round.
func TestPutIfAbsentRace(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			for round := 0; round < 20; round++ {
				var wg sync.WaitGroup
				var mu sync.Mutex
				wins := 0
				for i := 0; i < 8; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						err := s.PutIfAbsent(ctx, fmt.Sprintf("log/%03d.json", round), []byte(fmt.Sprint(i)))
						mu.Lock()
						defer mu.Unlock()
						if err == nil {
							wins++
						} else if !errors.Is(err, ErrExist) {
							t.Error(err)
						}
					}()
				}
				wg.Wait()
				if wins != 1 {
					t.Fatalf("round %d: %d winners", round, wins)
				}
			}
		})
	}
}

func TestLocalLeavesNoTempFiles(t *testing.T) {
	dir := t.TempDir()
	s, _ := Local(dir, 0)
	ctx := context.Background()
	s.PutIfAbsent(ctx, "d/x", []byte("1"))
	s.PutIfAbsent(ctx, "d/x", []byte("2"))
	s.WriteFile(ctx, "d/y", []byte("1"))
	ents, _ := os.ReadDir(filepath.Join(dir, "d"))
	if len(ents) != 2 {
		t.Fatalf("entries %v", ents)
	}
}

func TestLease(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ttl := 300 * time.Millisecond
			a, err := AcquireLease(ctx, s, "_lease", "checkpoint x", ttl)
			if err != nil {
				t.Fatal(err)
			}
			_, err = AcquireLease(ctx, s, "_lease", "checkpoint x", ttl)
			var busy *LeaseBusyError
			if !errors.As(err, &busy) || busy.Holder.PID != os.Getpid() || !strings.Contains(err.Error(), "checkpoint x is held by pid") {
				t.Fatalf("second acquire: %v", err)
			}
			// The holder renews: after several TTLs the lease is still held.
			time.Sleep(3 * ttl)
			if _, err := AcquireLease(ctx, s, "_lease", "checkpoint x", ttl); !errors.As(err, &busy) {
				t.Fatalf("acquire while renewed: %v", err)
			}
			select {
			case <-a.Lost():
				t.Fatalf("lost: %v", a.Err())
			default:
			}
			if err := a.Release(); err != nil {
				t.Fatal(err)
			}
			b, err := AcquireLease(ctx, s, "_lease", "checkpoint x", ttl)
			if err != nil {
				t.Fatalf("acquire after release: %v", err)
			}
			// A holder that stops renewing (killed) frees the lease after the TTL, and a
			// taker makes the old holder's next renewal fail: it learns it lost.
			close(b.stop)
			<-b.done
			time.Sleep(ttl + 100*time.Millisecond)
			c, err := AcquireLease(ctx, s, "_lease", "checkpoint x", ttl)
			if err != nil {
				t.Fatalf("acquire after expiry: %v", err)
			}
			if err := b.write(ctx, b.gen+1, false); !errors.Is(err, ErrExist) {
				t.Fatalf("zombie renewal: %v, want ErrExist", err)
			}
			c.Release()
		})
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"s3://bucket/t":                                       "s3://bucket/t",
		"https://user:hunter2@host/x":                         "https://user:REDACTED@host/x",
		"GET https://h/b?X-Amz-Signature=abc123&x=1":          "GET https://h/b?X-Amz-Signature=REDACTED&x=1",
		"az://c/p?sig=secretsig&se=2026":                      "az://c/p?sig=REDACTED&se=2026",
		"secret_access_key=AKIAXXX aws_secret_access_key=foo": "secret_access_key=REDACTED aws_secret_access_key=REDACTED",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpenRefusals(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ loc, want string }{
		{"ftp://host/x", "unsupported scheme ftp://"},
		{"s3:///path", "no bucket"},
		{"s3://key:secret@bucket/t", "credentials in the URL are not accepted"},
		{"s3://bucket/a/../b", `".." segment`},
	} {
		_, err := Open(ctx, c.loc, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q) = %v, want …%s…", c.loc, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret@") {
			t.Errorf("Open(%q) error shows the secret: %v", c.loc, err)
		}
		var ue *URLError
		if !errors.As(err, &ue) {
			t.Errorf("Open(%q) error %T is not a URLError", c.loc, err)
		}
	}
	if !IsURL("s3://b/x") || !IsURL("ABFSS://c@a.dfs.core.windows.net/x") || IsURL("/tmp/x") || IsURL("file:///tmp") {
		t.Error("IsURL")
	}
}

// TestURLSecretsNeverEchoed: whatever a URL's user-info holds — a secret with "/" and "+" as
// AWS secrets have, a bad escape, a second "@", a user alone — no part of it reaches the error.
func TestURLSecretsNeverEchoed(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ loc, secret string }{
		{"s3://AKIAEXAMPLE:wJalrXUtnFEMI/K7MDENG+bPxRfiCYzEXAMPLEKEY@b/t", "wJalrXUtnFEMI"},
		{"s3://AKIA:Sup%zzer@b/t", "Sup%zzer"},
		{"s3://AK:pa@ssWORD@b/t", "ssWORD"},
		{"s3://SuperSecretUser@b/t", "SuperSecretUser"},
		{"gs://u:p4ss/word@b/t", "p4ss"},
		{"abfss://c:k3y@acct.dfs.core.windows.net/t", "k3y"},
		{"s3://b/t?secret_access_key=abc%zz", "abc%zz"},
	} {
		_, err := Open(ctx, c.loc, Options{})
		var ue *URLError
		if !errors.As(err, &ue) {
			t.Errorf("Open(%q) = %v, want a URLError", c.loc, err)
			continue
		}
		if strings.Contains(err.Error(), c.secret) {
			t.Errorf("Open(%q) error shows the secret: %v", c.loc, err)
		}
	}
	// An abfss URL's CONTAINER@ACCOUNT is not user info.
	if at := userinfoEnd("abfss://container@acct.dfs.core.windows.net/t"); at != -1 {
		t.Errorf("abfss host taken for user info at %d", at)
	}
	if at := userinfoEnd("s3://bucket/path@x"); at != -1 {
		t.Errorf("an @ in the path taken for user info at %d", at)
	}
}

func TestCheckScheme(t *testing.T) {
	for loc, bad := range map[string]bool{
		"s3:/b/t": true, "s3:b/t": true, "GS:/b": true, "ftp://h/x": true, "s3x://b/t": true,
		"s3://b/t": false, "file:///tmp/x": false, "dir/x": false, "./a:b": false, "c:/x": false, "": false,
	} {
		if err := CheckScheme(loc); (err != nil) != bad {
			t.Errorf("CheckScheme(%q) = %v, want refused=%v", loc, err, bad)
		}
	}
}

func TestUnknownURLParameter(t *testing.T) {
	_, err := Open(context.Background(), "s3://b/t?regoin=eu-west-1", Options{})
	if err == nil || !strings.Contains(err.Error(), `unknown URL parameter "regoin"`) {
		t.Fatalf("got %v", err)
	}
}

// TestLeaseCheckAfterPause: a holder whose renewals are late (the process was paused) is told
// at once by Check, before its renewer runs again.
func TestLeaseCheckAfterPause(t *testing.T) {
	s, _ := Local(t.TempDir(), 0)
	ttl := 3 * time.Second
	l, err := AcquireLease(context.Background(), s, "_lease", "x", ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := l.Check(); err != nil {
		t.Fatalf("fresh lease: %v", err)
	}
	l.mu.Lock()
	l.renewed = time.Now().Add(-ttl) // as if this process had been stopped for a TTL
	l.mu.Unlock()
	if err := l.Check(); err == nil || !strings.Contains(err.Error(), "paused") {
		t.Fatalf("Check after a pause = %v", err)
	}
}
