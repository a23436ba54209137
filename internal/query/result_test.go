package query

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRowBytes: the estimate counts what a kept row holds: never less
// than its values' bytes, and nested values by their elements.
func TestRowBytes(t *testing.T) {
	long := strings.Repeat("x", 1000)
	for _, c := range []struct {
		name string
		row  []any
		min  int64
		max  int64
	}{
		{"empty", []any{}, 24, 24},
		{"numbers", []any{int64(1), uint8(2), 3.5}, 24 + 3*16, 24 + 3*24},
		{"a long string", []any{long}, 1000, 1100},
		{"bytes", []any{[]byte(long)}, 1000, 1100},
		{"a time and a NULL", []any{time.Now(), nil}, 24 + 32 + 24, 24 + 32 + 24},
		{"an array of strings", []any{[]string{long, long}}, 2000, 2200},
		{"a map", []any{map[string]string{"k": long}}, 1000, 1200},
		{"a pointer to a string", []any{&long}, 1000, 1100},
	} {
		if got := rowBytes(c.row); got < c.min || got > c.max {
			t.Errorf("%s: rowBytes = %d, want %d–%d", c.name, got, c.min, c.max)
		}
	}
}

type recordSink struct{ out []string }

func (s *recordSink) Columns(names, _ []string) error {
	s.out = append(s.out, fmt.Sprint(names))
	return nil
}

func (s *recordSink) Row(row []any) error {
	s.out = append(s.out, fmt.Sprint(row))
	return nil
}

// TestCollectorHoldsUntilReleased: rows held before their check (a
// stream read's) reach the sink after the columns, in order, once
// released; a held result without a sink stays whole in the Result.
func TestCollectorHoldsUntilReleased(t *testing.T) {
	sink := &recordSink{}
	c := newCollector(1<<20, sink)
	c.cols, c.types = []string{"a"}, []string{"Int64"}
	c.held = [][]any{{1}, {2}}
	if len(sink.out) != 0 {
		t.Fatal("rows written before the release")
	}
	res, err := c.result()
	if err != nil || !res.Streamed || len(res.Rows) != 0 {
		t.Fatalf("result %+v, %v: want the rows streamed", res, err)
	}
	if got := fmt.Sprint(sink.out); got != "[[a] [1] [2]]" {
		t.Fatalf("the sink got %s", got)
	}
	held := newCollector(1<<20, nil)
	held.cols, held.held = []string{"a"}, [][]any{{1}}
	if res, _ := held.result(); res.Streamed || len(res.Rows) != 1 {
		t.Fatalf("no sink: %+v, want the rows held", res)
	}
}
