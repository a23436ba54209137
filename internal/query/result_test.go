package query

import (
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
