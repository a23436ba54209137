package loading

import (
	"context"
	"slices"
	"sync"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// RunCache keeps the PipeRun of each volume pipe that ran on this worker,
// with the versions of the catalog objects it was built from (the pipe,
// its table, volume and connection). An idle turn then costs one query
// checking those versions instead of five catalog reads, a statement to
// parse and a secret to unseal. A PipeRun is never modified once built,
// so the activities of one pipe share it. At most maxCachedRuns are kept
// (then the cache starts over).
type RunCache struct {
	mu sync.Mutex
	m  map[string]cachedRun
}

type cachedRun struct {
	run      *PipeRun
	versions []uint64
}

const maxCachedRuns = 10000

func (c *RunCache) get(key string) (cachedRun, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[key]
	return r, ok
}

func (c *RunCache) put(key string, r cachedRun) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedRuns {
		c.m = map[string]cachedRun{}
	}
	c.m[key] = r
}

func (c *RunCache) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// OpenPipe loads a pipe for its activities. A missing pipe is ErrPipeGone.
//
// The run comes from the cache while the objects it was built from are
// at the versions read before it was built: a run built after the versions
// were read is never older than they say, so a change made at any moment
// shows as a changed version at the next turn.
func (e *Loader) OpenPipe(ctx context.Context, p jobs.PipeParams) (*PipeRun, error) {
	key := p.Schema + "\x00" + p.Name
	c, ok := e.Runs.get(key)
	if !ok {
		// The first turn here: build once to learn what the run reads,
		// then read their versions and build the run to keep.
		run, err := e.openPipe(ctx, p)
		if err != nil {
			return nil, err
		}
		c = cachedRun{run: run}
	}
	vs, err := e.Cat.Versions(ctx, c.run.refs)
	if err != nil {
		return nil, err
	}
	if ok && slices.Equal(vs, c.versions) {
		return c.run, nil
	}
	run, err := e.openPipe(ctx, p)
	if err != nil {
		e.Runs.drop(key)
		return nil, err
	}
	if slices.Equal(run.refs, c.run.refs) {
		e.Runs.put(key, cachedRun{run: run, versions: vs})
	} else {
		e.Runs.drop(key) // it reads other objects now: learn them next turn
	}
	return run, nil
}
