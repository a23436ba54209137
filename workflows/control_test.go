package workflows_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/workflows"
)

// updateResult is what an update came back with: its reply, or the
// validator's refusal, or the handler's error.
type updateResult struct {
	reply    jobs.ControlReply
	rejected error
	err      error
	done     bool
}

// updateAt sends update name at d; read the result after the run.
func updateAt(env *testsuite.TestWorkflowEnvironment, d time.Duration, name string) *updateResult {
	r := &updateResult{}
	at(env, d, func() {
		env.UpdateWorkflow(name, name+d.String(), &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { r.rejected, r.done = err, true },
			OnComplete: func(v any, err error) {
				r.err, r.done = err, true
				if rep, ok := v.(jobs.ControlReply); ok {
					r.reply = rep
				}
			},
		})
	})
	return r
}

// ALTER PIPE … PAUSED and REFRESH as updates: the reply is the state the
// pipe took, a refresh of a paused pipe is refused with the way out, and
// the updates act as the signals do.
func TestPipeUpdates(t *testing.T) {
	env, l := newPipeEnv(t)
	pause := updateAt(env, 5*time.Second, jobs.UpdatePause)
	refreshPaused := updateAt(env, 10*time.Second, jobs.UpdateRefresh)
	resume := updateAt(env, 40*time.Second, jobs.UpdateResume)
	refresh := updateAt(env, 50*time.Second, jobs.UpdateRefresh)
	signal(env, 55*time.Second, jobs.SignalDrop, nil)
	dropped := updateAt(env, 55*time.Second, jobs.UpdatePause)
	run(env, jobs.PipeInput{Params: params(1000, 0)})
	requireClean(t, env)

	eq(t, "pause reply", pause.reply, jobs.ControlReply{Status: jobs.StatusPaused, Detail: "no new turn starts"})
	if refreshPaused.rejected == nil {
		t.Errorf("refresh of a paused pipe: %+v, want it refused", refreshPaused)
	} else if want := "ALTER PIPE p SET PIPE_EXECUTION_PAUSED = FALSE"; !strings.Contains(refreshPaused.rejected.Error(), want) {
		t.Errorf("refusal %q does not say %q", refreshPaused.rejected, want)
	}
	eq(t, "resume reply", resume.reply, jobs.ControlReply{Status: jobs.StatusRunning, Detail: "a turn starts now"})
	eq(t, "refresh reply", refresh.reply.Status, jobs.StatusRunning)
	if dropped.rejected == nil && dropped.done {
		t.Errorf("pause of a dropped pipe: %+v, want it refused", dropped)
	}
	// Turns: the first at start, one at the resume, one at the refresh;
	// none for the refused refresh (the poll is 1000 s).
	eq(t, "ListFiles at (s)", l.listTimes(), []int{0, 40, 50})
}

// A resume update wakes a paused pipe at once, also while a turn it
// paused during is still running.
func TestPipeResumeUpdateDuringTurn(t *testing.T) {
	env, l := newPipeEnv(t, "1.csv", "2.csv")
	l.slowCopy(10 * time.Second)
	pause := updateAt(env, 2*time.Second, jobs.UpdatePause)
	resume := updateAt(env, 4*time.Second, jobs.UpdateResume)
	st := statusAt(t, env, 30*time.Second)
	signal(env, 40*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(1000, 1)})
	requireClean(t, env)

	eq(t, "pause reply", pause.reply, jobs.ControlReply{Status: jobs.StatusPaused, Detail: "the turn in progress finishes; no new turn starts"})
	eq(t, "resume reply", resume.reply.Status, jobs.StatusRunning)
	eq(t, "paused", st.Paused, false)
	eq(t, "loaded", st.Counters.FilesLoaded, int64(2))
}

// A run started with lakepipe's search attributes upserts LakepipeStatus
// when it changes and the memo's figures after a turn that changed them,
// and nothing on idle turns.
func TestPipeVisibility(t *testing.T) {
	env, _ := newPipeEnv(t, "a.csv")
	if err := env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(
		jobs.AttrKind.ValueSet(jobs.VisibleVolumePipe), jobs.AttrStatus.ValueSet(string(jobs.StatusRunning)))); err != nil {
		t.Fatal(err)
	}
	var statuses []string
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		s, _ := args.Get(0).(temporal.SearchAttributes).GetKeyword(jobs.AttrStatus)
		statuses = append(statuses, s)
	}).Return(nil)
	var memos []jobs.PipeFigures
	env.OnUpsertMemo(mock.Anything).Run(func(args mock.Arguments) {
		memos = append(memos, args.Get(0).(map[string]any)[jobs.MemoFigures].(jobs.PipeFigures))
	}).Return(nil)
	updateAt(env, 100*time.Second, jobs.UpdatePause)
	updateAt(env, 120*time.Second, jobs.UpdatePause) // already paused: no upsert
	signal(env, 130*time.Second, jobs.SignalResume, nil)
	signal(env, 200*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(10, 0)})
	requireClean(t, env)

	eq(t, "LakepipeStatus upserts", statuses, []string{"PAUSED", "RUNNING"})
	// One turn loaded a.csv; the idle turns (every 10 s) wrote nothing.
	eq(t, "figures upserts", len(memos), 1)
	if len(memos) == 1 {
		eq(t, "figures", memos[0], jobs.PipeFigures{FilesLoaded: 1, RowsLoaded: 10, LastLoadTime: t0})
	}
}

// A run started without the search attributes upserts nothing.
func TestPipeWithoutAttributesUpsertsNothing(t *testing.T) {
	env, _ := newPipeEnv(t, "a.csv")
	upserts := 0
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(mock.Arguments) { upserts++ }).Return(nil)
	env.OnUpsertMemo(mock.Anything).Run(func(mock.Arguments) { upserts++ }).Return(nil)
	updateAt(env, 5*time.Second, jobs.UpdatePause)
	signal(env, 20*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(10, 0)})
	requireClean(t, env)
	eq(t, "upserts", upserts, 0)
}

// A pipe of each kind runs as its own workflow type and continues as new
// under it; runs of the earlier PipeWorkflow type keep theirs.
func TestPipeWorkflowTypes(t *testing.T) {
	for _, name := range []string{jobs.VolumePipeWorkflowName, jobs.PipeWorkflowName} {
		t.Run(name, func(t *testing.T) {
			env, _ := newPipeEnv(t, "a.csv")
			env.RegisterWorkflowWithOptions(workflows.VolumePipeWorkflow, workflow.RegisterOptions{Name: jobs.VolumePipeWorkflowName})
			env.SetContinueAsNewSuggested(true)
			env.ExecuteWorkflow(name, jobs.PipeInput{Params: params(10, 0)})
			var can *workflow.ContinueAsNewError
			if err := env.GetWorkflowError(); !errors.As(err, &can) {
				t.Fatalf("workflow error = %v, want continue-as-new", err)
			}
			eq(t, "continued as", can.WorkflowType.Name, name)
		})
	}
	eq(t, "type of a new Kafka pipe", jobs.PipeWorkflowFor(jobs.KindKafka), jobs.KafkaPipeWorkflowName)
	eq(t, "type of a new volume pipe", jobs.PipeWorkflowFor(jobs.KindVolume), jobs.VolumePipeWorkflowName)
}

// ALTER PIPE … SET POLL_INTERVAL_IN_SECONDS as the set update (and the
// set signal): the wait in progress starts again under the new interval,
// and the turns after follow it.
func TestPipeSetUpdate(t *testing.T) {
	env, l := newPipeEnv(t)
	var set updateResult
	at(env, 10*time.Second, func() {
		env.UpdateWorkflow(jobs.UpdateSet, "set", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { set.rejected = err },
			OnComplete: func(v any, err error) {
				set.err = err
				if rep, ok := v.(jobs.ControlReply); ok {
					set.reply = rep
				}
			},
		}, jobs.PipeSettings{PollSeconds: 20})
	})
	signal(env, 75*time.Second, jobs.SignalSet, jobs.PipeSettings{PollSeconds: 100})
	signal(env, 200*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(1000, 0)})
	requireClean(t, env)
	if set.rejected != nil || set.err != nil {
		t.Fatalf("set: %+v", set)
	}
	eq(t, "set reply", set.reply, jobs.ControlReply{Status: jobs.StatusRunning, Detail: "from its next turn: one every 20 s, at most 2000 files each"})
	// 0, then every 20 s from the update at 10 s; from the signal at 75 s
	// every 100 s.
	eq(t, "ListFiles at (s)", l.listTimes(), []int{0, 30, 50, 70, 175})
}

// INITIAL_DELAY_IN_SECONDS holds a new pipe's first turn back; a REFRESH
// ends the wait. A pipe continued as new does not wait again.
func TestPipeInitialDelay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refresh time.Duration // 0: none
		turns   int64         // counters carried into the run
		want    []int
	}{
		{"waits", 0, 0, []int{45, 145}},
		{"refresh ends the wait", 10 * time.Second, 0, []int{10, 110}},
		{"continued run", 0, 3, []int{0, 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, l := newPipeEnv(t)
			if tc.refresh > 0 {
				signal(env, tc.refresh, jobs.SignalRefresh, nil)
			}
			signal(env, 150*time.Second, jobs.SignalDrop, nil)
			p := params(100, 0)
			p.InitialDelaySeconds = 45
			run(env, jobs.PipeInput{Params: p, Counters: jobs.PipeCounters{Turns: tc.turns, ContinuedRuns: tc.turns}})
			requireClean(t, env)
			eq(t, "ListFiles at (s)", l.listTimes(), tc.want)
		})
	}
}
