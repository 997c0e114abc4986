// Package faultproxy is a TCP proxy for tests that puts network faults between a client and a
// real server: added latency, connections reset part-way, and responses lost after the server
// acted on the request (the outcome a client must survive when a commit's answer never comes).
//
// A Proxy listens on 127.0.0.1 (an OS-chosen port) and forwards every connection to one
// target. Faults are switched at run time by its methods, from any goroutine. Random choices
// come from one source seeded by New's seed, drawn in the order the decisions are made (one
// per accepted connection, one per response), so a test whose client makes one request at a
// time sees the same faults on every run.
//
// The proxy knows just enough HTTP/1.x to find responses: on one connection, bytes from the
// server that follow bytes from the client begin a response, except an interim
// "HTTP/1.x 1xx" (100 Continue), which is passed through. That is what toxiproxy's toxics,
// which act on a connection's byte stream per direction, do not offer: losing one chosen answer
// on a kept-alive connection while the requests before it get theirs.
package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Stats counts what a Proxy did since New.
type Stats struct {
	Conns   int   // connections accepted
	Resets  int   // connections reset by ResetAfter, ResetRandomly or ResetAll
	Dropped int   // responses dropped by DropResponses or DropNextResponses
	Up      int64 // bytes forwarded client to server
	Down    int64 // bytes forwarded server to client
}

// Proxy forwards connections from Addr to its target with the faults currently set. Its zero
// value is not usable; create one with New and Close it.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu           sync.Mutex
	rnd          *rand.Rand
	connLatency  time.Duration
	chunkLatency time.Duration
	resetAfter   int64
	resetProb    float64
	resetWithin  int64
	dropProb     float64
	dropNext     int
	conns        map[*link]struct{}
	stats        Stats
	closed       bool
}

// New starts a proxy on 127.0.0.1:0 forwarding to target (host:port) with no faults; seed
// seeds its random choices. The target is dialled per accepted connection, so it need not be
// up yet.
func New(target string, seed uint64) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		target: target,
		ln:     ln,
		rnd:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		conns:  map[*link]struct{}{},
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address, 127.0.0.1:PORT.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, resets every open connection and waits for their goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.ResetAll()
	p.wg.Wait()
	return err
}

// SetLatency delays each new connection by perConn before the target is dialled, and every
// chunk (one read's worth, up to 32 KiB) in either direction by perChunk before it is
// forwarded. Zero turns either off. perChunk applies to open connections too.
func (p *Proxy) SetLatency(perConn, perChunk time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.connLatency, p.chunkLatency = perConn, perChunk
}

// ResetAfter makes every connection accepted from now on reset (RST to both client and
// server) once it has carried n bytes, counting both directions: the chunk that crosses n is
// forwarded up to n. n <= 0 turns it off.
func (p *Proxy) ResetAfter(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resetAfter = n
}

// ResetRandomly makes each connection accepted from now on, with probability prob, reset
// after a byte count drawn uniformly from [0, within) (both directions; 0 resets it before its
// first byte is forwarded). It takes precedence over ResetAfter for the connections it picks.
// prob <= 0 turns it off; within < 1 counts as 1.
func (p *Proxy) ResetRandomly(prob float64, within int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resetProb, p.resetWithin = prob, max(within, 1)
}

// DropResponses makes each response, with probability prob, be lost: the request has reached
// the server, which answered, but the client's connection is reset before any byte of the
// answer reaches it (and the server's side closed). prob <= 0 turns it off.
func (p *Proxy) DropResponses(prob float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropProb = prob
}

// DropNextResponses drops the next n responses on any connection, like DropResponses,
// before any random choice is made.
func (p *Proxy) DropNextResponses(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropNext = n
}

// Clear turns every fault off; open connections keep any reset point already chosen for them.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.connLatency, p.chunkLatency = 0, 0
	p.resetAfter, p.resetProb = 0, 0
	p.dropProb, p.dropNext = 0, 0
}

// ResetAll resets every open connection now.
func (p *Proxy) ResetAll() {
	p.mu.Lock()
	ls := make([]*link, 0, len(p.conns))
	for l := range p.conns {
		ls = append(ls, l)
	}
	p.mu.Unlock()
	for _, l := range ls {
		l.abort(p, cut)
	}
}

// Stats returns the counters so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// link is one proxied connection.
type link struct {
	client, server net.Conn
	limit          int64 // reset once this many bytes were forwarded; < 0: never
	carried        int64 // bytes forwarded, both directions
	awaiting       bool  // the client sent bytes the server has not answered yet
	once           sync.Once

	mu      sync.Mutex // guards server and aborted between serve and abort
	aborted bool
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.stats.Conns++
		l := &link{client: c, limit: -1}
		if p.resetAfter > 0 {
			l.limit = p.resetAfter
		}
		if p.resetProb > 0 && p.rnd.Float64() < p.resetProb {
			l.limit = p.rnd.Int64N(p.resetWithin)
		}
		delay := p.connLatency
		p.conns[l] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(l, delay)
	}
}

func (p *Proxy) serve(l *link, delay time.Duration) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.conns, l)
		p.mu.Unlock()
	}()
	time.Sleep(delay)
	s, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		l.client.Close()
		return
	}
	l.mu.Lock()
	l.server = s
	aborted := l.aborted
	l.mu.Unlock()
	if aborted {
		rst(s)
		l.client.Close()
		return
	}
	done := make(chan struct{})
	go func() {
		p.pump(l, l.client, l.server, true)
		close(done)
	}()
	p.pump(l, l.server, l.client, false)
	<-done
	l.client.Close()
	l.server.Close()
}

// pump forwards src to dst chunk by chunk, applying the faults; up says the direction is
// client to server. When src ends it half-closes dst, so the other direction can finish.
func (p *Proxy) pump(l *link, src, dst net.Conn, up bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			chunk, act := p.decide(l, buf[:n], up)
			if len(chunk) > 0 {
				if _, werr := dst.Write(chunk); werr != nil {
					l.abort(p, forward)
					return
				}
			}
			if act != forward {
				l.abort(p, act)
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
					return
				}
			}
			l.abort(p, forward)
			return
		}
	}
}

type action int

const (
	forward action = iota // forward the chunk
	cut                   // forward the returned prefix, then reset
	drop                  // forward the returned prefix (an interim answer, if any), then reset: a lost response
)

// decide applies the chunk latency, the connection's reset point and the response drops to a
// chunk read in direction up, and returns what of it to forward and what to do then.
func (p *Proxy) decide(l *link, chunk []byte, up bool) ([]byte, action) {
	p.mu.Lock()
	delay := p.chunkLatency
	p.mu.Unlock()
	time.Sleep(delay)
	p.mu.Lock()
	defer p.mu.Unlock()
	if up {
		l.awaiting = true
	} else if l.awaiting {
		// An interim 1xx answer passes; the final answer starts after it, in this chunk or
		// a later one.
		start := 0
		if interim(chunk) {
			start = len(chunk)
			if i := bytes.Index(chunk, []byte("\r\n\r\n")); i >= 0 {
				start = i + 4
			}
		}
		if start < len(chunk) {
			l.awaiting = false
			if p.dropNext > 0 || p.dropProb > 0 && p.rnd.Float64() < p.dropProb {
				p.dropNext = max(p.dropNext-1, 0)
				p.stats.Down += int64(start)
				return chunk[:start], drop
			}
		}
	}
	act := forward
	if l.limit >= 0 && l.carried+int64(len(chunk)) >= l.limit {
		chunk, act = chunk[:l.limit-l.carried], cut
	}
	l.carried += int64(len(chunk))
	if up {
		p.stats.Up += int64(len(chunk))
	} else {
		p.stats.Down += int64(len(chunk))
	}
	return chunk, act
}

// interim says whether a response chunk starts with an HTTP/1.x 1xx status line.
func interim(b []byte) bool {
	return len(b) >= 10 && bytes.HasPrefix(b, []byte("HTTP/1.")) && b[9] == '1'
}

// abort resets both sides of the link (RST: SO_LINGER 0, then close), once. why is the fault
// that caused it (cut: a reset, drop: a lost response), counted in the stats before the RST
// is sent, so a client that saw it finds it counted; forward is no fault (the link failed on
// its own, or the other side went away).
func (l *link) abort(p *Proxy, why action) {
	l.once.Do(func() {
		p.mu.Lock()
		switch why {
		case cut:
			p.stats.Resets++
		case drop:
			p.stats.Dropped++
		}
		p.mu.Unlock()
		l.mu.Lock()
		s := l.server
		l.aborted = true
		l.mu.Unlock()
		rst(l.client)
		if s != nil {
			rst(s)
		}
	})
}

func rst(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
