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
// search attributes keeps LakepipeStatus current.
func DynamicTableWorkflow(ctx workflow.Context, in jobs.DynamicTableInput) error {
	p := in.Params
	if p.IntervalSeconds <= 0 {
		p.IntervalSeconds = 3600
	}
	suspended, counters := in.Suspended, in.Counters
	refreshing, dropped, now, restart := false, false, in.RefreshNow, false
	next := workflow.Now(ctx).Add(time.Duration(p.IntervalSeconds) * time.Second)
	// From version 1 on, a scheduled refresh refreshes the table's upstream
	// dynamic tables first (child workflows, dependency order).
	chain := workflow.GetVersion(ctx, "refresh-chain", workflow.DefaultVersion, 1) >= 1
	// From version 1 on, the scheduled refresh is a child workflow under the
	// table's RefreshWorkflowID, so that it never overlaps a REFRESH
	// statement's or another table's chain.
	serial := workflow.GetVersion(ctx, "refresh-serial", workflow.DefaultVersion, 1) >= 1
	// From version 1 on, signals are applied while a refresh runs, in the
	// order they arrive, and those delivered by the end of the last refresh
	// of a run go into the next run. Before, they waited in their channels
	// until the refresh ended and were then taken in the order the selector
	// registered them (a RESUME then a SUSPEND left the table resumed), and
	// continuing as new dropped any still waiting (a SUSPEND, REFRESH or
	// DROP sent during that refresh was lost).
	duringRefresh := workflow.GetVersion(ctx, "signals-during-refresh", workflow.DefaultVersion, 1) >= 1

	if err := workflow.SetQueryHandler(ctx, jobs.QueryStatus, func() (jobs.DynamicTableStatus, error) {
		return jobs.DynamicTableStatus{Params: p, Suspended: suspended, Refreshing: refreshing, NextAt: next, Counters: counters}, nil
	}); err != nil {
		return err
	}
	ctx = refreshActivityOptions(ctx)
	vis := newVisibility(ctx)
	setSuspended := func(v bool) {
		suspended = v
		st := jobs.StatusRunning
		if v {
			st = jobs.StatusSuspended
		}
		vis.showStatus(ctx, st)
	}
	// kick wakes the loop after an update changed the state.
	kick := workflow.NewBufferedChannel(ctx, 1)
	if err := setDynamicTableUpdates(ctx, dynamicControl{
		suspended:  func() bool { return suspended },
		refreshing: func() bool { return refreshing },
		dropped:    func() bool { return dropped },
		suspend:    func() { setSuspended(true) },
		resume:     func() { setSuspended(false); restart = true },
		kick:       func() { kick.SendAsync(nil) },
	}); err != nil {
		return err
	}
	suspendCh := workflow.GetSignalChannel(ctx, jobs.SignalSuspend)
	resumeCh := workflow.GetSignalChannel(ctx, jobs.SignalResume)
	refreshCh := workflow.GetSignalChannel(ctx, jobs.SignalRefresh)
	refreshedCh := workflow.GetSignalChannel(ctx, jobs.SignalRefreshed)
	dropCh := workflow.GetSignalChannel(ctx, jobs.SignalDrop)
	addSignals := func(sel workflow.Selector) {
		sel.AddReceive(suspendCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); setSuspended(true) })
		sel.AddReceive(resumeCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); setSuspended(false); restart = true })
		sel.AddReceive(kick, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.AddReceive(refreshCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); now = true })
		sel.AddReceive(refreshedCh, func(c workflow.ReceiveChannel, _ bool) {
			// A manual REFRESH ran (as a refresh chain): it is the last
			// refresh, and the interval starts again from it. State only,
			// and a memo upsert in runs started with lakepipe's search
			// attributes (none before them): histories replay unchanged.
			c.Receive(ctx, nil)
			restart = true
			counters.LastRefresh = workflow.Now(ctx)
			vis.showFigures(ctx, jobs.DynamicTableFigures{LastRefresh: counters.LastRefresh, Refreshes: counters.Refreshes, Failures: counters.Failures}, false)
		})
		sel.AddReceive(dropCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); dropped = true })
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

	for !dropped {
		if suspended {
			sel := workflow.NewSelector(ctx)
			addSignals(sel)
			sel.Select(ctx)
			continue
		}
		if restart {
			restart = false
			next = workflow.Now(ctx).Add(time.Duration(p.IntervalSeconds) * time.Second)
		}
		wait := next.Sub(workflow.Now(ctx))
		if !now && wait > 0 {
			timerCtx, cancel := workflow.WithCancel(ctx)
			fired := false
			sel := workflow.NewSelector(ctx)
			sel.AddFuture(workflow.NewTimer(timerCtx, wait), func(workflow.Future) { fired = true })
			addSignals(sel)
			sel.Select(ctx)
			cancel()
			if !fired {
				continue // a signal: re-evaluate
			}
		}
		now = false
		refreshing = true
		refresh := func(ctx workflow.Context) (res jobs.RefreshResult, err error) {
			if chain {
				var out jobs.RefreshChainResult
				if serial {
					out, err = refreshSerial(ctx, p, "SCHEDULED", false)
				} else {
					out, err = refreshChain(ctx, p, "SCHEDULED")
				}
				if n := len(out.Refreshes); n > 0 && out.Refreshes[n-1].Name == p.Name {
					res = out.Refreshes[n-1].Result
				} else if err == nil {
					err = errors.New("the refresh chain did not reach " + p.Name)
				}
				return res, err
			}
			err = workflow.ExecuteActivity(loadQueue(ctx), jobs.ActivityRefreshDynamicTable, jobs.RefreshInput{Params: p, Trigger: "SCHEDULED"}).Get(ctx, &res)
			return res, err
		}
		var res jobs.RefreshResult
		var err error
		if duringRefresh {
			// The refresh runs beside the loop that takes signals.
			done, set := workflow.NewFuture(ctx)
			workflow.Go(ctx, func(ctx workflow.Context) {
				r, err := refresh(ctx)
				set.Set(r, err)
			})
			for !done.IsReady() {
				sel := workflow.NewSelector(ctx)
				sel.AddFuture(done, func(workflow.Future) {})
				addSignals(sel)
				sel.Select(ctx)
			}
			err = done.Get(ctx, &res)
		} else {
			res, err = refresh(ctx)
		}
		refreshing = false
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == jobs.ErrTypeDynamicTableGone {
			return nil
		}
		counters.Refreshes++
		counters.LastRefresh = workflow.Now(ctx)
		switch {
		case err != nil:
			counters.Failures++
			counters.LastError = err.Error()
		case res.State != jobs.RefreshSucceeded:
			counters.Failures++
			counters.LastError = res.Error
		default:
			counters.LastError = ""
		}
		next = workflow.Now(ctx).Add(time.Duration(p.IntervalSeconds) * time.Second)
		vis.showFigures(ctx, jobs.DynamicTableFigures{LastRefresh: counters.LastRefresh, Refreshes: counters.Refreshes, Failures: counters.Failures}, false)

		info := workflow.GetInfo(ctx)
		if info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > historyLimit {
			if duringRefresh {
				// Signals delivered but not taken yet would be lost.
				drain()
				if dropped {
					return nil
				}
			}
			_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
			counters.ContinuedRuns++
			return workflow.NewContinueAsNewError(ctx, DynamicTableWorkflow, jobs.DynamicTableInput{Params: p, Suspended: suspended, Counters: counters, RefreshNow: now && duringRefresh})
		}
	}
	return nil
}
