package chsql

import "testing"

func TestStringList(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"a"}, "'a'"},
		{[]string{"a", "it's", `b\c`}, `'a', 'it\'s', 'b\\c'`},
	} {
		if got := StringList(c.in); got != c.want {
			t.Errorf("StringList(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
