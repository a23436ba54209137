package rawjson

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth bounds nesting, as encoding/json does.
const maxJSONDepth = 10000

// jsonError is a JSON syntax error at a byte offset.
type jsonError struct {
	msg string
	off int
}

func (e *jsonError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

func jsonErrAt(b []byte, i int, what string) error {
	if i >= len(b) {
		return &jsonError{"unexpected end of JSON input", i}
	}
	return &jsonError{fmt.Sprintf("invalid character %s %s", quoteChar(b[i]), what), i}
}

func quoteChar(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c >= utf8.RuneSelf:
		return fmt.Sprintf(`'\x%02x'`, c)
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

// Valid checks that b holds exactly one JSON value, possibly surrounded by
// white space, and returns the value without the white space.
func Valid(b []byte) ([]byte, error) {
	i := skipWS(b, 0)
	end, err := checkValue(b, i, 0)
	if err != nil {
		return nil, err
	}
	if j := skipWS(b, end); j < len(b) {
		return nil, jsonErrAt(b, j, "after top-level value")
	}
	return b[i:end:end], nil
}

// ValidMembers is Valid that also calls member, when the value is an
// object, with each of its members in order (as EachMember would), from
// the same pass: a caller that looks members up next need not scan the
// object again. The calls mean nothing when it returns an error.
func ValidMembers(b []byte, member MemberFunc) ([]byte, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return Valid(b)
	}
	end, err := checkObject(b, i, 1, member)
	if err != nil {
		return nil, err
	}
	if j := skipWS(b, end); j < len(b) {
		return nil, jsonErrAt(b, j, "after top-level value")
	}
	return b[i:end:end], nil
}

// MemberFunc takes one member of an object: its raw key (without quotes),
// whether the key is plain, and its raw value, with vplain true when the
// value is a plain string. A plain string's text is the bytes between its
// quotes: no escape and no byte past ASCII (see scanString).
type MemberFunc func(k []byte, plain bool, v []byte, vplain bool)

func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}

// checkValue validates the value starting at b[i] and returns its end.
func checkValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, jsonErrAt(b, i, "")
	}
	switch c := b[i]; {
	case c == '{':
		return checkObject(b, i, depth+1, nil)
	case c == '[':
		return checkArray(b, i, depth+1)
	case c == '"':
		end, _, err := checkString(b, i)
		return end, err
	case c == 't':
		return checkLiteral(b, i, "true")
	case c == 'f':
		return checkLiteral(b, i, "false")
	case c == 'n':
		return checkLiteral(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return checkNumber(b, i)
	}
	return i, jsonErrAt(b, i, "looking for beginning of value")
}

func checkLiteral(b []byte, i int, lit string) (int, error) {
	for k := 1; k < len(lit); k++ {
		if i+k >= len(b) || b[i+k] != lit[k] {
			return i + k, jsonErrAt(b, i+k, "in literal "+lit)
		}
	}
	return i + len(lit), nil
}

// checkObject checks the object at b[i] (its depth counted); member, when
// not nil, is called with each of its members once checked.
func checkObject(b []byte, i, depth int, member MemberFunc) (int, error) {
	if depth > maxJSONDepth {
		return i, &jsonError{"exceeded max depth", i}
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, jsonErrAt(b, i, "looking for beginning of object key string")
		}
		ke, kplain, err := checkString(b, i)
		if err != nil {
			return ke, err
		}
		k := b[i+1 : ke-1]
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return i, jsonErrAt(b, i, "after object key")
		}
		vs := skipWS(b, i+1)
		vplain := false
		if vs < len(b) && b[vs] == '"' {
			i, vplain, err = checkString(b, vs)
		} else {
			i, err = checkValue(b, vs, depth)
		}
		if err != nil {
			return i, err
		}
		if member != nil {
			member(k, kplain, b[vs:i:i], vplain)
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return i, jsonErrAt(b, i, "")
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, jsonErrAt(b, i, "after object key:value pair")
		}
	}
}

func checkArray(b []byte, i, depth int) (int, error) {
	if depth > maxJSONDepth {
		return i, &jsonError{"exceeded max depth", i}
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = checkValue(b, i, depth); err != nil {
			return i, err
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return i, jsonErrAt(b, i, "")
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return i, jsonErrAt(b, i, "after array element")
		}
	}
}

// strPlain marks the bytes a JSON string holds as they are: not its end,
// not an escape, not a control character; strASCII those of them below
// utf8.RuneSelf.
var strPlain, strASCII = func() (t, a [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
		a[c] = t[c] && c < utf8.RuneSelf
	}
	return t, a
}()

// checkString checks the string at b[i] and returns its end, and whether
// it is plain (see MemberFunc).
func checkString(b []byte, i int) (end int, plain bool, err error) {
	// Most bytes of most strings need no look: skip them in a tight loop
	// (a third of the validation's time went to the switch), over ASCII
	// while the string is plain.
	plain = true
	tbl := &strASCII
	for j := i + 1; j < len(b); j++ {
		for j < len(b) && tbl[b[j]] {
			j++
		}
		if j >= len(b) {
			break
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, plain, nil
		case c >= utf8.RuneSelf:
			plain, tbl = false, &strPlain
		case c == '\\':
			plain, tbl = false, &strPlain
			j++
			if j >= len(b) {
				return j, false, jsonErrAt(b, j, "")
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 1; k <= 4; k++ {
					if j+k >= len(b) || !isHex(b[j+k]) {
						return j + k, false, jsonErrAt(b, j+k, "in \\u hexadecimal character escape")
					}
				}
				j += 4
			default:
				return j, false, jsonErrAt(b, j, "in string escape code")
			}
		case c < 0x20:
			return j, false, jsonErrAt(b, j, "in string literal")
		}
	}
	return len(b), false, jsonErrAt(b, len(b), "")
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func IsDigit(c byte) bool { return c >= '0' && c <= '9' }

func checkNumber(b []byte, i int) (int, error) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && IsDigit(b[i]); i++ {
		}
	default:
		return i, jsonErrAt(b, i, "in numeric literal")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !IsDigit(b[i]) {
			return i, jsonErrAt(b, i, "after decimal point in numeric literal")
		}
		for ; i < len(b) && IsDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !IsDigit(b[i]) {
			return i, jsonErrAt(b, i, "in exponent of numeric literal")
		}
		for ; i < len(b) && IsDigit(b[i]); i++ {
		}
	}
	return i, nil
}

// skipString returns the end of the string starting at b[i].
func skipString(b []byte, i int) int {
	end, _ := scanString(b, i)
	return end
}

// scanString returns the end of the string starting at b[i], and whether
// its content is plain: ASCII without escapes, so equal to its text.
func scanString(b []byte, i int) (end int, plain bool) {
	plain = true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, plain
		case c == '\\':
			plain = false
			j++
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	return len(b), false
}

// skipValue returns the end of the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i + 1
	for j < len(b) && !IsSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	return j
}

// ObjectGet returns the value of key in the object obj, or nil when obj is
// not an object or has no such key. The last of duplicate keys wins. tmp is
// scratch space for keys with escapes.
func ObjectGet(obj, key []byte, tmp *[]byte) []byte {
	var found []byte
	EachMember(obj, func(k []byte, plain bool, v []byte, _ bool) {
		if KeyEqual(k, plain, key, tmp) {
			found = v
		}
	})
	return found
}

// EachMember calls f with each member of the object obj, in order (see
// MemberFunc). It does nothing when obj is not an object.
func EachMember(obj []byte, f MemberFunc) {
	if len(obj) == 0 || obj[0] != '{' {
		return
	}
	i := 1
	for {
		i = skipWS(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return
		}
		ke, plain := scanString(obj, i)
		k := obj[i+1 : max(i+1, ke-1)]
		i = skipWS(obj, ke) + 1 // ':'
		i = skipWS(obj, i)
		var ve int
		vplain := false
		if i < len(obj) && obj[i] == '"' {
			ve, vplain = scanString(obj, i)
		} else {
			ve = skipValue(obj, i)
		}
		f(k, plain, obj[i:ve:ve], vplain)
		i = skipWS(obj, ve)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i++
	}
}

// KeyEqual reports whether the raw key k (without quotes) decodes to key.
func KeyEqual(k []byte, plain bool, key []byte, tmp *[]byte) bool {
	if plain {
		return bytes.Equal(k, key)
	}
	if bytes.IndexByte(k, '\\') < 0 && utf8.Valid(k) {
		return bytes.Equal(k, key)
	}
	*tmp = appendUnescaped((*tmp)[:0], k)
	return bytes.Equal(*tmp, key)
}

// ArrayGet returns element n (0-based) of the array arr, or nil.
func ArrayGet(arr []byte, n int64) []byte {
	if len(arr) == 0 || arr[0] != '[' || n < 0 {
		return nil
	}
	i := 1
	for k := int64(0); ; k++ {
		i = skipWS(arr, i)
		if i >= len(arr) || arr[i] == ']' {
			return nil
		}
		ve := skipValue(arr, i)
		if k == n {
			return arr[i:ve:ve]
		}
		i = skipWS(arr, ve)
		if i >= len(arr) || arr[i] != ',' {
			return nil
		}
		i++
	}
}

// StringContent returns the text of the JSON string q (with its quotes)
// without copying when it has no escapes and is valid UTF-8.
func StringContent(q []byte) ([]byte, bool) {
	if len(q) < 2 {
		return nil, true
	}
	c := q[1 : len(q)-1]
	if bytes.IndexByte(c, '\\') < 0 && utf8.Valid(c) {
		return c, true
	}
	return nil, false
}

// AppendUnquoted appends the text of the JSON string q (with its quotes),
// decoding exactly as encoding/json does: invalid UTF-8 and unpaired
// surrogates become U+FFFD.
func AppendUnquoted(dst, q []byte) []byte {
	if len(q) < 2 {
		return dst
	}
	return appendUnescaped(dst, q[1:len(q)-1])
}

// appendUnescaped appends the text of a JSON string's content s (without
// its quotes).
func appendUnescaped(dst, s []byte) []byte {
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			if r+1 >= len(s) {
				return dst
			}
			e := s[r+1]
			r += 2
			switch e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				rr := getu4(s, r)
				if rr < 0 {
					return dst
				}
				r += 4
				if utf16.IsSurrogate(rr) {
					if r+1 < len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, getu4(s, r+2)); dec != unicode.ReplacementChar {
							r += 6
							dst = utf8.AppendRune(dst, dec)
							break
						}
					}
					rr = unicode.ReplacementChar
				}
				dst = utf8.AppendRune(dst, rr)
			default: // " \ /
				dst = append(dst, e)
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			dst = utf8.AppendRune(dst, rr)
			r += size
		}
	}
	return dst
}

func getu4(s []byte, i int) rune {
	if i+4 > len(s) {
		return -1
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// Compact returns raw without insignificant white space: raw itself when
// it has none, else a copy appended to *dst.
func Compact(raw []byte, dst *[]byte) []byte {
	i := 0
	for i < len(raw) {
		c := raw[i]
		if c == '"' {
			i = skipString(raw, i)
			continue
		}
		if IsSpace(c) {
			break
		}
		i++
	}
	if i >= len(raw) {
		return raw
	}
	start := len(*dst)
	out := append(*dst, raw[:i]...)
	for i < len(raw) {
		c := raw[i]
		switch {
		case c == '"':
			e := skipString(raw, i)
			out = append(out, raw[i:e]...)
			i = e
		case IsSpace(c):
			i++
		default:
			out = append(out, c)
			i++
		}
	}
	*dst = out
	return out[start:len(out):len(out)]
}

const hexDigits = "0123456789abcdef"

// AppendQuoted appends s as a JSON string, as encoding/json writes it
// without HTML escaping: invalid UTF-8 becomes \ufffd.
func AppendQuoted(dst, s []byte) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c >= 0x20:
				dst = append(dst, c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == '\b':
				dst = append(dst, '\\', 'b')
			case c == '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// PathStep is one step of a JSON path: .key / ['key'] or [n].
type PathStep struct {
	key   []byte
	index int64
	isIdx bool
}

// ParsePath parses a Hive/Spark JSON path: $ followed by .name, ['name'],
// ["name"] or [n] steps. Wildcards are not supported.
func ParsePath(p string) ([]PathStep, error) {
	if p == "" || p[0] != '$' {
		return nil, fmt.Errorf("JSON path %q must start with $", p)
	}
	var steps []PathStep
	i := 1
	for i < len(p) {
		switch p[i] {
		case '.':
			j := i + 1
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			name := p[i+1 : j]
			if name == "" || name == "*" {
				return nil, fmt.Errorf("JSON path %q: expected a name after '.' at offset %d", p, i)
			}
			steps = append(steps, PathStep{key: []byte(name)})
			i = j
		case '[':
			j := i + 1
			if j < len(p) && (p[j] == '\'' || p[j] == '"') {
				q := p[j]
				k := j + 1
				for k < len(p) && p[k] != q {
					k++
				}
				if k+1 >= len(p) || p[k+1] != ']' {
					return nil, fmt.Errorf("JSON path %q: unterminated [%c…%c] at offset %d", p, q, q, i)
				}
				steps = append(steps, PathStep{key: []byte(p[j+1 : k])})
				i = k + 2
				continue
			}
			k := j
			for k < len(p) && IsDigit(p[k]) {
				k++
			}
			if k == j || k >= len(p) || p[k] != ']' || k-j > 18 {
				return nil, fmt.Errorf("JSON path %q: expected [n], ['name'] or [\"name\"] at offset %d (wildcards are not supported)", p, i)
			}
			n, _ := strconv.ParseInt(p[j:k], 10, 64)
			steps = append(steps, PathStep{index: n, isIdx: true})
			i = k + 1
		default:
			return nil, fmt.Errorf("JSON path %q: unexpected %q at offset %d", p, p[i], i)
		}
	}
	return steps, nil
}

// WalkPath follows steps from the validated JSON raw; nil when absent.
func WalkPath(raw []byte, steps []PathStep, tmp *[]byte) []byte {
	for _, s := range steps {
		if s.isIdx {
			raw = ArrayGet(raw, s.index)
		} else {
			raw = ObjectGet(raw, s.key, tmp)
		}
		if raw == nil {
			return nil
		}
	}
	return raw
}
