package activities

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/runcache"
)

// awaitBeat is how often a wait (AwaitFiles, AwaitRecords) heartbeats
// while it sleeps. The SDK sends at most one heartbeat per throttle
// interval (the await worker's is set just under the workflow's heartbeat
// timeout), so a thousand idle pipes cost about a thousand small calls to
// Temporal per throttle interval, and no history events.
const awaitBeat = 30 * time.Second

// AwaitFiles is how an idle polling pipe waits: it lists the pipe's volume
// every poll interval (counted from the start of the last turn), as a turn
// would, and returns the first listing that finds files, which the
// workflow then copies. An idle poll is a listing and nothing else: no
// workflow task, no history event, no activity task (Temporal's advice
// for frequent polling). After in.For it returns with
// no files and its state, so that the workflow records its figures and,
// now and then, continues as new.
//
// The workflow cancels a wait when a signal or an update wakes the pipe
// (REFRESH, pause, drop, new settings). The attempt learns of that at its
// next heartbeat; meanwhile a newer wait of the same pipe on this worker
// ends it at once (waits), and a stray listing it makes only reads.
func (a *Activities) AwaitFiles(ctx context.Context, in jobs.AwaitInput) (jobs.AwaitResult, error) {
	res := jobs.AwaitResult{ListResult: jobs.ListResult{State: in.State}}
	polls, err := a.await(ctx, idleWait{
		poll: time.Duration(in.Params.PollSeconds) * time.Second, since: in.Since, wait: in.For,
		detail: func(p jobs.AwaitProgress) jobs.AwaitProgress { p.List = res.State; return p },
		once: func(ctx context.Context, hurry bool) (bool, error) {
			listed, err := a.listOnce(ctx, in.Params, res.State, hurry)
			if err != nil {
				return false, err
			}
			res.ListResult = listed
			return len(listed.Files) > 0, nil
		},
	})
	res.Polls = polls
	return res, err
}

// AwaitRecords is AwaitFiles for an idle Kafka pipe: every batch interval
// it reads the topic's end offsets and returns the first that show
// records beyond in.Offsets; the pipe's next batch stops there. An idle
// interval is one ListOffsets request to the brokers and nothing else: no
// workflow task, no history event, no catalog query.
//
// The pipe is opened once, as the wait begins (its catalog check joining
// other pipes', which the sleep before the first read hides), not at each
// read: a read needs only the topic and the brokers, a change to the pipe
// reaches the workflow as an update that cancels the wait (ALTER PIPE,
// DROP PIPE), and the batch that follows a wait opens the pipe afresh.
func (a *Activities) AwaitRecords(ctx context.Context, in jobs.AwaitRecordsInput) (jobs.AwaitRecordsResult, error) {
	var res jobs.AwaitRecordsResult
	poll := time.Duration(in.Params.PollSeconds) * time.Second
	octx := ctx
	if _, hurry := firstListing(time.Now(), in.Since, max(poll, time.Second)); !hurry {
		octx = runcache.Unhurried(ctx)
	}
	run, err := a.openKafka(octx, in.Params)
	if err != nil {
		return res, err
	}
	polls, err := a.await(ctx, idleWait{
		poll: poll, since: in.Since, wait: in.For,
		once: func(ctx context.Context, _ bool) (bool, error) {
			end, err := run.EndOffsets(ctx)
			if err != nil {
				return false, classify(err)
			}
			if jobs.CaughtUp(in.Offsets, end) {
				return false, nil
			}
			res.End = end
			return true, nil
		},
	})
	res.Polls = polls
	return res, err
}

// idleWait is what an idle pipe's wait does: once every poll interval
// (the first as firstListing says) until once finds work, wait passes or
// the worker stops.
type idleWait struct {
	poll  time.Duration
	since time.Time
	wait  time.Duration
	// once polls: lists the volume, reads the topic's ends. hurry says it
	// follows a turn longer than the interval (see firstListing).
	once func(ctx context.Context, hurry bool) (found bool, err error)
	// detail completes the heartbeat's progress (nil: as it is).
	detail func(jobs.AwaitProgress) jobs.AwaitProgress
}

// await runs an idle wait and returns the polls it made. Every heartbeat
// carries the progress (DESC PIPE adds the polls to the pipe's turns):
// the SDK sends the last one recorded.
func (a *Activities) await(actx context.Context, w idleWait) (polls int, err error) {
	info := activity.GetInfo(actx)
	ctx, done := a.waits.enter(actx, info.WorkflowExecution.ID, info.ScheduledTime)
	defer done()
	defer func() {
		if err != nil && errors.Is(context.Cause(ctx), errSuperseded) {
			err = superseded(actx, w)
		}
	}()
	poll := max(w.poll, time.Second)
	start := time.Now()
	end := start.Add(w.wait)
	due, hurry := firstListing(start, w.since, poll)
	var last time.Time
	progress := func() []any {
		p := jobs.AwaitProgress{Polls: polls, LastListing: last, NextListing: due}
		if w.detail != nil {
			p = w.detail(p)
		}
		return []any{p}
	}
	stop := activity.GetWorkerStopChannel(ctx)
	for {
		if due.After(end) {
			return polls, nil
		}
		// Sleep until the poll is due, heartbeating on the way.
		for now := time.Now(); now.Before(due); now = time.Now() {
			activity.RecordHeartbeat(ctx, progress()...)
			t := time.NewTimer(min(due.Sub(now), awaitBeat))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return polls, ctx.Err()
			case <-stop:
				// Another worker takes the pipe's next wait.
				t.Stop()
				return polls, nil
			}
		}
		// A poll may take a while (a full listing of a large volume): it
		// heartbeats a snapshot of the progress all along.
		now := progress()
		_, stopBeat := heartbeat(ctx, &lease{beat: asyncBeat}, 5*time.Second, 0, nil, func() []any { return now })
		found, err := w.once(ctx, hurry)
		stopBeat()
		hurry = false
		polls++
		last = time.Now()
		a.Metrics.Poll(last.Sub(due))
		if err != nil || found {
			return polls, err
		}
		due = due.Add(poll)
		if due.Before(last) {
			// A poll longer than the interval: the next one waits a whole
			// interval rather than following at once.
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

// superseded ends a wait that a newer wait of its pipe replaced (waits).
// Its workflow cancelled it before it started the newer one, but the
// attempt learns that only from the answer to a heartbeat, which the SDK
// sends at the end of its throttle interval: it heartbeats and waits for
// that answer (at most its heartbeat timeout), so that Temporal records
// the wait as cancelled, as it was, rather than as failed.
func superseded(ctx context.Context, w idleWait) error {
	var p jobs.AwaitProgress
	if w.detail != nil {
		p = w.detail(p)
	}
	activity.RecordHeartbeat(ctx, p)
	bound := activity.GetInfo(ctx).HeartbeatTimeout
	if bound <= 0 {
		bound = awaitBeat
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	case <-activity.GetWorkerStopChannel(ctx):
	}
	return errSuperseded
}

// listOnce is one listing of an AwaitFiles.
func (a *Activities) listOnce(ctx context.Context, p jobs.PipeParams, state jobs.ListState, hurry bool) (jobs.ListResult, error) {
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

// waits holds the waits (AwaitFiles, AwaitRecords) running on this
// worker, one per pipe workflow: a newer wait of a pipe ends the one
// before, which its workflow has cancelled already (it starts a new wait
// only after the last ended or was cancelled). Newer is by when the
// workflow scheduled them, not by when they start here: a wait scheduled
// and then replaced can start after its replacement (the task queue's
// partitions hand out tasks in no set order), and must end then, not end
// the wait its workflow is waiting on (TestKafkaPipeIdleWaits saw that
// wait time out, twice in a day).
type waits struct {
	mu sync.Mutex
	by map[string]*waitEntry
}

type waitEntry struct {
	cancel    context.CancelCauseFunc
	scheduled time.Time
}

// errSuperseded is the cause that ends a wait a newer wait of its pipe
// replaced on this worker.
var errSuperseded = errors.New("a newer wait of the pipe took its place")

// enter registers a wait of the workflow id, scheduled at scheduled, and
// ends an older one (with errSuperseded); a wait older than the one
// registered ends at once instead. done removes it.
func (w *waits) enter(ctx context.Context, id string, scheduled time.Time) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	e := &waitEntry{cancel: cancel, scheduled: scheduled}
	w.mu.Lock()
	if w.by == nil {
		w.by = map[string]*waitEntry{}
	}
	if old := w.by[id]; old != nil && old.scheduled.After(scheduled) {
		w.mu.Unlock()
		cancel(errSuperseded)
		return ctx, func() {}
	} else if old != nil {
		old.cancel(errSuperseded)
	}
	w.by[id] = e
	w.mu.Unlock()
	return ctx, func() {
		cancel(nil)
		w.mu.Lock()
		if w.by[id] == e {
			delete(w.by, id)
		}
		w.mu.Unlock()
	}
}
