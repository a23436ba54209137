package workflows_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// awaits stands in for AwaitFiles: each call lists the lake once, after
// the given time on the workflow clock (one poll per call), and records
// what it was asked.
type awaits struct {
	mu     sync.Mutex
	inputs []jobs.AwaitInput
	at     []int // seconds since t0 at which each call listed
}

func (a *awaits) mock(l *lake, after time.Duration, fail error) {
	l.env.RegisterActivityWithOptions(func(context.Context, jobs.AwaitInput) (jobs.AwaitResult, error) {
		return jobs.AwaitResult{}, errors.New("mocked")
	}, activity.RegisterOptions{Name: jobs.ActivityAwaitFiles})
	// The matcher sees each call as it starts (the return function only
	// once its time passed, which a cancelled wait never sees).
	asked := mock.MatchedBy(func(in jobs.AwaitInput) bool {
		a.mu.Lock()
		a.inputs = append(a.inputs, in)
		a.mu.Unlock()
		return true
	})
	l.env.OnActivity(jobs.ActivityAwaitFiles, mock.Anything, asked).Return(
		func(_ context.Context, in jobs.AwaitInput) (jobs.AwaitResult, error) {
			a.mu.Lock()
			a.at = append(a.at, int(l.now()/time.Second))
			a.mu.Unlock()
			if fail != nil {
				return jobs.AwaitResult{}, fail
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			r := jobs.AwaitResult{Polls: 1, ListResult: jobs.ListResult{State: jobs.ListState{Cursor: "after-" + in.State.Cursor}}}
			r.Files = append(r.Files, l.pending...)
			return r, nil
		}).After(after)
}

func (a *awaits) times() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int(nil), a.at...)
}

// An idle LIST pipe waits in AwaitFiles, not on timers: after its first
// turn it lists only there, the listing that finds files is the next
// turn's (no second listing), and each wait resumes from the state the
// one before returned.
func TestIdlePipeWaitsInAwaitFiles(t *testing.T) {
	env, l := newPipeEnv(t)
	var a awaits
	a.mock(l, 10*time.Second, nil)
	at(env, 25*time.Second, func() { l.add("a.csv") })
	st := statusAt(t, env, 44*time.Second)
	signal(env, 45*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(10, 0)})
	requireClean(t, env)

	eq(t, "ListFiles at", l.listTimes(), []int{0})
	eq(t, "AwaitFiles listed at", a.times(), []int{10, 20, 30, 40})
	cs := l.copyCalls()
	if len(cs) != 1 || cs[0].at != 30*time.Second || len(cs[0].paths) != 1 || cs[0].paths[0] != "a.csv" {
		t.Fatalf("copies = %+v, want a.csv at 30 s", cs)
	}
	a.mu.Lock()
	eq(t, "cursors", []string{a.inputs[1].State.Cursor, a.inputs[2].State.Cursor, a.inputs[3].State.Cursor}, []string{"after-", "after-after-", "after-after-after-"})
	// The wait after a turn counts the interval from the turn's start (0 s,
	// then 30 s); the waits that follow a wait, from their own start.
	if a.inputs[0].Since.IsZero() || !a.inputs[1].Since.IsZero() || !a.inputs[2].Since.IsZero() ||
		a.inputs[3].Since.Sub(a.inputs[0].Since) != 30*time.Second {
		t.Errorf("Since of the waits = %v, %v, %v, %v: want the first turn's start, zero, zero, 30 s later",
			a.inputs[0].Since, a.inputs[1].Since, a.inputs[2].Since, a.inputs[3].Since)
	}
	eq(t, "poll interval asked", a.inputs[0].Params.PollSeconds, 10)
	a.mu.Unlock()
	// The first turn, the idle polls at 10, 20 and 40, and the turn that
	// loaded (the poll at 30).
	eq(t, "turns", st.Counters.Turns, int64(5))
	eq(t, "files loaded", st.Counters.FilesLoaded, int64(1))
}

// A REFRESH wakes a waiting pipe at once: its wait is cancelled and a
// turn lists; new settings restart the wait under the new interval.
func TestSignalsCancelAwait(t *testing.T) {
	env, l := newPipeEnv(t)
	var a awaits
	a.mock(l, time.Hour, nil)
	signal(env, 5*time.Second, jobs.SignalRefresh, nil)
	signal(env, 8*time.Second, jobs.SignalSet, jobs.PipeSettings{PollSeconds: 20})
	signal(env, 12*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(10, 0)})
	requireClean(t, env)

	eq(t, "ListFiles at", l.listTimes(), []int{0, 5})
	a.mu.Lock()
	defer a.mu.Unlock()
	var polls []int
	for _, in := range a.inputs {
		polls = append(polls, in.Params.PollSeconds)
	}
	// Waits started at 0 (after the first turn), 5 (after the refresh's
	// turn), 8 (the new interval); none returned before the drop.
	eq(t, "waits' intervals", polls, []int{10, 10, 20})
	eq(t, "waits that listed", len(a.at), 0)
}

// A wait that fails (no worker serves the await queue, its worker died)
// leaves the pipe on its timer for that wait, so it never spins.
func TestAwaitFailureFallsBackToTimer(t *testing.T) {
	env, l := newPipeEnv(t)
	var a awaits
	a.mock(l, 0, errors.New("no worker on the await queue"))
	signal(env, 25*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(10, 0)})
	requireClean(t, env)
	eq(t, "ListFiles at", l.listTimes(), []int{0, 10, 20})
	eq(t, "waits tried at", a.times(), []int{0, 10, 20})
}

// An EVENT_NOTIFICATION pipe is woken by its events: it waits on its
// timer, never in AwaitFiles.
func TestEventPipeDoesNotAwait(t *testing.T) {
	env, l := newPipeEnv(t)
	var a awaits
	a.mock(l, time.Second, nil)
	signal(env, 25*time.Second, jobs.SignalDrop, nil)
	p := params(10, 0)
	p.IngestMode = "EVENT_NOTIFICATION"
	run(env, jobs.PipeInput{Params: p})
	requireClean(t, env)
	eq(t, "ListFiles at", l.listTimes(), []int{0, 10, 20})
	eq(t, "waits", len(a.times()), 0)
}
