package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// DefaultLeaseTTL is how long a lease stays valid after its holder's last renewal, unless the
// environment variable STREAMKIT_LEASE_TTL (a Go duration) says otherwise. A holder renews
// every third of it, so a killed holder's lease is free this long after its death.
const DefaultLeaseTTL = 30 * time.Second

// LeaseTTL is [DefaultLeaseTTL] or STREAMKIT_LEASE_TTL when that parses as a positive duration.
func LeaseTTL() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("STREAMKIT_LEASE_TTL")); err == nil && d > 0 {
		return d
	}
	return DefaultLeaseTTL
}

// LeaseRecord is the content of one lease generation object (JSON): who holds it and until
// when. It holds no credentials.
type LeaseRecord struct {
	// Owner is a random id of the holding process, fixed for its life.
	Owner string `json:"owner"`
	// Host and PID name the holding process, for messages.
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// What says what the lease guards ("checkpoint dedup", "flow f1"), for messages.
	What string `json:"what,omitempty"`
	// RenewedMs is the holder's clock at this renewal, Unix milliseconds.
	RenewedMs int64 `json:"renewedMs"`
	// TTLMs is the lease's time to live after RenewedMs, milliseconds.
	TTLMs int64 `json:"ttlMs"`
	// Released is true in the generation its holder wrote when letting go: the next
	// acquirer need not wait out the TTL.
	Released bool `json:"released,omitempty"`
}

// expired reports whether the record no longer holds at now: released, or past its TTL as
// measured from the later of its own clock and the store's write time (so a holder whose
// clock runs behind cannot keep a lease forever).
func (r LeaseRecord) expired(now, written time.Time) bool {
	if r.Released {
		return true
	}
	last := time.UnixMilli(r.RenewedMs)
	if written.After(last) {
		last = written
	}
	return now.Sub(last) > time.Duration(r.TTLMs)*time.Millisecond
}

// LeaseBusyError is [AcquireLease]'s refusal: another live process holds the lease.
type LeaseBusyError struct {
	// Location is the redacted URL of the lease.
	Location string
	// Holder is the current generation's record.
	Holder LeaseRecord
	// Left is how long the lease stays valid if its holder stops renewing.
	Left time.Duration
}

func (e *LeaseBusyError) Error() string {
	what := e.Holder.What
	if what == "" {
		what = "lease"
	}
	return fmt.Sprintf("%s is held by pid %d on %s (lease %s; it expires %s after its holder stops)",
		what, e.Holder.PID, e.Holder.Host, e.Location, e.Left.Round(time.Second))
}

// Lease is a held lease: a chain of put-if-absent generation objects NAME/<gen>.json, where
// the highest generation is the current holder. Acquiring writes generation G+1 after G has
// expired; each renewal writes the next generation, so a renewal that finds its generation
// taken has lost the lease. Two processes can therefore never both believe they hold it past
// one TTL, on any store with put-if-absent, without a lock service.
type Lease struct {
	s   Store
	dir string
	rec LeaseRecord
	ttl time.Duration
	mu  sync.Mutex
	gen int64
	// renewed is when the current generation was written (this process's clock).
	renewed time.Time
	lost    chan struct{}
	err     error
	stop    chan struct{}
	done    chan struct{}
}

// leaseName is the object name of generation g.
func leaseName(g int64) string { return fmt.Sprintf("%020d.json", g) }

// AcquireLease takes the lease at name (a directory of generation objects in s) for ttl, or
// fails with [*LeaseBusyError] while another process holds it. what names the guarded thing in
// messages. The lease renews itself in the background until [Lease.Release]; if a renewal
// fails for longer than the TTL or finds the lease taken, [Lease.Lost] is closed and the
// holder must stop writing.
func AcquireLease(ctx context.Context, s Store, name, what string, ttl time.Duration) (*Lease, error) {
	host, _ := os.Hostname()
	l := &Lease{s: s, dir: name, ttl: ttl, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		rec: LeaseRecord{Owner: newOwnerID(), Host: host, PID: os.Getpid(), What: what, TTLMs: ttl.Milliseconds()}}
	g, cur, written, err := l.current(ctx)
	if err != nil {
		return nil, err
	}
	if g > 0 && !cur.expired(timeNow(), written) {
		return nil, l.busy(cur, written)
	}
	if err := l.write(ctx, g+1, false); err != nil {
		if errors.Is(err, ErrExist) {
			// Another process took generation g+1 between our read and our write.
			if _, cur, written, rerr := l.current(ctx); rerr == nil {
				return nil, l.busy(cur, written)
			}
		}
		return nil, err
	}
	l.gen = g + 1
	l.renewed = timeNow()
	l.prune(ctx)
	go l.renew()
	return l, nil
}

func (l *Lease) busy(cur LeaseRecord, written time.Time) error {
	last := time.UnixMilli(cur.RenewedMs)
	if written.After(last) {
		last = written
	}
	left := time.Duration(cur.TTLMs)*time.Millisecond - timeNow().Sub(last)
	return &LeaseBusyError{Location: l.s.Location() + "/" + l.dir, Holder: cur, Left: max(left, 0)}
}

// current reads the highest generation: its number (0 = none), record and write time.
func (l *Lease) current(ctx context.Context) (int64, LeaseRecord, time.Time, error) {
	ents, err := l.s.ReadDir(ctx, l.dir)
	if err != nil {
		return 0, LeaseRecord{}, time.Time{}, err
	}
	var gens []int64
	mod := map[int64]time.Time{}
	for _, e := range ents {
		n, ok := strings.CutSuffix(e.Name, ".json")
		if g, err := strconv.ParseInt(n, 10, 64); ok && err == nil && !e.IsDir {
			gens = append(gens, g)
			mod[g] = e.ModTime
		}
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i] > gens[j] })
	for _, g := range gens {
		b, err := l.s.ReadFile(ctx, l.dir+"/"+leaseName(g))
		if errors.Is(err, os.ErrNotExist) {
			continue // pruned by its holder since the listing
		}
		if err != nil {
			return 0, LeaseRecord{}, time.Time{}, err
		}
		var r LeaseRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return 0, LeaseRecord{}, time.Time{}, fmt.Errorf("lease %s/%s/%s: %w", l.s.Location(), l.dir, leaseName(g), err)
		}
		return g, r, mod[g], nil
	}
	return 0, LeaseRecord{}, time.Time{}, nil
}

// write puts generation g with the current time.
func (l *Lease) write(ctx context.Context, g int64, released bool) error {
	r := l.rec
	r.RenewedMs = timeNow().UnixMilli()
	r.Released = released
	b, _ := json.Marshal(r)
	return l.s.PutIfAbsent(ctx, l.dir+"/"+leaseName(g), append(b, '\n'))
}

// prune removes generations older than the current one but one; failures only leave garbage.
func (l *Lease) prune(ctx context.Context) {
	ents, err := l.s.ReadDir(ctx, l.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n, _ := strings.CutSuffix(e.Name, ".json")
		if g, err := strconv.ParseInt(n, 10, 64); err == nil && g < l.gen-1 {
			l.s.Remove(ctx, l.dir+"/"+e.Name)
		}
	}
}

// renew writes the next generation every third of the TTL until Release, and marks the lease
// lost when a generation is taken or no renewal succeeded for a whole TTL.
func (l *Lease) renew() {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	lastOK := timeNow()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		g := l.gen
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
		err := l.write(ctx, g+1, false)
		cancel()
		switch {
		case err == nil:
			lastOK = timeNow()
			l.mu.Lock()
			l.gen = g + 1
			l.renewed = lastOK
			l.mu.Unlock()
			l.prune(context.Background())
		case errors.Is(err, ErrExist):
			l.fail(fmt.Errorf("lease %s/%s was taken over by another process", l.s.Location(), l.dir))
			return
		case timeNow().Sub(lastOK) > l.ttl:
			l.fail(fmt.Errorf("lease %s/%s could not be renewed for %s: %w", l.s.Location(), l.dir, l.ttl, err))
			return
		}
	}
}

func (l *Lease) fail(err error) {
	l.mu.Lock()
	l.err = err
	l.mu.Unlock()
	close(l.lost)
}

// Lost is closed when the lease is lost (see [AcquireLease]); [Lease.Err] says why.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err is why the lease was lost, or nil while it is held.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Check is nil while the lease is surely held: not lost, and renewed within the last two
// thirds of its TTL. After a pause of this process (SIGSTOP, a suspended VM, a long stall) its
// renewals are late and another process may be taking over, so Check fails before the renewer
// has even run again; a holder calls it before each write it must not make as a loser.
func (l *Lease) Check() error {
	if err := l.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	age := timeNow().Sub(l.renewed)
	l.mu.Unlock()
	if age > 2*l.ttl/3 {
		return fmt.Errorf("lease %s/%s was last renewed %s ago, longer than two thirds of its TTL %s (was this process paused?); another process may hold it now",
			l.s.Location(), l.dir, age.Round(time.Millisecond), l.ttl)
	}
	return nil
}

// Release stops renewing and writes a released generation, so the next process need not wait
// out the TTL. After a loss it only stops.
func (l *Lease) Release() error {
	select {
	case <-l.stop:
		return nil
	default:
	}
	close(l.stop)
	<-l.done
	if l.Err() != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
	defer cancel()
	err := l.write(ctx, l.gen+1, true)
	if err == nil {
		l.gen++
		l.prune(ctx)
	}
	return err
}

// Owner is the random id this process writes into the lease.
func (l *Lease) Owner() string { return l.rec.Owner }

func newOwnerID() string { return uuid.NewString() }
