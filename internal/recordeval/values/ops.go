package values

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// JSONOrNull turns a JSON null (or nil) into SQL NULL.
func JSONOrNull(raw []byte) Value {
	if len(raw) == 0 || raw[0] == 'n' {
		return Value{}
	}
	return JSON(raw)
}

var (
	ErrOverflow = errors.New("integer overflow")
	errDivZero  = errors.New("division by zero")
)

// Arith applies op to two numbers.
func Arith(op byte, a, b Value) (Value, error) {
	if op == '/' {
		d := toFloat(b)
		if d == 0 {
			return Value{}, errDivZero
		}
		return Float(toFloat(a) / d), nil
	}
	switch {
	case a.Kind == KInt && b.Kind == KInt:
		x, y := a.Int, b.Int
		switch op {
		case '+':
			s := x + y
			if (x >= 0) == (y >= 0) && (s >= 0) != (x >= 0) {
				return Value{}, ErrOverflow
			}
			return Int(s), nil
		case '-':
			s := x - y
			if (x >= 0) != (y >= 0) && (s >= 0) != (x >= 0) {
				return Value{}, ErrOverflow
			}
			return Int(s), nil
		case '*':
			if x == 0 || y == 0 {
				return Int(0), nil
			}
			p := x * y
			if p/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
				return Value{}, ErrOverflow
			}
			return Int(p), nil
		case '%':
			if y == 0 {
				return Value{}, errDivZero
			}
			return Int(x % y), nil
		}
	case a.Kind == KFloat || b.Kind == KFloat:
		x, y := toFloat(a), toFloat(b)
		switch op {
		case '+':
			return Float(x + y), nil
		case '-':
			return Float(x - y), nil
		case '*':
			return Float(x * y), nil
		case '%':
			if y == 0 {
				return Value{}, errDivZero
			}
			return Float(math.Mod(x, y)), nil
		}
	default:
		x, y := ToDecimal(a), ToDecimal(b)
		var d decimal.Decimal
		// The result's scale, as Spark and ClickHouse type it: the larger
		// of the two for + - %, their sum for *. Its text keeps it (4.50,
		// not 4.5).
		scale := max(decimalScale(a), decimalScale(b))
		switch op {
		case '+':
			d = x.Add(y)
		case '-':
			d = x.Sub(y)
		case '*':
			d = x.Mul(y)
			scale = decimalScale(a) + decimalScale(b)
		case '%':
			if y.IsZero() {
				return Value{}, errDivZero
			}
			d = x.Mod(y)
		}
		return Decimal(UnsafeBytes(d.StringFixed(int32(scale)))), nil
	}
	return Value{}, fmt.Errorf("internal error: operator %c", op)
}

// CmpHolds reports whether a comparison result c (as from Compare) satisfies
// the operator op (=, <>, <, <=, >, >=).
func CmpHolds(op string, c int) bool {
	switch op {
	case "=":
		return c == 0
	case "<>":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0 // >=
}

const (
	likeLit = iota
	likeOne // _
	likeAny // %
)

// LikeTok is one piece of a compiled LIKE pattern.
type LikeTok struct {
	kind uint8
	lit  []byte
}

// CompileLike compiles a LIKE pattern: % matches any run, _ one character,
// and a backslash makes the next character literal.
func CompileLike(p []byte) []LikeTok {
	var toks []LikeTok
	var lit []byte
	flush := func() {
		if lit != nil {
			toks = append(toks, LikeTok{kind: likeLit, lit: lit})
			lit = nil
		}
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			i++
			lit = append(lit, p[i])
		case c == '%':
			flush()
			if len(toks) == 0 || toks[len(toks)-1].kind != likeAny {
				toks = append(toks, LikeTok{kind: likeAny})
			}
		case c == '_':
			flush()
			toks = append(toks, LikeTok{kind: likeOne})
		default:
			lit = append(lit, c)
		}
	}
	flush()
	return toks
}

// LikeMatch matches s against the pattern, backtracking only to the last
// %, so it runs in O(len(s)·len(pattern)) at worst.
func LikeMatch(toks []LikeTok, s []byte) bool {
	ti, si := 0, 0
	starT, starS := -1, 0
	for {
		if ti < len(toks) {
			switch t := toks[ti]; t.kind {
			case likeAny:
				if ti+1 == len(toks) {
					return true
				}
				ti++
				starT, starS = ti, si
				continue
			case likeOne:
				if si < len(s) {
					_, n := utf8.DecodeRune(s[si:])
					si += n
					ti++
					continue
				}
			case likeLit:
				if bytes.HasPrefix(s[si:], t.lit) {
					si += len(t.lit)
					ti++
					continue
				}
			}
		} else if si == len(s) {
			return true
		}
		if starT < 0 || starS >= len(s) {
			return false
		}
		_, n := utf8.DecodeRune(s[starS:])
		starS += n
		ti, si = starT, starS
	}
}

// AddMonths adds months, keeping the day of the month but not past the
// month's last day (Spark's add_months): Jan 31 + 1 month = Feb 29 in 2024.
func AddMonths(t time.Time, months int) time.Time {
	y, m, d := t.Date()
	total := y*12 + int(m) - 1 + months
	ny, nm := total/12, total%12+1
	if total < 0 && total%12 != 0 {
		ny, nm = total/12-1, total%12+13
	}
	d = min(d, daysIn(nm, ny))
	h, mi, sec := t.Clock()
	return time.Date(ny, time.Month(nm), d, h, mi, sec, t.Nanosecond(), time.UTC)
}

// decimalScale is the scale of an exact number: 0 for an integer, the
// digits after the point of a DECIMAL's text (casts write all of them).
func decimalScale(v Value) int {
	if v.Kind != KDecimal {
		return 0
	}
	if i := bytes.IndexByte(v.Bytes, '.'); i >= 0 {
		n := 0
		for _, c := range v.Bytes[i+1:] {
			if c < '0' || c > '9' {
				break
			}
			n++
		}
		return n
	}
	return 0
}
