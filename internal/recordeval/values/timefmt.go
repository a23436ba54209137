package values

import (
	"fmt"
	"strings"
)

// JavaLayout converts a Java/Spark datetime pattern (yyyy-MM-dd
// HH:mm:ss.SSS) to a Go time layout. Supported letters: y, M (1-4), d, D
// (DDD), E, a, H, h, m, s, S (after '.' or ','), z, Z, X, x; text in single
// quotes is literal (” is a quote). Digits and the few words Go layouts
// treat as fields (Jan, Mon, MST, PM, …) cannot appear literally.
func JavaLayout(p string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(p); {
		c := p[i]
		if c == '\'' {
			j := i + 1
			if j < len(p) && p[j] == '\'' {
				b.WriteByte('\'')
				i += 2
				continue
			}
			var lit strings.Builder
			for ; j < len(p); j++ {
				if p[j] == '\'' {
					if j+1 < len(p) && p[j+1] == '\'' {
						lit.WriteByte('\'')
						j++
						continue
					}
					break
				}
				lit.WriteByte(p[j])
			}
			if j >= len(p) {
				return "", fmt.Errorf("date format %q: unterminated quote", p)
			}
			if err := literalOK(p, lit.String()); err != nil {
				return "", err
			}
			b.WriteString(lit.String())
			i = j + 1
			continue
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			if err := literalOK(p, string(c)); err != nil {
				return "", err
			}
			b.WriteByte(c)
			i++
			continue
		}
		n := 1
		for i+n < len(p) && p[i+n] == c {
			n++
		}
		i += n
		var l string
		switch c {
		case 'y', 'u':
			l = "2006"
			if n == 2 {
				l = "06"
			}
		case 'M', 'L':
			l = [...]string{"1", "01", "Jan", "January"}[min(n, 4)-1]
		case 'd':
			if n <= 2 {
				l = [...]string{"2", "02"}[n-1]
			}
		case 'D':
			if n == 3 {
				l = "002"
			}
		case 'E':
			l = "Mon"
			if n >= 4 {
				l = "Monday"
			}
		case 'a':
			l = "PM"
		case 'H', 'k':
			if n <= 2 {
				l = "15"
			}
		case 'h', 'K':
			if n <= 2 {
				l = [...]string{"3", "03"}[n-1]
			}
		case 'm':
			if n <= 2 {
				l = [...]string{"4", "04"}[n-1]
			}
		case 's':
			if n <= 2 {
				l = [...]string{"5", "05"}[n-1]
			}
		case 'S':
			if s := b.String(); n <= 9 && s != "" && (s[len(s)-1] == '.' || s[len(s)-1] == ',') {
				l = strings.Repeat("0", n)
			} else if n <= 9 {
				return "", fmt.Errorf("date format %q: fractions of a second (S) must follow '.' or ','", p)
			}
		case 'z':
			l = "MST"
		case 'Z':
			l = "-0700"
			if n >= 5 {
				l = "Z07:00"
			}
		case 'X':
			l = [...]string{"Z07", "Z0700", "Z07:00"}[min(n, 3)-1]
		case 'x':
			l = [...]string{"-07", "-0700", "-07:00"}[min(n, 3)-1]
		}
		if l == "" {
			return "", fmt.Errorf("date format %q: pattern %q is not supported (use y, M, d, D, E, a, H, h, m, s, S, z, Z, X, x; quote literal text)", p, strings.Repeat(string(c), n))
		}
		if s := b.String(); l[0] == '2' && strings.HasSuffix(s, "_") {
			return "", fmt.Errorf("date format %q: '_' before a day is not supported", p)
		}
		b.WriteString(l)
	}
	return b.String(), nil
}

// literalOK refuses literal text that a Go layout would read as a field.
func literalOK(p, lit string) error {
	for _, w := range []string{"Jan", "Mon", "MST", "PM", "pm"} {
		if strings.Contains(lit, w) {
			return fmt.Errorf("date format %q: literal text %q is not supported", p, lit)
		}
	}
	if strings.ContainsAny(lit, "0123456789") {
		return fmt.Errorf("date format %q: literal digits are not supported", p)
	}
	return nil
}
