package activities

import (
	"testing"
	"time"
)

func TestFirstListing(t *testing.T) {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	poll := 10 * time.Second
	for _, c := range []struct {
		name  string
		since time.Time
		due   time.Time
		hurry bool
	}{
		{"no turn before (old workflows, later waits)", time.Time{}, start.Add(poll), false},
		{"a short turn: the rest of the interval", start.Add(-3 * time.Second), start.Add(7 * time.Second), false},
		{"a turn of exactly the interval: at once", start.Add(-poll), start, true},
		{"a long turn (a backlog): at once", start.Add(-time.Minute), start, true},
		{"a clock ahead of this worker's: never later than one interval", start.Add(5 * time.Second), start.Add(poll), false},
	} {
		due, hurry := firstListing(start, c.since, poll)
		if !due.Equal(c.due) || hurry != c.hurry {
			t.Errorf("%s: due %v hurry %v, want %v %v", c.name, due.Sub(start), hurry, c.due.Sub(start), c.hurry)
		}
	}
}
