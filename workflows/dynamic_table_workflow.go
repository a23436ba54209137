package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// DynamicTableWorkflow refreshes a dynamic table every interval, sooner on
// a refresh signal, not at all while suspended, until dropped. SUSPEND and
// RESUME arrive as updates (ALTER DYNAMIC TABLE, which waits for the
// reply) or signals (the Temporal CLI). A run started with lakepipe's
// search attributes keeps LakepipeStatus and the memo's figures current.
func DynamicTableWorkflow(ctx workflow.Context, in jobs.DynamicTableInput) error {
	w := &dynamicTableWorkflow{p: in.Params, suspended: in.Suspended, counters: in.Counters, now: in.RefreshNow}
	if w.p.IntervalSeconds <= 0 {
		w.p.IntervalSeconds = 3600
	}
	w.next = workflow.Now(ctx).Add(w.interval())
	// The order of these calls is the order of their markers in every
	// recorded history: it must not change.
	//
	// From version 1 on, a scheduled refresh refreshes the table's upstream
	// dynamic tables first (child workflows, dependency order).
	w.chain = workflow.GetVersion(ctx, "refresh-chain", workflow.DefaultVersion, 1) >= 1
	// From version 1 on, the scheduled refresh is a child workflow under the
	// table's RefreshWorkflowID, so that it never overlaps a REFRESH
	// statement's or another table's chain.
	w.serial = workflow.GetVersion(ctx, "refresh-serial", workflow.DefaultVersion, 1) >= 1
	// From version 1 on, signals are applied while a refresh runs, in the
	// order they arrive, and those delivered by the end of the last refresh
	// of a run go into the next run. Before, they waited in their channels
	// until the refresh ended and were then taken in the order the selector
	// registered them (a RESUME then a SUSPEND left the table resumed), and
	// continuing as new dropped any still waiting (a SUSPEND, REFRESH or
	// DROP sent during that refresh was lost).
	w.duringRefresh = workflow.GetVersion(ctx, "signals-during-refresh", workflow.DefaultVersion, 1) >= 1
	// From version 1 on, the workflow runs every refresh of its table
	// itself, one at a time: scheduled ones, REFRESH statements (the refresh
	// update) and the chains of its downstream tables (refresh-for
	// signals); a chain asks each upstream table's workflow for its
	// refresh. Before, a scheduled refresh was a child workflow under the
	// table's RefreshWorkflowID. The update and the requests are served in
	// runs of every version.
	w.owned = workflow.GetVersion(ctx, "refresh-owned", workflow.DefaultVersion, 1) >= 1

	if err := workflow.SetQueryHandler(ctx, jobs.QueryStatus, w.queryStatus); err != nil {
		return err
	}
	w.ctx = refreshActivityOptions(ctx)
	w.vis = newVisibility(w.ctx)
	// kick wakes the loop after an update changed the state.
	w.kick = workflow.NewBufferedChannel(w.ctx, 1)
	w.mu = workflow.NewMutex(w.ctx)
	if err := setDynamicTableUpdates(w.ctx, dynamicControl{
		suspended:  func() bool { return w.suspended },
		refreshing: func() bool { return w.refreshing },
		dropped:    func() bool { return w.dropped },
		suspend:    func() { w.setSuspended(true) },
		resume:     w.resume,
		refresh:    w.refreshUpdate,
		kick:       func() { w.kick.SendAsync(nil) },
	}); err != nil {
		return err
	}
	w.suspendCh = workflow.GetSignalChannel(w.ctx, jobs.SignalSuspend)
	w.resumeCh = workflow.GetSignalChannel(w.ctx, jobs.SignalResume)
	w.refreshCh = workflow.GetSignalChannel(w.ctx, jobs.SignalRefresh)
	w.refreshedCh = workflow.GetSignalChannel(w.ctx, jobs.SignalRefreshed)
	w.dropCh = workflow.GetSignalChannel(w.ctx, jobs.SignalDrop)
	w.refreshForCh = workflow.GetSignalChannel(w.ctx, jobs.SignalRefreshFor)
	w.refreshDoneCh = workflow.GetSignalChannel(w.ctx, jobs.SignalRefreshDone)
	return w.loop()
}

// dynamicTableWorkflow is one run of a dynamic table's workflow: its
// state, and methods for its loop and its message handlers. The handlers
// only change state; the loop decides what to do.
type dynamicTableWorkflow struct {
	ctx workflow.Context
	p   jobs.DynamicTableParams

	suspended, refreshing, dropped bool
	now, restart                   bool // refresh at once; restart the interval from now
	next                           time.Time
	counters                       jobs.DynamicTableCounters

	// versions of this run's history (workflow.GetVersion)
	chain, serial, duringRefresh, owned bool

	vis  *visibility
	kick workflow.Channel

	// mu is held by the refresh in progress (exclusive); serving counts
	// the downstream chains' requests taken and not answered yet;
	// requests numbers this run's own requests to upstream tables.
	mu       workflow.Mutex
	serving  int
	requests int

	suspendCh, resumeCh, refreshCh, refreshedCh, dropCh workflow.ReceiveChannel
	refreshForCh, refreshDoneCh                         workflow.ReceiveChannel
}

func (w *dynamicTableWorkflow) interval() time.Duration {
	return time.Duration(w.p.IntervalSeconds) * time.Second
}

func (w *dynamicTableWorkflow) queryStatus() (jobs.DynamicTableStatus, error) {
	return jobs.DynamicTableStatus{Params: w.p, Suspended: w.suspended, Refreshing: w.refreshing, NextAt: w.next, Counters: w.counters}, nil
}

func (w *dynamicTableWorkflow) setSuspended(v bool) {
	w.suspended = v
	st := jobs.StatusRunning
	if v {
		st = jobs.StatusSuspended
	}
	w.vis.showStatus(w.ctx, st)
}

func (w *dynamicTableWorkflow) resume() {
	w.setSuspended(false)
	w.restart = true
}

func (w *dynamicTableWorkflow) showFigures() {
	c := w.counters
	w.vis.showFigures(w.ctx, jobs.DynamicTableFigures{LastRefresh: c.LastRefresh, Refreshes: c.Refreshes, Failures: c.Failures}, false)
}

func (w *dynamicTableWorkflow) addSignals(sel workflow.Selector) {
	ctx := w.ctx
	sel.AddReceive(w.suspendCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); w.setSuspended(true) })
	sel.AddReceive(w.resumeCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); w.resume() })
	sel.AddReceive(w.kick, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	sel.AddReceive(w.refreshCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); w.now = true })
	sel.AddReceive(w.refreshedCh, func(c workflow.ReceiveChannel, _ bool) {
		// A manual REFRESH ran (as a refresh chain): it is the last
		// refresh, and the interval starts again from it. State only,
		// and a memo upsert in runs started with lakepipe's search
		// attributes (none before them): histories replay unchanged.
		c.Receive(ctx, nil)
		w.restart = true
		w.counters.LastRefresh = workflow.Now(ctx)
		w.showFigures()
	})
	sel.AddReceive(w.dropCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); w.dropped = true })
	sel.AddReceive(w.refreshForCh, func(c workflow.ReceiveChannel, _ bool) {
		var req jobs.RefreshRequest
		c.Receive(ctx, &req)
		w.serve(req)
	})
}

// refresh runs one scheduled refresh (its chain, in runs that have one).
func (w *dynamicTableWorkflow) refresh(ctx workflow.Context) (res jobs.RefreshResult, err error) {
	if lerr := w.exclusive(ctx, func(ctx workflow.Context) { res, err = w.scheduled(ctx) }); lerr != nil {
		return res, lerr
	}
	return res, err
}

func (w *dynamicTableWorkflow) scheduled(ctx workflow.Context) (res jobs.RefreshResult, err error) {
	if w.owned {
		out, err := w.refreshOwned(ctx, "SCHEDULED", false)
		if n := len(out.Refreshes); n > 0 && out.Refreshes[n-1].Name == w.p.Name {
			res = out.Refreshes[n-1].Result
		} else if err == nil {
			err = errors.New("the refresh chain did not reach " + w.p.Name)
		}
		return res, err
	}
	if w.chain {
		var out jobs.RefreshChainResult
		if w.serial {
			out, err = refreshSerial(ctx, w.p, "SCHEDULED", false)
		} else {
			out, err = refreshChain(ctx, w.p, "SCHEDULED")
		}
		if n := len(out.Refreshes); n > 0 && out.Refreshes[n-1].Name == w.p.Name {
			res = out.Refreshes[n-1].Result
		} else if err == nil {
			err = errors.New("the refresh chain did not reach " + w.p.Name)
		}
		return res, err
	}
	err = workflow.ExecuteActivity(loadQueue(ctx), jobs.ActivityRefreshDynamicTable, jobs.RefreshInput{Params: w.p, Trigger: "SCHEDULED"}).Get(ctx, &res)
	return res, err
}

// loop refreshes on the interval until the table is dropped or the run
// continues as new.
func (w *dynamicTableWorkflow) loop() error {
	ctx := w.ctx
	for !w.dropped {
		if w.owned && w.refreshing {
			// A REFRESH statement's or a downstream chain's refresh
			// runs: wait for its end (it kicks), then see whether one is
			// still due.
			sel := workflow.NewSelector(ctx)
			w.addSignals(sel)
			sel.Select(ctx)
			continue
		}
		if w.suspended {
			sel := workflow.NewSelector(ctx)
			w.addSignals(sel)
			sel.Select(ctx)
			continue
		}
		if w.restart {
			w.restart = false
			w.next = workflow.Now(ctx).Add(w.interval())
		}
		wait := w.next.Sub(workflow.Now(ctx))
		if !w.now && wait > 0 {
			timerCtx, cancel := workflow.WithCancel(ctx)
			fired := false
			sel := workflow.NewSelector(ctx)
			sel.AddFuture(workflow.NewTimer(timerCtx, wait), func(workflow.Future) { fired = true })
			w.addSignals(sel)
			sel.Select(ctx)
			cancel()
			if !fired {
				continue // a signal: re-evaluate
			}
		}
		if w.owned && w.refreshing {
			continue // due during another refresh: wait for its end
		}
		w.now = false
		var res jobs.RefreshResult
		var err error
		if w.duringRefresh {
			// The refresh runs beside the loop that takes signals.
			done, set := workflow.NewFuture(ctx)
			workflow.Go(ctx, func(ctx workflow.Context) {
				r, err := w.refresh(ctx)
				set.Set(r, err)
			})
			awaitTakingSignals(ctx, done, w.addSignals)
			err = done.Get(ctx, &res)
		} else {
			res, err = w.refresh(ctx)
		}
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == jobs.ErrTypeDynamicTableGone {
			break
		}
		w.counters.Refreshes++
		w.counters.LastRefresh = workflow.Now(ctx)
		switch {
		case err != nil:
			w.counters.Failures++
			w.counters.LastError = err.Error()
		case res.State != jobs.RefreshSucceeded:
			w.counters.Failures++
			w.counters.LastError = res.Error
		default:
			w.counters.LastError = ""
		}
		w.next = workflow.Now(ctx).Add(w.interval())
		w.showFigures()

		info := workflow.GetInfo(ctx)
		if info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > historyLimit {
			// Signals delivered but not taken yet would be lost.
			switch {
			case w.owned || w.serving > 0:
				w.settle()
			case w.duringRefresh:
				drainSignals(ctx, w.addSignals)
			}
			if w.dropped {
				return nil
			}
			_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
			w.counters.ContinuedRuns++
			return workflow.NewContinueAsNewError(ctx, DynamicTableWorkflow, jobs.DynamicTableInput{Params: w.p, Suspended: w.suspended, Counters: w.counters, RefreshNow: w.now && w.duringRefresh})
		}
	}
	if w.owned {
		// Answer the downstream chains that asked (a dropped table's
		// refresh fails at once).
		w.settle()
	}
	return nil
}
