package faultproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// echoServer accepts connections and echoes every byte back; received counts the bytes it read.
func echoServer(t *testing.T) (addr string, received *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	received = new(atomic.Int64)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					received.Add(int64(n))
					if n > 0 {
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), received
}

func newProxy(t *testing.T, target string, seed uint64) *Proxy {
	t.Helper()
	p, err := New(target, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// roundTrip writes msg through the proxy and reads len(msg) bytes back.
func roundTrip(t *testing.T, p *Proxy, msg []byte) ([]byte, error) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	got := make([]byte, len(msg))
	n, err := io.ReadFull(c, got)
	return got[:n], err
}

func TestForwardsUnchanged(t *testing.T) {
	addr, _ := echoServer(t)
	p := newProxy(t, addr, 1)
	msg := bytes.Repeat([]byte("0123456789"), 10_000)
	got, err := roundTrip(t, p, msg)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo through the proxy: %d of %d bytes, err %v", len(got), len(msg), err)
	}
	if s := p.Stats(); s.Conns != 1 || s.Up != int64(len(msg)) || s.Down != int64(len(msg)) || s.Resets != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestLatency(t *testing.T) {
	addr, _ := echoServer(t)
	p := newProxy(t, addr, 1)
	p.SetLatency(300*time.Millisecond, 0)
	t0 := time.Now()
	if _, err := roundTrip(t, p, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 300*time.Millisecond {
		t.Fatalf("per-connection latency 300ms, round trip took %v", d)
	}
	// Per chunk: the request and the echo are one chunk each, delayed 150ms each.
	p.SetLatency(0, 150*time.Millisecond)
	t0 = time.Now()
	if _, err := roundTrip(t, p, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 300*time.Millisecond {
		t.Fatalf("per-chunk latency 150ms both ways, round trip took %v", d)
	}
	p.Clear()
	t0 = time.Now()
	if _, err := roundTrip(t, p, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 250*time.Millisecond {
		t.Fatalf("after Clear, round trip took %v", d)
	}
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func TestResetAfter(t *testing.T) {
	addr, received := echoServer(t)
	p := newProxy(t, addr, 1)
	p.ResetAfter(10)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(bytes.Repeat([]byte("x"), 100)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if !isReset(err) {
		t.Fatalf("want a connection reset, got %d bytes and %v", len(got), err)
	}
	if len(got) != 0 {
		t.Fatalf("the 10 bytes went up; nothing may come back, got %q", got)
	}
	waitFor(t, func() bool { return received.Load() == 10 }, "the server to receive exactly 10 bytes (got %d)", received.Load)
	if s := p.Stats(); s.Resets != 1 || s.Up != 10 || s.Down != 0 {
		t.Fatalf("stats %+v", s)
	}
	// Counting both directions: 6 bytes up and their 6-byte echo cross 10 in the echo.
	p.ResetAfter(10)
	got, err = roundTrip(t, p, []byte("abcdef"))
	if !isReset(err) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Fatalf("want the echo cut, got %q, %v", got, err)
	}
	if string(got) != "abcd" {
		t.Fatalf("want the first 4 bytes of the echo before the reset, got %q", got)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool, format string, arg func() int64) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for "+format, arg())
}

// resetPattern makes 40 connections, one at a time, each sending 100 bytes, and returns for
// each whether it was reset.
func resetPattern(t *testing.T, seed uint64) []bool {
	addr, _ := echoServer(t)
	p := newProxy(t, addr, seed)
	p.ResetRandomly(0.5, 50)
	var out []bool
	for range 40 {
		_, err := roundTrip(t, p, bytes.Repeat([]byte("y"), 100))
		out = append(out, err != nil)
	}
	if s := p.Stats(); s.Resets != count(out) {
		t.Fatalf("stats count %d resets, the clients saw %d", s.Resets, count(out))
	}
	return out
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func TestResetRandomlyIsSeeded(t *testing.T) {
	a, b := resetPattern(t, 7), resetPattern(t, 7)
	if n := count(a); n < 10 || n > 30 {
		t.Fatalf("probability 0.5 reset %d of 40 connections", n)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different faults: connection %d reset %v then %v", i, a[i], b[i])
		}
	}
	c := resetPattern(t, 8)
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("seeds 7 and 8 reset the same 40 connections")
	}
}

// httpServer counts the requests it handled (fully read) and answers "ok <n>".
func httpServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "ok %d", n.Add(1))
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func TestDropNextResponses(t *testing.T) {
	s, handled := httpServer(t)
	p := newProxy(t, strings.TrimPrefix(s.URL, "http://"), 1)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	url := "http://" + p.Addr() + "/x"
	get := func() (string, error) {
		resp, err := client.Post(url, "text/plain", strings.NewReader("request body"))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if b, err := get(); err != nil || b != "ok 1" {
		t.Fatalf("no fault: %q, %v", b, err)
	}
	p.DropNextResponses(1)
	if b, err := get(); err == nil {
		t.Fatalf("dropped response: want an error, got %q", b)
	}
	// The request took effect although its client saw only an error.
	if n := handled.Load(); n != 2 {
		t.Fatalf("server handled %d requests, want 2", n)
	}
	if b, err := get(); err != nil || b != "ok 3" {
		t.Fatalf("after the drop: %q, %v", b, err)
	}
	if st := p.Stats(); st.Dropped != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDropResponsesPassesContinue(t *testing.T) {
	s, handled := httpServer(t)
	p := newProxy(t, strings.TrimPrefix(s.URL, "http://"), 1)
	p.DropResponses(1)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
	line := make([]byte, 25)
	if _, err := io.ReadFull(c, line); err != nil || !strings.HasPrefix(string(line), "HTTP/1.1 100 Continue") {
		t.Fatalf("want the interim 100 Continue through, got %q, %v", line, err)
	}
	io.WriteString(c, "body")
	rest, err := io.ReadAll(c)
	if bytes.Contains(rest, []byte("200 OK")) || err == nil && len(rest) > 2 {
		t.Fatalf("final response must be dropped, got %q, %v", rest, err)
	}
	waitFor(t, func() bool { return handled.Load() == 1 }, "the server to handle the request (handled %d)", handled.Load)
}

func TestDropResponsesIsSeeded(t *testing.T) {
	pattern := func(seed uint64) []bool {
		s, handled := httpServer(t)
		p := newProxy(t, strings.TrimPrefix(s.URL, "http://"), seed)
		p.DropResponses(0.3)
		// One connection per request: Go retries an idempotent request that failed on a
		// reused connection, which would hide the drop.
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		var out []bool
		for range 30 {
			resp, err := client.Get("http://" + p.Addr() + "/")
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			out = append(out, err != nil)
		}
		if n := handled.Load(); n != 30 {
			t.Fatalf("server handled %d of 30 requests", n)
		}
		if st := p.Stats(); st.Dropped != count(out) {
			t.Fatalf("stats count %d drops, the client saw %d", st.Dropped, count(out))
		}
		return out
	}
	a, b := pattern(3), pattern(3)
	if n := count(a); n < 3 || n > 18 {
		t.Fatalf("probability 0.3 dropped %d of 30 responses", n)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different drops at request %d", i)
		}
	}
}

func TestResetAll(t *testing.T) {
	addr, _ := echoServer(t)
	p := newProxy(t, addr, 1)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "hi")
	buf := make([]byte, 2)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	p.ResetAll()
	if _, err := io.ReadAll(c); !isReset(err) {
		t.Fatalf("want a reset, got %v", err)
	}
}

// A server that sends its interim 100 Continue and its final answer in one write: the
// interim part still passes, the final answer is dropped.
func TestDropResponsesSplitsInterim(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1024)
		c.Read(buf)
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		c.Read(buf)
	}()
	p := newProxy(t, ln.Addr().String(), 1)
	p.DropNextResponses(1)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
	got, err := io.ReadAll(c)
	if string(got) != "HTTP/1.1 100 Continue\r\n\r\n" || !isReset(err) {
		t.Fatalf("want the 100 Continue, then a reset; got %q, %v", got, err)
	}
	if st := p.Stats(); st.Dropped != 1 || st.Down != int64(len(got)) {
		t.Fatalf("stats %+v", st)
	}
}
