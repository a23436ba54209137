package errtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"", `""`},
		{"abc", `"abc"`},
		{strings.Repeat("x", MaxValue), `"` + strings.Repeat("x", MaxValue) + `"`},
		{strings.Repeat("x", MaxValue+1), `"` + strings.Repeat("x", MaxValue) + `"… (201 bytes)`},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%d bytes) = %s, want %s", len(tt.in), got, tt.want)
		}
	}
	// A huge value stays short.
	if got := Quote(strings.Repeat("é", 1<<20)); len(got) > MaxValue+40 {
		t.Errorf("Quote of 2 MiB is %d bytes", len(got))
	}
}

func FuzzErrtextCap(f *testing.F) {
	f.Add("héllo wörld", 3)
	f.Add(strings.Repeat("数", 100), 10)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n > 1<<16 || n < -1 {
			return
		}
		got := Cap(s, n)
		limit := n
		if limit <= 0 {
			limit = MaxMessage
		}
		if len(s) <= limit && got != s {
			t.Fatalf("Cap changed a short message")
		}
		if len(s) > limit {
			if !strings.HasPrefix(got, cut(s, limit)) || len(cut(s, limit)) > limit {
				t.Fatalf("Cap(%q, %d) = %q", s, n, got)
			}
			if utf8.ValidString(s) && !utf8.ValidString(got) {
				t.Fatalf("Cap split a rune: %q", got)
			}
		}
		q := Quote(s)
		if len(q) > 6*MaxValue+40 {
			t.Fatalf("Quote is %d bytes", len(q))
		}
	})
}
