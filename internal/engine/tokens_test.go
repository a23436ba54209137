package engine

import "testing"

func TestTokenScope(t *testing.T) {
	for _, tc := range []struct {
		in      string
		ok      bool
		allowed [][2]string
		denied  [][2]string
	}{
		{in: "all", ok: true, allowed: [][2]string{{"a", "b"}, {"x", "y"}}},
		{in: "schema:sales", ok: true, allowed: [][2]string{{"sales", "orders"}}, denied: [][2]string{{"sales2", "orders"}, {"public", "sales"}}},
		{in: "table:sales.orders", ok: true, allowed: [][2]string{{"sales", "orders"}}, denied: [][2]string{{"sales", "orders2"}, {"public", "orders"}}},
		{in: "schema:", ok: false},
		{in: "schema:a.b", ok: false},
		{in: "table:orders", ok: false},
		{in: "table:a.b.c", ok: false},
		{in: "everything", ok: false},
	} {
		s, err := ParseTokenScope(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseTokenScope(%q): %v", tc.in, err)
			continue
		}
		if !tc.ok {
			continue
		}
		if s.String() != tc.in {
			t.Errorf("%q round-trips as %q", tc.in, s.String())
		}
		for _, a := range tc.allowed {
			if !s.Allows(a[0], a[1]) {
				t.Errorf("%s does not allow %s.%s", tc.in, a[0], a[1])
			}
		}
		for _, d := range tc.denied {
			if s.Allows(d[0], d[1]) {
				t.Errorf("%s allows %s.%s", tc.in, d[0], d[1])
			}
		}
	}
	// Malformed tokens are not looked up.
	for _, tok := range []string{"", "lpw.", "lpw.name", "lpw..x", "lpw.bad name.x", "Bearer x", "lpw.n.a"[:5]} {
		if _, ok, err := (&Engine{}).CheckWriteToken(nil, tok); ok || err != ErrNotWriteToken {
			t.Errorf("CheckWriteToken(%q) = %v, %v", tok, ok, err)
		}
	}
}
