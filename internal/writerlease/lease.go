// Package writerlease names the process behind the loads it opens in a
// change-tracked table's change log (lakepipe.open_commits), so that
// maintenance can tell a load whose process died from one under way.
//
// A COPY INTO, an INSERT, an UPDATE, a MERGE INTO or a streaming flush
// opens its commit, writes its rows, then registers the commit. A process
// that dies in between leaves the rows in the table, hidden, and the
// commit open: a name in every committed-rows read of the table, for good,
// as nothing retries such a write under its commit id (pipes' loads are
// retried, and named by their pipe: core.PipeOwner). With a lease, each
// such mark names the process's lease; the process renews it in
// lakepipe.writer_leases every RenewEvery, and maintenance removes the
// rows and the marks of loads whose lease has not been renewed for a day
// (changes.SweepAbandoned).
//
// Fencing. A process that cannot renew its lease for FenceAfter (10
// minutes, against the day maintenance waits) loses it: the writes that
// hold it end (their contexts are cancelled with ErrLost) and none of them
// registers a commit (Check), so that rows maintenance may remove are
// never shown (what a cancelled write does after, under
// context.WithoutCancel, Check still fences). The next write takes a new lease. Time is the wall clock:
// a process frozen (SIGSTOP, a paused VM) past FenceAfter finds its lease
// lost when it resumes, before it can register anything.
//
// What grows: one row per lease (per process that wrote to a tracked
// table, and per lease lost), renewed in place (a ReplacingMergeTree by
// renewal time); maintenance deletes leases not renewed for two days.
package writerlease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
)

const (
	// RenewEvery is how often a process renews its lease.
	RenewEvery = time.Minute
	// FenceAfter is how long a process goes on writing under a lease it
	// could not renew.
	FenceAfter = 10 * time.Minute
	// Table holds the leases: owner, renewed_at.
	Table = "lakepipe.writer_leases"
)

// ErrLost ends the writes of a lease that could not be renewed for
// FenceAfter.
var ErrLost = errors.New("this process's writer lease was not renewed for 10 minutes (ClickHouse unreachable, or the process stalled): the write stopped, and maintenance removes what it left")

// Store runs the lease's statements (chstore.Store).
type Store interface {
	Exec(ctx context.Context, query string, args ...any) error
}

// Lease is a process's writer lease; safe for concurrent use.
type Lease struct {
	st   Store
	now  func() time.Time // the wall clock; tests move it
	mu   sync.Mutex
	cur  *epoch
	tick func() <-chan time.Time
}

// epoch is one lease: a process takes a new one after losing the last.
type epoch struct {
	l       *Lease
	id      string
	mu      sync.Mutex
	renewed time.Time       // wall clock of the last acknowledged renewal
	lost    context.Context // done, with ErrLost, once the lease is lost
	lose    context.CancelCauseFunc
}

// New returns the lease of this process over st; it writes nothing until
// the first Hold.
func New(st Store) *Lease {
	return &Lease{st: st, now: func() time.Time { return time.Now().Round(0) }, tick: func() <-chan time.Time { return time.After(RenewEvery) }}
}

type ctxKey struct{}

// binding ties a write's context to the lease, from its first open mark.
type binding struct {
	l      *Lease
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	ep     *epoch
	stop   func() bool
}

// Hold binds a write's context to the process's lease. Nothing is written
// until the write opens a load (Owner): a write that opens none costs
// nothing. From then on the context ends with ErrLost if the lease is
// lost. release ends the binding.
func (l *Lease) Hold(ctx context.Context) (_ context.Context, release func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	b := &binding{l: l, cancel: cancel}
	return context.WithValue(ctx, ctxKey{}, b), func() {
		b.mu.Lock()
		if b.stop != nil {
			b.stop()
		}
		b.mu.Unlock()
		cancel(context.Canceled)
	}
}

// Owner is the owner the open marks of a write under ctx name: the
// process's lease, taken (its row written) by the first write that needs
// it; "" if ctx holds no binding (Hold).
func Owner(ctx context.Context) (string, error) {
	b, ok := ctx.Value(ctxKey{}).(*binding)
	if !ok {
		return "", nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ep == nil {
		ep, err := b.l.epoch(ctx)
		if err != nil {
			return "", err
		}
		b.ep = ep
		b.stop = context.AfterFunc(ep.lost, func() { b.cancel(ErrLost) })
	}
	return b.ep.owner(), nil
}

// Check is nil unless the write under ctx opened loads under a lease that
// is lost since: it must not register them, as maintenance may remove
// their rows.
func Check(ctx context.Context) error {
	b, ok := ctx.Value(ctxKey{}).(*binding)
	if !ok {
		return nil
	}
	b.mu.Lock()
	ep := b.ep
	b.mu.Unlock()
	if ep != nil && !ep.l.held(ep) {
		return ErrLost
	}
	return nil
}

// epoch is the lease in force, taken (its row written) if there is none.
func (l *Lease) epoch(ctx context.Context) (*epoch, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ep := l.cur; ep != nil && l.held(ep) {
		return ep, nil
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	ep := &epoch{l: l, id: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))}
	ep.lost, ep.lose = context.WithCancelCause(context.Background())
	if err := l.renew(ctx, ep); err != nil {
		return nil, fmt.Errorf("take a writer lease: %w", err)
	}
	l.cur = ep
	go l.keep(ep)
	return ep, nil
}

// held reports whether ep was renewed within FenceAfter, and loses it if
// not.
func (l *Lease) held(ep *epoch) bool {
	if ep.lost.Err() != nil {
		return false
	}
	ep.mu.Lock()
	renewed := ep.renewed
	ep.mu.Unlock()
	if l.now().Sub(renewed) < FenceAfter {
		return true
	}
	ep.lose(ErrLost)
	return false
}

// keep renews ep until it is lost.
func (l *Lease) keep(ep *epoch) {
	for {
		select {
		case <-ep.lost.Done():
			return
		case <-l.tick():
		}
		if !l.held(ep) { // a renewal after the gap would hide it
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), RenewEvery/2)
		_ = l.renew(ctx, ep) // a failure shows as the gap growing
		cancel()
	}
}

// renew writes ep's row with the server's time, and notes the renewal.
func (l *Lease) renew(ctx context.Context, ep *epoch) error {
	at := l.now()
	owner := chsql.QuoteString(ep.owner())
	if err := l.st.Exec(ctx, "INSERT INTO "+Table+" (owner, renewed_at) SELECT "+owner+", now()"); err != nil {
		return err
	}
	ep.mu.Lock()
	if at.After(ep.renewed) {
		ep.renewed = at
	}
	ep.mu.Unlock()
	return nil
}

// owner is the JSON an open mark names the lease by (see core.ParseOwner).
func (ep *epoch) owner() string {
	b, _ := json.Marshal(struct {
		Lease string `json:"lease"`
	}{ep.id})
	return string(b)
}
