package changes

import (
	"slices"
	"sync"
)

// CommitCache keeps, per change-tracked table, the last list of commits a
// stream read took from the change log, so that the next read can build its
// query at once and check the list while the query runs (see
// session.readCommits). Entries are hints, never trusted unchecked.
type CommitCache struct {
	mu      sync.Mutex
	entries map[string]commitEntry
}

// commitEntry is the change log of a table above a version, as last read.
type commitEntry struct {
	from    uint64
	commits []CommitRef
}

// MaxCachedCommits bounds an entry: a stream that lags far behind reads
// its commits every time, as it did before the cache.
const MaxCachedCommits = 4096

func commitKey(schema, name string) string { return schema + "." + name }

// Get returns the cached commits of a table above from, if the entry
// reaches that far back.
func (c *CommitCache) Get(schema, name string, from uint64) ([]CommitRef, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[commitKey(schema, name)]
	if !ok || e.from > from {
		return nil, false
	}
	i, _ := slices.BinarySearchFunc(e.commits, from+1, func(c CommitRef, v uint64) int {
		switch {
		case c.Version < v:
			return -1
		case c.Version > v:
			return 1
		}
		return 0
	})
	return slices.Clip(e.commits[i:]), true
}

// Put records what a read of the change log above from returned.
func (c *CommitCache) Put(schema, name string, from uint64, commits []CommitRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := commitKey(schema, name)
	if len(commits) > MaxCachedCommits {
		delete(c.entries, key)
		return
	}
	if c.entries == nil {
		c.entries = map[string]commitEntry{}
	}
	c.entries[key] = commitEntry{from: from, commits: commits}
}
