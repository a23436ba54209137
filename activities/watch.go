package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/lakepipe/lakepipe/internal/chstore"
)

// errFenced ends an attempt that may no longer own its work; inserters
// under a context it cancelled abandon their INSERT.
var errFenced = chstore.ErrFenced

// Leased attempts heartbeat every leaseBeat, each heartbeat waiting at
// most beatTimeout: an attempt that lost Temporal stops within its ttl
// plus these (15 + 3 + 2 s under the pipes' 30 s heartbeat timeout).
const (
	leaseBeat   = 3 * time.Second
	beatTimeout = 2 * time.Second
)

// keepAlive heartbeats every few seconds until the returned stop is called:
// the proof that this worker is alive, however long one step takes. For
// activities that only read; those that write hold a lease (watch).
func keepAlive(ctx context.Context) (stop func()) {
	_, stop = heartbeat(ctx, &lease{beat: asyncBeat}, 5*time.Second, 0, nil, nil)
	return stop
}

// watch heartbeats every few seconds (details(), when given) until stop
// is called, and holds the attempt's lease on its work (see lease): the
// returned context is cancelled with errFenced once this attempt may no
// longer write, so that a worker cut off from Temporal (a zombie) stops
// before Temporal gives the work to another attempt. Heartbeats prove the
// worker alive; moved proves the attempt is: when stall > 0 and moved()
// returns the same count for stall, the context is cancelled with
// errStalled, so that the attempt gives up and Temporal retries it.
func watch(ctx context.Context, stall time.Duration, moved func() int64, details func() []any) (context.Context, func()) {
	every := leaseBeat
	if stall > 0 {
		every = min(every, stall/2)
	}
	return heartbeat(ctx, newLease(ctx), every, stall, moved, details)
}

// heartbeat renews l every interval until stop is called; see watch.
func heartbeat(ctx context.Context, l *lease, every, stall time.Duration, moved func() int64, details func() []any) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	beat := func() []any {
		if details != nil {
			return details()
		}
		return nil
	}
	if err := l.renew(ctx, beat()...); err != nil {
		cancel(err)
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		last, lastMove := int64(-1), time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if stall > 0 && moved != nil {
					if n := moved(); n != last {
						last, lastMove = n, time.Now()
					} else if time.Since(lastMove) > stall {
						cancel(fmt.Errorf("%w for %s (LAKEPIPE_STALL_TIMEOUT): this attempt gives up and is retried", errStalled, stall))
						return
					}
				}
				if err := l.renew(ctx, beat()...); err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// stalled returns the error of an attempt watch gave up on (no progress,
// or its lease lost), or nil.
func stalled(ctx context.Context) error {
	if err := context.Cause(ctx); errors.Is(err, errStalled) || errors.Is(err, errFenced) {
		return err
	}
	return nil
}

// A lease is an attempt's hold on its work. Temporal starts another
// attempt only after HeartbeatTimeout without a heartbeat from this one,
// counted from the last heartbeat it received; so when Temporal
// acknowledges a heartbeat this attempt sent at t, no other attempt starts
// before t + HeartbeatTimeout. The attempt writes only until t + ttl (half
// the timeout; checks every few seconds), which leaves the rest of the
// timeout for blocks already sent to reach ClickHouse before another
// attempt's clean-up runs. A heartbeat Temporal refuses (the attempt timed
// out, was retried or cancelled) ends the lease at once. Heartbeats are
// synchronous for this (the SDK's own are batched and never say whether
// they arrived).
type lease struct {
	beat func(ctx context.Context, details ...any) error
	ttl  time.Duration // 0: never expires (no heartbeat timeout, a local activity, tests)
	held time.Time     // when the last acknowledged heartbeat was sent
}

func newLease(ctx context.Context) *lease {
	info := activity.GetInfo(ctx)
	c := activityClient(ctx)
	if c == nil || info.IsLocalActivity || info.HeartbeatTimeout <= 0 || len(info.TaskToken) == 0 {
		return &lease{beat: asyncBeat}
	}
	token := info.TaskToken
	return &lease{ttl: info.HeartbeatTimeout / 2, beat: func(ctx context.Context, details ...any) error {
		bctx, cancel := context.WithTimeout(ctx, beatTimeout)
		defer cancel()
		return c.RecordActivityHeartbeat(bctx, token, details...)
	}}
}

// asyncBeat is the SDK's own heartbeat, batched and unanswered: a lease
// with it never ends.
func asyncBeat(ctx context.Context, details ...any) error {
	activity.RecordHeartbeat(ctx, details...)
	return nil
}

// activityClient is the worker's Temporal client, or nil where an activity
// runs without one (the SDK's test environment).
func activityClient(ctx context.Context) (c client.Client) {
	defer func() {
		if recover() != nil {
			c = nil
		}
	}()
	return activity.GetClient(ctx)
}

// renew heartbeats; an acknowledged heartbeat extends the lease from the
// moment it was sent. It returns an error wrapping errFenced when the
// attempt must stop writing.
func (l *lease) renew(ctx context.Context, details ...any) error {
	sent := time.Now()
	err := l.beat(ctx, details...)
	var nf *serviceerror.NotFound
	var canceled *temporal.CanceledError
	switch {
	case err == nil:
		l.held = sent
		return nil
	case ctx.Err() != nil:
		return nil // the attempt is ending anyway
	case errors.As(err, &nf), errors.As(err, &canceled), errors.Is(err, activity.ErrActivityPaused), errors.Is(err, activity.ErrActivityReset):
		return fmt.Errorf("%w: Temporal no longer counts it as the current attempt (%v); it stops without writing more", errFenced, err)
	case l.ttl > 0 && time.Since(l.held) > l.ttl:
		return fmt.Errorf("%w: no heartbeat has reached Temporal for %s (%v); another attempt may start, so this one stops writing", errFenced, time.Since(l.held).Round(time.Second), err)
	}
	return nil // missed; the lease still holds
}
