package workflows

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// ownedEnv runs the dynamic table sales_summary over the chain a → b →
// sales_summary. Its refreshes take 10 s of workflow time; the workflows
// of a and b are played by a mock that answers each refresh request 10 s
// later (failing the tables in failing, not running for those in absent).
// It returns the order of refreshes ("name:trigger") and the largest
// number of refreshes of sales_summary that ran at once.
type ownedEnv struct {
	env     *testsuite.TestWorkflowEnvironment
	order   []string
	running int
	most    int
	replies []jobs.RefreshReply // the answers sales_summary gave to requests
}

func newOwnedEnv(t *testing.T, failing, absent []string) *ownedEnv {
	var s testsuite.WorkflowTestSuite
	o := &ownedEnv{env: s.NewTestWorkflowEnvironment()}
	env := o.env
	registerChainPlan(env)
	env.RegisterActivityWithOptions(func(ctx context.Context, in jobs.RefreshInput) (jobs.RefreshResult, error) {
		return jobs.RefreshResult{}, nil
	}, activity.RegisterOptions{Name: jobs.ActivityRefreshDynamicTable})
	env.OnActivity(jobs.ActivityRefreshDynamicTable, mock.Anything, mock.Anything).
		Return(func(_ context.Context, in jobs.RefreshInput) (jobs.RefreshResult, error) {
			return jobs.RefreshResult{State: jobs.RefreshSucceeded, Mode: jobs.RefreshFull, Rows: 1}, nil
		}).After(10 * time.Second)
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name != jobs.ActivityRefreshDynamicTable {
			return
		}
		var in jobs.RefreshInput
		_ = args.Get(&in)
		o.order = append(o.order, in.Params.Name+":"+in.Trigger)
		o.running++
		o.most = max(o.most, o.running)
	})
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		if info.ActivityType.Name == jobs.ActivityRefreshDynamicTable {
			o.running--
		}
	})
	in := func(list []string, name string) bool {
		for _, n := range list {
			if n == name {
				return true
			}
		}
		return false
	}
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", jobs.SignalRefreshFor, mock.Anything).
		Return(func(_, id, _, _ string, arg any) error {
			name := id[strings.LastIndex(id, ".")+1:]
			if in(absent, name) {
				return errors.New("unknown external workflow execution")
			}
			req := arg.(jobs.RefreshRequest)
			o.order = append(o.order, name+":"+req.Trigger)
			reply := jobs.RefreshReply{ID: req.ID, Result: jobs.RefreshResult{State: jobs.RefreshSucceeded, Mode: jobs.RefreshFull}}
			if in(failing, name) {
				reply.Result = jobs.RefreshResult{State: jobs.RefreshFailed, Mode: jobs.RefreshFull, Error: "boom"}
			}
			env.SignalWorkflow(jobs.SignalRefreshDone, reply)
			return nil
		}).After(10 * time.Second)
	env.OnSignalExternalWorkflow(mock.Anything, "dt.default.public.downstream", "", jobs.SignalRefreshDone, mock.Anything).
		Return(func(_, _, _, _ string, arg any) error {
			o.replies = append(o.replies, arg.(jobs.RefreshReply))
			return nil
		})
	return o
}

// refresh sends the refresh update at d and keeps its outcome.
func (o *ownedEnv) refresh(t *testing.T, d time.Duration, out *jobs.RefreshChainResult, outErr *error) {
	o.env.RegisterDelayedCallback(func() {
		o.env.UpdateWorkflow(jobs.UpdateRefresh, d.String(), &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { *outErr = err },
			OnComplete: func(v any, err error) {
				*outErr = err
				if v != nil {
					*out = v.(jobs.RefreshChainResult)
				}
			},
		})
	}, d)
}

func (o *ownedEnv) dropAt(d time.Duration) {
	o.env.RegisterDelayedCallback(func() { o.env.SignalWorkflow(jobs.SignalDrop, nil) }, d)
}

// A scheduled refresh asks the workflows of its upstream tables for their
// refreshes, in dependency order, then refreshes its own table.
func TestOwnedScheduledRefreshAsksUpstream(t *testing.T) {
	o := newOwnedEnv(t, nil, nil)
	o.dropAt(100 * time.Second) // the refresh at 60 s ends at 90 s
	o.env.ExecuteWorkflow(DynamicTableWorkflow, dtInput(60))
	if err := o.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o.order, ","); got != "a:CHAIN,b:CHAIN,sales_summary:SCHEDULED" {
		t.Fatalf("refresh order %s", got)
	}
}

// REFRESH DYNAMIC TABLE is the refresh update: it replies when the chain
// has run, with every refresh of it, and the interval starts again from
// its end.
func TestOwnedRefreshUpdate(t *testing.T) {
	o := newOwnedEnv(t, nil, nil)
	var res jobs.RefreshChainResult
	var err error
	o.refresh(t, 50*time.Second, &res, &err) // runs 50–80 s; next scheduled at 140 s
	o.dropAt(130 * time.Second)
	o.env.ExecuteWorkflow(DynamicTableWorkflow, dtInput(60))
	if werr := o.env.GetWorkflowError(); werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o.order, ","); got != "a:CHAIN,b:CHAIN,sales_summary:MANUAL" {
		t.Fatalf("refresh order %s (the scheduled refresh at 60 s should have moved to 140 s)", got)
	}
	if len(res.Refreshes) != 3 || res.Refreshes[2].Name != "sales_summary" || res.Refreshes[2].Result.Rows != 1 {
		t.Fatalf("reply %+v", res)
	}
}

// A failed upstream stops the chain before the table; an upstream without
// a workflow is an error naming it.
func TestOwnedRefreshUpstreamFails(t *testing.T) {
	for _, tt := range []struct {
		name            string
		failing, absent []string
		want, order     string
	}{
		{"failed", []string{"a"}, nil, "upstream dynamic table a failed to refresh (boom)", "a:CHAIN"},
		{"absent", nil, []string{"b"}, "refresh upstream b: its workflow dt.default.public.b is not running", "a:CHAIN"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOwnedEnv(t, tt.failing, tt.absent)
			var res jobs.RefreshChainResult
			var err error
			o.refresh(t, 10*time.Second, &res, &err)
			o.dropAt(50 * time.Second)
			o.env.ExecuteWorkflow(DynamicTableWorkflow, dtInput(600))
			if werr := o.env.GetWorkflowError(); werr != nil {
				t.Fatal(werr)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if got := strings.Join(o.order, ","); got != tt.order {
				t.Fatalf("refresh order %s, want %s", got, tt.order)
			}
		})
	}
}

// Refreshes of one table never overlap: a scheduled refresh, two REFRESH
// statements and a downstream table's request, all at once, run one after
// another, and the request is answered.
func TestOwnedRefreshesOneAtATime(t *testing.T) {
	o := newOwnedEnv(t, nil, nil)
	var res1, res2 jobs.RefreshChainResult
	var err1, err2 error
	// The scheduled refresh starts at 60 s (its own refresh at 80 s).
	o.refresh(t, 61*time.Second, &res1, &err1)
	o.refresh(t, 62*time.Second, &res2, &err2)
	o.env.RegisterDelayedCallback(func() {
		o.env.SignalWorkflow(jobs.SignalRefreshFor, jobs.RefreshRequest{ID: "r1", ReplyTo: "dt.default.public.downstream", Trigger: "CHAIN"})
	}, 63*time.Second)
	o.dropAt(200 * time.Second) // the last refresh ends at 160 s, the next is due at 210 s
	o.env.ExecuteWorkflow(DynamicTableWorkflow, dtInput(60))
	if werr := o.env.GetWorkflowError(); werr != nil {
		t.Fatal(werr)
	}
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if o.most != 1 {
		t.Fatalf("%d refreshes of the table ran at once", o.most)
	}
	var own []string
	for _, s := range o.order {
		if strings.HasPrefix(s, "sales_summary:") {
			own = append(own, s)
		}
	}
	// The first holds the table; the others queue for it in any order.
	slices.Sort(own[1:])
	if got := strings.Join(own, ","); got != "sales_summary:SCHEDULED,sales_summary:CHAIN,sales_summary:MANUAL,sales_summary:MANUAL" {
		t.Fatalf("refreshes %s", got)
	}
	if len(o.replies) != 1 || o.replies[0].ID != "r1" || o.replies[0].Result.State != jobs.RefreshSucceeded {
		t.Fatalf("answers to the downstream table: %+v", o.replies)
	}
}

// A downstream table's request that arrives during the last refresh of a
// run is answered before the run continues as new (it would be lost with
// the run's channels).
func TestOwnedRequestAnsweredBeforeContinueAsNew(t *testing.T) {
	o := newOwnedEnv(t, nil, nil)
	o.env.SetContinueAsNewSuggested(true)
	o.env.RegisterDelayedCallback(func() {
		o.env.SignalWorkflow(jobs.SignalRefreshFor, jobs.RefreshRequest{ID: "r1", ReplyTo: "dt.default.public.downstream", Trigger: "CHAIN"})
	}, 65*time.Second)
	o.env.ExecuteWorkflow(DynamicTableWorkflow, dtInput(60))
	var can *workflow.ContinueAsNewError
	if err := o.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow error %v, want continue-as-new", err)
	}
	if len(o.replies) != 1 || o.replies[0].ID != "r1" {
		t.Fatalf("answers before continuing as new: %+v", o.replies)
	}
}
