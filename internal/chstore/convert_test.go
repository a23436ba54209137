package chstore

import (
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/formats"
)

func TestParseInt(t *testing.T) {
	good := map[string]int64{"0": 0, "42": 42, "-7": -7, "+3": 3, " 12 ": 12, "5.00": 5, "9223372036854775807": 9223372036854775807, "-9223372036854775808": -9223372036854775808}
	for in, want := range good {
		if got, err := parseInt(in); err != nil || got != want {
			t.Errorf("parseInt(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-", "1.5", "abc", "9223372036854775808", "12345678901234567890"} {
		if _, err := parseInt(in); err == nil {
			t.Errorf("parseInt(%q) accepted", in)
		}
	}
}

func TestParseDecimal(t *testing.T) {
	for in, want := range map[string]string{"8999.00": "8999", "-1.5": "-1.5", "0.01": "0.01", "1e3": "1000", "12345678901234567890.5": "12345678901234567890.5"} {
		d, err := parseDecimal(in, 2)
		if err != nil || d.String() != want {
			t.Errorf("parseDecimal(%q) = %s, %v; want %s", in, d, err, want)
		}
	}
	for _, in := range []string{"", "x", "1.2.3", "--1"} {
		if _, err := parseDecimal(in, 2); err == nil {
			t.Errorf("parseDecimal(%q) accepted", in)
		}
	}
}

func TestParseTime(t *testing.T) {
	want := time.Date(2026, 6, 1, 12, 30, 0, 0, time.UTC)
	for _, in := range []string{"2026-06-01 12:30:00", "2026-06-01T12:30:00Z", "2026-06-01T14:30:00+02:00", "2026-06-01T12:30:00"} {
		if got, err := ParseTime(in); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseTime("June 1st"); err == nil {
		t.Error("ParseTime accepted prose")
	}
}

// TestColumnRejectsRows checks that a bad value rejects its row in every
// column, so that the columns stay aligned.
func TestColumnRejectsRows(t *testing.T) {
	ids, _ := newColumn("Nullable(Int64)")
	names, _ := newColumn("String")
	src := []formats.Vector{
		{Text: [][]byte{[]byte("1"), []byte("x"), []byte(""), []byte("4")}},
		{Text: [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")}},
	}
	keep := []bool{true, true, true, true}
	bad := func(r int, _ string) { keep[r] = false }
	ids.add(&src[0], 4, bad)
	names.add(&src[1], 4, bad)
	ids.keep(keep)
	names.keep(keep)
	got := ids.values().([]*int64)
	if len(got) != 3 || *got[0] != 1 || got[1] != nil || *got[2] != 4 {
		t.Fatalf("ids = %v", got)
	}
	if n := names.values().([]string); len(n) != 3 || n[1] != "c" {
		t.Fatalf("names = %v", n)
	}
}
