package changes

import (
	"slices"
	"testing"
)

func TestCommitCache(t *testing.T) {
	var c CommitCache
	if _, ok := c.Get("s", "t", 0); ok {
		t.Fatal("empty cache hit")
	}
	commits := []CommitRef{{Version: 10, ID: 1}, {Version: 20, ID: 2}, {Version: 30, ID: 3}}
	c.Put("s", "t", 5, commits)
	versions := func(cs []CommitRef) []uint64 {
		var v []uint64
		for _, c := range cs {
			v = append(v, c.Version)
		}
		return v
	}
	for _, tc := range []struct {
		from uint64
		ok   bool
		want []uint64
	}{
		{4, false, nil}, // the entry does not reach below 5
		{5, true, []uint64{10, 20, 30}},
		{10, true, []uint64{20, 30}},
		{15, true, []uint64{20, 30}},
		{30, true, nil},
		{99, true, nil},
	} {
		got, ok := c.Get("s", "t", tc.from)
		if ok != tc.ok || !slices.Equal(versions(got), tc.want) {
			t.Errorf("get(from %d) = %v, %v; want %v, %v", tc.from, versions(got), ok, tc.want, tc.ok)
		}
	}
	if _, ok := c.Get("s", "other", 5); ok {
		t.Error("another table's entry hit")
	}
	c.Put("s", "t", 0, make([]CommitRef, MaxCachedCommits+1))
	if _, ok := c.Get("s", "t", 5); ok {
		t.Error("an oversized list stayed cached")
	}
}
