package progress

import (
	"context"
	"testing"
)

func TestCounter(t *testing.T) {
	ctx := context.Background()
	Add(ctx, 5) // no counter: nothing happens
	if Of(ctx) != nil {
		t.Fatal("a bare context has a counter")
	}
	var c Counter
	ctx = With(ctx, &c)
	Add(ctx, 3)
	Add(ctx, 4)
	if got := c.Load(); got != 7 {
		t.Fatalf("count %d, want 7", got)
	}
	if Of(ctx) != &c {
		t.Fatal("Of does not return the context's counter")
	}
}
