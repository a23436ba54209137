package engine

import (
	"slices"
	"sync"
)

// commitCache keeps, per change-tracked table, the last list of commits a
// stream read took from the change log, so that the next read can build its
// query at once and check the list while the query runs (see
// session.readCommits). Entries are hints, never trusted unchecked.
type commitCache struct {
	mu      sync.Mutex
	entries map[string]commitEntry
}

// commitEntry is the change log of a table above a version, as last read.
type commitEntry struct {
	from    uint64
	commits []commitRef
}

// maxCachedCommits bounds an entry: a stream that lags far behind reads
// its commits every time, as it did before the cache.
const maxCachedCommits = 4096

func commitKey(schema, name string) string { return schema + "." + name }

// get returns the cached commits of a table above from, if the entry
// reaches that far back.
func (c *commitCache) get(schema, name string, from uint64) ([]commitRef, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[commitKey(schema, name)]
	if !ok || e.from > from {
		return nil, false
	}
	i, _ := slices.BinarySearchFunc(e.commits, from+1, func(c commitRef, v uint64) int {
		switch {
		case c.version < v:
			return -1
		case c.version > v:
			return 1
		}
		return 0
	})
	return slices.Clip(e.commits[i:]), true
}

// put records what a read of the change log above from returned.
func (c *commitCache) put(schema, name string, from uint64, commits []commitRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := commitKey(schema, name)
	if len(commits) > maxCachedCommits {
		delete(c.entries, key)
		return
	}
	if c.entries == nil {
		c.entries = map[string]commitEntry{}
	}
	c.entries[key] = commitEntry{from: from, commits: commits}
}
