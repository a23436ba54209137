package objstore

import (
	"errors"
	"strings"
	"testing"
)

// FuzzKey checks the two ways a path becomes a key: a typed path (Key)
// never leaves the volume's prefix, whatever it holds, and a listed path
// (ListedKey) comes back exactly as it was listed.
func FuzzKey(f *testing.F) {
	for _, seed := range [][2]string{
		{"data/", "a.csv"}, {"data/", "../a.csv"}, {"data/", "x/../../a.csv"}, {"data/", `a\b.csv`},
		{"data/", "a//b.csv"}, {"data/", "a/./b.csv"}, {"data/", "/a.csv"}, {"data/", "with space.csv"},
		{"data/", "ünïcødé-数据.csv"}, {"", ".."}, {"", "./.."}, {"a/b/", "..%2f"}, {"a/b/", "...."},
		{"data/", "a/\x00/b"}, {"data/", ""}, {"data/", "/"}, {"x/", "a/../b/.."},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, dir, rel string) {
		// Prefixes come from ParseLocation: cleaned, "" or ending in "/".
		loc, err := ParseLocation("s3://b/" + dir)
		if err != nil {
			return
		}
		v := &Volume{loc: loc}
		p := loc.Prefix

		key, err := v.Key(rel)
		if err != nil {
			if !errors.Is(err, ErrEscape) {
				t.Fatalf("Key(%q) err = %v, want ErrEscape", rel, err)
			}
		} else {
			if !strings.HasPrefix(key, p) {
				t.Fatalf("Key(%q) = %q: outside prefix %q", rel, key, p)
			}
			for _, seg := range strings.Split(key, "/") {
				if seg == ".." {
					t.Fatalf("Key(%q) = %q has a '..' segment", rel, key)
				}
			}
			if strings.ContainsAny(key, "\\\x00") {
				t.Fatalf("Key(%q) = %q has a backslash or NUL", rel, key)
			}
			// What Stat returns as the Path names the same key listed.
			if back := v.ListedKey(v.listedPath(key)); back != key {
				t.Fatalf("Key(%q) = %q, but its listed path maps to %q", rel, key, back)
			}
			if dir, err := v.Dir(rel); err != nil || !strings.HasPrefix(dir, p) || (dir != "" && !strings.HasSuffix(dir, "/")) {
				t.Fatalf("Dir(%q) = %q, %v under prefix %q", rel, dir, err, p)
			}
		}
		// A typed path is refused only for '..', a backslash or a NUL.
		bad := strings.ContainsAny(rel, "\\\x00")
		for _, seg := range strings.Split(rel, "/") {
			bad = bad || seg == ".."
		}
		if bad != (err != nil) {
			t.Fatalf("Key(%q) err = %v; refused should be %v", rel, err, bad)
		}

		// Listed keys round-trip exactly, whatever they hold.
		lk := v.ListedKey(rel)
		if lk != p+rel || v.listedPath(lk) != rel {
			t.Fatalf("listed %q: key %q, back %q", rel, lk, v.listedPath(lk))
		}
	})
}
