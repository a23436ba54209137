package workflows

import (
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// refreshActivityOptions are the options of a refresh activity.
func refreshActivityOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		// The refresh heartbeats every 5 s: a worker that dies mid-refresh
		// has it retried elsewhere after 30 s, not after the hour.
		HeartbeatTimeout: 30 * time.Second,
		// A failed refresh is recorded by the activity itself and waits for
		// the next interval; retries are for infrastructure hiccups only.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3, NonRetryableErrorTypes: []string{jobs.ErrTypeDynamicTableGone}},
	})
}

// refreshSerial runs a refresh of p (its upstream first unless alone) as a
// child workflow under p's RefreshWorkflowID. While another refresh of p
// runs there, it waits for it and starts its own after; should that find
// the id taken again, the refresh it then waits for started after this
// one was asked for, and its result is taken as this one's.
func refreshSerial(ctx workflow.Context, p jobs.DynamicTableParams, trigger string, alone bool) (jobs.RefreshChainResult, error) {
	id := jobs.RefreshWorkflowID(p)
	var res jobs.RefreshChainResult
	for attempt := 0; ; attempt++ {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:            id,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		})
		err := workflow.ExecuteChildWorkflow(cctx, jobs.RefreshChainWorkflowName, jobs.RefreshChainInput{Params: p, Trigger: trigger, Alone: alone}).Get(ctx, &res)
		if !temporal.IsWorkflowExecutionAlreadyStartedError(err) {
			return res, err
		}
		res = jobs.RefreshChainResult{}
		err = workflow.ExecuteActivity(refreshActivityOptions(ctx), jobs.ActivityWaitRefresh, jobs.WaitRefreshInput{WorkflowID: id}).Get(ctx, &res)
		if err != nil || attempt == 1 {
			return res, err
		}
	}
}

// refreshChain refreshes p's upstream dynamic tables, in dependency order,
// as child workflows, then p itself. An upstream refresh that fails stops
// the chain: p is not refreshed over stale inputs.
func refreshChain(ctx workflow.Context, p jobs.DynamicTableParams, trigger string) (jobs.RefreshChainResult, error) {
	ctx = refreshActivityOptions(ctx)
	// From version 1 on, each upstream refresh runs under the upstream's
	// RefreshWorkflowID, one at a time per table.
	serial := workflow.GetVersion(ctx, "refresh-serial", workflow.DefaultVersion, 1) >= 1
	var out jobs.RefreshChainResult
	var plan jobs.PlanResult
	if err := workflow.ExecuteActivity(ctx, jobs.ActivityPlanRefresh, jobs.PlanInput{Params: p}).Get(ctx, &plan); err != nil {
		return out, err
	}
	parent := workflow.GetInfo(ctx).WorkflowExecution
	for i, u := range plan.Upstream {
		var res jobs.RefreshChainResult
		var err error
		if serial {
			res, err = refreshSerial(ctx, u, "CHAIN", true)
		} else {
			cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
				WorkflowID: fmt.Sprintf("%s.chain.%s.%d", parent.ID, parent.RunID, i),
			})
			err = workflow.ExecuteChildWorkflow(cctx, jobs.RefreshChainWorkflowName, jobs.RefreshChainInput{Params: u, Trigger: "CHAIN", Alone: true}).Get(ctx, &res)
		}
		if err != nil {
			return out, fmt.Errorf("refresh upstream %s: %w", u.Name, err)
		}
		out.Refreshes = append(out.Refreshes, res.Refreshes...)
		for _, st := range res.Refreshes {
			if st.Result.State != jobs.RefreshSucceeded {
				return out, fmt.Errorf("upstream dynamic table %s failed to refresh (%s); %s was not refreshed", st.Name, st.Result.Error, p.Name)
			}
		}
	}
	var res jobs.RefreshResult
	if err := workflow.ExecuteActivity(loadQueue(ctx), jobs.ActivityRefreshDynamicTable, jobs.RefreshInput{Params: p, Trigger: trigger}).Get(ctx, &res); err != nil {
		return out, err
	}
	out.Refreshes = append(out.Refreshes, jobs.ChainStep{Name: p.Name, Result: res})
	return out, nil
}

// RefreshChainWorkflow is one refresh of a dynamic table: its upstream
// first unless Alone. REFRESH DYNAMIC TABLE runs it and waits.
func RefreshChainWorkflow(ctx workflow.Context, in jobs.RefreshChainInput) (jobs.RefreshChainResult, error) {
	if in.Alone {
		ctx = refreshActivityOptions(ctx)
		var res jobs.RefreshResult
		err := workflow.ExecuteActivity(loadQueue(ctx), jobs.ActivityRefreshDynamicTable, jobs.RefreshInput{Params: in.Params, Trigger: in.Trigger}).Get(ctx, &res)
		return jobs.RefreshChainResult{Refreshes: []jobs.ChainStep{{Name: in.Params.Name, Result: res}}}, err
	}
	return refreshChain(ctx, in.Params, in.Trigger)
}
