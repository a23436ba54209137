package workflows_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// A pipe whose listing became incremental (a listing said Ordered) lists in
// the local ListNewFiles from its next turn on; when that answers NeedFull,
// or fails, the turn lists with the regular ListFiles, and the state each
// returns is what the next turn gets.
func TestTurnListsLocallyWhenIncremental(t *testing.T) {
	env, _ := newPipeEnv(t)
	var mu sync.Mutex
	var calls []string
	var states []jobs.ListState
	n := 0
	record := func(kind string, in jobs.ListInput) int {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, kind)
		states = append(states, in.State)
		n++
		return n
	}
	env.RegisterActivityWithOptions(func(_ context.Context, in jobs.ListInput) (jobs.ListResult, error) {
		i := record("full", in)
		return jobs.ListResult{State: jobs.ListState{Ordered: true, Cursor: "k" + string(rune('0'+i))}}, nil
	}, activity.RegisterOptions{Name: jobs.ActivityListFiles})
	env.RegisterActivityWithOptions(func(_ context.Context, in jobs.ListInput) (jobs.ListResult, error) {
		switch i := record("local", in); i {
		case 3:
			return jobs.ListResult{NeedFull: true, State: in.State}, nil
		case 5:
			return jobs.ListResult{}, errors.New("ClickHouse went away")
		default:
			return jobs.ListResult{State: jobs.ListState{Ordered: true, Cursor: "k" + string(rune('0'+i))}}, nil
		}
	}, activity.RegisterOptions{Name: jobs.ActivityListNewFiles})
	signal(env, 65*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: params(10, 0)})
	requireClean(t, env)

	mu.Lock()
	defer mu.Unlock()
	eq(t, "listings", calls, []string{"full", "local", "local", "full", "local", "full", "local", "local", "local"})
	// Each listing resumes from the state the one before returned.
	eq(t, "cursors", []string{states[1].Cursor, states[2].Cursor, states[3].Cursor, states[4].Cursor, states[6].Cursor},
		[]string{"k1", "k2", "k2", "k4", "k6"})
}

// A listing that hands over a batch says where the cursor goes once the
// batch is handled (CursorAfter): the next turn lists from there when the
// copy succeeded, and from the listing's own cursor when it failed (the
// batch's files are to be found again).
func TestCursorMovesPastACopiedBatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		copyErr error
		want    []string
	}{
		{"copied", nil, []string{"", "a.csv"}},
		{"copy failed", temporal.NewNonRetryableApplicationError("insert into t: table is read-only", "CopyFailed", nil), []string{"", "k0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, l := newPipeEnv(t)
			l.copyErr = func(n int, _ int32) error { return iff(n == 0, tc.copyErr) }
			var mu sync.Mutex
			var cursors []string
			list := func(_ context.Context, in jobs.ListInput) (jobs.ListResult, error) {
				mu.Lock()
				defer mu.Unlock()
				cursors = append(cursors, in.State.Cursor)
				if len(cursors) > 1 {
					return jobs.ListResult{State: in.State}, nil
				}
				return jobs.ListResult{Files: []jobs.FileRef{{Path: "a.csv", Size: 1}}, State: jobs.ListState{Ordered: true, Cursor: "k0", FullAt: t0}, CursorAfter: "a.csv"}, nil
			}
			env.RegisterActivityWithOptions(list, activity.RegisterOptions{Name: jobs.ActivityListFiles})
			env.RegisterActivityWithOptions(list, activity.RegisterOptions{Name: jobs.ActivityListNewFiles})
			signal(env, 15*time.Second, jobs.SignalDrop, nil)
			run(env, jobs.PipeInput{Params: params(10, 0)})
			requireClean(t, env)

			mu.Lock()
			defer mu.Unlock()
			eq(t, "cursors listed from", cursors, tc.want)
		})
	}
}
