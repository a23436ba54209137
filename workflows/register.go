package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// Registry is where workflows are registered: a worker, or a replayer in
// the replay tests.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// Register registers every lakepipe workflow under its name, the types of
// earlier releases included, whose runs replay and continue under them.
func Register(r Registry) {
	r.RegisterWorkflowWithOptions(VolumePipeWorkflow, workflow.RegisterOptions{Name: jobs.VolumePipeWorkflowName})
	r.RegisterWorkflowWithOptions(KafkaPipeWorkflow, workflow.RegisterOptions{Name: jobs.KafkaPipeWorkflowName})
	r.RegisterWorkflowWithOptions(PipeWorkflow, workflow.RegisterOptions{Name: jobs.PipeWorkflowName})
	r.RegisterWorkflowWithOptions(DynamicTableWorkflow, workflow.RegisterOptions{Name: jobs.DynamicTableWorkflowName})
	r.RegisterWorkflowWithOptions(RefreshChainWorkflow, workflow.RegisterOptions{Name: jobs.RefreshChainWorkflowName})
	r.RegisterWorkflowWithOptions(MaintenanceWorkflow, workflow.RegisterOptions{Name: jobs.MaintenanceWorkflowName})
}
