// Package runcache keeps what a pipe's activities build from the catalog
// (its compiled run) between turns, with the versions of the catalog
// objects it was built from: an idle turn then costs one query checking
// those versions instead of the catalog reads, the statement to parse and
// the secret to unseal that building it takes. Volume pipes (package
// loading) and Kafka pipes (package kafkaload) keep theirs here; it must
// import nothing of lakepipe but the catalog and the jobs' types.
package runcache

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/jobs"
)

// Run is what a cache keeps: a pipe's run, which knows the catalog
// objects it was built from.
type Run interface {
	Refs() []catalog.Ref
}

// Cache keeps one run per pipe incarnation. A run is never modified once
// built, so the activities of one pipe share it. At most maxRuns are kept
// (then the cache starts over).
type Cache[R Run] struct {
	mu sync.Mutex
	m  map[string]entry[R]
	// checks batches the version checks of unhurried openings.
	checks versionBatch
}

type entry[R Run] struct {
	run      R
	refs     []catalog.Ref
	versions []uint64
}

const maxRuns = 10000

func (c *Cache[R]) get(key string) (entry[R], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[key]
	return r, ok
}

func (c *Cache[R]) put(key string, r entry[R]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxRuns {
		c.m = map[string]entry[R]{}
	}
	c.m[key] = r
}

func (c *Cache[R]) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// Open returns the run kept under key while the objects it was built from
// are at the versions read before it was built, else builds it: a run
// built after the versions were read is never older than they say, so a
// change made at any moment shows as a changed version at the next turn.
// key names the pipe's incarnation (its generation too), so that the
// workflow of a pipe dropped and created again never gets the new one's
// run from here: it builds, and learns the pipe is gone.
func (c *Cache[R]) Open(ctx context.Context, cat *catalog.Catalog, key string, build func(context.Context) (R, error)) (R, error) {
	var zero R
	e, ok := c.get(key)
	if !ok {
		// The first turn here: build once to learn what the run reads,
		// then read their versions and build the run to keep.
		run, err := build(ctx)
		if err != nil {
			return zero, err
		}
		e = entry[R]{run: run, refs: run.Refs()}
	}
	var vs []uint64
	var err error
	if ok && ctx.Value(unhurriedKey{}) != nil {
		vs, err = c.checks.versions(ctx, cat, e.refs)
	} else {
		vs, err = cat.Versions(ctx, e.refs)
	}
	if err != nil {
		return zero, err
	}
	if ok && slices.Equal(vs, e.versions) {
		return e.run, nil
	}
	run, err := build(ctx)
	if err != nil {
		c.drop(key)
		return zero, err
	}
	if refs := run.Refs(); slices.Equal(refs, e.refs) {
		c.put(key, entry[R]{run: run, refs: refs, versions: vs})
	} else {
		c.drop(key) // it reads other objects now: learn them next turn
	}
	return run, nil
}

type unhurriedKey struct{}

// Unhurried marks a context whose Open may wait up to checkWindow so that
// its catalog check joins those of other pipes in one query: what the
// listings of idle pipes (AwaitFiles) do, a thousand pipes making a few
// queries a second instead of one per listing. The check is as exact as
// an immediate one: the query that answers it starts after it asked.
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

// Key is the key of a pipe's run: its incarnation (see Open).
func Key(p jobs.PipeParams) string {
	return p.Schema + "\x00" + p.Name + "\x00" + strconv.FormatInt(p.Generation, 10)
}
