package workflows

import (
	"os"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/signalguard"
)

// TestReplayDynamicTable replays histories recorded from real runs: a
// change to the workflows that breaks running histories fails here.
//
//   - dynamic_table.json: create, scheduled refreshes, suspend, resume,
//     manual refresh, drop (before the "refresh-chain" version);
//   - dynamic_table_chain.json: the "refresh-chain" version: a scheduled
//     refresh running two upstream refreshes as child workflows, suspend;
//   - refresh_chain_manual.json: REFRESH DYNAMIC TABLE on the last of a
//     chain of three (plan, two children, its own refresh);
//   - refresh_chain_child.json: one child of that chain;
//   - dynamic_table_serial.json: the "refresh-serial" version: a scheduled
//     refresh as a child under the table's refresh id, suspend, drop;
//   - refresh_serial_chain.json: that child: upstream refreshes under
//     their own refresh ids;
//   - refresh_serial_wait.json: a REFRESH whose upstream was refreshing
//     twice over: both child starts refused, both runs waited for;
//   - dynamic_table_signals.json: the "signals-during-refresh" version:
//     refreshes every second run beside the signal loop; suspend, resume,
//     a manual refresh (refreshed), drop.
//   - dynamic_table_updates.json: a run started with lakepipe's search
//     attributes: SUSPEND as an update (LakepipeStatus upserted), drop
//     (TestControlPlane).
//   - maintenance.json: a MaintenanceWorkflow run the maintenance Schedule
//     started (TestMaintenanceSchedule).
//   - dynamic_table_owned_*.json: the "refresh-owned" version
//     (TestDynamicTableChain): REFRESH as the refresh update running a
//     chain by asking the upstream workflows (manual), an upstream
//     answering two chains' requests (served), a scheduled chain then a
//     SUSPEND (scheduled).
func TestReplayDynamicTable(t *testing.T) {
	// Child workflow ids derive from the parent's id and run id, so those
	// histories replay under their original execution.
	for _, h := range []struct{ file, id, run string }{
		{"dynamic_table.json", "", ""},
		{"dynamic_table_chain.json", "dt.default.it_eb79927566.fast", "01a237f4-27d2-73da-8c60-4e1a9bd0984e"},
		{"refresh_chain_manual.json", "dt.default.it_eb79927566.grand.manual.d8176ed27f59e728", "01a237f4-2430-78c0-810c-f4b783f01674"},
		{"refresh_chain_child.json", "", ""},
		{"dynamic_table_serial.json", "", ""},
		{"refresh_serial_chain.json", "", ""},
		{"refresh_serial_wait.json", "", ""},
		{"dynamic_table_signals.json", "", ""},
		{"dynamic_table_updates.json", "", ""},
		{"maintenance.json", "", ""},
		{"dynamic_table_owned_manual.json", "", ""},
		{"dynamic_table_owned_served.json", "", ""},
		{"dynamic_table_owned_scheduled.json", "", ""},
	} {
		t.Run(h.file, func(t *testing.T) {
			r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{Interceptors: signalguard.Replaying()})
			if err != nil {
				t.Fatal(err)
			}
			Register(r)
			hist, err := client.HistoryFromJSON(mustOpen(t, "testdata/"+h.file), client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			opts := worker.ReplayWorkflowHistoryOptions{}
			if h.id != "" {
				opts.OriginalExecution = workflow.Execution{ID: h.id, RunID: h.run}
			}
			if err := r.ReplayWorkflowHistoryWithOptions(nil, hist, opts); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
