package activities

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/runcache"
)

// awaitBeat is how often AwaitFiles heartbeats while it sleeps. The SDK
// sends at most one heartbeat per throttle interval (the await worker's is
// set just under the workflow's heartbeat timeout), so a thousand idle
// pipes cost about a thousand small calls to Temporal per throttle
// interval, and no history events.
const awaitBeat = 30 * time.Second

// AwaitFiles is how an idle polling pipe waits: it lists the pipe's volume
// every poll interval (counted from the start of the last turn), as a turn
// would, and returns the first listing that finds files, which the
// workflow then copies. An idle poll is a listing
// and nothing else: no workflow task, no history event, no activity task
// (Temporal's advice for frequent polling). After in.For it returns with
// no files and its state, so that the workflow records its figures and,
// now and then, continues as new.
//
// The workflow cancels a wait when a signal or an update wakes the pipe
// (REFRESH, pause, drop, new settings). The attempt learns of that at its
// next heartbeat; meanwhile a newer wait of the same pipe on this worker
// ends it at once (waits), and a stray listing it makes only reads.
func (a *Activities) AwaitFiles(ctx context.Context, in jobs.AwaitInput) (jobs.AwaitResult, error) {
	ctx, done := a.waits.enter(ctx, activity.GetInfo(ctx).WorkflowExecution.ID)
	defer done()
	poll := max(time.Duration(in.Params.PollSeconds)*time.Second, time.Second)
	start := time.Now()
	end := start.Add(in.For)
	due, hurry := firstListing(start, in.Since, poll)
	res := jobs.AwaitResult{ListResult: jobs.ListResult{State: in.State}}
	var last time.Time
	// Every heartbeat carries the progress (DESC PIPE adds its polls to
	// the pipe's turns): the SDK sends the last one recorded.
	progress := func() []any {
		return []any{jobs.AwaitProgress{Polls: res.Polls, LastListing: last, NextListing: due, List: res.State}}
	}
	stop := activity.GetWorkerStopChannel(ctx)
	for {
		if due.After(end) {
			return res, nil
		}
		// Sleep until the listing is due, heartbeating on the way.
		for now := time.Now(); now.Before(due); now = time.Now() {
			activity.RecordHeartbeat(ctx, progress()...)
			t := time.NewTimer(min(due.Sub(now), awaitBeat))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return res, ctx.Err()
			case <-stop:
				// Another worker takes the pipe's next wait.
				t.Stop()
				return res, nil
			}
		}
		// A snapshot: the listing's heartbeats run beside this loop.
		now := progress()
		listed, err := a.listOnce(ctx, in.Params, res.State, hurry, func() []any { return now })
		hurry = false
		res.Polls++
		last = time.Now()
		a.Metrics.Poll(last.Sub(due))
		if err != nil {
			return res, err
		}
		res.ListResult = listed
		if len(listed.Files) > 0 {
			return res, nil
		}
		due = due.Add(poll)
		if due.Before(last) {
			// A listing longer than the interval: the next one waits a
			// whole interval rather than following at once.
			due = last.Add(poll)
		}
	}
}

// firstListing says when a wait that began at start lists first: one poll
// interval after the turn before it began (since), not after the wait
// began, so that a pipe lists every interval however long its turns take.
// A turn that took longer than the interval (a backlog) is followed by a
// listing at once, in a hurry: it does not wait to join other pipes'
// catalog checks. Never before start nor later than one interval after it,
// so that clocks that disagree (Temporal's, which since is on, and this
// worker's) cost at most one early listing per turn, and delay none. A
// zero since (workflows recorded before it was sent, and the waits after
// the first) counts from start.
func firstListing(start, since time.Time, poll time.Duration) (due time.Time, hurry bool) {
	if since.IsZero() {
		return start.Add(poll), false
	}
	due = since.Add(poll)
	switch {
	case !due.After(start):
		return start, true
	case due.After(start.Add(poll)):
		return start.Add(poll), false
	}
	return due, false
}

// listOnce is one listing of an AwaitFiles; it heartbeats (progress())
// while it lists, as a full listing of a large volume takes a while.
func (a *Activities) listOnce(ctx context.Context, p jobs.PipeParams, state jobs.ListState, hurry bool, progress func() []any) (jobs.ListResult, error) {
	_, stop := heartbeat(ctx, &lease{beat: asyncBeat}, 5*time.Second, 0, nil, progress)
	defer stop()
	// An idle pipe's listing is not in a hurry: its catalog check may join
	// other pipes'.
	octx := ctx
	if !hurry {
		octx = runcache.Unhurried(ctx)
	}
	run, err := a.open(octx, p)
	if err != nil {
		return jobs.ListResult{}, err
	}
	return a.list(ctx, run, jobs.ListInput{Params: p, State: state})
}

// waits holds the AwaitFiles attempts running on this worker, one per
// pipe workflow: a newer wait of a pipe ends the one before, which its
// workflow has cancelled already (it starts a new wait only after the
// last ended or was cancelled).
type waits struct {
	mu sync.Mutex
	by map[string]*waitEntry
}

type waitEntry struct{ cancel context.CancelFunc }

// enter registers a wait of the workflow id and ends an older one; done
// removes it.
func (w *waits) enter(ctx context.Context, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	e := &waitEntry{cancel: cancel}
	w.mu.Lock()
	if w.by == nil {
		w.by = map[string]*waitEntry{}
	}
	if old := w.by[id]; old != nil {
		old.cancel()
	}
	w.by[id] = e
	w.mu.Unlock()
	return ctx, func() {
		cancel()
		w.mu.Lock()
		if w.by[id] == e {
			delete(w.by, id)
		}
		w.mu.Unlock()
	}
}
