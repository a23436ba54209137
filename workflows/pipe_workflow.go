// Package workflows holds lakepipe's Temporal workflows: deterministic code
// only (workflow.* APIs, no I/O, no wall clock, no goroutines, no map-order
// decisions). All I/O is in package activities.
package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// maxHints bounds the event-notified paths a pipe keeps between turns: a
// flood of notifications must not grow the history without bound. Paths
// beyond it are dropped; the wake-up stays, and the turn's listing finds
// their files anyway.
const maxHints = 1000

// localListTimeout bounds a local listing; one that takes longer (a slow
// store) is left to a regular ListFiles.
const localListTimeout = 10 * time.Second

// historyLimit is where the pipe continues as new even if the server has
// not suggested it yet: a pipe runs forever, its history must not.
const historyLimit = 2000

// PipeWorkflow is one pipe: list → copy → record → purge → sleep, forever,
// until dropped. Pause, resume and refresh arrive as updates (ALTER PIPE,
// which waits for the reply) or signals (the Temporal CLI); file events
// as signals; status is a query. A run started with lakepipe's search
// attributes keeps LakepipeStatus and the memo's figures current.
func PipeWorkflow(ctx workflow.Context, in jobs.PipeInput) error {
	p := in.Params
	if p.PollSeconds <= 0 {
		p.PollSeconds = 30
	}
	if p.MaxFilesPerTurn <= 0 {
		p.MaxFilesPerTurn = 2000
	}
	paused, counters, invalid := in.Paused, in.Counters, in.InvalidReason
	running, dropped, wake := false, false, false
	kst := in.Kafka
	if p.Kind == jobs.KindKafka && kst == nil {
		kst = &jobs.KafkaState{}
	}
	var hints []string
	list := in.List

	// From version 1 on, signals are applied while a turn's activities run,
	// in the order they arrive. Before, they waited in their channels until
	// the turn ended and were then taken channel by channel, pause before
	// resume: a resume followed by a pause during a turn left the pipe
	// running. Runs recorded before keep the old behaviour on replay.
	signalsDuringTurn := workflow.GetVersion(ctx, "signals-during-turn", workflow.DefaultVersion, 1) >= 1
	// From version 1 on, the turns of a pipe whose listing is incremental
	// list in a local activity: an idle turn is then one workflow task and
	// ~6 history events instead of two tasks, an activity task and ~12.
	localListing := p.Kind != jobs.KindKafka && workflow.GetVersion(ctx, "local-listing", workflow.DefaultVersion, 1) >= 1
	// From version 1 on, a Kafka batch's end offsets are read before it
	// (a local activity) and passed to every attempt of it.
	fixedEnd := p.Kind == jobs.KindKafka && workflow.GetVersion(ctx, "kafka-fixed-end", workflow.DefaultVersion, 1) >= 1

	if err := workflow.SetQueryHandler(ctx, jobs.QueryStatus, func() (jobs.PipeStatus, error) {
		return jobs.PipeStatus{Params: p, Paused: paused, Running: running, Counters: counters, Kafka: kst, InvalidReason: invalid, List: list}, nil
	}); err != nil {
		return err
	}

	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// Copying a batch of big files may run long, so it heartbeats
		// (every 5 s and per file); a worker that dies is noticed within
		// the heartbeat timeout and the batch goes to another.
		StartToCloseTimeout: 2 * time.Hour,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			// Retries go on: a pipe waits out a ClickHouse or S3 outage.
			NonRetryableErrorTypes: []string{jobs.ErrTypePipeGone, jobs.ErrTypePipeInvalid},
		},
	})

	// Visibility. A run started without lakepipe's search attributes (a
	// namespace without them, runs of earlier releases) never upserts, so
	// its history replays unchanged.
	vis := newVisibility(ctx)
	status := func() jobs.Status {
		if paused {
			return jobs.StatusPaused
		}
		return jobs.StatusRunning
	}
	setPaused := func(v bool) {
		paused = v
		vis.showStatus(ctx, status())
	}
	// kick wakes the loop after an update changed the state: the loop
	// waits in selectors, which updates do not reach otherwise.
	kick := workflow.NewBufferedChannel(ctx, 1)
	if err := setPipeUpdates(ctx, p.Name, pipeControl{
		paused:  func() bool { return paused },
		running: func() bool { return running },
		dropped: func() bool { return dropped },
		pause:   func() { setPaused(true) },
		resume: func() {
			setPaused(false)
			wake, invalid = true, ""
			if kst != nil {
				kst.InvalidReason = ""
			}
		},
		refresh: func() { wake = true },
		status:  status,
		kick:    func() { kick.SendAsync(nil) },
	}); err != nil {
		return err
	}

	// Copies and Kafka batches run on the load queue (version "load-queue").
	loads := loadQueue(ctx)

	pauseCh := workflow.GetSignalChannel(ctx, jobs.SignalPause)
	resumeCh := workflow.GetSignalChannel(ctx, jobs.SignalResume)
	refreshCh := workflow.GetSignalChannel(ctx, jobs.SignalRefresh)
	filesCh := workflow.GetSignalChannel(ctx, jobs.SignalFiles)
	dropCh := workflow.GetSignalChannel(ctx, jobs.SignalDrop)

	// addSignals registers every signal on a selector; the handlers only
	// change state, the loop decides what to do.
	addSignals := func(sel workflow.Selector) {
		sel.AddReceive(pauseCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); setPaused(true) })
		sel.AddReceive(resumeCh, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			setPaused(false)
			wake, invalid = true, ""
			if kst != nil {
				kst.InvalidReason = ""
			}
		})
		sel.AddReceive(kick, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.AddReceive(refreshCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); wake = true })
		sel.AddReceive(filesCh, func(c workflow.ReceiveChannel, _ bool) {
			var f jobs.FilesSignal
			c.Receive(ctx, &f)
			if room := maxHints - len(hints); room > 0 {
				hints = append(hints, f.Paths[:min(room, len(f.Paths))]...)
			}
			wake = true
		})
		sel.AddReceive(dropCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); dropped = true })
	}
	// get waits for an activity's result, applying signals meanwhile.
	get := func(f workflow.Future, v any) error {
		for signalsDuringTurn && !f.IsReady() {
			sel := workflow.NewSelector(ctx)
			sel.AddFuture(f, func(workflow.Future) {})
			addSignals(sel)
			sel.Select(ctx)
		}
		return f.Get(ctx, v)
	}
	// drain takes signals already delivered without blocking.
	drain := func() {
		for {
			sel := workflow.NewSelector(ctx)
			addSignals(sel)
			if !sel.HasPending() {
				return
			}
			sel.Select(ctx)
		}
	}

	for {
		drain()
		if dropped {
			return nil
		}
		if paused {
			sel := workflow.NewSelector(ctx)
			addSignals(sel)
			sel.Select(ctx)
			continue
		}

		// One turn.
		wake = false
		running = true
		var more bool
		var err error
		if p.Kind == jobs.KindKafka {
			more, err = kafkaTurn(ctx, loads, p, kst, &counters, fixedEnd, get)
			if kst.InvalidReason != "" {
				setPaused(true)
			}
		} else {
			more, err = turn(ctx, loads, p, &counters, &hints, &list, localListing, get)
		}
		running = false
		counters.Turns++
		counters.LastTurnTime = workflow.Now(ctx)
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == jobs.ErrTypePipeGone {
			return nil
		}
		if err != nil {
			counters.LastError = err.Error()
			workflow.GetLogger(ctx).Warn("pipe turn failed", "pipe", p.Name, "error", err)
			// From version 1 on, an error no retry fixes pauses the pipe
			// (runs recorded before retried it at every poll). The version
			// is asked only when such an error comes, so that histories
			// without one replay unchanged.
			if errors.As(err, &appErr) && appErr.Type() == jobs.ErrTypePipeInvalid &&
				workflow.GetVersion(ctx, "pause-on-invalid", workflow.DefaultVersion, 1) >= 1 {
				setPaused(true)
				invalid = appErr.Message()
			}
		}
		fig := jobs.PipeFigures{FilesLoaded: counters.FilesLoaded, RowsLoaded: counters.RowsLoaded,
			FilesFailed: counters.FilesFailed, LastLoadTime: counters.LastLoadTime, Backlog: counters.Backlog}
		vis.showFigures(ctx, fig, fig == jobs.PipeFigures{})

		info := workflow.GetInfo(ctx)
		if info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > historyLimit {
			drain()
			if dropped {
				return nil
			}
			_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
			counters.ContinuedRuns++
			return workflow.NewContinueAsNewError(ctx, PipeWorkflow, jobs.PipeInput{Params: p, Paused: paused, Counters: counters, Kafka: kst, InvalidReason: invalid, List: list})
		}
		if more || wake || len(hints) > 0 || paused || dropped {
			continue
		}
		// Sleep until the poll timer fires or a signal wakes the pipe.
		timerCtx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		timedOut := false
		sel.AddFuture(workflow.NewTimer(timerCtx, time.Duration(p.PollSeconds)*time.Second), func(workflow.Future) { timedOut = true })
		addSignals(sel)
		for !timedOut && !wake && !dropped && !paused {
			sel.Select(ctx)
		}
		cancel()
	}
}

// turn lists and loads one batch; more reports a backlog beyond it. The
// copy runs in loads (the load queue's context); get waits for an
// activity's result.
func turn(ctx, loads workflow.Context, p jobs.PipeParams, c *jobs.PipeCounters, hints *[]string, ls *jobs.ListState, local bool, get func(workflow.Future, any) error) (more bool, err error) {
	var list jobs.ListResult
	h := *hints
	*hints = nil
	listed := false
	if local && ls.Ordered && len(h) == 0 {
		// One attempt: any failure, and a full listing due, go to the
		// regular activity, whose retries and errors the pipe knows.
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			ScheduleToCloseTimeout: localListTimeout,
			RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		var r jobs.ListResult
		if err := get(workflow.ExecuteLocalActivity(lctx, jobs.ActivityListNewFiles, jobs.ListInput{Params: p, State: *ls}), &r); err == nil && !r.NeedFull {
			list, listed = r, true
		}
	}
	// A large volume may take a while to list; the listing heartbeats all
	// along, so a worker killed mid-listing is noticed within the heartbeat
	// timeout (without one, its attempt would hold the pipe for the whole
	// start-to-close timeout).
	lctx := workflow.WithStartToCloseTimeout(ctx, 30*time.Minute)
	if !listed {
		if err := get(workflow.ExecuteActivity(lctx, jobs.ActivityListFiles, jobs.ListInput{Params: p, Hint: h, State: *ls}), &list); err != nil {
			return false, err
		}
	}
	*ls = list.State
	c.Backlog = list.Backlog
	if len(list.Files) == 0 {
		return false, nil
	}
	var res jobs.CopyResult
	if err := get(workflow.ExecuteActivity(loads, jobs.ActivityCopyFiles, jobs.CopyInput{Params: p, Files: list.Files}), &res); err != nil {
		return false, err
	}
	for _, f := range res.Files {
		switch f.Status {
		case jobs.FileLoaded, jobs.FilePartiallyLoaded:
			c.FilesLoaded++
			c.LastLoadTime = workflow.Now(ctx)
		case jobs.FileFailed:
			c.FilesFailed++
			c.LastError = f.Path + ": " + f.FirstError
		}
		c.RowsLoaded += f.Rows
		c.RowsRejected += f.Rejected
	}
	return list.Backlog > 0, nil
}
