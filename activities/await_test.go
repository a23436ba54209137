package activities

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/jobs"
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

// AwaitRecords returns the first ends that show records beyond the
// pipe's offsets, a partition the offsets do not know among them; ends at
// the offsets keep it waiting until For passes; a broker error ends it.
// It opens the pipe once, not at every read.
// TestWaitsSupersede: a newer wait of a pipe ends the older one with
// errSuperseded (which await turns into the cancellation Temporal asked
// for), and leaves other pipes' waits alone; an older wait that starts
// after a newer one ends at once and leaves the newer alone.
func TestWaitsSupersede(t *testing.T) {
	var w waits
	t0 := time.Now()
	old, doneOld := w.enter(context.Background(), "pipe.a", t0)
	other, doneOther := w.enter(context.Background(), "pipe.b", t0)
	newer, doneNewer := w.enter(context.Background(), "pipe.a", t0.Add(time.Second))
	late, doneLate := w.enter(context.Background(), "pipe.a", t0.Add(time.Second/2))
	if !errors.Is(context.Cause(late), errSuperseded) || newer.Err() != nil {
		t.Fatalf("an older wait starting after a newer: its cause %v (want errSuperseded), the newer's %v (want none)", context.Cause(late), newer.Err())
	}
	doneLate()
	if !errors.Is(context.Cause(old), errSuperseded) {
		t.Fatalf("the older wait's cause: %v, want errSuperseded", context.Cause(old))
	}
	if other.Err() != nil || newer.Err() != nil {
		t.Fatalf("other waits ended: %v, %v", other.Err(), newer.Err())
	}
	doneOld() // the older one's end must not remove the newer
	if w.by["pipe.a"] == nil {
		t.Fatal("the older wait's end removed the newer one")
	}
	doneNewer()
	doneOther()
	if len(w.by) != 0 || context.Cause(newer) != context.Canceled {
		t.Fatalf("after every wait ended: %d left, the newer's cause %v", len(w.by), context.Cause(newer))
	}
}

func TestAwaitRecords(t *testing.T) {
	offsets := []jobs.PartitionOffset{{Partition: 0, Offset: 5}, {Partition: 1, Offset: 3}}
	past := time.Now().Add(-time.Hour) // the first read is due at once
	tests := []struct {
		name  string
		end   []jobs.PartitionOffset
		err   error
		since time.Time
		For   time.Duration
		want  jobs.AwaitRecordsResult
		fail  *wantErr
	}{
		{"records wait", []jobs.PartitionOffset{{Partition: 0, Offset: 5}, {Partition: 1, Offset: 7}}, nil, past, time.Minute,
			jobs.AwaitRecordsResult{End: []jobs.PartitionOffset{{Partition: 0, Offset: 5}, {Partition: 1, Offset: 7}}, Polls: 1}, nil},
		{"a new partition", []jobs.PartitionOffset{{Partition: 0, Offset: 5}, {Partition: 1, Offset: 3}, {Partition: 2, Offset: 0}}, nil, past, time.Minute,
			jobs.AwaitRecordsResult{End: []jobs.PartitionOffset{{Partition: 0, Offset: 5}, {Partition: 1, Offset: 3}, {Partition: 2, Offset: 0}}, Polls: 1}, nil},
		// Reads at 0 s (due at once) and 1 s; the next, at 2 s, is past For.
		{"caught up", offsets, nil, past, 1500 * time.Millisecond, jobs.AwaitRecordsResult{Polls: 2}, nil},
		{"broker down", nil, errors.New("kafka: no brokers"), past, time.Minute, jobs.AwaitRecordsResult{}, &wantErr{msg: "kafka: no brokers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := &fakeEngine{kafka: &fakeKafka{end: tt.end, offErr: tt.err}}
			a := &Activities{eng: eng}
			env := newTestEnv(t, a)
			p := testPipe
			p.PollSeconds = 1
			v, err := env.ExecuteActivity(a.AwaitRecords, jobs.AwaitRecordsInput{Params: p, Offsets: offsets, For: tt.For, Since: tt.since})
			checkErr(t, err, tt.fail)
			if tt.fail != nil {
				return
			}
			var got jobs.AwaitRecordsResult
			if err := v.Get(&got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			// Opened once as the wait began, whatever the reads.
			if len(eng.opened) != 1 {
				t.Errorf("the pipe opened %d times for %d reads, want once", len(eng.opened), got.Polls)
			}
		})
	}
}
