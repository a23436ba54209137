package loading

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
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
	// checks batches the version checks of unhurried openings.
	checks versionBatch
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
	var vs []uint64
	var err error
	if ok && ctx.Value(unhurriedKey{}) != nil {
		vs, err = e.Runs.checks.versions(ctx, e.Cat, c.run.refs)
	} else {
		vs, err = e.Cat.Versions(ctx, c.run.refs)
	}
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

type unhurriedKey struct{}

// Unhurried marks a context whose OpenPipe may wait up to checkWindow so
// that its catalog check joins those of other pipes in one query: what
// the listings of idle pipes (AwaitFiles) do, a thousand pipes making a
// few queries a second instead of one per listing. The check is as exact
// as an immediate one: the query that answers it starts after it asked.
func Unhurried(ctx context.Context) context.Context {
	return context.WithValue(ctx, unhurriedKey{}, true)
}

// checkWindow is how long an unhurried check waits for others to join;
// maxBatchRefs bounds the objects one query checks.
const (
	checkWindow  = 250 * time.Millisecond
	maxBatchRefs = 1024
)

// versionBatch coalesces catalog version checks (see Unhurried).
type versionBatch struct {
	mu      sync.Mutex
	waiting []*versionAsk
}

type versionAsk struct {
	refs []catalog.Ref
	out  []uint64
	err  error
	done chan struct{}
}

// versions is cat.Versions(refs), answered by a query made for every ask
// of the next checkWindow.
func (b *versionBatch) versions(ctx context.Context, cat *catalog.Catalog, refs []catalog.Ref) ([]uint64, error) {
	a := &versionAsk{refs: refs, done: make(chan struct{})}
	b.mu.Lock()
	b.waiting = append(b.waiting, a)
	if len(b.waiting) == 1 {
		time.AfterFunc(checkWindow, func() { b.flush(cat) })
	}
	b.mu.Unlock()
	select {
	case <-a.done:
		return a.out, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// flush answers the asks waiting, in queries of at most maxBatchRefs
// distinct objects.
func (b *versionBatch) flush(cat *catalog.Catalog) {
	b.mu.Lock()
	asks := b.waiting
	b.waiting = nil
	b.mu.Unlock()
	for len(asks) > 0 {
		idx := map[catalog.Ref]int{}
		var union []catalog.Ref
		n := 0
		for ; n < len(asks) && (n == 0 || len(union)+len(asks[n].refs) <= maxBatchRefs); n++ {
			for _, r := range asks[n].refs {
				if _, ok := idx[r]; !ok {
					idx[r] = len(union)
					union = append(union, r)
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		vs, err := cat.Versions(ctx, union)
		cancel()
		for _, a := range asks[:n] {
			if err != nil {
				a.err = err
			} else {
				a.out = make([]uint64, len(a.refs))
				for i, r := range a.refs {
					a.out[i] = vs[idx[r]]
				}
			}
			close(a.done)
		}
		asks = asks[n:]
	}
}
