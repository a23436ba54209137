package changes

import (
	"fmt"
	"testing"
	"time"
)

func TestFreshness(t *testing.T) {
	var f Freshness
	used := map[string]string{"table_stream s.x": "7", "commits s.t 5": "ab/2"}
	if f.Holds("", used) {
		t.Fatal("nothing recorded, yet holds")
	}
	f.Record("tok1", used)
	for _, tc := range []struct {
		name  string
		token string
		used  map[string]string
		want  bool
	}{
		{"same token, same values", "tok1", used, true},
		{"a subset of what was found current", "tok1", map[string]string{"table_stream s.x": "7"}, true},
		{"written since", "tok2", used, false},
		{"another version of a value", "tok1", map[string]string{"table_stream s.x": "8"}, false},
		{"a value never checked", "tok1", map[string]string{"table t.y": "1"}, false},
		{"nothing used", "tok1", nil, false},
	} {
		if got := f.Holds(tc.token, tc.used); got != tc.want {
			t.Errorf("%s: holds = %v, want %v", tc.name, got, tc.want)
		}
	}
	// A check at the same token adds to what holds; one at a new token
	// forgets what was found before it.
	f.Record("tok1", map[string]string{"table t.y": "1"})
	if !f.Holds("tok1", map[string]string{"table t.y": "1", "table_stream s.x": "7"}) {
		t.Error("values found current at one token do not add up")
	}
	f.Record("tok2", map[string]string{"table t.y": "1"})
	if f.Holds("tok2", used) {
		t.Error("values found at an older token still hold at a newer one")
	}
}

// TestFreshnessBusy: reads that keep finding the token changed stop
// reading it for a while, then try again.
func TestFreshnessBusy(t *testing.T) {
	var f Freshness
	used := map[string]string{"table t.x": "1"}
	f.Record("tok0", used)
	for i := range TokenMisses {
		if !f.WorthReading() {
			t.Fatalf("read %d: the token is skipped after %d changes", i, i)
		}
		f.Holds(fmt.Sprintf("tok%d", i+1), used)
	}
	for i := range TokenSkips {
		if !f.Skipping() || f.WorthReading() {
			t.Fatalf("read %d after %d changes in a row: the token is read", i, TokenMisses)
		}
	}
	if f.Skipping() || !f.WorthReading() {
		t.Fatalf("after %d reads without it, the token is still skipped", TokenSkips)
	}
	// A token found unchanged resets the count.
	f.Record("tok9", used)
	for range 2 * TokenMisses {
		f.Holds("tok8", used)
		if !f.Holds("tok9", used) {
			t.Fatal("the recorded values do not hold at their token")
		}
	}
	if f.Skipping() {
		t.Fatal("changes that were not in a row made reads skip the token")
	}
}

func TestCommitsPrint(t *testing.T) {
	at := time.Unix(1700000000, 0)
	base := []CommitRef{{Version: 10, ID: 1, Kind: CommitInsert, At: at}, {Version: 20, ID: 2, Kind: CommitDelete, At: at}}
	changed := map[string][]CommitRef{
		"one fewer":      base[:1],
		"another id":     {{Version: 10, ID: 3, Kind: CommitInsert, At: at}, base[1]},
		"another kind":   {base[0], {Version: 20, ID: 2, Kind: CommitUpdate, At: at}},
		"another moment": {base[0], {Version: 20, ID: 2, Kind: CommitDelete, At: at.Add(time.Second)}},
		"none":           nil,
	}
	p := CommitsPrint(base)
	if p != CommitsPrint(append([]CommitRef(nil), base...)) {
		t.Fatal("the same commits print differently")
	}
	for name, c := range changed {
		if CommitsPrint(c) == p {
			t.Errorf("%s: prints as the original", name)
		}
	}
}
