package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// dtEnv runs the dynamic-table workflow with a refresh activity that
// counts its calls and answers with res/err.
func dtEnv(t *testing.T, res jobs.RefreshResult, err error) (*testsuite.TestWorkflowEnvironment, *int) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	calls := 0
	env.RegisterActivityWithOptions(func(ctx context.Context, in jobs.RefreshInput) (jobs.RefreshResult, error) {
		calls++
		return res, err
	}, activity.RegisterOptions{Name: jobs.ActivityRefreshDynamicTable})
	env.RegisterActivityWithOptions(func(ctx context.Context, in jobs.PlanInput) (jobs.PlanResult, error) {
		return jobs.PlanResult{}, nil
	}, activity.RegisterOptions{Name: jobs.ActivityPlanRefresh})
	env.RegisterWorkflowWithOptions(RefreshChainWorkflow, workflow.RegisterOptions{Name: jobs.RefreshChainWorkflowName})
	return env, &calls
}

// chainEnv runs refreshes of a chain a → b → sales_summary: the plan
// activity answers with the upstream of each table, the refresh activity
// records the order of refreshes and fails the tables in failing.
func chainEnv(t *testing.T, failing ...string) (*testsuite.TestWorkflowEnvironment, *[]string) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var order []string
	registerChainPlan(env)
	env.RegisterActivityWithOptions(func(ctx context.Context, in jobs.RefreshInput) (jobs.RefreshResult, error) {
		order = append(order, in.Params.Name+":"+in.Trigger)
		for _, f := range failing {
			if f == in.Params.Name {
				return jobs.RefreshResult{State: "FAILED", Mode: "FULL", Error: "boom"}, nil
			}
		}
		return jobs.RefreshResult{State: "SUCCEED", Mode: "FULL"}, nil
	}, activity.RegisterOptions{Name: jobs.ActivityRefreshDynamicTable})
	env.RegisterWorkflowWithOptions(RefreshChainWorkflow, workflow.RegisterOptions{Name: jobs.RefreshChainWorkflowName})
	return env, &order
}

// registerChainPlan registers a plan activity for the chain a → b →
// sales_summary: each table's upstream in dependency order.
func registerChainPlan(env *testsuite.TestWorkflowEnvironment) {
	upstream := map[string][]string{"sales_summary": {"a", "b"}, "b": {"a"}}
	env.RegisterActivityWithOptions(func(ctx context.Context, in jobs.PlanInput) (jobs.PlanResult, error) {
		var out jobs.PlanResult
		for _, u := range upstream[in.Params.Name] {
			p := in.Params
			p.Name = u
			out.Upstream = append(out.Upstream, p)
		}
		return out, nil
	}, activity.RegisterOptions{Name: jobs.ActivityPlanRefresh})
}

// RefreshChainWorkflow, which runs the chains of dynamic-table runs from
// before the "refresh-owned" version and of older REFRESH statements: one
// refresh of the last table of a chain refreshes the others first, in
// dependency order, each once, as children.
func TestRefreshChainRunsUpstreamFirst(t *testing.T) {
	env, order := chainEnv(t)
	env.ExecuteWorkflow(RefreshChainWorkflow, jobs.RefreshChainInput{Params: dtInput(60).Params, Trigger: "MANUAL"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res jobs.RefreshChainResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	want := []string{"a:CHAIN", "b:CHAIN", "sales_summary:MANUAL"}
	if strings.Join(*order, ",") != strings.Join(want, ",") {
		t.Fatalf("refresh order %v, want %v", *order, want)
	}
	if len(res.Refreshes) != 3 || res.Refreshes[2].Name != "sales_summary" {
		t.Fatalf("result %+v", res)
	}
}

// A failed upstream refresh stops the chain before the table itself.
func TestRefreshChainStopsAtFailedUpstream(t *testing.T) {
	env, order := chainEnv(t, "a")
	env.ExecuteWorkflow(RefreshChainWorkflow, jobs.RefreshChainInput{Params: dtInput(60).Params, Trigger: "MANUAL"})
	err := env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), "upstream dynamic table a failed") {
		t.Fatalf("err = %v", err)
	}
	if strings.Join(*order, ",") != "a:CHAIN" {
		t.Fatalf("refresh order %v, want only a", *order)
	}
}

func dtInput(interval int) jobs.DynamicTableInput {
	return jobs.DynamicTableInput{Params: jobs.DynamicTableParams{Workspace: "default", Schema: "public", Name: "sales_summary", IntervalSeconds: interval}}
}

func TestDynamicTableRefreshesEveryInterval(t *testing.T) {
	env, calls := dtEnv(t, jobs.RefreshResult{State: "SUCCEED", Mode: "FULL", Rows: 2}, nil)
	// 10 minutes of workflow time with a 1-minute interval: 10 refreshes.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(jobs.SignalDrop, nil) }, 10*time.Minute+30*time.Second)
	env.ExecuteWorkflow(DynamicTableWorkflow, dtInput(60))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if *calls != 10 {
		t.Fatalf("refreshes = %d, want 10", *calls)
	}
}

func TestDynamicTableSuspendResumeAndManualRefresh(t *testing.T) {
	env, calls := dtEnv(t, jobs.RefreshResult{State: "SUCCEED", Mode: "FULL"}, nil)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(jobs.SignalSuspend, nil) }, 90*time.Second) // after 1 refresh
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(jobs.QueryStatus)
		if err != nil {
			t.Error(err)
			return
		}
		var st jobs.DynamicTableStatus
		if err := v.Get(&st); err != nil || !st.Suspended || st.Counters.Refreshes != 1 {
			t.Errorf("while suspended: %+v, %v", st, err)
		}
	}, 5*time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(jobs.SignalResume, nil) }, 10*time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(jobs.SignalRefresh, nil) }, 10*time.Minute+10*time.Second) // at once: 2nd
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(jobs.SignalDrop, nil) }, 10*time.Minute+50*time.Second)
	env.ExecuteWorkflow(DynamicTableWorkflow, dtInput(60))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if *calls != 2 {
		t.Fatalf("refreshes = %d, want 2 (one before suspend, one on the refresh signal)", *calls)
	}
}

func TestDynamicTableRefreshedSignalRestartsInterval(t *testing.T) {
	env, calls := dtEnv(t, jobs.RefreshResult{State: "SUCCEED", Mode: "FULL"}, nil)
	// A manual refresh at 50 s pushes the scheduled one from 60 s to 110 s.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(jobs.SignalRefreshed, nil) }, 50*time.Second)
	// DESC DYNAMIC TABLE's last_refresh_time counts the manual refresh.
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(jobs.QueryStatus)
		var st jobs.DynamicTableStatus
		if err == nil {
			err = v.Get(&st)
		}
		if err != nil || st.Counters.LastRefresh.IsZero() {
			t.Errorf("after a manual refresh: last refresh %v, %v", st.Counters.LastRefresh, err)
		}
	}, 55*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(jobs.SignalDrop, nil) }, 100*time.Second)
	env.ExecuteWorkflow(DynamicTableWorkflow, dtInput(60))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if *calls != 0 {
		t.Fatalf("refreshes = %d, want 0", *calls)
	}
}

func TestDynamicTableFailureIsCountedAndGoneEnds(t *testing.T) {
	env, calls := dtEnv(t, jobs.RefreshResult{State: "FAILED", Mode: "FULL", Error: "bad query"}, nil)
	env.RegisterDelayedCallback(func() {
		v, _ := env.QueryWorkflow(jobs.QueryStatus)
		var st jobs.DynamicTableStatus
		if err := v.Get(&st); err != nil || st.Counters.Failures != 2 || st.Counters.LastError != "bad query" {
			t.Errorf("status = %+v, %v", st, err)
		}
		env.SignalWorkflow(jobs.SignalDrop, nil)
	}, 150*time.Second)
	env.ExecuteWorkflow(DynamicTableWorkflow, dtInput(60))
	if err := env.GetWorkflowError(); err != nil || *calls != 2 {
		t.Fatalf("err = %v, calls = %d", err, *calls)
	}

	env2, _ := dtEnv(t, jobs.RefreshResult{}, temporal.NewNonRetryableApplicationError("gone", jobs.ErrTypeDynamicTableGone, nil))
	env2.ExecuteWorkflow(DynamicTableWorkflow, dtInput(60))
	if !env2.IsWorkflowCompleted() || env2.GetWorkflowError() != nil {
		t.Fatalf("a dropped table's workflow should end cleanly: %v", env2.GetWorkflowError())
	}
}

// slowDTEnv is dtEnv with refreshes that take 10 s of workflow time, so
// that signals can arrive while one runs.
func slowDTEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *int) {
	env, _ := dtEnv(t, jobs.RefreshResult{}, nil)
	calls := 0
	env.OnActivity(jobs.ActivityRefreshDynamicTable, mock.Anything, mock.Anything).
		Return(func(context.Context, jobs.RefreshInput) (jobs.RefreshResult, error) {
			calls++
			return jobs.RefreshResult{State: jobs.RefreshSucceeded, Mode: jobs.RefreshFull}, nil
		}).
		After(10 * time.Second)
	return env, &calls
}

// Signals sent during a refresh take effect in the order they were sent:
// RESUME then SUSPEND leaves the table suspended (it was left resumed,
// the selector taking SUSPEND first as it registered it first).
func TestDynamicTableSignalsDuringRefreshInOrder(t *testing.T) {
	env, calls := slowDTEnv(t)
	// The first refresh runs from 60 s to 70 s.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(jobs.SignalResume, nil) }, 62*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(jobs.SignalSuspend, nil) }, 64*time.Second)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(jobs.QueryStatus)
		if err != nil {
			t.Error(err)
			return
		}
		var st jobs.DynamicTableStatus
		if err := v.Get(&st); err != nil || !st.Suspended {
			t.Errorf("after RESUME then SUSPEND during a refresh: %+v, %v; want suspended", st, err)
		}
	}, 5*time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(jobs.SignalDrop, nil) }, 6*time.Minute)
	env.ExecuteWorkflow(DynamicTableWorkflow, dtInput(60))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if *calls != 1 {
		t.Errorf("refreshes = %d, want 1 (suspended after the first)", *calls)
	}
}

// A signal sent during the last refresh before the workflow continues as
// new reaches the next run (it was lost with the run's channels), and a
// DROP ends the workflow instead of continuing it.
func TestDynamicTableContinueAsNewKeepsSignals(t *testing.T) {
	tests := []struct {
		name    string
		signals []string
		want    *jobs.DynamicTableInput // nil: the workflow ends
	}{
		{"suspend", []string{jobs.SignalSuspend}, &jobs.DynamicTableInput{Suspended: true}},
		{"refresh", []string{jobs.SignalRefresh}, &jobs.DynamicTableInput{RefreshNow: true}},
		{"suspend then resume", []string{jobs.SignalSuspend, jobs.SignalResume}, &jobs.DynamicTableInput{}},
		{"drop", []string{jobs.SignalDrop}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _ := slowDTEnv(t)
			env.SetContinueAsNewSuggested(true)
			for i, sig := range tt.signals {
				env.RegisterDelayedCallback(func() { env.SignalWorkflow(sig, nil) }, 62*time.Second+time.Duration(i)*time.Second)
			}
			env.ExecuteWorkflow(DynamicTableWorkflow, dtInput(60))
			err := env.GetWorkflowError()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("workflow error %v, want it ended", err)
				}
				return
			}
			var can *workflow.ContinueAsNewError
			if !errors.As(err, &can) {
				t.Fatalf("workflow error %v, want continue-as-new", err)
			}
			var in jobs.DynamicTableInput
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
				t.Fatal(err)
			}
			if in.Suspended != tt.want.Suspended || in.RefreshNow != tt.want.RefreshNow {
				t.Errorf("next run's input: suspended %v, refresh now %v; want %v, %v", in.Suspended, in.RefreshNow, tt.want.Suspended, tt.want.RefreshNow)
			}
		})
	}
}

// ALTER DYNAMIC TABLE … SUSPEND and RESUME as updates: the reply is the
// state the table took, and they act as the signals do; a resume wakes a
// suspended table at once (the loop waits in a selector updates do not
// reach by themselves).
func TestDynamicTableUpdates(t *testing.T) {
	env, calls := dtEnv(t, jobs.RefreshResult{State: "SUCCEED", Mode: "FULL"}, nil)
	replies := map[string]*jobs.ControlReply{}
	update := func(d time.Duration, name string) {
		r := &jobs.ControlReply{}
		replies[name+d.String()] = r
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(name, d.String(), &testsuite.TestUpdateCallback{
				OnAccept: func() {},
				OnReject: func(err error) { t.Errorf("%s at %v refused: %v", name, d, err) },
				OnComplete: func(v any, err error) {
					if err != nil {
						t.Errorf("%s at %v: %v", name, d, err)
					}
					*r = v.(jobs.ControlReply)
				},
			})
		}, d)
	}
	update(90*time.Second, jobs.UpdateSuspend) // after 1 refresh
	update(100*time.Second, jobs.UpdateSuspend)
	update(10*time.Minute, jobs.UpdateResume) // the next refresh one interval later
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(jobs.SignalDrop, nil) }, 11*time.Minute+30*time.Second)
	env.ExecuteWorkflow(DynamicTableWorkflow, dtInput(60))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if *calls != 2 {
		t.Errorf("refreshes = %d, want 2 (one before the suspend, one an interval after the resume)", *calls)
	}
	if r := replies["suspend1m30s"]; *r != (jobs.ControlReply{Status: jobs.StatusSuspended, Detail: "no scheduled refresh runs"}) {
		t.Errorf("suspend reply %+v", *r)
	}
	if r := replies["suspend1m40s"]; r.Detail != "it was suspended already" {
		t.Errorf("second suspend reply %+v", *r)
	}
	if r := replies["resume10m0s"]; r.Status != jobs.StatusRunning {
		t.Errorf("resume reply %+v", *r)
	}
}

// MaintenanceWorkflow runs Maintain once and retries it when it fails.
func TestMaintenanceWorkflow(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	calls := 0
	env.RegisterActivityWithOptions(func(context.Context) error {
		calls++
		if calls == 1 {
			return errors.New("clickhouse: connection refused")
		}
		return nil
	}, activity.RegisterOptions{Name: jobs.ActivityMaintain})
	env.ExecuteWorkflow(MaintenanceWorkflow)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("Maintain ran %d times, want 2 (one retry)", calls)
	}
}
