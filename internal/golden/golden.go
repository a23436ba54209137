// Package golden compares what a test produced with a golden file under
// testdata, naming the cases that differ, and rewrites the file instead
// when the test runs with -update (go test ./pkg -run Golden -update),
// for the change to be reviewed in the diff. It is for tests only.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata from the current output")

// File is one golden file and the cases it holds.
type File struct {
	Path string // under testdata
	Text string // the whole file as the test renders it now
	// Got is each case's rendered output by name, and Parse reads a
	// file's text back into the same form, so that a difference names
	// the cases that differ (a header or order change differs without any
	// case differing, and fails for the file as a whole).
	Got   map[string]string
	Parse func(text string) map[string]string
	// Update is the command that rewrites the file, for the messages.
	Update string
}

// Check compares f with its file, or rewrites the file with -update.
func Check(t testing.TB, f File) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.Path, []byte(f.Text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(f.Path)
	if err != nil {
		t.Fatalf("%v (run %s to create it)", err, f.Update)
	}
	if string(want) == f.Text {
		return
	}
	wantCases := f.Parse(string(want))
	for name, got := range f.Got {
		w, ok := wantCases[name]
		switch {
		case !ok:
			t.Errorf("%s: not in %s", name, f.Path)
		case w != got:
			t.Errorf("%s:\n got:\n%s\nwant:\n%s", name, got, w)
		}
	}
	for name := range wantCases {
		if _, ok := f.Got[name]; !ok {
			t.Errorf("%s: in %s but no longer a case", name, f.Path)
		}
	}
	t.Errorf("%s differs from the current output; if the change is intended, run %s and review the diff", f.Path, f.Update)
}
