// Package workflows holds lakepipe's Temporal workflows: deterministic code
// only (workflow.* APIs, no I/O, no wall clock, no goroutines, no map-order
// decisions). All I/O is in package activities.
package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// TaskQueue is where lakepipe's workers listen.
const TaskQueue = "lakepipe"

// Signal and query names of the pipe workflow. They can be sent from the
// Temporal CLI too, e.g.
//
//	temporal workflow signal --workflow-id pipe.default.public.sales_pipe --name pause
const (
	SignalPause   = "pause"   // ALTER PIPE p SET PIPE_EXECUTION_PAUSED = TRUE
	SignalResume  = "resume"  // ALTER PIPE p SET PIPE_EXECUTION_PAUSED = FALSE
	SignalRefresh = "refresh" // ALTER PIPE p REFRESH / EXECUTE: run a turn now
	SignalFiles   = "files"   // event notifications: new object keys (FilesSignal)
	SignalDrop    = "drop"    // DROP PIPE: finish the current turn and end
	QueryStatus   = "status"
)

// PipeWorkflowName is the registered name of the pipe workflow.
const PipeWorkflowName = "PipeWorkflow"

// PipeParams identify a pipe and its schedule. The COPY statement itself
// is read from the catalog by the activities, so histories hold no SQL and
// no secrets.
type PipeParams struct {
	Workspace  string
	Schema     string
	Name       string
	Kind       string // VOLUME, KAFKA
	IngestMode string // LIST_PURGE, LIST, EVENT_NOTIFICATION
	// PollSeconds is the timer between turns (30 s by default, as the
	// ClickZetta Lakehouse service; POLL_INTERVAL_IN_SECONDS lowers it).
	PollSeconds int
	// MaxFilesPerTurn bounds one CopyFiles activity.
	MaxFilesPerTurn int
	// Generation is the pipe's creation time (Unix nanoseconds). An
	// activity of a pipe that was dropped and created again under the same
	// name finds another generation in the catalog and stops, instead of
	// working for the new pipe. 0 in workflows started before it existed.
	Generation int64 `json:",omitempty"`
}

// PipeCounters are the pipe's running totals.
type PipeCounters struct {
	FilesLoaded   int64
	FilesFailed   int64
	RowsLoaded    int64
	RowsRejected  int64
	Turns         int64
	LastLoadTime  time.Time
	LastTurnTime  time.Time
	LastError     string
	Backlog       int
	ContinuedRuns int64
}

// PipeInput starts (or continues) a pipe workflow.
type PipeInput struct {
	Params   PipeParams
	Paused   bool
	Counters PipeCounters
	// Kafka is the position of a Kafka pipe (nil for volume pipes).
	Kafka *KafkaState `json:",omitempty"`
	// InvalidReason says why a volume pipe paused itself: an error no
	// retry fixes (its table, volume or connection gone, credentials
	// refused). Resume clears it. Kafka pipes keep theirs in Kafka.
	InvalidReason string `json:",omitempty"`
	// List is where the pipe's listing resumes (volume pipes).
	List ListState
}

// ListState is where a volume pipe's listing resumes. When the keys of new
// files sort after those already handled (time-stamped or numbered names,
// as most writers make), a turn lists only the keys after Cursor (S3's
// StartAfter), in proportion to what is new; a full listing now and then
// (engine.Config.FullListingInterval) checks the order still holds and
// finds files that broke it. Databricks Auto Loader's incremental listing
// works the same way.
type ListState struct {
	// Cursor: every key up to it, in key order, is handled ("": list
	// from the first key).
	Cursor string `json:",omitempty"`
	// Ordered: the last full listing found every file not yet handled
	// after every handled one, so turns may list from Cursor.
	Ordered bool `json:",omitempty"`
	// FullAt is when the last full listing ran.
	FullAt time.Time
}

// PipeStatus is what the status query answers.
type PipeStatus struct {
	Params   PipeParams
	Paused   bool
	Running  bool // a turn is in progress
	Counters PipeCounters
	Kafka    *KafkaState `json:",omitempty"`
	// InvalidReason: see PipeInput.
	InvalidReason string `json:",omitempty"`
	// List is where the next listing resumes (volume pipes).
	List ListState
}

// FilesSignal carries object paths (relative to the volume) that an event
// notification reported.
type FilesSignal struct {
	Paths []string
}

// ListInput asks for the files a pipe has not loaded yet.
type ListInput struct {
	Params PipeParams
	Hint   []string  // paths from event notifications, checked first
	State  ListState // where the listing resumes
}

// FileRef is one file to load.
type FileRef struct {
	Path     string
	Size     int64
	ETag     string
	Modified time.Time
}

// ListResult is the answer of ListFiles.
type ListResult struct {
	Files []FileRef
	// Backlog counts files waiting beyond this batch; a listing that
	// stopped once it had a batch knows of at least this many.
	Backlog int
	State   ListState // where the next turn's listing resumes
	// NeedFull: ListNewFiles did not list, a full listing is due.
	NeedFull bool `json:",omitempty"`
}

// CopyInput asks to load files.
type CopyInput struct {
	Params PipeParams
	Files  []FileRef
}

// FileResult is the outcome of one file.
type FileResult struct {
	Path       string
	Status     FileStatus
	Rows       int64
	Rejected   int64
	FirstError string
}

// CopyResult is the answer of CopyFiles.
type CopyResult struct {
	Files []FileResult
}

// ErrTypePipeGone is the application error type of activities whose pipe
// was dropped; the workflow ends when it sees it.
const ErrTypePipeGone = "PipeGone"

// ErrTypePipeInvalid is the application error type of activities that met
// an error no retry fixes (the COPY's table, volume or connection gone,
// credentials refused): the pipe pauses with the message as its
// invalid_reason, and resuming it after the fix goes on.
const ErrTypePipeInvalid = "PipeInvalid"

// maxHints bounds the event-notified paths a pipe keeps between turns: a
// flood of notifications must not grow the history without bound. Paths
// beyond it are dropped; the wake-up stays, and the turn's listing finds
// their files anyway.
const maxHints = 1000

// Activity names, registered by the worker.
const (
	ActivityListFiles = "ListFiles"
	ActivityCopyFiles = "CopyFiles"
	// ActivityListNewFiles is ListFiles run as a local activity, for the
	// turns of a pipe whose listing is incremental: it answers NeedFull
	// when a full listing is due, which then runs as ListFiles.
	ActivityListNewFiles = "ListNewFiles"
)

// localListTimeout bounds a local listing; one that takes longer (a slow
// store) is left to a regular ListFiles.
const localListTimeout = 10 * time.Second

// historyLimit is where the pipe continues as new even if the server has
// not suggested it yet: a pipe runs forever, its history must not.
const historyLimit = 2000

// PipeWorkflow is one pipe: list → copy → record → purge → sleep, forever,
// until dropped. Pause, resume, refresh and file events arrive as signals;
// status is a query.
func PipeWorkflow(ctx workflow.Context, in PipeInput) error {
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
	if p.Kind == KindKafka && kst == nil {
		kst = &KafkaState{}
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
	localListing := p.Kind != KindKafka && workflow.GetVersion(ctx, "local-listing", workflow.DefaultVersion, 1) >= 1
	// From version 1 on, a Kafka batch's end offsets are read before it
	// (a local activity) and passed to every attempt of it.
	fixedEnd := p.Kind == KindKafka && workflow.GetVersion(ctx, "kafka-fixed-end", workflow.DefaultVersion, 1) >= 1

	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (PipeStatus, error) {
		return PipeStatus{Params: p, Paused: paused, Running: running, Counters: counters, Kafka: kst, InvalidReason: invalid, List: list}, nil
	}); err != nil {
		return err
	}

	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// Copying a batch of big files may run long, so it heartbeats
		// (every 10 s and per file); a worker that dies is noticed within
		// the heartbeat timeout and the batch goes to another.
		StartToCloseTimeout: 2 * time.Hour,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			// Retries go on: a pipe waits out a ClickHouse or S3 outage.
			NonRetryableErrorTypes: []string{ErrTypePipeGone, ErrTypePipeInvalid},
		},
	})

	pauseCh := workflow.GetSignalChannel(ctx, SignalPause)
	resumeCh := workflow.GetSignalChannel(ctx, SignalResume)
	refreshCh := workflow.GetSignalChannel(ctx, SignalRefresh)
	filesCh := workflow.GetSignalChannel(ctx, SignalFiles)
	dropCh := workflow.GetSignalChannel(ctx, SignalDrop)

	// addSignals registers every signal on a selector; the handlers only
	// change state, the loop decides what to do.
	addSignals := func(sel workflow.Selector) {
		sel.AddReceive(pauseCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); paused = true })
		sel.AddReceive(resumeCh, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			paused, wake, invalid = false, true, ""
			if kst != nil {
				kst.InvalidReason = ""
			}
		})
		sel.AddReceive(refreshCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); wake = true })
		sel.AddReceive(filesCh, func(c workflow.ReceiveChannel, _ bool) {
			var f FilesSignal
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
		if p.Kind == KindKafka {
			more, err = kafkaTurn(ctx, p, kst, &counters, fixedEnd, get)
			if kst.InvalidReason != "" {
				paused = true
			}
		} else {
			more, err = turn(ctx, p, &counters, &hints, &list, localListing, get)
		}
		running = false
		counters.Turns++
		counters.LastTurnTime = workflow.Now(ctx)
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == ErrTypePipeGone {
			return nil
		}
		if err != nil {
			counters.LastError = err.Error()
			workflow.GetLogger(ctx).Warn("pipe turn failed", "pipe", p.Name, "error", err)
			// From version 1 on, an error no retry fixes pauses the pipe
			// (runs recorded before retried it at every poll). The version
			// is asked only when such an error comes, so that histories
			// without one replay unchanged.
			if errors.As(err, &appErr) && appErr.Type() == ErrTypePipeInvalid &&
				workflow.GetVersion(ctx, "pause-on-invalid", workflow.DefaultVersion, 1) >= 1 {
				paused, invalid = true, appErr.Message()
			}
		}

		info := workflow.GetInfo(ctx)
		if info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > historyLimit {
			drain()
			if dropped {
				return nil
			}
			_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
			counters.ContinuedRuns++
			return workflow.NewContinueAsNewError(ctx, PipeWorkflow, PipeInput{Params: p, Paused: paused, Counters: counters, Kafka: kst, InvalidReason: invalid, List: list})
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

// turn lists and loads one batch; more reports a backlog beyond it. get
// waits for an activity's result.
func turn(ctx workflow.Context, p PipeParams, c *PipeCounters, hints *[]string, ls *ListState, local bool, get func(workflow.Future, any) error) (more bool, err error) {
	var list ListResult
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
		var r ListResult
		if err := get(workflow.ExecuteLocalActivity(lctx, ActivityListNewFiles, ListInput{Params: p, State: *ls}), &r); err == nil && !r.NeedFull {
			list, listed = r, true
		}
	}
	// A large volume may take a while to list; the listing heartbeats all
	// along, so a worker killed mid-listing is noticed within the heartbeat
	// timeout (without one, its attempt would hold the pipe for the whole
	// start-to-close timeout).
	lctx := workflow.WithStartToCloseTimeout(ctx, 30*time.Minute)
	if !listed {
		if err := get(workflow.ExecuteActivity(lctx, ActivityListFiles, ListInput{Params: p, Hint: h, State: *ls}), &list); err != nil {
			return false, err
		}
	}
	*ls = list.State
	c.Backlog = list.Backlog
	if len(list.Files) == 0 {
		return false, nil
	}
	var res CopyResult
	if err := get(workflow.ExecuteActivity(ctx, ActivityCopyFiles, CopyInput{Params: p, Files: list.Files}), &res); err != nil {
		return false, err
	}
	for _, f := range res.Files {
		switch f.Status {
		case FileLoaded, FilePartiallyLoaded:
			c.FilesLoaded++
			c.LastLoadTime = workflow.Now(ctx)
		case FileFailed:
			c.FilesFailed++
			c.LastError = f.Path + ": " + f.FirstError
		}
		c.RowsLoaded += f.Rows
		c.RowsRejected += f.Rejected
	}
	return list.Backlog > 0, nil
}
