package recordeval

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/lakepipe/lakepipe/internal/recordeval/rawjson"

	"github.com/shopspring/decimal"
)

// node is a compiled expression.
type node interface {
	eval(st *state) (value, error)
}

type constNode struct{ v value }

func (n *constNode) eval(*state) (value, error) { return n.v, nil }

// jsonOrNull turns a JSON null (or nil) into SQL NULL.
func jsonOrNull(raw []byte) value {
	if len(raw) == 0 || raw[0] == 'n' {
		return value{}
	}
	return jsonV(raw)
}

type colNode struct{ col int }

func (n *colNode) eval(st *state) (value, error) {
	r := st.r
	switch n.col {
	case colKey:
		if st.p.keyJSON {
			return jsonOrNull(st.keyRaw), nil
		}
		if r.Key == nil {
			return value{}, nil
		}
		return strV(r.Key), nil
	case colValue:
		if st.p.valueJSON {
			return jsonOrNull(st.valRaw), nil
		}
		if r.Value == nil {
			return value{}, nil
		}
		return strV(r.Value), nil
	case colTopic:
		return strV(sbytes(r.Topic)), nil
	case colPartition:
		return intV(int64(r.Partition)), nil
	case colOffset:
		return intV(r.Offset), nil
	case colTimestamp:
		if r.Timestamp.IsZero() {
			return value{}, nil
		}
		return timeV(r.Timestamp.UTC()), nil
	case colHeaders:
		return jsonV(st.headerJSON()), nil
	}
	return value{}, fmt.Errorf("internal error: column %d", n.col)
}

// headerJSON renders the headers as a JSON object, once per record.
func (st *state) headerJSON() []byte {
	if st.hdrGen == st.gen {
		return st.headers
	}
	b := append(st.headers[:0], '{')
	for i, h := range st.r.Headers {
		if i > 0 {
			b = append(b, ',')
		}
		b = rawjson.AppendQuoted(b, sbytes(h.Key))
		b = append(b, ':')
		if h.Value == nil {
			b = append(b, "null"...)
		} else {
			b = rawjson.AppendQuoted(b, h.Value)
		}
	}
	b = append(b, '}')
	st.headers, st.hdrGen = b, st.gen
	return b
}

type nowNode struct{ date bool }

func (n *nowNode) eval(st *state) (value, error) {
	if n.date {
		return dateV(truncDay(st.nowTime())), nil
	}
	return timeV(st.nowTime()), nil
}

// castNode is CAST, TRY_CAST and ::. TRY_CAST only turns the conversion's
// failure into NULL, not errors of its operand.
type castNode struct {
	x   node
	t   target
	try bool
}

func (n *castNode) eval(st *state) (value, error) {
	v, err := n.x.eval(st)
	if err != nil {
		return v, err
	}
	r, err := st.cast(v, n.t)
	if err != nil && n.try {
		return value{}, nil
	}
	return r, err
}

// indexNode is x['key'] or x[n].
type indexNode struct {
	x     node
	index node   // nil when constant
	key   []byte // constant key
	n     int64  // constant array index
	isKey bool   // constant is a key (else an index)
	root  int    // memo slot of x when x is memoized JSON, else -1
}

func (n *indexNode) eval(st *state) (value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind != kJSON {
		return value{}, err
	}
	key, idx, isKey := n.key, n.n, n.isKey
	if n.index != nil {
		iv, err := n.index.eval(st)
		if err != nil {
			return value{}, err
		}
		switch iv = st.scalar(iv); iv.Kind {
		case kString:
			key, isKey = iv.Bytes, true
		case kInt:
			idx, isKey = iv.Int, false
		default:
			return value{}, nil
		}
	}
	if isKey {
		if n.root >= 0 {
			return jsonOrNull(st.memo[n.root].get(v.Bytes, key, &st.tmp)), nil
		}
		return jsonOrNull(rawjson.ObjectGet(v.Bytes, key, &st.tmp)), nil
	}
	return jsonOrNull(rawjson.ArrayGet(v.Bytes, idx)), nil
}

// parseJSONNode is PARSE_JSON(x) and TRY_PARSE_JSON(x), memoized per record
// in slot.
type parseJSONNode struct {
	x    node
	slot int
	what string // the argument's text, for messages
	try  bool
}

func (n *parseJSONNode) eval(st *state) (value, error) {
	raw, err := st.parseMemo(n.x, n.slot, n.what)
	if err != nil {
		if n.try && errors.Is(err, errNotJSON) {
			return value{}, nil
		}
		return value{}, err
	}
	return jsonOrNull(raw), nil
}

var errNotJSON = errors.New("not valid JSON")

// parseMemo evaluates x and parses it as JSON, once per record per slot.
// A nil result is NULL; an error wrapping errNotJSON is text that is not
// JSON, other errors are x's.
func (st *state) parseMemo(x node, slot int, what string) ([]byte, error) {
	m := &st.memo[slot]
	if m.gen == st.gen {
		return m.raw, m.err
	}
	v, err := x.eval(st)
	if err != nil {
		return nil, err
	}
	var raw []byte
	switch v.Kind {
	case kNull:
	case kJSON:
		raw = v.Bytes
		if raw[0] == '"' { // a JSON string holding JSON text
			s, _ := st.text(v)
			if raw, err = rawjson.Valid(s); err != nil {
				err = fmt.Errorf("%s is %w: %w", what, errNotJSON, err)
			}
		}
	default:
		s, _ := st.text(v)
		if raw, err = rawjson.Valid(s); err != nil {
			err = fmt.Errorf("%s is %w: %w", what, errNotJSON, err)
		}
	}
	m.set(st.gen, raw, err)
	return raw, err
}

// getJSONNode is GET_JSON_OBJECT(json_text, path) / JSON_EXTRACT: text
// that is not JSON, a path that does not parse and a path that leads
// nowhere give NULL, as in Hive.
type getJSONNode struct {
	x     node
	slot  int
	what  string
	steps []rawjson.PathStep
	path  node // nil when constant
}

func (n *getJSONNode) eval(st *state) (value, error) {
	raw, err := st.parseMemo(n.x, n.slot, n.what)
	if err != nil && !errors.Is(err, errNotJSON) {
		return value{}, err
	}
	if raw == nil {
		return value{}, nil
	}
	steps := n.steps
	if n.path != nil {
		p, err := n.path.eval(st)
		if err != nil || p.Kind == kNull {
			return value{}, err
		}
		s, _ := st.text(p)
		if steps, err = rawjson.ParsePath(string(s)); err != nil {
			return value{}, nil
		}
	}
	v := jsonOrNull(rawjson.WalkPath(raw, steps, &st.tmp))
	if v.Kind == kNull {
		return v, nil
	}
	s, _ := st.text(v)
	return strV(s), nil
}

// ---- operators ----

type arithNode struct {
	op   byte // + - * / %
	l, r node
}

func (n *arithNode) eval(st *state) (value, error) {
	a, err := n.l.eval(st)
	if err != nil || a.Kind == kNull {
		return value{}, err
	}
	b, err := n.r.eval(st)
	if err != nil || b.Kind == kNull {
		return value{}, err
	}
	if a, err = st.number(a); err != nil {
		return value{}, fmt.Errorf("operator %c: %w", n.op, err)
	}
	if b, err = st.number(b); err != nil {
		return value{}, fmt.Errorf("operator %c: %w", n.op, err)
	}
	if a.Kind == kNull || b.Kind == kNull {
		return value{}, nil
	}
	v, err := arith(n.op, a, b)
	if err != nil {
		return value{}, fmt.Errorf("%s %c %s: %w", describe(a), n.op, describe(b), err)
	}
	return v, nil
}

var (
	errOverflow = errors.New("integer overflow")
	errDivZero  = errors.New("division by zero")
)

// arith applies op to two numbers.
func arith(op byte, a, b value) (value, error) {
	if op == '/' {
		d := toFloat(b)
		if d == 0 {
			return value{}, errDivZero
		}
		return floatV(toFloat(a) / d), nil
	}
	switch {
	case a.Kind == kInt && b.Kind == kInt:
		x, y := a.Int, b.Int
		switch op {
		case '+':
			s := x + y
			if (x >= 0) == (y >= 0) && (s >= 0) != (x >= 0) {
				return value{}, errOverflow
			}
			return intV(s), nil
		case '-':
			s := x - y
			if (x >= 0) != (y >= 0) && (s >= 0) != (x >= 0) {
				return value{}, errOverflow
			}
			return intV(s), nil
		case '*':
			if x == 0 || y == 0 {
				return intV(0), nil
			}
			p := x * y
			if p/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
				return value{}, errOverflow
			}
			return intV(p), nil
		case '%':
			if y == 0 {
				return value{}, errDivZero
			}
			return intV(x % y), nil
		}
	case a.Kind == kFloat || b.Kind == kFloat:
		x, y := toFloat(a), toFloat(b)
		switch op {
		case '+':
			return floatV(x + y), nil
		case '-':
			return floatV(x - y), nil
		case '*':
			return floatV(x * y), nil
		case '%':
			if y == 0 {
				return value{}, errDivZero
			}
			return floatV(math.Mod(x, y)), nil
		}
	default:
		x, y := toDecimal(a), toDecimal(b)
		var d decimal.Decimal
		switch op {
		case '+':
			d = x.Add(y)
		case '-':
			d = x.Sub(y)
		case '*':
			d = x.Mul(y)
		case '%':
			if y.IsZero() {
				return value{}, errDivZero
			}
			d = x.Mod(y)
		}
		return decV(sbytes(d.String())), nil
	}
	return value{}, fmt.Errorf("internal error: operator %c", op)
}

type negNode struct{ x node }

func (n *negNode) eval(st *state) (value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == kNull {
		return value{}, err
	}
	if v, err = st.number(v); err != nil {
		return value{}, fmt.Errorf("unary -: %w", err)
	}
	switch v.Kind {
	case kInt:
		if v.Int == math.MinInt64 {
			return value{}, fmt.Errorf("-%d: %w", v.Int, errOverflow)
		}
		return intV(-v.Int), nil
	case kFloat:
		return floatV(-v.Float), nil
	case kDecimal:
		return decV(sbytes(toDecimal(v).Neg().String())), nil
	}
	return v, nil
}

type concatNode struct{ l, r node }

func (n *concatNode) eval(st *state) (value, error) {
	a, err := n.l.eval(st)
	if err != nil || a.Kind == kNull {
		return value{}, err
	}
	b, err := n.r.eval(st)
	if err != nil || b.Kind == kNull {
		return value{}, err
	}
	x, xn := st.text(a)
	y, yn := st.text(b)
	if xn || yn {
		return value{}, nil
	}
	start := len(st.Scratch)
	st.Scratch = append(append(st.Scratch, x...), y...)
	return strV(st.carve(start)), nil
}

type cmpNode struct {
	op   string // = <> < <= > >=
	l, r node
}

func (n *cmpNode) eval(st *state) (value, error) {
	a, err := n.l.eval(st)
	if err != nil || a.Kind == kNull {
		return value{}, err
	}
	b, err := n.r.eval(st)
	if err != nil || b.Kind == kNull {
		return value{}, err
	}
	if a.Kind == kJSON && a.Bytes[0] == 'n' || b.Kind == kJSON && b.Bytes[0] == 'n' {
		return value{}, nil
	}
	c, err := st.compare(a, b)
	if err != nil {
		return value{}, fmt.Errorf("operator %s: %w", n.op, err)
	}
	return boolV(cmpHolds(n.op, c)), nil
}

func cmpHolds(op string, c int) bool {
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

type andNode struct{ l, r node }

func (n *andNode) eval(st *state) (value, error) {
	a, err := st.cond(n.l)
	if err != nil || a == triFalse {
		return triFalse.value(), err
	}
	b, err := st.cond(n.r)
	if err != nil {
		return value{}, err
	}
	if b == triFalse {
		return triFalse.value(), nil
	}
	if a == triNull || b == triNull {
		return value{}, nil
	}
	return triTrue.value(), nil
}

type orNode struct{ l, r node }

func (n *orNode) eval(st *state) (value, error) {
	a, err := st.cond(n.l)
	if err != nil {
		return value{}, err
	}
	if a == triTrue {
		return triTrue.value(), nil
	}
	b, err := st.cond(n.r)
	if err != nil {
		return value{}, err
	}
	if b == triTrue {
		return triTrue.value(), nil
	}
	if a == triNull || b == triNull {
		return value{}, nil
	}
	return triFalse.value(), nil
}

type notNode struct{ x node }

func (n *notNode) eval(st *state) (value, error) {
	t, err := st.cond(n.x)
	switch {
	case err != nil:
		return value{}, err
	case t == triNull:
		return value{}, nil
	}
	return boolV(t == triFalse), nil
}

// cond evaluates x as a condition.
func (st *state) cond(x node) (tri, error) {
	v, err := x.eval(st)
	if err != nil {
		return triNull, err
	}
	return st.truth(v)
}

// likeNode is [NOT] LIKE / ILIKE; backslash escapes % and _.
type likeNode struct {
	x, pat node      // pat is nil when constant
	toks   []likeTok // the constant pattern
	fold   bool      // ILIKE
	not    bool
}

func (n *likeNode) eval(st *state) (value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == kNull {
		return value{}, err
	}
	s, null := st.text(v)
	if null {
		return value{}, nil
	}
	toks := n.toks
	if n.pat != nil {
		pv, err := n.pat.eval(st)
		if err != nil || pv.Kind == kNull {
			return value{}, err
		}
		p, null := st.text(pv)
		if null {
			return value{}, nil
		}
		if n.fold {
			start := len(st.Scratch)
			st.Scratch = appendLower(st.Scratch, p)
			p = st.carve(start)
		}
		toks = compileLike(p)
	}
	if n.fold {
		start := len(st.Scratch)
		st.Scratch = appendLower(st.Scratch, s)
		s = st.carve(start)
	}
	return boolV(likeMatch(toks, s) != n.not), nil
}

const (
	likeLit = iota
	likeOne // _
	likeAny // %
)

type likeTok struct {
	kind uint8
	lit  []byte
}

func compileLike(p []byte) []likeTok {
	var toks []likeTok
	var lit []byte
	flush := func() {
		if lit != nil {
			toks = append(toks, likeTok{kind: likeLit, lit: lit})
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
				toks = append(toks, likeTok{kind: likeAny})
			}
		case c == '_':
			flush()
			toks = append(toks, likeTok{kind: likeOne})
		default:
			lit = append(lit, c)
		}
	}
	flush()
	return toks
}

// likeMatch matches s against the pattern, backtracking only to the last
// %, so it runs in O(len(s)·len(pattern)) at worst.
func likeMatch(toks []likeTok, s []byte) bool {
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

// rlikeNode is [NOT] RLIKE and regexp_like: an unanchored RE2 match.
type rlikeNode struct {
	x, pat node // pat is nil when constant
	re     *regexp.Regexp
	not    bool
}

func (n *rlikeNode) eval(st *state) (value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == kNull {
		return value{}, err
	}
	s, null := st.text(v)
	if null {
		return value{}, nil
	}
	re := n.re
	if n.pat != nil {
		if re, err = st.regexpArg(n.pat); err != nil || re == nil {
			return value{}, err
		}
	}
	return boolV(re.Match(s) != n.not), nil
}

// regexpArg evaluates and compiles a pattern that is not constant; nil for
// NULL.
func (st *state) regexpArg(x node) (*regexp.Regexp, error) {
	pv, err := x.eval(st)
	if err != nil {
		return nil, err
	}
	p, null := st.text(pv)
	if null {
		return nil, nil
	}
	re, err := regexp.Compile(string(p))
	if err != nil {
		return nil, fmt.Errorf("bad regular expression: %w", err)
	}
	return re, nil
}

type inNode struct {
	x    node
	list []node
	not  bool
}

func (n *inNode) eval(st *state) (value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == kNull {
		return value{}, err
	}
	sawNull := false
	for _, e := range n.list {
		w, err := e.eval(st)
		if err != nil {
			return value{}, err
		}
		if w.Kind == kNull {
			sawNull = true
			continue
		}
		c, err := st.compare(v, w)
		if err != nil {
			return value{}, fmt.Errorf("IN: %w", err)
		}
		if c == 0 {
			return boolV(!n.not), nil
		}
	}
	if sawNull {
		return value{}, nil
	}
	return boolV(n.not), nil
}

type betweenNode struct {
	x, lo, hi node
	not       bool
}

func (n *betweenNode) eval(st *state) (value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == kNull {
		return value{}, err
	}
	bound := func(b node, want func(int) bool) (tri, error) {
		w, err := b.eval(st)
		if err != nil || w.Kind == kNull {
			return triNull, err
		}
		c, err := st.compare(v, w)
		if err != nil {
			return triNull, fmt.Errorf("BETWEEN: %w", err)
		}
		return triOf(want(c)), nil
	}
	lo, err := bound(n.lo, func(c int) bool { return c >= 0 })
	if err != nil {
		return value{}, err
	}
	hi, err := bound(n.hi, func(c int) bool { return c <= 0 })
	if err != nil {
		return value{}, err
	}
	var t tri
	switch {
	case lo == triFalse || hi == triFalse:
		t = triFalse
	case lo == triNull || hi == triNull:
		return value{}, nil
	default:
		t = triTrue
	}
	if n.not {
		t = triOf(t == triFalse)
	}
	return t.value(), nil
}

type isNullNode struct {
	x   node
	not bool
}

func (n *isNullNode) eval(st *state) (value, error) {
	v, err := n.x.eval(st)
	if err != nil {
		return value{}, err
	}
	null := v.Kind == kNull || v.Kind == kJSON && v.Bytes[0] == 'n'
	return boolV(null != n.not), nil
}

type when struct{ cond, res node }

// caseNode is CASE [operand] WHEN … THEN … [ELSE …] END; only the chosen
// branch is evaluated.
type caseNode struct {
	operand node // nil for a searched CASE
	whens   []when
	els     node // nil: NULL
}

func (n *caseNode) eval(st *state) (value, error) {
	var op value
	if n.operand != nil {
		var err error
		if op, err = n.operand.eval(st); err != nil {
			return value{}, err
		}
	}
	for _, w := range n.whens {
		if n.operand == nil {
			t, err := st.cond(w.cond)
			if err != nil {
				return value{}, err
			}
			if t == triTrue {
				return w.res.eval(st)
			}
			continue
		}
		if op.Kind == kNull {
			break
		}
		c, err := w.cond.eval(st)
		if err != nil {
			return value{}, err
		}
		if c.Kind == kNull {
			continue
		}
		d, err := st.compare(op, c)
		if err != nil {
			return value{}, fmt.Errorf("CASE: %w", err)
		}
		if d == 0 {
			return w.res.eval(st)
		}
	}
	if n.els == nil {
		return value{}, nil
	}
	return n.els.eval(st)
}

// coalesceNode evaluates its arguments in order up to the first not NULL.
type coalesceNode struct{ args []node }

func (n *coalesceNode) eval(st *state) (value, error) {
	for _, a := range n.args {
		v, err := a.eval(st)
		if err != nil || v.Kind != kNull {
			return v, err
		}
	}
	return value{}, nil
}

// ifNode is IF(cond, a, b): a when cond is TRUE, else b.
type ifNode struct{ cond, a, b node }

func (n *ifNode) eval(st *state) (value, error) {
	t, err := st.cond(n.cond)
	if err != nil {
		return value{}, err
	}
	if t == triTrue {
		return n.a.eval(st)
	}
	return n.b.eval(st)
}

// intervalNode is ts ± INTERVAL n UNIT.
type intervalNode struct {
	x, n node
	unit string
	sign int64
}

var unitDurations = map[string]time.Duration{
	"HOUR": time.Hour, "MINUTE": time.Minute, "SECOND": time.Second,
	"MILLISECOND": time.Millisecond, "MICROSECOND": time.Microsecond,
}

func (n *intervalNode) eval(st *state) (value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == kNull {
		return value{}, err
	}
	c, err := n.n.eval(st)
	if err != nil || c.Kind == kNull {
		return value{}, err
	}
	if c, err = st.cast(c, bigintTarget); err != nil {
		return value{}, fmt.Errorf("INTERVAL: %w", err)
	}
	k := c.Int * n.sign
	date := v.Kind == kDate
	if v, err = st.cast(v, timestampTarget); err != nil {
		return value{}, fmt.Errorf("INTERVAL: %w", err)
	}
	t := v.Time
	if d, ok := unitDurations[n.unit]; ok {
		if k > math.MaxInt64/int64(d) || k < math.MinInt64/int64(d) {
			return value{}, fmt.Errorf("INTERVAL %d %s: out of range", k, n.unit)
		}
		return timeV(t.Add(time.Duration(k) * d)), nil
	}
	if k > 1e6 || k < -1e6 {
		return value{}, fmt.Errorf("INTERVAL %d %s: out of range", k, n.unit)
	}
	switch n.unit {
	case "YEAR":
		t = addMonths(t, 12*int(k))
	case "QUARTER":
		t = addMonths(t, 3*int(k))
	case "MONTH":
		t = addMonths(t, int(k))
	case "WEEK":
		t = t.AddDate(0, 0, 7*int(k))
	default: // DAY
		t = t.AddDate(0, 0, int(k))
	}
	if date {
		return dateV(t), nil
	}
	return timeV(t), nil
}

// addMonths adds months, keeping the day of the month but not past the
// month's last day (Spark's add_months): Jan 31 + 1 month = Feb 29 in 2024.
func addMonths(t time.Time, months int) time.Time {
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

// callNode calls a function whose arguments are all evaluated first; when
// strict, a NULL argument gives NULL without calling it.
type callNode struct {
	name   string
	fn     fnImpl
	args   []node
	strict bool
}

func (n *callNode) eval(st *state) (value, error) {
	base := len(st.stack)
	for _, a := range n.args {
		v, err := a.eval(st)
		if err != nil || n.strict && v.Kind == kNull {
			st.stack = st.stack[:base]
			return value{}, err
		}
		st.stack = append(st.stack, v)
	}
	v, err := n.fn(&st.Ctx, st.stack[base:])
	st.stack = st.stack[:base]
	if err != nil {
		return value{}, fmt.Errorf("%s: %w", n.name, err)
	}
	return v, nil
}
