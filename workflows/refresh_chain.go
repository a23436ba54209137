package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// RefreshChainWorkflowName is the registered name of the refresh-chain
// workflow: one refresh of a dynamic table after its upstream dynamic
// tables, each of those a child run of this workflow.
const RefreshChainWorkflowName = "DynamicTableRefreshChain"

// ActivityPlanRefresh lists a dynamic table's upstream dynamic tables.
const ActivityPlanRefresh = "PlanRefresh"

// PlanInput asks for a dynamic table's upstream.
type PlanInput struct {
	Params DynamicTableParams
}

// PlanResult is the upstream dynamic tables of a dynamic table, every one
// after those it reads (dependency order); the table itself is not in it.
type PlanResult struct {
	Upstream []DynamicTableParams
}

// RefreshChainInput asks for a refresh; with Alone set, of the table only
// (the chain's children).
type RefreshChainInput struct {
	Params  DynamicTableParams
	Trigger string
	Alone   bool
}

// RefreshChainResult is every refresh the chain ran, upstream first.
type RefreshChainResult struct {
	Refreshes []ChainStep
}

// ChainStep is one refresh of a chain.
type ChainStep struct {
	Name   string
	Result RefreshResult
}

// refreshActivityOptions are the options of a refresh activity.
func refreshActivityOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		// The refresh heartbeats every 5 s: a worker that dies mid-refresh
		// has it retried elsewhere after 30 s, not after the hour.
		HeartbeatTimeout: 30 * time.Second,
		// A failed refresh is recorded by the activity itself and waits for
		// the next interval; retries are for infrastructure hiccups only.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3, NonRetryableErrorTypes: []string{ErrTypeDynamicTableGone}},
	})
}

// refreshChain refreshes p's upstream dynamic tables, in dependency order,
// as child workflows, then p itself. An upstream refresh that fails stops
// the chain: p is not refreshed over stale inputs.
func refreshChain(ctx workflow.Context, p DynamicTableParams, trigger string) (RefreshChainResult, error) {
	ctx = refreshActivityOptions(ctx)
	var out RefreshChainResult
	var plan PlanResult
	if err := workflow.ExecuteActivity(ctx, ActivityPlanRefresh, PlanInput{Params: p}).Get(ctx, &plan); err != nil {
		return out, err
	}
	parent := workflow.GetInfo(ctx).WorkflowExecution
	for i, u := range plan.Upstream {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			// Unique per parent run and step, and apart from the upstream's
			// own dt.… workflow.
			WorkflowID: fmt.Sprintf("%s.chain.%s.%d", parent.ID, parent.RunID, i),
		})
		var res RefreshChainResult
		if err := workflow.ExecuteChildWorkflow(cctx, RefreshChainWorkflowName, RefreshChainInput{Params: u, Trigger: "CHAIN", Alone: true}).Get(ctx, &res); err != nil {
			return out, fmt.Errorf("refresh upstream %s: %w", u.Name, err)
		}
		out.Refreshes = append(out.Refreshes, res.Refreshes...)
		for _, st := range res.Refreshes {
			if st.Result.State != "SUCCEED" {
				return out, fmt.Errorf("upstream dynamic table %s failed to refresh (%s); %s was not refreshed", st.Name, st.Result.Error, p.Name)
			}
		}
	}
	var res RefreshResult
	if err := workflow.ExecuteActivity(ctx, ActivityRefreshDynamicTable, RefreshInput{Params: p, Trigger: trigger}).Get(ctx, &res); err != nil {
		return out, err
	}
	out.Refreshes = append(out.Refreshes, ChainStep{Name: p.Name, Result: res})
	return out, nil
}

// RefreshChainWorkflow is one refresh of a dynamic table: its upstream
// first unless Alone. REFRESH DYNAMIC TABLE runs it and waits.
func RefreshChainWorkflow(ctx workflow.Context, in RefreshChainInput) (RefreshChainResult, error) {
	if in.Alone {
		ctx = refreshActivityOptions(ctx)
		var res RefreshResult
		err := workflow.ExecuteActivity(ctx, ActivityRefreshDynamicTable, RefreshInput{Params: in.Params, Trigger: in.Trigger}).Get(ctx, &res)
		return RefreshChainResult{Refreshes: []ChainStep{{Name: in.Params.Name, Result: res}}}, err
	}
	return refreshChain(ctx, in.Params, in.Trigger)
}
