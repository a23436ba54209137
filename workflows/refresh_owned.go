package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// upstreamWait bounds how long a chain waits for an upstream table's
// workflow to answer a refresh request: the upstream's own refresh may be
// queued behind others, each bounded by the refresh activity's hour.
const upstreamWait = 2 * time.Hour

// exclusive runs f as the table's only refresh: scheduled refreshes,
// REFRESH statements and chain requests queue for w.mu, so that no two
// refreshes of the table overlap (they would count new rows twice). An
// uncontended Lock does not yield, so wrapping the refreshes of runs
// recorded before the "refresh-owned" version replays them unchanged.
func (w *dynamicTableWorkflow) exclusive(ctx workflow.Context, f func(workflow.Context)) error {
	if err := w.mu.Lock(ctx); err != nil {
		return err
	}
	w.refreshing = true
	defer func() {
		w.refreshing = false
		w.mu.Unlock()
	}()
	f(ctx)
	return nil
}

// refreshOwned runs one refresh of the table in this workflow: its
// upstream dynamic tables first unless alone, each refreshed by its own
// workflow on request, then the table itself. An upstream refresh that
// fails stops the chain: the table is not refreshed over stale inputs.
func (w *dynamicTableWorkflow) refreshOwned(ctx workflow.Context, trigger string, alone bool) (jobs.RefreshChainResult, error) {
	var out jobs.RefreshChainResult
	if !alone {
		var plan jobs.PlanResult
		if err := workflow.ExecuteActivity(ctx, jobs.ActivityPlanRefresh, jobs.PlanInput{Params: w.p}).Get(ctx, &plan); err != nil {
			return out, err
		}
		for _, u := range plan.Upstream {
			res, err := w.requestRefresh(ctx, u)
			if err != nil {
				return out, fmt.Errorf("refresh upstream %s: %w", u.Name, err)
			}
			out.Refreshes = append(out.Refreshes, jobs.ChainStep{Name: u.Name, Result: res})
			if res.State != jobs.RefreshSucceeded {
				return out, fmt.Errorf("upstream dynamic table %s failed to refresh (%s); %s was not refreshed", u.Name, res.Error, w.p.Name)
			}
		}
	}
	var res jobs.RefreshResult
	if err := workflow.ExecuteActivity(loadQueue(ctx), jobs.ActivityRefreshDynamicTable, jobs.RefreshInput{Params: w.p, Trigger: trigger}).Get(ctx, &res); err != nil {
		return out, err
	}
	out.Refreshes = append(out.Refreshes, jobs.ChainStep{Name: w.p.Name, Result: res})
	return out, nil
}

// requestRefresh asks the workflow of the upstream table u for one refresh
// of u and waits for its answer. Only one refresh of this table runs at a
// time (w.mu), so every answer but the one asked for is a late answer to
// a request that timed out, and is dropped.
func (w *dynamicTableWorkflow) requestRefresh(ctx workflow.Context, u jobs.DynamicTableParams) (jobs.RefreshResult, error) {
	info := workflow.GetInfo(ctx)
	w.requests++
	req := jobs.RefreshRequest{ID: fmt.Sprintf("%s/%d", info.WorkflowExecution.RunID, w.requests), ReplyTo: info.WorkflowExecution.ID, Trigger: "CHAIN"}
	if err := workflow.SignalExternalWorkflow(ctx, jobs.DynamicTableWorkflowID(u), "", jobs.SignalRefreshFor, req).Get(ctx, nil); err != nil {
		return jobs.RefreshResult{}, fmt.Errorf("its workflow %s is not running (DESC DYNAMIC TABLE %s shows why): %w", jobs.DynamicTableWorkflowID(u), u.Name, err)
	}
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(timerCtx, upstreamWait)
	for {
		var reply jobs.RefreshReply
		timedOut := false
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(workflow.Future) { timedOut = true })
		sel.AddReceive(w.refreshDoneCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &reply) })
		sel.Select(ctx)
		switch {
		case timedOut:
			return jobs.RefreshResult{}, fmt.Errorf("its workflow did not answer within %s", upstreamWait)
		case reply.ID != req.ID:
			continue
		case reply.Error != "":
			return reply.Result, errors.New(reply.Error)
		}
		return reply.Result, nil
	}
}

// serve runs the refresh a downstream table's chain asked for, after any
// refresh of this table in progress, and answers it.
func (w *dynamicTableWorkflow) serve(req jobs.RefreshRequest) {
	w.serving++
	workflow.Go(w.ctx, func(ctx workflow.Context) {
		defer func() {
			w.serving--
			w.kick.SendAsync(nil)
		}()
		reply := jobs.RefreshReply{ID: req.ID}
		err := w.exclusive(ctx, func(ctx workflow.Context) {
			out, err := w.refreshOwned(ctx, req.Trigger, true)
			if n := len(out.Refreshes); n > 0 {
				reply.Result = out.Refreshes[n-1].Result
			}
			if err != nil {
				reply.Error = err.Error()
			}
		})
		if err != nil {
			reply.Error = err.Error()
		}
		// A requester that is gone no longer waits: nothing to do.
		_ = workflow.SignalExternalWorkflow(ctx, req.ReplyTo, "", jobs.SignalRefreshDone, reply).Get(ctx, nil)
	})
}

// refreshUpdate is the refresh update (REFRESH DYNAMIC TABLE): one
// refresh of the table after its upstream, replied with every refresh the
// chain ran. The interval starts again from it.
func (w *dynamicTableWorkflow) refreshUpdate(ctx workflow.Context) (jobs.RefreshChainResult, error) {
	var out jobs.RefreshChainResult
	var rerr error
	// The handler's own context: a context names its coroutine.
	err := w.exclusive(refreshActivityOptions(ctx), func(ctx workflow.Context) {
		out, rerr = w.refreshOwned(ctx, "MANUAL", false)
	})
	if err == nil {
		err = rerr
	}
	if n := len(out.Refreshes); err == nil && n > 0 && out.Refreshes[n-1].Result.State == jobs.RefreshSucceeded {
		w.restart = true
		w.counters.LastRefresh = workflow.Now(ctx)
		w.showFigures()
	}
	w.kick.SendAsync(nil)
	return out, err
}

// settle serves the chain requests already delivered and waits for every
// refresh in flight, taking signals, so that no request is lost when the
// run ends or continues as new. Late answers to this run's own requests
// are dropped.
func (w *dynamicTableWorkflow) settle() {
	ctx := w.ctx
	for {
		drainSignals(ctx, w.addSignals)
		if w.serving == 0 && !w.refreshing {
			break
		}
		sel := workflow.NewSelector(ctx)
		w.addSignals(sel) // a refresh that ends kicks
		sel.Select(ctx)
	}
	for w.refreshDoneCh.ReceiveAsync(nil) {
	}
}
