package engine

import (
	"slices"
	"testing"
)

func TestCommitCache(t *testing.T) {
	var c commitCache
	if _, ok := c.get("s", "t", 0); ok {
		t.Fatal("empty cache hit")
	}
	commits := []commitRef{{version: 10, id: 1}, {version: 20, id: 2}, {version: 30, id: 3}}
	c.put("s", "t", 5, commits)
	versions := func(cs []commitRef) []uint64 {
		var v []uint64
		for _, c := range cs {
			v = append(v, c.version)
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
		got, ok := c.get("s", "t", tc.from)
		if ok != tc.ok || !slices.Equal(versions(got), tc.want) {
			t.Errorf("get(from %d) = %v, %v; want %v, %v", tc.from, versions(got), ok, tc.want, tc.ok)
		}
	}
	if _, ok := c.get("s", "other", 5); ok {
		t.Error("another table's entry hit")
	}
	c.put("s", "t", 0, make([]commitRef, maxCachedCommits+1))
	if _, ok := c.get("s", "t", 5); ok {
		t.Error("an oversized list stayed cached")
	}
}
