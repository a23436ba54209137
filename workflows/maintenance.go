package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// MaintenanceWorkflow runs the Maintain activity once; the maintenance
// Schedule (jobs.MaintenanceScheduleID) starts it every hour.
func MaintenanceWorkflow(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// Expiring history is one mutation per system table; a big
		// backlog of them may take a while.
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 10 * time.Second,
			MaximumInterval: 5 * time.Minute,
			// The next scheduled run tries again anyway.
			MaximumAttempts: 5,
		},
	})
	return workflow.ExecuteActivity(ctx, jobs.ActivityMaintain).Get(ctx, nil)
}
