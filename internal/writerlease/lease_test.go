package writerlease

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeStore records the lease rows written; fail makes writes fail.
type fakeStore struct {
	mu   sync.Mutex
	rows []string
	fail bool
}

func (f *fakeStore) Exec(_ context.Context, q string, _ ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errors.New("clickhouse unreachable")
	}
	f.rows = append(f.rows, q)
	return nil
}

func (f *fakeStore) writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.rows)
}

// clock is a wall clock the test moves, and the renewal loop's ticks.
type clock struct {
	mu   sync.Mutex
	now  time.Time
	tick chan time.Time
}

func newLease(st Store) (*Lease, *clock) {
	c := &clock{now: time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC), tick: make(chan time.Time)}
	l := New(st)
	l.now = func() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
	l.tick = func() <-chan time.Time { return c.tick }
	return l, c
}

// writing is a write that opened a load under a new lease: the lease's
// store, the lease, its clock, and the write's context.
func writing(t *testing.T) (*fakeStore, *Lease, *clock, context.Context) {
	t.Helper()
	st := &fakeStore{}
	l, c := newLease(st)
	ctx, release := l.Hold(context.Background())
	t.Cleanup(release)
	if _, err := Owner(ctx); err != nil {
		t.Fatal(err)
	}
	return st, l, c, ctx
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestHoldWritesNothingUntilOwner: a write that opens no load costs no
// lease; the first that does takes one, and later writes share it.
func TestHoldWritesNothingUntilOwner(t *testing.T) {
	st := &fakeStore{}
	l, _ := newLease(st)
	ctx, release := l.Hold(context.Background())
	defer release()
	if st.writes() != 0 {
		t.Fatalf("Hold wrote %d lease rows, want none", st.writes())
	}
	o1, err := Owner(ctx)
	if err != nil || !strings.HasPrefix(o1, `{"lease":"`) {
		t.Fatalf("Owner = %q, %v", o1, err)
	}
	if st.writes() != 1 || !strings.Contains(st.rows[0], "INSERT INTO "+Table) {
		t.Fatalf("lease rows %q, want one insert into %s", st.rows, Table)
	}
	ctx2, release2 := l.Hold(context.Background())
	defer release2()
	if o2, _ := Owner(ctx2); o2 != o1 || st.writes() != 1 {
		t.Fatalf("a second write's owner %q (rows %d), want the same lease %q, not written again", o2, st.writes(), o1)
	}
	if o, err := Owner(context.Background()); o != "" || err != nil {
		t.Fatalf("Owner without Hold = %q, %v, want none", o, err)
	}
	if err := Check(ctx); err != nil {
		t.Fatalf("Check of a held lease: %v", err)
	}
}

// TestLeaseRenewed: each tick renews the lease, which stays held as long
// as renewals succeed.
func TestLeaseRenewed(t *testing.T) {
	st, _, c, ctx := writing(t)
	for i := 0; i < 30; i++ { // 30 minutes
		c.advance(RenewEvery)
		c.tick <- time.Time{}
	}
	for deadline := time.Now().Add(10 * time.Second); st.writes() < 31 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // the last renewal under way
	}
	if st.writes() != 31 {
		t.Fatalf("%d lease rows after 30 renewals, want 31", st.writes())
	}
	if err := Check(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("a renewed lease: Check %v, context %v", err, ctx.Err())
	}
}

// TestLeaseLostFences: a lease not renewed for FenceAfter is lost: the
// writes holding it end with ErrLost and register nothing (Check), and the
// next write takes a new lease.
func TestLeaseLostFences(t *testing.T) {
	st, l, c, ctx := writing(t)
	first, _ := Owner(ctx)
	st.mu.Lock()
	st.fail = true
	st.mu.Unlock()
	for i := 0; i < 9; i++ {
		c.advance(RenewEvery)
		c.tick <- time.Time{}
	}
	if err := Check(ctx); err != nil {
		t.Fatalf("9 minutes without a renewal: %v, want the lease still held", err)
	}
	c.advance(RenewEvery + time.Second)
	if err := Check(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("past FenceAfter without a renewal: Check %v, want ErrLost", err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the write's context did not end when its lease was lost")
	}
	if !errors.Is(context.Cause(ctx), ErrLost) {
		t.Fatalf("the write ended with %v, want ErrLost", context.Cause(ctx))
	}
	// Detached from cancellation (a COPY registering what it loaded), the
	// write is still fenced.
	if err := Check(context.WithoutCancel(ctx)); !errors.Is(err, ErrLost) {
		t.Fatalf("Check detached: %v, want ErrLost", err)
	}
	st.mu.Lock()
	st.fail = false
	st.mu.Unlock()
	ctx2, release2 := l.Hold(context.Background())
	defer release2()
	second, err := Owner(ctx2)
	if err != nil || second == first {
		t.Fatalf("the next write's lease %q (%v), want a new one (not %q)", second, err, first)
	}
}

// TestFrozenProcessFenced: a process that stalls past FenceAfter (its
// clock jumps) finds its lease lost before anything renews it.
func TestFrozenProcessFenced(t *testing.T) {
	st, _, c, ctx := writing(t)
	c.advance(25 * time.Hour)
	if err := Check(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("after a 25-hour stall: Check %v, want ErrLost", err)
	}
	if st.writes() != 1 {
		t.Fatalf("%d lease rows, want only the first: a lost lease is not renewed", st.writes())
	}
}

// TestOwnerFailsWithoutLease: a write whose lease cannot be taken fails
// before it opens anything.
func TestOwnerFailsWithoutLease(t *testing.T) {
	l, _ := newLease(&fakeStore{fail: true})
	ctx, release := l.Hold(context.Background())
	defer release()
	if o, err := Owner(ctx); err == nil {
		t.Fatalf("Owner = %q without a lease row, want an error", o)
	}
}
