package tunnel

import (
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func testLayout(t testing.TB, cols []Column) *layout {
	t.Helper()
	l, err := newLayout(SessionInfo{ID: "s", Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestRecordErrors(t *testing.T) {
	l := testLayout(t, allColumns)
	cases := []struct {
		name string
		set  func(r *Record) error
		want string // in the error
	}{
		{"unknown column", func(r *Record) error { return r.SetString("nope", "x") }, `no column "nope"`},
		{"string into bigint", func(r *Record) error { return r.SetString("id", "1") }, `"id" (Int64) does not take a string`},
		{"float into bigint", func(r *Record) error { return r.Set("id", 1.5) }, "does not take a float"},
		{"int into string", func(r *Record) error { return r.SetBigint("name", 1) }, "does not take an integer"},
		{"out of range", func(r *Record) error { return r.SetBigint("small", 128) }, "128 is out of range"},
		{"negative unsigned", func(r *Record) error { return r.SetBigint("u", -1) }, "-1 is out of range"},
		{"unsigned too big", func(r *Record) error { return r.Set("u", uint64(1)<<40) }, "out of range"},
		{"null into not nullable", func(r *Record) error { return r.SetNull("id") }, "is not Nullable"},
		{"nil into not nullable", func(r *Record) error { return r.Set("score", nil) }, "is not Nullable"},
		{"decimal scale", func(r *Record) error { return r.SetDecimal("amount", "1.234") }, "has 3 decimal places, the column keeps 2"},
		{"decimal precision", func(r *Record) error { return r.SetDecimal("amount", decimal.RequireFromString("123456789")) }, "does not fit in Decimal(10, 2)"},
		{"decimal text", func(r *Record) error { return r.Set("amount", "12,5") }, "not a decimal number"},
		{"unsupported column", func(r *Record) error { return r.Set("tags", "[]") }, "cannot be written by this client"},
		{"unsupported type", func(r *Record) error { return r.Set("name", struct{}{}) }, "values of type struct {}"},
		{"time into string", func(r *Record) error { return r.SetTimestamp("name", time.Now()) }, "does not take a time"},
		{"float decimal", func(r *Record) error { return r.SetDecimal("amount", 1.5) }, "does not take values of type float64"},
		{"bool into float", func(r *Record) error { return r.Set("score", true) }, "does not take a bool"},
		{"index", func(r *Record) error { return r.SetAt(99, 1) }, "index 99 out of range"},
		{"ns range", func(r *Record) error { return r.SetTimestamp("ns", time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)) }, "range of nanosecond"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRecord(l)
			err := c.set(r)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if err := r.SetBigint("id", 1); err != nil {
				t.Fatal(err)
			}
			if r.Err() == nil || r.Err().Error() != err.Error() {
				t.Fatalf("Err() = %v, want the first error %v", r.Err(), err)
			}
			r.Reset()
			if r.Err() != nil {
				t.Errorf("Reset kept %v", r.Err())
			}
		})
	}
}

func TestRecordRefusedByAppend(t *testing.T) {
	f := newFakeServer(t, testColumns)
	s, p := openPack(t, f)
	r := s.NewRecord()
	r.SetBigint("id", 1)
	r.SetString("score", "x")
	if err := p.Append(r); err == nil || p.RecordCount() != 0 {
		t.Errorf("append of a bad record: %v, %d rows", err, p.RecordCount())
	}
	if err := p.AppendRow(int64(1), "x"); err == nil || !strings.Contains(err.Error(), "2 values for 3 columns") {
		t.Errorf("short row: %v", err)
	}
	if err := p.AppendRow(int64(1), "x", "y"); err == nil || p.RecordCount() != 0 {
		t.Errorf("bad row: %v, %d rows", err, p.RecordCount())
	}
	// A record of another session.
	other := newRecord(testLayout(t, testColumns))
	if err := p.Append(other); err == nil {
		t.Error("record of another session accepted")
	}
	// BOOLEAN is stored as UInt8: a bool is 1 or 0 in an integer column.
	l := testLayout(t, []Column{{Name: "active", Type: "BOOLEAN", CHType: "Nullable(UInt8)"}})
	b := newRecord(l)
	if err := b.SetBoolean("active", true); err != nil || b.vals[0].n != 1 {
		t.Errorf("SetBoolean on UInt8: %v, %d", err, b.vals[0].n)
	}
	// Names match ignoring case when unambiguous, as on the server.
	r.Reset()
	r.SetBigint("ID", 1)
	if r.Err() != nil {
		t.Error(r.Err())
	}
}

func TestParseDecimal(t *testing.T) {
	cases := []struct {
		in     string
		digits string
		scale  int32
		err    bool
	}{
		{"0", "0", 0, false},
		{"-0.0", "0", 0, false},
		{"12.340", "1234", 2, false},
		{"+7", "7", 0, false},
		{".5", "5", 1, false},
		{"1.", "1", 0, false},
		{"0.005", "5", 3, false},
		{"1.005", "1005", 3, false},
		{"100", "100", 0, false},
		{"-100.10", "-1001", 1, false},
		{"1e3", "1000", 0, false},
		{"1.5E-2", "15", 3, false},
		{"12345678901234567890123456789012345678", "12345678901234567890123456789012345678", 0, false},
		{"123456789012345678901234567890123456789", "", 0, true},
		{"0.00000000000000000000000000000000000000000001", "1", 44, false},
		{"", "", 0, true},
		{"-", "", 0, true},
		{".", "", 0, true},
		{"1.2.3", "", 0, true},
		{"1,5", "", 0, true},
		{" 1", "", 0, true},
	}
	for _, c := range cases {
		n, scale, err := parseDecimal(c.in)
		if c.err {
			if err == nil {
				t.Errorf("parseDecimal(%q) = %s, %d; want an error", c.in, n.BigInt(), scale)
			}
			continue
		}
		if err != nil || n.BigInt().String() != c.digits || scale != c.scale {
			t.Errorf("parseDecimal(%q) = %s, %d, %v; want %s, %d", c.in, n.BigInt(), scale, err, c.digits, c.scale)
		}
	}
}

func TestDecimalValues(t *testing.T) {
	l := testLayout(t, []Column{{Name: "d", CHType: "Decimal(38, 10)"}, {Name: "s", CHType: "Decimal(5, 0)"}})
	cases := []struct {
		col string
		v   any
		out string // n as a big integer at the column's scale
		err bool
	}{
		{"d", "1.5", "15000000000", false},
		{"d", decimal.New(-15, -1), "-15000000000", false},
		{"d", int64(-3), "-30000000000", false},
		{"d", "9999999999999999999999999999.9999999999", "99999999999999999999999999999999999999", false},
		{"d", "99999999999999999999999999999", "", true},
		{"s", "99999", "99999", false},
		{"s", "100000", "", true},
		{"s", "1.0", "1", false},
		{"s", "1.1", "", true},
		{"s", decimal.RequireFromString("-12e2"), "-1200", false},
	}
	for _, c := range cases {
		r := newRecord(l)
		r.Set(c.col, c.v)
		if c.err {
			if r.Err() == nil {
				t.Errorf("%s ← %v: no error", c.col, c.v)
			}
			continue
		}
		if r.Err() != nil {
			t.Errorf("%s ← %v: %v", c.col, c.v, r.Err())
			continue
		}
		v := r.vals[l.index[c.col]]
		if got := v.decimal().BigInt().String(); got != c.out {
			t.Errorf("%s ← %v = %s, want %s", c.col, c.v, got, c.out)
		}
	}
}

// TestAppendRowAllocations: appending a row of Go values allocates
// nothing per value (beyond the Arrow builders' growth, amortised away).
func TestAppendRowAllocations(t *testing.T) {
	f := newFakeServer(t, testColumns)
	s, p := openPack(t, f, RecordPackOptions{FlushThreshold: -1})
	names := []string{"alice_with_a_long_name_that_is_not_small", "bob", "carol"}
	i := int64(1 << 40)
	allocs := testing.AllocsPerRun(100000, func() {
		i++
		if err := p.AppendRow(i, names[i%3], float64(i)*1.5); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendRow: %v allocations per row", allocs)
	}
	r := s.NewRecord()
	allocs = testing.AllocsPerRun(100000, func() {
		i++
		r.SetBigint("id", i)
		r.SetString("name", names[i%3])
		r.SetDouble("score", float64(i))
		if err := p.Append(r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Append: %v allocations per row", allocs)
	}
	p.Discard()
}
