package loading

import (
	"testing"
)

func TestTempFile(t *testing.T) {
	for path, want := range map[string]bool{
		"data/part-00000.csv":    false,
		"2026/12/04/events.json": false,
		"my_data.csv":            false,
		"out/_temporary/0/_temporary/attempt_1/part-0.csv": true,
		"out/_SUCCESS":                  true,
		"out/_committed_123":            true,
		"out/.part-00000.csv.crc":       true,
		"out/.part-0-0.inprogress.8f3a": true,
		".hidden.csv":                   true,
		"upload/file.csv.tmp":           true,
		"upload/file.csv.TEMP":          true,
		"sink/part-0-1.inprogress":      true,
		"copy/data.csv._COPYING_":       true,
		"a/./b.csv":                     false, // odd keys are the listing's business, not temporary
	} {
		if got := TempFile(path); got != want {
			t.Errorf("TempFile(%q) = %v, want %v", path, got, want)
		}
	}
}
