package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/jobs"
)

// RefreshDynamicTable runs one scheduled refresh. A refresh that fails on
// the query is recorded FAILED and returned as a result, not an error: the
// next interval tries again. Replacing the contents is atomic, so running
// it twice only refreshes twice.
func (a *Activities) RefreshDynamicTable(ctx context.Context, in jobs.RefreshInput) (jobs.RefreshResult, error) {
	// Heartbeats let Temporal see a dead worker's refresh within the
	// heartbeat timeout and run it again on another worker; the lease
	// stops a refresh whose worker lost Temporal before that other
	// attempt starts (two refreshes from one version would count the new
	// rows twice).
	ctx, stop := watch(ctx, 0, nil, nil)
	defer stop()
	start := time.Now()
	res, err := a.api().refreshDynamicTable(ctx, in.Params.Schema, in.Params.Name, in.Trigger)
	if serr := stalled(ctx); serr != nil {
		return res, serr
	}
	if err == nil {
		a.Metrics.Refresh(in.Params.Schema, in.Params.Name, string(res.Mode), string(res.State), time.Since(start))
	}
	if errors.Is(err, core.ErrDynamicTableGone) {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), jobs.ErrTypeDynamicTableGone, err)
	}
	return res, bounded(err)
}

// WaitRefresh waits for a dynamic table's refresh that another workflow
// runs (under the table's refresh workflow id) and returns its result. It
// only reads Temporal.
func (a *Activities) WaitRefresh(ctx context.Context, in jobs.WaitRefreshInput) (jobs.RefreshChainResult, error) {
	defer keepAlive(ctx)()
	return a.api().waitRefresh(ctx, in.WorkflowID)
}

// PlanRefresh lists a dynamic table's upstream dynamic tables in
// dependency order. It only reads the catalog.
func (a *Activities) PlanRefresh(ctx context.Context, in jobs.PlanInput) (jobs.PlanResult, error) {
	up, err := a.api().planRefresh(ctx, in.Params.Schema, in.Params.Name)
	if errors.Is(err, core.ErrDynamicTableGone) {
		return jobs.PlanResult{}, temporal.NewNonRetryableApplicationError(err.Error(), jobs.ErrTypeDynamicTableGone, err)
	}
	return jobs.PlanResult{Upstream: up}, bounded(err)
}
