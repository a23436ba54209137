package query

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/rowio"
)

// collector gathers the rows of a query. Without a sink it holds them,
// failing once they take more than limit bytes as the process holds them
// (rowio.Limits.MaxResultBytes). With one, rows are held only until they
// are released (a stream read's result counts once its check held; past
// limit the query waits for it), and then written to the sink as they
// arrive: nothing more is held, whatever the result's size.
type collector struct {
	limit   int64
	sink    core.RowSink
	release chan struct{} // closed by Release
	// Set by the query's goroutine, read by others once it returned.
	cols, types []string
	held        [][]any
	heldBytes   int64
	rows        int64
	started     bool // the sink has the columns: output was written
}

func newCollector(limit int64, sink core.RowSink) *collector {
	return &collector{limit: limit, sink: sink, release: make(chan struct{})}
}

// Release lets the rows go to the sink; called once.
func (c *collector) Release() { close(c.release) }

func (c *collector) released() bool {
	select {
	case <-c.release:
		return true
	default:
		return false
	}
}

// flush writes what is held to the sink, the columns first.
func (c *collector) flush() error {
	if !c.started {
		c.started = true
		if err := c.sink.Columns(c.cols, c.types); err != nil {
			return err
		}
	}
	for _, r := range c.held {
		if err := c.sink.Row(r); err != nil {
			return err
		}
	}
	c.held, c.heldBytes = nil, 0
	return nil
}

// result is what the query returned, once it has: the rows held, or,
// with a sink, the rest of them written out.
func (c *collector) result() (*core.Result, error) {
	if c.sink == nil {
		return &core.Result{Columns: c.cols, Types: c.types, Rows: c.held}, nil
	}
	if err := c.flush(); err != nil {
		return nil, err
	}
	return &core.Result{Columns: c.cols, Types: c.types, Streamed: true}, nil
}

// collect runs a query into c. Past the bound on what c may hold the
// query is cancelled, and the error says what to do instead.
func collect(ctx context.Context, st *chstore.Store, text string, c *collector) error {
	// Cancelled at the limit: the driver would read the rest of the
	// result before returning otherwise.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return st.Each(ctx, text, func(cols, types []string) error {
		c.cols, c.types = cols, types
		return nil
	}, func(row []any) error {
		c.rows++
		size := rowBytes(row)
		if c.sink != nil && !c.released() && c.heldBytes+size > c.limit {
			// Held to the bound: the query waits (ClickHouse with it)
			// until the rows may go, or are not wanted.
			select {
			case <-c.release:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		if c.sink != nil && c.released() {
			if !c.started || len(c.held) > 0 {
				if err := c.flush(); err != nil {
					cancel()
					return err
				}
			}
			if err := c.sink.Row(row); err != nil {
				cancel()
				return err
			}
			return nil
		}
		c.heldBytes += size
		if c.heldBytes > c.limit {
			cancel()
			return fmt.Errorf("%w; add a LIMIT or aggregate, write the rows out with INSERT INTO … SELECT or COPY INTO VOLUME, or print them with lakepipe sql --format csv, tsv or json, which hold no rows",
				&rowio.LimitError{Limit: "MaxResultBytes", Value: c.limit, What: fmt.Sprintf("the query's result (%d rows so far) takes more memory in this process than allowed", c.rows)})
		}
		c.held = append(c.held, append([]any(nil), row...))
		return nil
	})
}

// rowBytes estimates what a row takes once kept: its slice, and per cell
// an interface and what it points to.
func rowBytes(row []any) int64 {
	n := int64(24)
	for _, v := range row {
		n += 16 + valueBytes(v)
	}
	return n
}

func valueBytes(v any) int64 {
	switch x := v.(type) {
	case nil:
		return 0
	case string:
		return 16 + int64(len(x))
	case []byte:
		return 24 + int64(len(x))
	case time.Time:
		return 24
	case *string:
		if x != nil {
			return 24 + int64(len(*x))
		}
		return 8
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Pointer:
		if r.IsNil() {
			return 8
		}
		return 8 + valueBytes(r.Elem().Interface())
	case reflect.Slice, reflect.Array:
		n := int64(24)
		for i := 0; i < r.Len(); i++ {
			n += 16 + valueBytes(r.Index(i).Interface())
		}
		return n
	case reflect.Map:
		n := int64(48)
		it := r.MapRange()
		for it.Next() {
			n += 32 + valueBytes(it.Key().Interface()) + valueBytes(it.Value().Interface())
		}
		return n
	}
	return int64(r.Type().Size())
}
