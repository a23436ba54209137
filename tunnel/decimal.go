package tunnel

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/shopspring/decimal"
)

const maxDecimalDigits = 38

var ten = decimal128.FromU64(10)

// parseDecimal reads decimal text ("-12.340", "+7", ".5", "1e-3") into its
// digits n and scale: the value is n·10^-scale, with trailing zeros of the
// fraction dropped. It does not allocate unless the text has an exponent.
func parseDecimal(s string) (n decimal128.Num, scale int32, err error) {
	i, neg := 0, false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	digits, ndigits, zeros := false, 0, 0
	frac := false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits = true
			if frac && c == '0' {
				zeros++ // kept only if a non-zero digit follows
				continue
			}
			k := zeros + 1
			if frac {
				scale += int32(k)
			}
			zeros = 0
			if ndigits == 0 && c == '0' {
				continue // leading zero of the integer part
			}
			if ndigits == 0 {
				k = 1 // leading zeros of the fraction (0.005) add no digits
			}
			if ndigits+k > maxDecimalDigits {
				return decimal128.Num{}, 0, fmt.Errorf("more than %d digits", maxDecimalDigits)
			}
			if ndigits > 0 {
				n = n.Mul(decimal128.GetScaleMultiplier(k))
			}
			n = n.Add(decimal128.FromU64(uint64(c - '0')))
			ndigits += k
		case c == '.' && !frac:
			frac = true
		case c == 'e' || c == 'E':
			d, err := decimal.NewFromString(s)
			if err != nil {
				return decimal128.Num{}, 0, errors.New("not a decimal number")
			}
			return fromDecimal(d)
		default:
			return decimal128.Num{}, 0, errors.New("not a decimal number")
		}
	}
	if !digits {
		return decimal128.Num{}, 0, errors.New("not a decimal number")
	}
	if neg {
		n = n.Negate()
	}
	return n, scale, nil
}

// fromDecimal is parseDecimal of a shopspring decimal.
func fromDecimal(d decimal.Decimal) (decimal128.Num, int32, error) {
	if e := d.Exponent(); e > maxDecimalDigits || e < -2*maxDecimalDigits {
		if d.IsZero() {
			return decimal128.Num{}, 0, nil
		}
		return decimal128.Num{}, 0, fmt.Errorf("exponent %d is out of range", e)
	}
	return parseDecimal(d.String()) // plain digits, no exponent
}

// rescale turns n·10^-from into the digits of a Decimal(prec, to) value.
// It never rounds: more decimal places than to, or more digits than prec,
// is an error.
func rescale(n decimal128.Num, from, prec, to int32) (decimal128.Num, error) {
	if from > to {
		return decimal128.Num{}, fmt.Errorf("has %d decimal places, the column keeps %d", from, to)
	}
	room := prec - (to - from) // digits n may have
	if n.Sign() == 0 {
		return n, nil
	}
	if room <= 0 || !n.FitsInPrecision(room) {
		return decimal128.Num{}, fmt.Errorf("does not fit in Decimal(%d, %d)", prec, to)
	}
	if to > from {
		n = n.Mul(decimal128.GetScaleMultiplier(int(to - from)))
	}
	return n, nil
}

// decimal returns the Decimal128 digits a value holds.
func (v *value) decimal() decimal128.Num { return decimal128.New(v.hi, v.n) }
