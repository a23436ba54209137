package workflows

import (
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplayDynamicTable replays a history recorded from a real run
// (create, scheduled refreshes, suspend, resume, manual refresh, drop): a
// change to the workflow that breaks running histories fails here.
func TestReplayDynamicTable(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(DynamicTableWorkflow, workflow.RegisterOptions{Name: DynamicTableWorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/dynamic_table.json"); err != nil {
		t.Fatal(err)
	}
}
