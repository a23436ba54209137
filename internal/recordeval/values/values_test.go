package values

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// text renders a value the way a cast to STRING does, "NULL" for NULL.
func text(cx *Ctx, v Value) string {
	b, null := cx.Text(v)
	if null {
		return "NULL"
	}
	return string(b)
}

func TestCast(t *testing.T) {
	cases := []struct {
		in      Value
		to      string // type name as TargetOf reads it
		p, s    int
		want    string
		wantErr bool
	}{
		{String([]byte(" 42 ")), "INT", 0, 0, "42", false},
		{String([]byte("2147483648")), "INT", 0, 0, "", true}, // out of INT's range
		{String([]byte("9223372036854775807")), "BIGINT", 0, 0, "9223372036854775807", false},
		{Float(3.99), "BIGINT", 0, 0, "3", false}, // toward zero
		{Float(math.Inf(1)), "BIGINT", 0, 0, "", true},
		{String([]byte("1.005")), "DECIMAL", 10, 2, "1.01", false}, // half away from zero, exactly
		{String([]byte("123456")), "DECIMAL", 4, 2, "", true},      // integer part too long
		{String([]byte("maybe")), "BOOLEAN", 0, 0, "", true},
		{String([]byte("yes")), "BOOLEAN", 0, 0, "true", false}, // as Spark reads it
		{String([]byte("true")), "BOOLEAN", 0, 0, "true", false},
		{String([]byte("2024-02-29T10:11:12Z")), "TIMESTAMP", 0, 0, "2024-02-29 10:11:12", false},
		{String([]byte("2024-02-29 10:11:12+02:00")), "TIMESTAMP", 0, 0, "2024-02-29 08:11:12", false},
		{Int(1700000000), "TIMESTAMP", 0, 0, "2023-11-14 22:13:20", false}, // Unix seconds
		{String([]byte("2024-02-30")), "DATE", 0, 0, "", true},
		{String([]byte("20240115")), "DATE", 0, 0, "", true},            // yyyyMMdd or Unix seconds: refused
		{String([]byte(" 20240115 ")), "DATE", 0, 0, "", true},          // blanks around it too
		{String([]byte("20241345")), "DATE", 0, 0, "1970-08-23", false}, // no such date: Unix seconds
		{String([]byte("1700000000")), "DATE", 0, 0, "2023-11-14", false},
		{Int(20240115), "DATE", 0, 0, "1970-08-23", false}, // a number is Unix time
		{String([]byte("20240115")), "TIMESTAMP", 0, 0, "1970-08-23 06:15:15", false},
		{String([]byte(`{"a": [1, 2]}`)), "JSON", 0, 0, `{"a":[1,2]}`, false},
		{String([]byte(`{"a": `)), "JSON", 0, 0, "", true},
		{Value{}, "INT", 0, 0, "NULL", false},
		{JSON([]byte("null")), "STRING", 0, 0, "NULL", false}, // JSON null is SQL NULL
	}
	for _, c := range cases {
		tn := sqlast.TypeName{Name: c.to}
		if c.to == "DECIMAL" {
			tn.Params = []int{c.p, c.s}
		}
		target, err := TargetOf(tn)
		if err != nil {
			t.Fatalf("TargetOf(%s): %v", c.to, err)
		}
		var cx Ctx
		got, err := cx.Cast(c.in, &target)
		if c.wantErr {
			if err == nil {
				t.Errorf("CAST(%s AS %s) = %s, want an error", Describe(c.in), c.to, text(&cx, got))
			}
			continue
		}
		if err != nil {
			t.Errorf("CAST(%s AS %s): %v", Describe(c.in), c.to, err)
			continue
		}
		if s := text(&cx, got); s != c.want {
			t.Errorf("CAST(%s AS %s) = %q, want %q", Describe(c.in), c.to, s, c.want)
		}
	}
}

func TestCompare(t *testing.T) {
	var cx Ctx
	cases := []struct {
		a, b Value
		want int
	}{
		{Int(2), Float(2.5), -1},
		{Decimal([]byte("10.00")), Int(10), 0},
		{String([]byte("10")), Int(9), 1}, // text meets a number: read as one
		{String([]byte("b")), String([]byte("a")), 1},
		{Date(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)), Timestamp(time.Date(2024, 1, 1, 23, 0, 0, 0, time.UTC)), 1},
		{JSON([]byte(`"x"`)), String([]byte("x")), 0}, // a JSON string acts as its text
		{Bool(true), Bool(false), 1},
	}
	for _, c := range cases {
		got, err := cx.Compare(c.a, c.b)
		if err != nil || sign(got) != c.want {
			t.Errorf("Compare(%s, %s) = %d, %v; want %d", Describe(c.a), Describe(c.b), got, err, c.want)
		}
	}
	if _, err := cx.Compare(String([]byte("x")), Int(1)); err == nil {
		t.Error("comparing text that is not a number with a number: no error")
	}
}

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

func TestArith(t *testing.T) {
	cases := []struct {
		op   byte
		a, b Value
		want string
		err  error
	}{
		{'+', Int(math.MaxInt64), Int(1), "", ErrOverflow},
		{'-', Int(math.MinInt64), Int(1), "", ErrOverflow},
		{'*', Int(1 << 32), Int(1 << 32), "", ErrOverflow},
		{'/', Int(1), Int(0), "", errDivZero},
		{'/', Int(7), Int(2), "3.5", nil}, // division is DOUBLE
		{'+', Decimal([]byte("0.1")), Decimal([]byte("0.2")), "0.3", nil},
		{'%', Int(-7), Int(3), "-1", nil},
	}
	var cx Ctx
	for _, c := range cases {
		got, err := Arith(c.op, c.a, c.b)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s %c %s: err %v, want %v", Describe(c.a), c.op, Describe(c.b), err, c.err)
			}
			continue
		}
		if err != nil || text(&cx, got) != c.want {
			t.Errorf("%s %c %s = %s, %v; want %s", Describe(c.a), c.op, Describe(c.b), text(&cx, got), err, c.want)
		}
	}
}

func TestLike(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"a%", "abc", true},
		{"a_c", "abc", true},
		{"a_c", "ac", false},
		{"%b%", "abc", true},
		{`100\%`, "100%", true},
		{`100\%`, "1000", false},
		{"%", "", true},
		{"_", "é", true}, // one character, two bytes
	}
	for _, c := range cases {
		if got := LikeMatch(CompileLike([]byte(c.pattern)), []byte(c.s)); got != c.want {
			t.Errorf("%q LIKE %q = %v, want %v", c.s, c.pattern, got, c.want)
		}
	}
}

func TestJavaLayout(t *testing.T) {
	at := time.Date(2024, 3, 5, 7, 8, 9, 0, time.UTC)
	cases := []struct{ java, want string }{
		{"yyyy-MM-dd HH:mm:ss", "2024-03-05 07:08:09"},
		{"yyyyMMdd", "20240305"},
		{"dd/MM/yy", "05/03/24"},
		{"yyyy-MM-dd'T'HH:mm", "2024-03-05T07:08"},
	}
	for _, c := range cases {
		l, err := JavaLayout(c.java)
		if err != nil {
			t.Errorf("JavaLayout(%q): %v", c.java, err)
			continue
		}
		if got := at.Format(l); got != c.want {
			t.Errorf("format %q = %q, want %q", c.java, got, c.want)
		}
	}
	if _, err := JavaLayout("yyyy 'Jan'"); err == nil {
		t.Error("a literal a Go layout would read as a field: no error")
	}
}

func TestAddMonths(t *testing.T) {
	d := func(y, m, day int) time.Time { return time.Date(y, time.Month(m), day, 0, 0, 0, 0, time.UTC) }
	cases := []struct {
		from   time.Time
		months int
		want   time.Time
	}{
		{d(2024, 1, 31), 1, d(2024, 2, 29)},
		{d(2023, 1, 31), 1, d(2023, 2, 28)},
		{d(2024, 3, 15), -3, d(2023, 12, 15)},
		{d(2024, 1, 15), -13, d(2022, 12, 15)},
	}
	for _, c := range cases {
		if got := AddMonths(c.from, c.months); !got.Equal(c.want) {
			t.Errorf("AddMonths(%s, %d) = %s, want %s", c.from.Format(time.DateOnly), c.months, got.Format(time.DateOnly), c.want.Format(time.DateOnly))
		}
	}
}

func TestFuncs(t *testing.T) {
	cases := []struct {
		name string
		args []Value
		want string
	}{
		{"upper", []Value{String([]byte("héllo"))}, "HÉLLO"},
		{"substr", []Value{String([]byte("héllo")), Int(2), Int(3)}, "éll"},
		{"split_part", []Value{String([]byte("a,b,c")), String([]byte(",")), Int(-1)}, "c"},
		{"concat_ws", []Value{String([]byte("-")), String([]byte("a")), {}, String([]byte("b"))}, "a-b"},
		{"round", []Value{Float(1.005), Int(2)}, "1.01"},
		{"floor", []Value{Float(-1.5)}, "-2"},
		{"nullif", []Value{Int(1), Int(1)}, "NULL"},
		{"month", []Value{String([]byte("2024-02-29"))}, "2"},
	}
	funcs := Funcs()
	for _, c := range cases {
		f, ok := funcs[c.name]
		if !ok {
			t.Fatalf("no function %s", c.name)
		}
		if len(c.args) < f.Min || f.Max >= 0 && len(c.args) > f.Max {
			t.Fatalf("%s: %d arguments outside %d..%d", c.name, len(c.args), f.Min, f.Max)
		}
		var cx Ctx
		got, err := f.Call(&cx, c.args)
		if err != nil || text(&cx, got) != c.want {
			t.Errorf("%s(…) = %s, %v; want %s", c.name, text(&cx, got), err, c.want)
		}
	}
}
