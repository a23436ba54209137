package workflows_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"

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
