package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// loadQueue returns ctx with its activities on the load queue of the
// workflow's task queue (jobs.LoadQueue), from version 1 of
// "load-queue" on; runs recorded before keep their loads on the workflow's
// own queue, which workers still serve with every activity.
func loadQueue(ctx workflow.Context) workflow.Context {
	if workflow.GetVersion(ctx, "load-queue", workflow.DefaultVersion, 1) < 1 {
		return ctx
	}
	return workflow.WithTaskQueue(ctx, jobs.LoadQueue(workflow.GetInfo(ctx).TaskQueueName))
}
