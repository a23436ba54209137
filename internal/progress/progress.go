// Package progress counts the work an activity's attempt has done (bytes
// of files read, Kafka records fetched) through its context, so that the
// activity can show it in its heartbeats and notice an attempt that
// stopped making any. It imports nothing of lakepipe's.
package progress

import (
	"context"
	"sync/atomic"
)

// Counter is a running count of units of work.
type Counter struct{ n atomic.Int64 }

// Add counts n more units.
func (c *Counter) Add(n int64) { c.n.Add(n) }

// Load returns the count.
func (c *Counter) Load() int64 { return c.n.Load() }

type key struct{}

// With returns ctx whose Add calls count into c.
func With(ctx context.Context, c *Counter) context.Context {
	return context.WithValue(ctx, key{}, c)
}

// Add counts n units of work for ctx's counter, if it has one.
func Add(ctx context.Context, n int64) {
	if c := Of(ctx); c != nil {
		c.Add(n)
	}
}

// Of returns ctx's counter, or nil.
func Of(ctx context.Context) *Counter {
	c, _ := ctx.Value(key{}).(*Counter)
	return c
}
