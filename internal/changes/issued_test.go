package changes

import "testing"

func TestNames(t *testing.T) {
	for _, c := range []struct {
		command, text string
		want          bool
	}{
		{"DELETE WHERE ifNull(x = 2, 0) AND (_lp_commit != 12345)", "_lp_commit != 12345", true},
		{"DELETE WHERE ifNull(x = 2, 0) AND (_lp_commit != 123456)", "_lp_commit != 12345", false},
		{"DELETE WHERE (_lp_commit != 123456) OR (_lp_commit != 12345)", "_lp_commit != 12345", true},
		{"DELETE WHERE _lp_commit != 12345", "_lp_commit != 12345", true},
		{"DELETE WHERE _lp_commit IN (12345, 3)", "_lp_commit != 12345", false},
	} {
		if got := names(c.command, c.text); got != c.want {
			t.Errorf("names(%q, %q) = %v, want %v", c.command, c.text, got, c.want)
		}
	}
}
