package sqlparse

import (
	"strings"
	"testing"
	"time"
)

func TestScratchPerf(t *testing.T) {
	n := 150
	inputs := map[string]string{
		"parens":     "SELECT " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"parensBad":  "SELECT " + strings.Repeat("(", n) + "1",
		"subq":       "SELECT " + strings.Repeat("((SELECT ", n/3) + "1" + strings.Repeat(") + 1)", n/3),
		"subqBad":    "SELECT " + strings.Repeat("((SELECT ", n/3) + "1",
		"from":       "SELECT * FROM " + strings.Repeat("(", n) + "a" + strings.Repeat(")", n),
		"fromBad":    "SELECT * FROM " + strings.Repeat("(", n) + "a",
		"fromSub":    "SELECT * FROM " + strings.Repeat("((SELECT * FROM ", n/4) + "a",
		"in":         "SELECT 1 WHERE a IN " + strings.Repeat("((SELECT 1 WHERE a IN ", n/4) + "1",
		"not":        "SELECT " + strings.Repeat("NOT ", 5000) + "1",
		"minus":      "SELECT " + strings.Repeat("-", 5000) + "1",
		"mixed":      "SELECT " + strings.Repeat("((SELECT (", n/4) + "1",
		"long":       "SELECT " + strings.Repeat("1+", 100000) + "1",
		"exists":     "SELECT " + strings.Repeat("EXISTS((SELECT ", n/4),
		"case":       "SELECT " + strings.Repeat("CASE WHEN (", n/3),
		"types":      "SELECT a::" + strings.Repeat("ARRAY<", 300),
	}
	for name, in := range inputs {
		start := time.Now()
		_, err := Parse(in)
		d := time.Since(start)
		msg := ""
		if err != nil {
			msg = err.Error()
			if len(msg) > 100 {
				msg = msg[:100]
			}
		}
		t.Logf("%-10s %8v %s", name, d, msg)
	}
}
