package workflows_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/workflows"
)

// t0 is when every test pipe starts, on the test environment's clock.
var t0 = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// lake stands in for the activities: a volume of files waiting to be
// loaded, and a record of what the workflow asked for and when (on the
// environment's skipped clock).
type lake struct {
	env *testsuite.TestWorkflowEnvironment

	mu      sync.Mutex
	pending []jobs.FileRef             // listed by ListFiles, removed by a successful CopyFiles
	outcome map[string]jobs.FileResult // CopyFiles result per path (default: LOADED, 10 rows)
	lists   []listCall
	copies  []copyCall
	// listErr and copyErr, when set, fail the n-th call (0-based) of an
	// activity; attempt is Temporal's attempt number of that call.
	listErr func(n int, attempt int32) error
	copyErr func(n int, attempt int32) error
}

type listCall struct {
	at   time.Duration // since t0
	hint []string
	max  int
}

type copyCall struct {
	at      time.Duration
	paths   []string
	attempt int32
}

// newPipeEnv returns a test environment with the pipe workflow and the
// lake's activities registered under their production names.
func newPipeEnv(t *testing.T, files ...string) (*testsuite.TestWorkflowEnvironment, *lake) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(t0)
	// A pipe that does not end (a lost drop) fails the test with a timeout
	// instead of looping forever on the skipped clock.
	env.SetWorkflowRunTimeout(2 * time.Hour)
	l := &lake{env: env, outcome: map[string]jobs.FileResult{}}
	for _, f := range files {
		l.pending = append(l.pending, jobs.FileRef{Path: f, Size: 100, ETag: "etag-" + f})
	}
	env.RegisterWorkflowWithOptions(workflows.PipeWorkflow, workflow.RegisterOptions{Name: jobs.PipeWorkflowName})
	env.RegisterActivityWithOptions(l.listFiles, activity.RegisterOptions{Name: jobs.ActivityListFiles})
	env.RegisterActivityWithOptions(l.copyFiles, activity.RegisterOptions{Name: jobs.ActivityCopyFiles})
	return env, l
}

// tWriter sends the workflow's warnings to the test log.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (l *lake) now() time.Duration { return l.env.Now().Sub(t0) }

func (l *lake) listFiles(ctx context.Context, in jobs.ListInput) (jobs.ListResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.lists)
	l.lists = append(l.lists, listCall{at: l.now(), hint: in.Hint, max: in.Params.MaxFilesPerTurn})
	if l.listErr != nil {
		if err := l.listErr(n, activity.GetInfo(ctx).Attempt); err != nil {
			return jobs.ListResult{}, err
		}
	}
	files := slices.Clone(l.pending)
	if max := in.Params.MaxFilesPerTurn; len(files) > max {
		return jobs.ListResult{Files: files[:max], Backlog: len(files) - max}, nil
	}
	return jobs.ListResult{Files: files}, nil
}

func (l *lake) copyFiles(ctx context.Context, in jobs.CopyInput) (jobs.CopyResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	attempt := activity.GetInfo(ctx).Attempt
	var paths []string
	for _, f := range in.Files {
		paths = append(paths, f.Path)
	}
	n := len(l.copies)
	l.copies = append(l.copies, copyCall{at: l.now(), paths: paths, attempt: attempt})
	if l.copyErr != nil {
		if err := l.copyErr(n, attempt); err != nil {
			return jobs.CopyResult{}, err
		}
	}
	var res jobs.CopyResult
	for _, f := range in.Files {
		r, ok := l.outcome[f.Path]
		if !ok {
			r = jobs.FileResult{Status: "LOADED", Rows: 10}
		}
		r.Path = f.Path
		res.Files = append(res.Files, r)
		l.pending = slices.DeleteFunc(l.pending, func(p jobs.FileRef) bool { return p.Path == f.Path })
	}
	return res, nil
}

// add puts files in the volume (call it from a delayed callback).
func (l *lake) add(files ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range files {
		l.pending = append(l.pending, jobs.FileRef{Path: f, Size: 100, ETag: "etag-" + f})
	}
}

// listTimes are the moments ListFiles ran, in seconds since the start.
func (l *lake) listTimes() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for _, c := range l.lists {
		out = append(out, int(c.at/time.Second))
	}
	return out
}

func (l *lake) copyCalls() []copyCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.copies)
}

// slowCopy makes CopyFiles take d on the workflow clock, so that signals
// can arrive during a turn.
func (l *lake) slowCopy(d time.Duration) {
	l.env.OnActivity(jobs.ActivityCopyFiles, mock.Anything, mock.Anything).Return(l.copyFiles).After(d)
}

// at runs f at d after the start, on the workflow clock.
func at(env *testsuite.TestWorkflowEnvironment, d time.Duration, f func()) {
	env.RegisterDelayedCallback(f, d)
}

func signal(env *testsuite.TestWorkflowEnvironment, d time.Duration, name string, arg any) {
	at(env, d, func() { env.SignalWorkflow(name, arg) })
}

// statusAt queries the pipe's status at d; read the result after the run.
func statusAt(t *testing.T, env *testsuite.TestWorkflowEnvironment, d time.Duration) *jobs.PipeStatus {
	st := &jobs.PipeStatus{}
	at(env, d, func() {
		v, err := env.QueryWorkflow(jobs.QueryStatus)
		if err != nil {
			t.Errorf("query status at %v: %v", d, err)
			return
		}
		if err := v.Get(st); err != nil {
			t.Errorf("decode status at %v: %v", d, err)
		}
	})
	return st
}

func run(env *testsuite.TestWorkflowEnvironment, in jobs.PipeInput) {
	env.ExecuteWorkflow(jobs.PipeWorkflowName, in)
}

func params(poll, maxFiles int) jobs.PipeParams {
	return jobs.PipeParams{Workspace: "default", Schema: "public", Name: "p", Kind: "VOLUME",
		IngestMode: "LIST", PollSeconds: poll, MaxFilesPerTurn: maxFiles}
}

// requireClean fails unless the workflow ended by itself without error.
func requireClean(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestTurnLoadsListedFilesAndCounts(t *testing.T) {
	env, l := newPipeEnv(t, "a.csv", "b.csv", "c.csv")
	l.outcome["b.csv"] = jobs.FileResult{Status: "PARTIALLY_LOADED", Rows: 7, Rejected: 3, FirstError: "line 4: bad decimal"}
	l.outcome["c.csv"] = jobs.FileResult{Status: "FAILED", Rejected: 1, FirstError: "line 2: bad decimal"}
	st := statusAt(t, env, 5*time.Second)
	signal(env, 10*time.Second, jobs.SignalDrop, nil)
	p := params(60, 0)
	run(env, jobs.PipeInput{Params: p})
	requireClean(t, env)

	eq(t, "copies", len(l.copyCalls()), 1)
	eq(t, "copied", l.copyCalls()[0].paths, []string{"a.csv", "b.csv", "c.csv"})
	want := jobs.PipeCounters{FilesLoaded: 2, FilesFailed: 1, RowsLoaded: 17, RowsRejected: 4, Turns: 1,
		LastLoadTime: t0, LastTurnTime: t0, LastError: "c.csv: line 2: bad decimal"}
	eq(t, "counters", st.Counters, want)
	eq(t, "paused", st.Paused, false)
	eq(t, "running", st.Running, false)
	// Defaults apply to the params the pipe runs with and reports.
	p.MaxFilesPerTurn = 2000
	eq(t, "params", st.Params, p)
	eq(t, "ListFiles max", l.lists[0].max, 2000)
}

func TestStatusRunningDuringTurn(t *testing.T) {
	env, l := newPipeEnv(t, "a.csv")
	l.slowCopy(10 * time.Second)
	during := statusAt(t, env, 5*time.Second)
	after := statusAt(t, env, 15*time.Second)
	signal(env, 20*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(60, 10)})
	requireClean(t, env)

	eq(t, "running during the copy", during.Running, true)
	eq(t, "turns during the copy", during.Counters.Turns, int64(0))
	eq(t, "running after", after.Running, false)
	eq(t, "turns after", after.Counters.Turns, int64(1))
	eq(t, "loaded after", after.Counters.FilesLoaded, int64(1))
	eq(t, "last load", after.Counters.LastLoadTime, t0.Add(10*time.Second))
}

func TestBacklogRunsNextTurnAtOnce(t *testing.T) {
	env, l := newPipeEnv(t, "1.csv", "2.csv", "3.csv", "4.csv", "5.csv")
	st := statusAt(t, env, 5*time.Second)
	signal(env, 25*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(10, 2)})
	requireClean(t, env)

	// Three turns at once for the five files (2+2+1), then one every 10 s.
	eq(t, "ListFiles at (s)", l.listTimes(), []int{0, 0, 0, 10, 20})
	var batches [][]string
	for _, c := range l.copyCalls() {
		batches = append(batches, c.paths)
	}
	eq(t, "batches", batches, [][]string{{"1.csv", "2.csv"}, {"3.csv", "4.csv"}, {"5.csv"}})
	eq(t, "loaded", st.Counters.FilesLoaded, int64(5))
	eq(t, "turns", st.Counters.Turns, int64(3))
	eq(t, "backlog", st.Counters.Backlog, 0)
}

func TestIdlePipeSleepsPollSeconds(t *testing.T) {
	for _, tc := range []struct {
		name string
		poll int
		drop time.Duration
		want []int
	}{
		{"poll 10 s", 10, 35 * time.Second, []int{0, 10, 20, 30}},
		{"default 30 s", 0, 65 * time.Second, []int{0, 30, 60}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, l := newPipeEnv(t)
			signal(env, tc.drop, jobs.SignalDrop, nil)
			run(env, jobs.PipeInput{Params: params(tc.poll, 0)})
			requireClean(t, env)
			eq(t, "ListFiles at (s)", l.listTimes(), tc.want)
			eq(t, "copies", len(l.copyCalls()), 0)
		})
	}
}

func TestNewFileWaitsForTheTimer(t *testing.T) {
	env, l := newPipeEnv(t)
	at(env, 25*time.Second, func() { l.add("late.csv") })
	signal(env, 45*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(10, 0)})
	requireClean(t, env)
	calls := l.copyCalls()
	if len(calls) != 1 {
		t.Fatalf("copies = %v, want one", calls)
	}
	eq(t, "copied at", calls[0].at, 30*time.Second)
	eq(t, "copied", calls[0].paths, []string{"late.csv"})
}

func TestPauseStopsTurnsUntilResume(t *testing.T) {
	env, l := newPipeEnv(t)
	signal(env, 5*time.Second, jobs.SignalPause, nil)
	signal(env, 20*time.Second, jobs.SignalRefresh, nil) // no turn while paused
	signal(env, 25*time.Second, jobs.SignalFiles, jobs.FilesSignal{Paths: []string{"x.csv"}})
	paused := statusAt(t, env, 30*time.Second)
	signal(env, 40*time.Second, jobs.SignalResume, nil)
	resumed := statusAt(t, env, 45*time.Second)
	signal(env, 48*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(10, 0)})
	requireClean(t, env)

	eq(t, "ListFiles at (s)", l.listTimes(), []int{0, 40})
	eq(t, "paused", paused.Paused, true)
	eq(t, "turns while paused", paused.Counters.Turns, int64(1))
	eq(t, "paused after resume", resumed.Paused, false)
	// The hint that came in while paused is not lost.
	eq(t, "hint after resume", l.lists[1].hint, []string{"x.csv"})
}

func TestPauseDuringTurnStopsAfterIt(t *testing.T) {
	env, l := newPipeEnv(t, "1.csv", "2.csv", "3.csv")
	l.slowCopy(10 * time.Second)
	signal(env, 5*time.Second, jobs.SignalPause, nil)
	st := statusAt(t, env, 60*time.Second)
	signal(env, 100*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(10, 1)})
	requireClean(t, env)

	// The turn in flight finishes; the backlog waits for a resume.
	eq(t, "ListFiles at (s)", l.listTimes(), []int{0})
	eq(t, "copies", len(l.copyCalls()), 1)
	eq(t, "paused", st.Paused, true)
	eq(t, "loaded", st.Counters.FilesLoaded, int64(1))
	eq(t, "backlog", st.Counters.Backlog, 2)
}

// A pipe follows the last of its pause and resume signals, also when they
// arrive while a turn is busy and wait for it.
func TestPauseResumeOrderDuringTurn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		signals []string
		paused  bool
	}{
		{"pause", []string{jobs.SignalPause}, true},
		{"pause then resume", []string{jobs.SignalPause, jobs.SignalResume}, false},
		{"resume then pause", []string{jobs.SignalResume, jobs.SignalPause}, true},
		{"pause resume pause", []string{jobs.SignalPause, jobs.SignalResume, jobs.SignalPause}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, l := newPipeEnv(t, "1.csv")
			l.slowCopy(10 * time.Second)
			for i, s := range tc.signals {
				signal(env, time.Duration(2+i)*time.Second, s, nil)
			}
			st := statusAt(t, env, 15*time.Second)
			signal(env, 25*time.Second, jobs.SignalDrop, nil)
			run(env, jobs.PipeInput{Params: params(100, 0)})
			requireClean(t, env)
			eq(t, "paused", st.Paused, tc.paused)
		})
	}
}

func TestRefreshDuringSleepStartsTurnAtOnce(t *testing.T) {
	env, l := newPipeEnv(t)
	signal(env, 5*time.Second, jobs.SignalRefresh, nil)
	signal(env, 150*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(100, 0)})
	requireClean(t, env)
	// The refresh turn runs at 5 s and the poll timer starts over from it.
	eq(t, "ListFiles at (s)", l.listTimes(), []int{0, 5, 105})
}

func TestFilesSignalPassesHints(t *testing.T) {
	env, l := newPipeEnv(t)
	at(env, 5*time.Second, func() {
		env.SignalWorkflow(jobs.SignalFiles, jobs.FilesSignal{Paths: []string{"a.csv"}})
		env.SignalWorkflow(jobs.SignalFiles, jobs.FilesSignal{Paths: []string{"b.csv", "c.csv"}})
	})
	signal(env, 150*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(100, 0)})
	requireClean(t, env)

	// The first signal wakes the pipe; the second arrives during that turn
	// and gets a turn of its own right after it.
	eq(t, "ListFiles at (s)", l.listTimes(), []int{0, 5, 5, 105})
	eq(t, "hints of the first turn", l.lists[0].hint, []string(nil))
	eq(t, "hints of the signalled turn", l.lists[1].hint, []string{"a.csv"})
	eq(t, "hints of the next turn", l.lists[2].hint, []string{"b.csv", "c.csv"})
	eq(t, "hints of the timer's turn", l.lists[3].hint, []string(nil))
}

func TestDropEndsWorkflowCleanly(t *testing.T) {
	t.Run("while sleeping", func(t *testing.T) {
		env, l := newPipeEnv(t)
		signal(env, 5*time.Second, jobs.SignalDrop, nil)
		run(env, jobs.PipeInput{Params: params(10, 0)})
		requireClean(t, env)
		eq(t, "ListFiles at (s)", l.listTimes(), []int{0})
	})
	t.Run("while paused", func(t *testing.T) {
		env, l := newPipeEnv(t)
		signal(env, 1*time.Second, jobs.SignalPause, nil)
		signal(env, 50*time.Second, jobs.SignalDrop, nil)
		run(env, jobs.PipeInput{Params: params(10, 0)})
		requireClean(t, env)
		eq(t, "ListFiles at (s)", l.listTimes(), []int{0})
	})
	t.Run("during a turn with backlog", func(t *testing.T) {
		env, l := newPipeEnv(t, "1.csv", "2.csv", "3.csv")
		l.slowCopy(10 * time.Second)
		signal(env, 5*time.Second, jobs.SignalDrop, nil)
		run(env, jobs.PipeInput{Params: params(10, 1)})
		requireClean(t, env)
		// The turn finishes, the backlog is left alone.
		eq(t, "ListFiles at (s)", l.listTimes(), []int{0})
		eq(t, "copies", len(l.copyCalls()), 1)
	})
}

func TestPipeGoneEndsWorkflow(t *testing.T) {
	gone := temporal.NewNonRetryableApplicationError("pipe p was dropped", jobs.ErrTypePipeGone, nil)
	for _, tc := range []struct {
		name    string
		listErr func(n int, attempt int32) error
		copyErr func(n int, attempt int32) error
		lists   []int
		copies  int
	}{
		{name: "from ListFiles", lists: []int{0, 10}, copies: 1,
			listErr: func(n int, _ int32) error { return iff(n == 1, gone) }},
		{name: "from CopyFiles", lists: []int{0}, copies: 1,
			copyErr: func(int, int32) error { return gone }},
		// The retry policy does not retry the type even when the error
		// itself is retryable.
		{name: "retryable error of type PipeGone", lists: []int{0}, copies: 0,
			listErr: func(int, int32) error { return temporal.NewApplicationError("gone", jobs.ErrTypePipeGone) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, l := newPipeEnv(t, "a.csv")
			l.listErr, l.copyErr = tc.listErr, tc.copyErr
			run(env, jobs.PipeInput{Params: params(10, 0)})
			requireClean(t, env)
			eq(t, "ListFiles at (s)", l.listTimes(), tc.lists)
			eq(t, "copies", len(l.copyCalls()), tc.copies)
		})
	}
}

func iff(cond bool, err error) error {
	if cond {
		return err
	}
	return nil
}

func TestCopyErrorRecordedAndPipeGoesOn(t *testing.T) {
	t.Run("permanent error", func(t *testing.T) {
		env, l := newPipeEnv(t, "a.csv", "b.csv")
		l.copyErr = func(n int, _ int32) error {
			return iff(n == 0, temporal.NewNonRetryableApplicationError("insert into t: table is read-only", "CopyFailed", nil))
		}
		failed := statusAt(t, env, 5*time.Second)
		later := statusAt(t, env, 15*time.Second)
		signal(env, 18*time.Second, jobs.SignalDrop, nil)
		run(env, jobs.PipeInput{Params: params(10, 0)})
		requireClean(t, env)

		eq(t, "ListFiles at (s)", l.listTimes(), []int{0, 10})
		if want := "insert into t: table is read-only"; !strings.Contains(failed.Counters.LastError, want) {
			t.Errorf("LastError = %q, want it to contain %q", failed.Counters.LastError, want)
		}
		eq(t, "loaded after the failure", failed.Counters.FilesLoaded, int64(0))
		eq(t, "turns after the failure", failed.Counters.Turns, int64(1))
		eq(t, "loaded by the next turn", later.Counters.FilesLoaded, int64(2))
		eq(t, "turns", later.Counters.Turns, int64(2))
	})
	t.Run("transient error is retried", func(t *testing.T) {
		env, l := newPipeEnv(t, "a.csv", "b.csv")
		l.copyErr = func(_ int, attempt int32) error {
			return iff(attempt < 3, errors.New("dial tcp 127.0.0.1:19000: connection refused"))
		}
		st := statusAt(t, env, 8*time.Second)
		signal(env, 9*time.Second, jobs.SignalDrop, nil)
		run(env, jobs.PipeInput{Params: params(10, 0)})
		requireClean(t, env)

		// Temporal retries the activity (1 s, then 2 s backoff) within the turn.
		var attempts []int32
		for _, c := range l.copyCalls() {
			attempts = append(attempts, c.attempt)
		}
		eq(t, "attempts", attempts, []int32{1, 2, 3})
		eq(t, "ListFiles at (s)", l.listTimes(), []int{0})
		eq(t, "loaded", st.Counters.FilesLoaded, int64(2))
		eq(t, "last error", st.Counters.LastError, "")
	})
}

// continuedInput decodes the input of the run a ContinueAsNewError starts.
func continuedInput(t *testing.T, env *testsuite.TestWorkflowEnvironment) jobs.PipeInput {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want continue-as-new", err)
	}
	eq(t, "continued workflow type", can.WorkflowType.Name, jobs.PipeWorkflowName)
	var in jobs.PipeInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
		t.Fatalf("decode continue-as-new input: %v", err)
	}
	return in
}

func TestContinueAsNewCarriesState(t *testing.T) {
	prev := jobs.PipeCounters{FilesLoaded: 100, FilesFailed: 1, RowsLoaded: 1000, RowsRejected: 5, Turns: 7,
		LastError: "old.csv: bad", ContinuedRuns: 2}

	t.Run("suggested by the server, paused during the turn", func(t *testing.T) {
		env, l := newPipeEnv(t, "a.csv", "b.csv")
		env.SetContinueAsNewSuggested(true)
		l.slowCopy(10 * time.Second)
		signal(env, 5*time.Second, jobs.SignalPause, nil)
		p := params(10, 50)
		run(env, jobs.PipeInput{Params: p, Counters: prev})

		in := continuedInput(t, env)
		eq(t, "params", in.Params, p)
		eq(t, "paused", in.Paused, true)
		want := prev
		want.FilesLoaded, want.RowsLoaded, want.Turns, want.ContinuedRuns = 102, 1020, 8, 3
		want.LastLoadTime, want.LastTurnTime = t0.Add(10*time.Second), t0.Add(10*time.Second)
		eq(t, "counters", in.Counters, want)
		eq(t, "copies", len(l.copyCalls()), 1)
	})
	t.Run("history length over the limit", func(t *testing.T) {
		env, _ := newPipeEnv(t, "a.csv")
		env.SetCurrentHistoryLength(5000)
		run(env, jobs.PipeInput{Params: params(10, 0), Counters: prev})
		in := continuedInput(t, env)
		eq(t, "paused", in.Paused, false)
		eq(t, "loaded", in.Counters.FilesLoaded, int64(101))
		eq(t, "continued runs", in.Counters.ContinuedRuns, int64(3))
	})
	t.Run("history length under the limit", func(t *testing.T) {
		env, l := newPipeEnv(t, "a.csv")
		env.SetCurrentHistoryLength(100)
		signal(env, 25*time.Second, jobs.SignalDrop, nil)
		run(env, jobs.PipeInput{Params: params(10, 0)})
		requireClean(t, env)
		eq(t, "ListFiles at (s)", l.listTimes(), []int{0, 10, 20})
	})
	t.Run("drop pending ends instead", func(t *testing.T) {
		env, l := newPipeEnv(t, "a.csv")
		env.SetContinueAsNewSuggested(true)
		l.slowCopy(10 * time.Second)
		signal(env, 5*time.Second, jobs.SignalDrop, nil)
		run(env, jobs.PipeInput{Params: params(10, 0)})
		requireClean(t, env)
	})
}

// A continued run honours the state it was handed.
func TestContinuedPausedPipeStaysPaused(t *testing.T) {
	env, l := newPipeEnv(t, "a.csv")
	st := statusAt(t, env, 5*time.Second)
	signal(env, 30*time.Second, jobs.SignalResume, nil)
	signal(env, 35*time.Second, jobs.SignalDrop, nil)
	prev := jobs.PipeCounters{FilesLoaded: 100, Turns: 7, ContinuedRuns: 1}
	run(env, jobs.PipeInput{Params: params(10, 0), Paused: true, Counters: prev})
	requireClean(t, env)

	eq(t, "ListFiles at (s)", l.listTimes(), []int{30})
	eq(t, "paused", st.Paused, true)
	eq(t, "counters", st.Counters, prev)
}

// Many turns in one run continue as new once the history is long: the
// environment does not count events, so the test feeds it the count.
func TestManyTurnsContinueAsNew(t *testing.T) {
	env, l := newPipeEnv(t)
	turns := 0
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		if info.ActivityType.Name == jobs.ActivityListFiles {
			turns++
			// about 11 events per idle turn (as in testdata/pipe_volume.json)
			env.SetCurrentHistoryLength(1 + 11*turns)
		}
	})
	run(env, jobs.PipeInput{Params: params(1, 0)})
	in := continuedInput(t, env)
	n := len(l.listTimes())
	if n < 150 || n > 200 {
		t.Errorf("continued after %d turns, want about 2000/11", n)
	}
	eq(t, "turns carried", in.Counters.Turns, int64(n))
	eq(t, "continued runs", in.Counters.ContinuedRuns, int64(1))
	eq(t, "last turn", in.Counters.LastTurnTime, t0.Add(time.Duration(n-1)*time.Second))
}

func TestInvalidErrorPausesUntilResume(t *testing.T) {
	invalid := temporal.NewNonRetryableApplicationError("table public.t does not exist", jobs.ErrTypePipeInvalid, nil)
	for _, tc := range []struct {
		name             string
		listErr, copyErr func(n int, attempt int32) error
		lists            []int
	}{
		{name: "from ListFiles", lists: []int{0, 100},
			listErr: func(n int, _ int32) error { return iff(n == 0, invalid) }},
		{name: "from CopyFiles", lists: []int{0, 100},
			copyErr: func(n int, _ int32) error { return iff(n == 0, invalid) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, l := newPipeEnv(t, "a.csv")
			l.listErr, l.copyErr = tc.listErr, tc.copyErr
			paused := statusAt(t, env, 50*time.Second)
			signal(env, 100*time.Second, jobs.SignalResume, nil)
			resumed := statusAt(t, env, 105*time.Second)
			signal(env, 108*time.Second, jobs.SignalDrop, nil)
			run(env, jobs.PipeInput{Params: params(10, 0)})
			requireClean(t, env)
			// Paused: no turn at the polls of 10, 20, … s; the resume
			// runs one at once.
			eq(t, "ListFiles at (s)", l.listTimes(), tc.lists)
			eq(t, "paused", paused.Paused, true)
			eq(t, "invalid_reason", paused.InvalidReason, "table public.t does not exist")
			eq(t, "paused after resume", resumed.Paused, false)
			eq(t, "invalid_reason after resume", resumed.InvalidReason, "")
			eq(t, "files loaded after resume", resumed.Counters.FilesLoaded, int64(1))
		})
	}
}

func TestHintsAreBounded(t *testing.T) {
	env, l := newPipeEnv(t)
	signal(env, 5*time.Second, jobs.SignalPause, nil)
	many := make([]string, 700)
	for i := range many {
		many[i] = "f" + string(rune('a'+i%26)) + ".csv"
	}
	// 2,100 paths arrive while paused; the pipe keeps 1,000 of them.
	for i := range 3 {
		signal(env, time.Duration(10+i)*time.Second, jobs.SignalFiles, jobs.FilesSignal{Paths: many})
	}
	signal(env, 20*time.Second, jobs.SignalResume, nil)
	signal(env, 25*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(10, 0)})
	requireClean(t, env)
	eq(t, "ListFiles at (s)", l.listTimes(), []int{0, 20})
	eq(t, "hints passed", len(l.lists[1].hint), 1000)
}
