package jobs

import "testing"

// The names derived here are in running workflows' histories and in the
// namespace's schedules: they must not change.
func TestDerivedNames(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{LoadQueue(""), "lakepipe-loads"},
		{LoadQueue("it-abc"), "it-abc-loads"},
		{MaintenanceScheduleID(""), "lakepipe-maintenance"},
		{MaintenanceScheduleID(TaskQueue), "lakepipe-maintenance"},
		{MaintenanceScheduleID("it-abc"), "lakepipe-maintenance-it-abc"},
		{PipeWorkflowFor(KindKafka), "KafkaPipeWorkflow"},
		{PipeWorkflowFor(KindVolume), "VolumePipeWorkflow"},
		{RefreshWorkflowID(DynamicTableParams{Workspace: "w", Schema: "s", Name: "d"}), "dt.w.s.d.refresh"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if len(SearchAttributeNames) != 5 {
		t.Errorf("search attributes %v: the local stack and docs/operations.md register five", SearchAttributeNames)
	}
}
