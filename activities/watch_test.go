package activities

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
)

// A lease holds while heartbeats reach Temporal, survives a missed one,
// and ends when Temporal refuses one or none arrived for its ttl.
func TestLeaseRenew(t *testing.T) {
	transient := errors.New("connection refused")
	tests := []struct {
		name   string
		held   time.Duration // how long ago the last acknowledged heartbeat was sent
		beat   error
		fenced bool
	}{
		{"acknowledged", 20 * time.Second, nil, false},
		{"missed within the ttl", 10 * time.Second, transient, false},
		{"missed past the ttl", 16 * time.Second, transient, true},
		{"never acknowledged", -1, transient, true},
		{"another attempt runs", time.Second, serviceerror.NewNotFound("invalid activityID or activity already timed out"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &lease{ttl: 15 * time.Second, beat: func(context.Context, ...any) error { return tt.beat }}
			if tt.held >= 0 {
				l.held = time.Now().Add(-tt.held)
			}
			before := l.held
			err := l.renew(context.Background())
			if got := errors.Is(err, errFenced); got != tt.fenced {
				t.Fatalf("renew: %v; fenced %v, want %v", err, got, tt.fenced)
			}
			if tt.beat == nil && !l.held.After(before) {
				t.Fatal("an acknowledged heartbeat did not extend the lease")
			}
		})
	}
	// Without a heartbeat timeout the lease never ends on missed beats.
	l := &lease{beat: func(context.Context, ...any) error { return transient }}
	if err := l.renew(context.Background()); err != nil {
		t.Fatal(err)
	}
}
