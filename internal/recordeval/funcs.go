package recordeval

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lakepipe/lakepipe/internal/recordeval/rawjson"

	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// fnImpl computes a function from its evaluated arguments.
type fnImpl func(st *Ctx, args []value) (value, error)

// funcDef describes a scalar function.
type funcDef struct {
	min, max int  // argument counts; max < 0: no limit
	kind     kind // result kind when always the same, else kUnknown
	impl     fnImpl
	nullArgs bool // impl sees NULL arguments; otherwise a NULL argument gives NULL
	// build compiles special forms (lazy arguments, constant patterns,
	// memoized JSON); impl is unused then.
	build func(c *compiler, f *sqlast.FuncCall, args []node) (node, error)
}

// funcs are the scalar functions, by lower-case name. Filled by init, as
// build functions refer back to the compiler.
var funcs map[string]*funcDef

// scalarFunc is a function computed from its evaluated arguments alone.
type scalarFunc struct {
	min, max int  // argument counts; max < 0: no limit
	kind     kind // result kind when always the same, else kUnknown
	call     fnImpl
	nullArgs bool // call sees NULL arguments; otherwise a NULL argument gives NULL
}

// scalarFuncs are the functions computed from their arguments alone, by
// lower-case name.
func scalarFuncs() map[string]scalarFunc {
	str := func(impl fnImpl, min, max int) scalarFunc {
		return scalarFunc{min: min, max: max, kind: kString, call: impl}
	}
	num := func(impl fnImpl, min, max int) scalarFunc {
		return scalarFunc{min: min, max: max, kind: kUnknown, call: impl}
	}
	part := func(get func(t time.Time) int) scalarFunc {
		return scalarFunc{min: 1, max: 1, kind: kInt, call: func(st *Ctx, a []value) (value, error) {
			t, err := st.cast(a[0], timestampTarget)
			if err != nil || t.Kind == kNull {
				return t, err
			}
			return intV(int64(get(t.Time))), nil
		}}
	}
	return map[string]scalarFunc{
		// text
		"lower":            str(fnLower, 1, 1),
		"lcase":            str(fnLower, 1, 1),
		"upper":            str(fnUpper, 1, 1),
		"ucase":            str(fnUpper, 1, 1),
		"trim":             str(trimFn(true, true), 1, 2),
		"ltrim":            str(trimFn(true, false), 1, 2),
		"rtrim":            str(trimFn(false, true), 1, 2),
		"length":           {min: 1, max: 1, kind: kInt, call: fnLength},
		"char_length":      {min: 1, max: 1, kind: kInt, call: fnLength},
		"character_length": {min: 1, max: 1, kind: kInt, call: fnLength},
		"substr":           str(fnSubstr, 2, 3),
		"substring":        str(fnSubstr, 2, 3),
		"concat":           str(fnConcat, 1, -1),
		"concat_ws":        {min: 2, max: -1, kind: kString, call: fnConcatWS, nullArgs: true},
		"replace":          str(fnReplace, 2, 3),
		"split_part":       str(fnSplitPart, 3, 3),
		// NULL handling
		"nullif": {min: 2, max: 2, kind: kUnknown, call: fnNullIf, nullArgs: true},
		// numbers
		"abs":     num(fnAbs, 1, 1),
		"round":   num(fnRound, 1, 2),
		"floor":   num(floorCeil(true), 1, 1),
		"ceil":    num(floorCeil(false), 1, 1),
		"ceiling": num(floorCeil(false), 1, 1),
		// time
		"year":       part(func(t time.Time) int { return t.Year() }),
		"month":      part(func(t time.Time) int { return int(t.Month()) }),
		"day":        part(func(t time.Time) int { return t.Day() }),
		"dayofmonth": part(func(t time.Time) int { return t.Day() }),
		"hour":       part(func(t time.Time) int { return t.Hour() }),
		"minute":     part(func(t time.Time) int { return t.Minute() }),
		"second":     part(func(t time.Time) int { return t.Second() }),
	}
}

func init() {
	coalesce := &funcDef{min: 1, max: -1, build: buildCoalesce}
	ifFn := &funcDef{min: 3, max: 3, build: buildIf}
	now := &funcDef{min: 0, max: 0, kind: kTime, build: func(*compiler, *sqlast.FuncCall, []node) (node, error) { return &nowNode{}, nil }}
	jsonGet := &funcDef{min: 2, max: 2, kind: kString, build: buildGetJSON}
	funcs = map[string]*funcDef{
		// text
		"regexp_extract": {min: 2, max: 3, kind: kString, build: buildRegexpExtract},
		"regexp_replace": {min: 3, max: 3, kind: kString, build: buildRegexpReplace},
		"regexp_like":    {min: 2, max: 2, kind: kBool, build: buildRegexpLike},
		// NULL handling and conditions
		"coalesce": coalesce,
		"nvl":      {min: 2, max: 2, build: buildCoalesce},
		"ifnull":   {min: 2, max: 2, build: buildCoalesce},
		"if":       ifFn,
		"iff":      ifFn,
		// time
		"to_timestamp":      {min: 1, max: 2, kind: kTime, build: buildToTime(kTime, false)},
		"try_to_timestamp":  {min: 1, max: 2, kind: kTime, build: buildToTime(kTime, true)},
		"to_date":           {min: 1, max: 2, kind: kDate, build: buildToTime(kDate, false)},
		"try_to_date":       {min: 1, max: 2, kind: kDate, build: buildToTime(kDate, true)},
		"from_unixtime":     {min: 1, max: 2, kind: kString, build: buildFromUnixtime},
		"unix_timestamp":    {min: 0, max: 2, kind: kInt, build: buildUnixTimestamp},
		"date_format":       {min: 2, max: 2, kind: kString, build: buildDateFormat},
		"current_timestamp": now,
		"now":               now,
		"current_date": {min: 0, max: 0, kind: kDate, build: func(*compiler, *sqlast.FuncCall, []node) (node, error) {
			return &nowNode{date: true}, nil
		}},
		// JSON
		"parse_json":      {min: 1, max: 1, kind: kJSON, build: buildParseJSON(false)},
		"try_parse_json":  {min: 1, max: 1, kind: kJSON, build: buildParseJSON(true)},
		"get_json_object": jsonGet,
		"json_extract":    jsonGet,
	}
	for name, f := range scalarFuncs() {
		funcs[name] = &funcDef{min: f.min, max: f.max, kind: f.kind, impl: f.call, nullArgs: f.nullArgs}
	}
}

// Functions returns the names of the scalar functions a Kafka pipe's SELECT
// may call, sorted.
func Functions() []string {
	names := make([]string, 0, len(funcs))
	for n := range funcs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// aggregates and windowOnly name functions refused with a per-record
// explanation rather than as unknown.
var aggregates = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true, "count_if": true,
	"any_value": true, "first": true, "last": true, "first_value": true, "last_value": true,
	"collect_list": true, "collect_set": true, "array_agg": true, "listagg": true,
	"string_agg": true, "group_concat": true, "approx_count_distinct": true, "median": true,
	"stddev": true, "stddev_pop": true, "stddev_samp": true, "variance": true, "var_pop": true,
	"var_samp": true, "bool_and": true, "bool_or": true, "every": true, "percentile": true,
	"percentile_approx": true, "corr": true, "covar_pop": true, "covar_samp": true,
	"row_number": true, "rank": true, "dense_rank": true, "lag": true, "lead": true,
	"ntile": true, "percent_rank": true, "cume_dist": true, "nth_value": true,
}

// ---- argument helpers ----

// intArg converts an argument to BIGINT.
func (st *Ctx) intArg(v value, what string) (int64, error) {
	n, err := st.cast(v, bigintTarget)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return n.Int, nil
}

func (st *Ctx) strResult(start int) (value, error) { return strV(st.carve(start)), nil }

// ---- text ----

func fnLower(st *Ctx, a []value) (value, error) {
	s, _ := st.text(a[0])
	start := len(st.Scratch)
	st.Scratch = appendLower(st.Scratch, s)
	return st.strResult(start)
}

func fnUpper(st *Ctx, a []value) (value, error) {
	s, _ := st.text(a[0])
	start := len(st.Scratch)
	st.Scratch = appendCase(st.Scratch, s, true)
	return st.strResult(start)
}

func appendLower(dst, s []byte) []byte { return appendCase(dst, s, false) }

// appendCase maps the letters of s to upper or lower case; bytes that are
// not UTF-8 are kept.
func appendCase(dst, s []byte, upper bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case upper && c >= 'a' && c <= 'z':
				c -= 'a' - 'A'
			case !upper && c >= 'A' && c <= 'Z':
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, c)
		case upper:
			dst = utf8.AppendRune(dst, unicode.ToUpper(r))
		default:
			dst = utf8.AppendRune(dst, unicode.ToLower(r))
		}
		i += n
	}
	return dst
}

// trimFn trims white space, or with a second argument any of its
// characters (Snowflake's TRIM(s, chars)).
func trimFn(left, right bool) fnImpl {
	return func(st *Ctx, a []value) (value, error) {
		s, _ := st.text(a[0])
		if len(a) == 1 {
			if left {
				s = bytes.TrimLeftFunc(s, unicode.IsSpace)
			}
			if right {
				s = bytes.TrimRightFunc(s, unicode.IsSpace)
			}
			return strV(s), nil
		}
		chars, _ := st.text(a[1])
		if left {
			s = bytes.TrimLeft(s, bstr(chars))
		}
		if right {
			s = bytes.TrimRight(s, bstr(chars))
		}
		return strV(s), nil
	}
}

func fnLength(st *Ctx, a []value) (value, error) {
	s, _ := st.text(a[0])
	return intV(int64(utf8.RuneCount(s))), nil
}

// fnSubstr is Spark's substr(s, pos[, len]): pos counts characters from 1,
// 0 acts as 1, a negative pos counts from the end; a negative len gives "".
func fnSubstr(st *Ctx, a []value) (value, error) {
	s, _ := st.text(a[0])
	pos, err := st.intArg(a[1], "position")
	if err != nil {
		return value{}, err
	}
	length := int64(math.MaxInt64)
	if len(a) == 3 {
		if length, err = st.intArg(a[2], "length"); err != nil {
			return value{}, err
		}
		if length <= 0 {
			return strV(s[:0]), nil
		}
	}
	n := int64(utf8.RuneCount(s))
	var start int64
	switch {
	case pos > 0:
		start = pos - 1
	case pos < 0:
		start = n + pos
	}
	end := start + length
	if end < start { // overflow
		end = math.MaxInt64
	}
	start = max(start, 0)
	end = min(end, n)
	if start >= end {
		return strV(s[:0]), nil
	}
	b0, b1 := runeOffset(s, start), 0
	b1 = b0 + runeOffset(s[b0:], end-start)
	return strV(s[b0:b1]), nil
}

// runeOffset returns the byte offset of the n-th rune of s.
func runeOffset(s []byte, n int64) int {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRune(s[i:])
		i += size
	}
	return i
}

func fnConcat(st *Ctx, a []value) (value, error) {
	texts := make([][]byte, 0, 8)
	for _, v := range a {
		s, null := st.text(v)
		if null {
			return value{}, nil
		}
		texts = append(texts, s)
	}
	start := len(st.Scratch)
	for _, s := range texts {
		st.Scratch = append(st.Scratch, s...)
	}
	return st.strResult(start)
}

// fnConcatWS joins the arguments that are not NULL with the separator; a
// NULL separator gives NULL.
func fnConcatWS(st *Ctx, a []value) (value, error) {
	sep, null := st.text(a[0])
	if null {
		return value{}, nil
	}
	texts := make([][]byte, 0, 8)
	for _, v := range a[1:] {
		if s, null := st.text(v); !null {
			texts = append(texts, s)
		}
	}
	start := len(st.Scratch)
	for i, s := range texts {
		if i > 0 {
			st.Scratch = append(st.Scratch, sep...)
		}
		st.Scratch = append(st.Scratch, s...)
	}
	return st.strResult(start)
}

func fnReplace(st *Ctx, a []value) (value, error) {
	s, _ := st.text(a[0])
	from, _ := st.text(a[1])
	var to []byte
	if len(a) == 3 {
		to, _ = st.text(a[2])
	}
	if len(from) == 0 || bytes.Index(s, from) < 0 {
		return strV(s), nil
	}
	start := len(st.Scratch)
	for {
		i := bytes.Index(s, from)
		if i < 0 {
			break
		}
		st.Scratch = append(append(st.Scratch, s[:i]...), to...)
		s = s[i+len(from):]
	}
	st.Scratch = append(st.Scratch, s...)
	return st.strResult(start)
}

// fnSplitPart is split_part(s, delimiter, n): the n-th part counting from 1
// (negative n counts from the end, 0 acts as 1, as in Snowflake); "" when
// there is no such part. An empty delimiter does not split.
func fnSplitPart(st *Ctx, a []value) (value, error) {
	s, _ := st.text(a[0])
	d, _ := st.text(a[1])
	n, err := st.intArg(a[2], "part number")
	if err != nil {
		return value{}, err
	}
	if n == 0 {
		n = 1
	}
	count := int64(1)
	if len(d) > 0 {
		count += int64(bytes.Count(s, d))
	}
	if n < 0 {
		n = count + n + 1
	}
	if n < 1 || n > count {
		return strV(s[:0]), nil
	}
	if len(d) == 0 {
		return strV(s), nil
	}
	for ; n > 1; n-- {
		s = s[bytes.Index(s, d)+len(d):]
	}
	if i := bytes.Index(s, d); i >= 0 {
		s = s[:i]
	}
	return strV(s), nil
}

// constText returns the text of a constant argument.
func constText(n node) (string, bool) {
	c, ok := n.(*constNode)
	if !ok || c.v.Kind != kString {
		return "", false
	}
	return string(c.v.Bytes), true
}

func constRegexp(n node) (*regexp.Regexp, error) {
	p, ok := constText(n)
	if !ok {
		return nil, nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("bad regular expression %q: %w", p, err)
	}
	return re, nil
}

func buildRegexpLike(_ *compiler, _ *sqlast.FuncCall, args []node) (node, error) {
	re, err := constRegexp(args[1])
	if err != nil {
		return nil, err
	}
	n := &rlikeNode{x: args[0], re: re}
	if re == nil {
		n.pat = args[1]
	}
	return n, nil
}

// regexpExtractNode is Spark's regexp_extract(s, re[, group]): group 1 by
// default, 0 for the whole match, "" when nothing matches.
type regexpExtractNode struct {
	s, pat, group node // pat and group nil when constant
	re            *regexp.Regexp
	g             int64
}

func buildRegexpExtract(_ *compiler, _ *sqlast.FuncCall, args []node) (node, error) {
	n := &regexpExtractNode{s: args[0], g: 1}
	var err error
	if n.re, err = constRegexp(args[1]); err != nil {
		return nil, err
	}
	if n.re == nil {
		n.pat = args[1]
	}
	if len(args) == 3 {
		if c, ok := args[2].(*constNode); ok && c.v.Kind == kInt {
			n.g = c.v.Int
		} else {
			n.group = args[2]
		}
	}
	if n.re != nil && n.group == nil && (n.g < 0 || n.g > int64(n.re.NumSubexp())) {
		return nil, fmt.Errorf("group %d does not exist: the pattern has %d", n.g, n.re.NumSubexp())
	}
	return n, nil
}

func (n *regexpExtractNode) eval(st *state) (value, error) {
	sv, err := n.s.eval(st)
	if err != nil || sv.Kind == kNull {
		return value{}, err
	}
	re, g := n.re, n.g
	if n.pat != nil {
		if re, err = st.regexpArg(n.pat); err != nil || re == nil {
			return value{}, wrapFn("regexp_extract", err)
		}
	}
	if n.group != nil {
		gv, err := n.group.eval(st)
		if err != nil || gv.Kind == kNull {
			return value{}, err
		}
		if g, err = st.intArg(gv, "group"); err != nil {
			return value{}, wrapFn("regexp_extract", err)
		}
	}
	if g < 0 || g > int64(re.NumSubexp()) {
		return value{}, fmt.Errorf("regexp_extract: group %d does not exist: the pattern has %d", g, re.NumSubexp())
	}
	s, _ := st.text(sv)
	m := re.FindSubmatchIndex(s)
	if m == nil || m[2*g] < 0 {
		return strV(s[:0]), nil
	}
	return strV(s[m[2*g]:m[2*g+1]]), nil
}

func wrapFn(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", name, err)
}

// regexpReplaceNode is regexp_replace(s, re, replacement): every match is
// replaced; $n and ${n} in the replacement are groups, \$ a dollar sign
// (Java's syntax).
type regexpReplaceNode struct {
	s, pat, rep node // pat and rep nil when constant
	re          *regexp.Regexp
	tmpl        []byte // Go template of the constant replacement
}

func buildRegexpReplace(_ *compiler, _ *sqlast.FuncCall, args []node) (node, error) {
	n := &regexpReplaceNode{s: args[0]}
	var err error
	if n.re, err = constRegexp(args[1]); err != nil {
		return nil, err
	}
	if n.re == nil {
		n.pat = args[1]
	}
	if r, ok := constText(args[2]); ok && n.re != nil {
		n.tmpl = javaReplacement([]byte(r), n.re.NumSubexp())
	} else {
		n.rep = args[2]
	}
	return n, nil
}

func (n *regexpReplaceNode) eval(st *state) (value, error) {
	sv, err := n.s.eval(st)
	if err != nil || sv.Kind == kNull {
		return value{}, err
	}
	re, tmpl := n.re, n.tmpl
	if n.pat != nil {
		if re, err = st.regexpArg(n.pat); err != nil || re == nil {
			return value{}, wrapFn("regexp_replace", err)
		}
	}
	if n.rep != nil {
		rv, err := n.rep.eval(st)
		if err != nil || rv.Kind == kNull {
			return value{}, err
		}
		r, _ := st.text(rv)
		tmpl = javaReplacement(r, re.NumSubexp())
	}
	s, _ := st.text(sv)
	return strV(re.ReplaceAll(s, tmpl)), nil
}

// javaReplacement converts a Java replacement string to a Go template.
func javaReplacement(r []byte, groups int) []byte {
	var out []byte
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\\' && i+1 < len(r):
			i++
			if r[i] == '$' {
				out = append(out, '$', '$')
			} else {
				out = append(out, r[i])
			}
		case c == '$' && i+1 < len(r) && rawjson.IsDigit(r[i+1]):
			// Java reads as many digits as still name a group
			g := int(r[i+1] - '0')
			j := i + 2
			for j < len(r) && rawjson.IsDigit(r[j]) && g*10+int(r[j]-'0') <= groups {
				g = g*10 + int(r[j]-'0')
				j++
			}
			out = append(out, "${"...)
			out = strconv.AppendInt(out, int64(g), 10)
			out = append(out, '}')
			i = j - 1
		case c == '$' && i+1 < len(r) && r[i+1] == '{':
			k := bytes.IndexByte(r[i:], '}')
			if k < 0 {
				out = append(out, '$', '$')
				continue
			}
			out = append(out, r[i:i+k+1]...)
			i += k
		case c == '$':
			out = append(out, '$', '$')
		default:
			out = append(out, c)
		}
	}
	return out
}

// ---- NULL handling ----

func buildCoalesce(_ *compiler, _ *sqlast.FuncCall, args []node) (node, error) {
	return &coalesceNode{args: args}, nil
}

func buildIf(_ *compiler, _ *sqlast.FuncCall, args []node) (node, error) {
	return &ifNode{cond: args[0], a: args[1], b: args[2]}, nil
}

// fnNullIf is NULLIF(a, b): NULL when a = b, else a.
func fnNullIf(st *Ctx, a []value) (value, error) {
	if a[0].Kind == kNull || a[1].Kind == kNull {
		return a[0], nil
	}
	c, err := st.compare(a[0], a[1])
	if err != nil {
		return value{}, err
	}
	if c == 0 {
		return value{}, nil
	}
	return a[0], nil
}

// ---- numbers ----

func fnAbs(st *Ctx, a []value) (value, error) {
	v, err := st.number(a[0])
	if err != nil {
		return value{}, err
	}
	switch v.Kind {
	case kInt:
		if v.Int == math.MinInt64 {
			return value{}, errOverflow
		}
		if v.Int < 0 {
			return intV(-v.Int), nil
		}
	case kFloat:
		return floatV(math.Abs(v.Float)), nil
	case kDecimal:
		return decV(sbytes(toDecimal(v).Abs().String())), nil
	}
	return v, nil
}

// fnRound is round(x[, d]): half away from zero at d fraction digits
// (negative d rounds to tens, hundreds, …). Floats are rounded on their
// shortest decimal text, as Spark does: round(1.005, 2) = 1.01.
func fnRound(st *Ctx, a []value) (value, error) {
	v, err := st.number(a[0])
	if err != nil || v.Kind == kNull {
		return value{}, err
	}
	var d int64
	if len(a) == 2 {
		if d, err = st.intArg(a[1], "scale"); err != nil {
			return value{}, err
		}
	}
	switch v.Kind {
	case kInt:
		if d >= 0 {
			return v, nil
		}
		return roundInt(v.Int, d)
	case kFloat:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return v, nil
		}
		if d < 0 {
			f, _ := decimal.NewFromFloat(v.Float).Round(int32(max(d, -400))).Float64()
			return floatV(f), nil
		}
		text := strconv.AppendFloat(nil, v.Float, 'f', -1, 64)
		if d >= int64(fracDigits(text)) {
			return v, nil
		}
		r, err := appendRoundDecimal(nil, text, int(d), -1)
		if err != nil {
			return value{}, err
		}
		f, _ := strconv.ParseFloat(bstr(r), 64)
		return floatV(f), nil
	}
	dec := toDecimal(v)
	if d >= int64(max(0, -int(dec.Exponent()))) {
		return v, nil
	}
	return decV(sbytes(dec.Round(int32(max(d, -400))).String())), nil
}

func fracDigits(text []byte) int {
	if i := bytes.IndexByte(text, '.'); i >= 0 {
		return len(text) - i - 1
	}
	return 0
}

func roundInt(x, d int64) (value, error) {
	if d < -18 {
		return intV(0), nil
	}
	p := int64(1)
	for ; d < 0; d++ {
		p *= 10
	}
	q, r := x/p, x%p
	if r < 0 {
		r = -r
	}
	if r*2 >= p {
		if x < 0 {
			q--
		} else {
			q++
		}
	}
	v, err := arith('*', intV(q), intV(p))
	if err != nil {
		return value{}, err
	}
	return v, nil
}

// floorCeil gives BIGINT (DECIMAL beyond its range) as Spark does.
func floorCeil(floor bool) fnImpl {
	return func(st *Ctx, a []value) (value, error) {
		v, err := st.number(a[0])
		if err != nil || v.Kind == kNull {
			return value{}, err
		}
		switch v.Kind {
		case kInt:
			return v, nil
		case kFloat:
			f := math.Ceil(v.Float)
			if floor {
				f = math.Floor(v.Float)
			}
			i, err := floatToInt(f)
			if err != nil {
				return value{}, fmt.Errorf("%s: %w", describe(v), err)
			}
			return intV(i), nil
		}
		d := toDecimal(v)
		if floor {
			d = d.Floor()
		} else {
			d = d.Ceil()
		}
		if d.GreaterThanOrEqual(decimal.NewFromInt(math.MinInt64)) && d.LessThanOrEqual(decimal.NewFromInt(math.MaxInt64)) {
			return intV(d.IntPart()), nil
		}
		return decV(sbytes(d.String())), nil
	}
}

// ---- time ----

// layoutArg is a date format argument: compiled once when constant.
type layoutArg struct {
	layout string
	n      node // nil when constant
}

func newLayoutArg(args []node, i int, def string) (layoutArg, error) {
	if i >= len(args) {
		return layoutArg{layout: def}, nil
	}
	if p, ok := constText(args[i]); ok {
		l, err := javaLayout(p)
		return layoutArg{layout: l}, err
	}
	return layoutArg{n: args[i]}, nil
}

// get returns the Go layout; ok is false for a NULL format.
func (l layoutArg) get(st *state) (string, bool, error) {
	if l.n == nil {
		return l.layout, true, nil
	}
	v, err := l.n.eval(st)
	if err != nil || v.Kind == kNull {
		return "", false, err
	}
	p, _ := st.text(v)
	layout, err := javaLayout(string(p))
	return layout, err == nil, err
}

const defaultJavaFormat = "yyyy-MM-dd HH:mm:ss"

var defaultLayout, _ = javaLayout(defaultJavaFormat)

// toTimeNode is to_timestamp / to_date (and their try_ forms) with a
// format; without one they are casts.
type toTimeNode struct {
	x      node
	layout layoutArg
	date   bool
	try    bool
	name   string
}

func buildToTime(k kind, try bool) func(*compiler, *sqlast.FuncCall, []node) (node, error) {
	return func(_ *compiler, f *sqlast.FuncCall, args []node) (node, error) {
		if len(args) == 1 {
			t := timestampTarget
			if k == kDate {
				t = dateTarget
			}
			return &castNode{x: args[0], t: t, try: try}, nil
		}
		l, err := newLayoutArg(args, 1, "")
		if err != nil {
			return nil, err
		}
		return &toTimeNode{x: args[0], layout: l, date: k == kDate, try: try, name: f.Name}, nil
	}
}

func (n *toTimeNode) eval(st *state) (value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == kNull {
		return value{}, err
	}
	layout, ok, err := n.layout.get(st)
	if err != nil || !ok {
		return value{}, wrapFn(n.name, err)
	}
	t, err := st.parseLayout(v, layout)
	if err != nil {
		if n.try {
			return value{}, nil
		}
		return value{}, wrapFn(n.name, err)
	}
	if n.date {
		return dateV(truncDay(t)), nil
	}
	return timeV(t), nil
}

// parseLayout parses v's text with a Go layout, in UTC.
func (st *Ctx) parseLayout(v value, layout string) (time.Time, error) {
	if v.Kind == kTime || v.Kind == kDate {
		return v.Time, nil
	}
	s, null := st.text(v)
	if null {
		return time.Time{}, errors.New("NULL")
	}
	t, err := time.Parse(layout, bstr(s))
	if err != nil { // not wrapped: the error would keep a view of scratch
		return time.Time{}, fmt.Errorf("cannot parse %s as %q", describe(strV(s)), layout)
	}
	return t.UTC(), nil
}

// fromUnixtimeNode is from_unixtime(seconds[, format]): text in UTC,
// yyyy-MM-dd HH:mm:ss by default.
type fromUnixtimeNode struct {
	x      node
	layout layoutArg
}

func buildFromUnixtime(_ *compiler, _ *sqlast.FuncCall, args []node) (node, error) {
	l, err := newLayoutArg(args, 1, defaultLayout)
	if err != nil {
		return nil, err
	}
	return &fromUnixtimeNode{x: args[0], layout: l}, nil
}

func (n *fromUnixtimeNode) eval(st *state) (value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == kNull {
		return value{}, err
	}
	sec, err := st.intArg(v, "seconds")
	if err != nil {
		return value{}, wrapFn("from_unixtime", err)
	}
	layout, ok, err := n.layout.get(st)
	if err != nil || !ok {
		return value{}, wrapFn("from_unixtime", err)
	}
	start := len(st.Scratch)
	st.Scratch = time.Unix(sec, 0).UTC().AppendFormat(st.Scratch, layout)
	return st.strResult(start)
}

// unixTimestampNode is unix_timestamp([x[, format]]): Unix seconds of x
// (a timestamp, or text read as CAST AS TIMESTAMP or with the format), or
// of now.
type unixTimestampNode struct {
	x      node // nil: now
	layout *layoutArg
}

func buildUnixTimestamp(_ *compiler, _ *sqlast.FuncCall, args []node) (node, error) {
	n := &unixTimestampNode{}
	if len(args) > 0 {
		n.x = args[0]
	}
	if len(args) == 2 {
		l, err := newLayoutArg(args, 1, "")
		if err != nil {
			return nil, err
		}
		n.layout = &l
	}
	return n, nil
}

func (n *unixTimestampNode) eval(st *state) (value, error) {
	if n.x == nil {
		return intV(st.nowTime().Unix()), nil
	}
	v, err := n.x.eval(st)
	if err != nil || v.Kind == kNull {
		return value{}, err
	}
	if n.layout == nil {
		t, err := st.cast(v, timestampTarget)
		if err != nil || t.Kind == kNull {
			return value{}, wrapFn("unix_timestamp", err)
		}
		return intV(t.Time.Unix()), nil
	}
	layout, ok, err := n.layout.get(st)
	if err != nil || !ok {
		return value{}, wrapFn("unix_timestamp", err)
	}
	t, err := st.parseLayout(v, layout)
	if err != nil {
		return value{}, wrapFn("unix_timestamp", err)
	}
	return intV(t.Unix()), nil
}

// dateFormatNode is date_format(ts, format): text in UTC.
type dateFormatNode struct {
	x      node
	layout layoutArg
}

func buildDateFormat(_ *compiler, _ *sqlast.FuncCall, args []node) (node, error) {
	l, err := newLayoutArg(args, 1, "")
	if err != nil {
		return nil, err
	}
	return &dateFormatNode{x: args[0], layout: l}, nil
}

func (n *dateFormatNode) eval(st *state) (value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == kNull {
		return value{}, err
	}
	t, err := st.cast(v, timestampTarget)
	if err != nil || t.Kind == kNull {
		return value{}, wrapFn("date_format", err)
	}
	layout, ok, err := n.layout.get(st)
	if err != nil || !ok {
		return value{}, wrapFn("date_format", err)
	}
	start := len(st.Scratch)
	st.Scratch = t.Time.UTC().AppendFormat(st.Scratch, layout)
	return st.strResult(start)
}

// ---- JSON ----

func buildParseJSON(try bool) func(*compiler, *sqlast.FuncCall, []node) (node, error) {
	return func(c *compiler, f *sqlast.FuncCall, args []node) (node, error) {
		what := sqlast.FormatExpr(f.Args[0])
		return &parseJSONNode{x: args[0], slot: c.slot(what), what: what, try: try}, nil
	}
}

func buildGetJSON(c *compiler, f *sqlast.FuncCall, args []node) (node, error) {
	what := sqlast.FormatExpr(f.Args[0])
	n := &getJSONNode{x: args[0], slot: c.slot(what), what: what}
	if p, ok := constText(args[1]); ok {
		steps, err := rawjson.ParsePath(p)
		if err != nil {
			return nil, err
		}
		n.steps = steps
	} else {
		n.path = args[1]
	}
	return n, nil
}

// funcNames lists the functions for an error message.
func funcNames() string { return strings.Join(Functions(), ", ") }
