package recordeval

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/lakepipe/lakepipe/internal/recordeval/rawjson"
	"github.com/lakepipe/lakepipe/internal/recordeval/values"
	"github.com/lakepipe/lakepipe/internal/rowio"
)

// node is a compiled expression.
type node interface {
	eval(st *state) (values.Value, error)
}

type constNode struct{ v values.Value }

func (n *constNode) eval(*state) (values.Value, error) { return n.v, nil }

type colNode struct{ col int }

func (n *colNode) eval(st *state) (values.Value, error) {
	r := st.r
	switch n.col {
	case colKey:
		if st.p.keyJSON {
			return values.JSONOrNull(st.keyRaw), nil
		}
		if r.Key == nil {
			return values.Value{}, nil
		}
		return values.String(r.Key), nil
	case colValue:
		if st.p.valueJSON {
			return values.JSONOrNull(st.valRaw), nil
		}
		if r.Value == nil {
			return values.Value{}, nil
		}
		return values.String(r.Value), nil
	case colTopic:
		return values.String(values.UnsafeBytes(r.Topic)), nil
	case colPartition:
		return values.Int(int64(r.Partition)), nil
	case colOffset:
		return values.Int(r.Offset), nil
	case colTimestamp:
		if r.Timestamp.IsZero() {
			return values.Value{}, nil
		}
		return values.Timestamp(r.Timestamp.UTC()), nil
	case colHeaders:
		return values.JSON(st.headerJSON()), nil
	}
	return values.Value{}, fmt.Errorf("internal error: column %d", n.col)
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
		b = rawjson.AppendQuoted(b, values.UnsafeBytes(h.Key))
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

func (n *nowNode) eval(st *state) (values.Value, error) {
	if n.date {
		return values.Date(values.TruncDay(st.Now())), nil
	}
	return values.Timestamp(st.Now()), nil
}

// castNode is CAST, TRY_CAST and ::. TRY_CAST only turns the conversion's
// failure into NULL, not errors of its operand.
type castNode struct {
	x     node
	t     values.Target
	try   bool
	field *indexNode // x, when it is PARSE_JSON(…)['key']
	// same: x is the key or value of a 'raw' record (bytes or NULL) and t
	// a STRING type, a cast that gives x back as it is: VALUE::STRING, the
	// argument of most PARSE_JSONs.
	same bool
}

func (n *castNode) eval(st *state) (v values.Value, err error) {
	if n.same {
		return n.x.eval(st)
	}
	if n.field != nil {
		v, err = n.field.parsedKey(st)
	} else {
		v, err = n.x.eval(st)
	}
	if err != nil {
		return v, err
	}
	r, err := st.Cast(v, &n.t)
	if err != nil && n.try {
		return values.Value{}, nil
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
	// parsed is x when x is PARSE_JSON(…) and the index a constant key:
	// eval then calls it directly (parsedKey).
	parsed *parseJSONNode
}

func (n *indexNode) eval(st *state) (values.Value, error) {
	if n.parsed != nil {
		return n.parsedKey(st)
	}
	v, err := n.x.eval(st)
	if err != nil || v.Kind != values.KJSON {
		return values.Value{}, err
	}
	key, idx, isKey := n.key, n.n, n.isKey
	if n.index != nil {
		iv, err := n.index.eval(st)
		if err != nil {
			return values.Value{}, err
		}
		switch iv = st.Scalar(iv); iv.Kind {
		case values.KString:
			key, isKey = iv.Bytes, true
		case values.KInt:
			idx, isKey = iv.Int, false
		default:
			return values.Value{}, nil
		}
	}
	if isKey {
		if n.root >= 0 {
			m, _ := st.memo[n.root].get(v.Bytes, key, &st.tmp)
			return values.JSONOrNull(m), nil
		}
		return values.JSONOrNull(rawjson.ObjectGet(v.Bytes, key, &st.tmp)), nil
	}
	return values.JSONOrNull(rawjson.ArrayGet(v.Bytes, idx)), nil
}

// parsedKey is eval of PARSE_JSON(…)['key'] (n.parsed set): the same steps,
// with no interface call and no Value handed between them.
func (n *indexNode) parsedKey(st *state) (values.Value, error) {
	m, _, err := n.member(st)
	return values.JSONOrNull(m), err
}

// member is parsedKey's raw JSON member, nil when the value is NULL;
// plain is true when it is a plain string (rawjson.MemberFunc).
func (n *indexNode) member(st *state) (m []byte, plain bool, err error) {
	p := n.parsed
	raw, err := st.parseMemo(p.x, p.slot, p.what)
	if err != nil {
		if p.try && errors.Is(err, errNotJSON) {
			return nil, false, nil
		}
		return nil, false, err
	}
	if values.JSONOrNull(raw).Kind != values.KJSON {
		return nil, false, nil
	}
	m, plain = st.memo[n.root].get(raw, n.key, &st.tmp)
	return m, plain, nil
}

// emit is eval of CAST(PARSE_JSON(…)['key'] AS t) (n.field set) writing
// its cell straight into vec, column i of the row Program.append is
// building. A member that is a plain JSON string (no escape, only ASCII:
// its text is between its quotes) cast to STRING, or to TIMESTAMP when it
// reads as one, skips the general cast and the value handed between nodes;
// everything else, errors included, takes the general steps, so the cell
// is the one eval gives.
func (n *castNode) emit(st *state, i int, vec *rowio.Vector) error {
	m, plain, err := n.field.member(st)
	if err != nil {
		return err
	}
	if plain {
		s := m[1 : len(m)-1]
		switch {
		case n.t.Kind == values.KString && vec.Text != nil:
			vec.Text = append(vec.Text, st.out.put(s))
			vec.Null = append(vec.Null, false)
			return nil
		case n.t.Kind == values.KTime && vec.Time != nil:
			if tm, err := values.TextTimestamp(s); err == nil {
				vec.Time = append(vec.Time, values.Timestamp(tm).Time())
				vec.Null = append(vec.Null, false)
				return nil
			}
		}
	}
	v, err := st.Cast(values.JSONOrNull(m), &n.t)
	if err != nil {
		if !n.try {
			return err
		}
		v = values.Value{}
	}
	return st.p.put(st, i, v, vec)
}

// parseJSONNode is PARSE_JSON(x) and TRY_PARSE_JSON(x), memoized per record
// in slot.
type parseJSONNode struct {
	x    node
	slot int
	what string // the argument's text, for messages
	try  bool
}

func (n *parseJSONNode) eval(st *state) (values.Value, error) {
	raw, err := st.parseMemo(n.x, n.slot, n.what)
	if err != nil {
		if n.try && errors.Is(err, errNotJSON) {
			return values.Value{}, nil
		}
		return values.Value{}, err
	}
	return values.JSONOrNull(raw), nil
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
	switch {
	case v.Kind == values.KNull:
		m.set(st.gen, nil, nil)
		return nil, nil
	case v.Kind == values.KJSON && v.Bytes[0] != '"':
		m.set(st.gen, v.Bytes, nil)
		return v.Bytes, nil
	}
	// Text, or a JSON string holding JSON text.
	s, _ := st.Text(v)
	raw, err := m.parse(st.gen, s)
	if err != nil {
		err = fmt.Errorf("%s is %w: %w", what, errNotJSON, err)
		m.set(st.gen, nil, err)
	}
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

func (n *getJSONNode) eval(st *state) (values.Value, error) {
	raw, err := st.parseMemo(n.x, n.slot, n.what)
	if err != nil && !errors.Is(err, errNotJSON) {
		return values.Value{}, err
	}
	if raw == nil {
		return values.Value{}, nil
	}
	steps := n.steps
	if n.path != nil {
		p, err := n.path.eval(st)
		if err != nil || p.Kind == values.KNull {
			return values.Value{}, err
		}
		s, _ := st.Text(p)
		if steps, err = rawjson.ParsePath(string(s)); err != nil {
			return values.Value{}, nil
		}
	}
	v := values.JSONOrNull(rawjson.WalkPath(raw, steps, &st.tmp))
	if v.Kind == values.KNull {
		return v, nil
	}
	s, _ := st.Text(v)
	return values.String(s), nil
}

// ---- operators ----

type arithNode struct {
	op   byte // + - * / %
	l, r node
}

func (n *arithNode) eval(st *state) (values.Value, error) {
	a, err := n.l.eval(st)
	if err != nil || a.Kind == values.KNull {
		return values.Value{}, err
	}
	b, err := n.r.eval(st)
	if err != nil || b.Kind == values.KNull {
		return values.Value{}, err
	}
	if a, err = st.Number(a); err != nil {
		return values.Value{}, fmt.Errorf("operator %c: %w", n.op, err)
	}
	if b, err = st.Number(b); err != nil {
		return values.Value{}, fmt.Errorf("operator %c: %w", n.op, err)
	}
	if a.Kind == values.KNull || b.Kind == values.KNull {
		return values.Value{}, nil
	}
	v, err := values.Arith(n.op, a, b)
	if err != nil {
		return values.Value{}, fmt.Errorf("%s %c %s: %w", values.Describe(a), n.op, values.Describe(b), err)
	}
	return v, nil
}

type negNode struct{ x node }

func (n *negNode) eval(st *state) (values.Value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == values.KNull {
		return values.Value{}, err
	}
	if v, err = st.Number(v); err != nil {
		return values.Value{}, fmt.Errorf("unary -: %w", err)
	}
	switch v.Kind {
	case values.KInt:
		if v.Int == math.MinInt64 {
			return values.Value{}, fmt.Errorf("-%d: %w", v.Int, values.ErrOverflow)
		}
		return values.Int(-v.Int), nil
	case values.KFloat:
		return values.Float(-v.Float), nil
	case values.KDecimal:
		return values.Decimal(values.UnsafeBytes(values.ToDecimal(v).Neg().String())), nil
	}
	return v, nil
}

type concatNode struct{ l, r node }

func (n *concatNode) eval(st *state) (values.Value, error) {
	a, err := n.l.eval(st)
	if err != nil || a.Kind == values.KNull {
		return values.Value{}, err
	}
	b, err := n.r.eval(st)
	if err != nil || b.Kind == values.KNull {
		return values.Value{}, err
	}
	x, xn := st.Text(a)
	y, yn := st.Text(b)
	if xn || yn {
		return values.Value{}, nil
	}
	start := len(st.Scratch)
	st.Scratch = append(append(st.Scratch, x...), y...)
	return values.String(st.Carve(start)), nil
}

type cmpNode struct {
	op   string // = <> < <= > >=
	l, r node
}

func (n *cmpNode) eval(st *state) (values.Value, error) {
	a, err := n.l.eval(st)
	if err != nil || a.Kind == values.KNull {
		return values.Value{}, err
	}
	b, err := n.r.eval(st)
	if err != nil || b.Kind == values.KNull {
		return values.Value{}, err
	}
	if a.Kind == values.KJSON && a.Bytes[0] == 'n' || b.Kind == values.KJSON && b.Bytes[0] == 'n' {
		return values.Value{}, nil
	}
	c, err := st.Compare(a, b)
	if err != nil {
		return values.Value{}, fmt.Errorf("operator %s: %w", n.op, err)
	}
	return values.Bool(values.CmpHolds(n.op, c)), nil
}

type andNode struct{ l, r node }

func (n *andNode) eval(st *state) (values.Value, error) {
	a, err := st.cond(n.l)
	if err != nil || a == values.TriFalse {
		return values.TriFalse.Value(), err
	}
	b, err := st.cond(n.r)
	if err != nil {
		return values.Value{}, err
	}
	if b == values.TriFalse {
		return values.TriFalse.Value(), nil
	}
	if a == values.TriNull || b == values.TriNull {
		return values.Value{}, nil
	}
	return values.TriTrue.Value(), nil
}

type orNode struct{ l, r node }

func (n *orNode) eval(st *state) (values.Value, error) {
	a, err := st.cond(n.l)
	if err != nil {
		return values.Value{}, err
	}
	if a == values.TriTrue {
		return values.TriTrue.Value(), nil
	}
	b, err := st.cond(n.r)
	if err != nil {
		return values.Value{}, err
	}
	if b == values.TriTrue {
		return values.TriTrue.Value(), nil
	}
	if a == values.TriNull || b == values.TriNull {
		return values.Value{}, nil
	}
	return values.TriFalse.Value(), nil
}

type notNode struct{ x node }

func (n *notNode) eval(st *state) (values.Value, error) {
	t, err := st.cond(n.x)
	switch {
	case err != nil:
		return values.Value{}, err
	case t == values.TriNull:
		return values.Value{}, nil
	}
	return values.Bool(t == values.TriFalse), nil
}

// cond evaluates x as a condition.
func (st *state) cond(x node) (values.Tri, error) {
	v, err := x.eval(st)
	if err != nil {
		return values.TriNull, err
	}
	return st.Truth(v)
}

// likeNode is [NOT] LIKE / ILIKE; backslash escapes % and _.
type likeNode struct {
	x, pat node             // pat is nil when constant
	toks   []values.LikeTok // the constant pattern
	fold   bool             // ILIKE
	not    bool
}

func (n *likeNode) eval(st *state) (values.Value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == values.KNull {
		return values.Value{}, err
	}
	s, null := st.Text(v)
	if null {
		return values.Value{}, nil
	}
	toks := n.toks
	if n.pat != nil {
		pv, err := n.pat.eval(st)
		if err != nil || pv.Kind == values.KNull {
			return values.Value{}, err
		}
		p, null := st.Text(pv)
		if null {
			return values.Value{}, nil
		}
		if n.fold {
			start := len(st.Scratch)
			st.Scratch = values.AppendLower(st.Scratch, p)
			p = st.Carve(start)
		}
		toks = values.CompileLike(p)
	}
	if n.fold {
		start := len(st.Scratch)
		st.Scratch = values.AppendLower(st.Scratch, s)
		s = st.Carve(start)
	}
	return values.Bool(values.LikeMatch(toks, s) != n.not), nil
}

// rlikeNode is [NOT] RLIKE and regexp_like: an unanchored RE2 match.
type rlikeNode struct {
	x, pat node // pat is nil when constant
	re     *regexp.Regexp
	not    bool
}

func (n *rlikeNode) eval(st *state) (values.Value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == values.KNull {
		return values.Value{}, err
	}
	s, null := st.Text(v)
	if null {
		return values.Value{}, nil
	}
	re := n.re
	if n.pat != nil {
		if re, err = st.regexpArg(n.pat); err != nil || re == nil {
			return values.Value{}, err
		}
	}
	return values.Bool(re.Match(s) != n.not), nil
}

// regexpArg evaluates and compiles a pattern that is not constant; nil for
// NULL.
func (st *state) regexpArg(x node) (*regexp.Regexp, error) {
	pv, err := x.eval(st)
	if err != nil {
		return nil, err
	}
	p, null := st.Text(pv)
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

func (n *inNode) eval(st *state) (values.Value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == values.KNull {
		return values.Value{}, err
	}
	sawNull := false
	for _, e := range n.list {
		w, err := e.eval(st)
		if err != nil {
			return values.Value{}, err
		}
		if w.Kind == values.KNull {
			sawNull = true
			continue
		}
		c, err := st.Compare(v, w)
		if err != nil {
			return values.Value{}, fmt.Errorf("IN: %w", err)
		}
		if c == 0 {
			return values.Bool(!n.not), nil
		}
	}
	if sawNull {
		return values.Value{}, nil
	}
	return values.Bool(n.not), nil
}

type betweenNode struct {
	x, lo, hi node
	not       bool
}

func (n *betweenNode) eval(st *state) (values.Value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == values.KNull {
		return values.Value{}, err
	}
	bound := func(b node, want func(int) bool) (values.Tri, error) {
		w, err := b.eval(st)
		if err != nil || w.Kind == values.KNull {
			return values.TriNull, err
		}
		c, err := st.Compare(v, w)
		if err != nil {
			return values.TriNull, fmt.Errorf("BETWEEN: %w", err)
		}
		return values.TriOf(want(c)), nil
	}
	lo, err := bound(n.lo, func(c int) bool { return c >= 0 })
	if err != nil {
		return values.Value{}, err
	}
	hi, err := bound(n.hi, func(c int) bool { return c <= 0 })
	if err != nil {
		return values.Value{}, err
	}
	var t values.Tri
	switch {
	case lo == values.TriFalse || hi == values.TriFalse:
		t = values.TriFalse
	case lo == values.TriNull || hi == values.TriNull:
		return values.Value{}, nil
	default:
		t = values.TriTrue
	}
	if n.not {
		t = values.TriOf(t == values.TriFalse)
	}
	return t.Value(), nil
}

type isNullNode struct {
	x   node
	not bool
}

func (n *isNullNode) eval(st *state) (values.Value, error) {
	v, err := n.x.eval(st)
	if err != nil {
		return values.Value{}, err
	}
	null := v.Kind == values.KNull || v.Kind == values.KJSON && v.Bytes[0] == 'n'
	return values.Bool(null != n.not), nil
}

type when struct{ cond, res node }

// caseNode is CASE [operand] WHEN … THEN … [ELSE …] END; only the chosen
// branch is evaluated.
type caseNode struct {
	operand node // nil for a searched CASE
	whens   []when
	els     node // nil: NULL
}

func (n *caseNode) eval(st *state) (values.Value, error) {
	var op values.Value
	if n.operand != nil {
		var err error
		if op, err = n.operand.eval(st); err != nil {
			return values.Value{}, err
		}
	}
	for _, w := range n.whens {
		if n.operand == nil {
			t, err := st.cond(w.cond)
			if err != nil {
				return values.Value{}, err
			}
			if t == values.TriTrue {
				return w.res.eval(st)
			}
			continue
		}
		if op.Kind == values.KNull {
			break
		}
		c, err := w.cond.eval(st)
		if err != nil {
			return values.Value{}, err
		}
		if c.Kind == values.KNull {
			continue
		}
		d, err := st.Compare(op, c)
		if err != nil {
			return values.Value{}, fmt.Errorf("CASE: %w", err)
		}
		if d == 0 {
			return w.res.eval(st)
		}
	}
	if n.els == nil {
		return values.Value{}, nil
	}
	return n.els.eval(st)
}

// coalesceNode evaluates its arguments in order up to the first not NULL.
type coalesceNode struct{ args []node }

func (n *coalesceNode) eval(st *state) (values.Value, error) {
	for _, a := range n.args {
		v, err := a.eval(st)
		if err != nil || v.Kind != values.KNull {
			return v, err
		}
	}
	return values.Value{}, nil
}

// ifNode is IF(cond, a, b): a when cond is TRUE, else b.
type ifNode struct{ cond, a, b node }

func (n *ifNode) eval(st *state) (values.Value, error) {
	t, err := st.cond(n.cond)
	if err != nil {
		return values.Value{}, err
	}
	if t == values.TriTrue {
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

func (n *intervalNode) eval(st *state) (values.Value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == values.KNull {
		return values.Value{}, err
	}
	c, err := n.n.eval(st)
	if err != nil || c.Kind == values.KNull {
		return values.Value{}, err
	}
	if c, err = st.Cast(c, &values.BigintTarget); err != nil {
		return values.Value{}, fmt.Errorf("INTERVAL: %w", err)
	}
	k := c.Int * n.sign
	date := v.Kind == values.KDate
	if v, err = st.Cast(v, &values.TimestampTarget); err != nil {
		return values.Value{}, fmt.Errorf("INTERVAL: %w", err)
	}
	t := v.Time()
	if d, ok := unitDurations[n.unit]; ok {
		if k > math.MaxInt64/int64(d) || k < math.MinInt64/int64(d) {
			return values.Value{}, fmt.Errorf("INTERVAL %d %s: out of range", k, n.unit)
		}
		return values.Timestamp(t.Add(time.Duration(k) * d)), nil
	}
	if k > 1e6 || k < -1e6 {
		return values.Value{}, fmt.Errorf("INTERVAL %d %s: out of range", k, n.unit)
	}
	switch n.unit {
	case "YEAR":
		t = values.AddMonths(t, 12*int(k))
	case "QUARTER":
		t = values.AddMonths(t, 3*int(k))
	case "MONTH":
		t = values.AddMonths(t, int(k))
	case "WEEK":
		t = t.AddDate(0, 0, 7*int(k))
	default: // DAY
		t = t.AddDate(0, 0, int(k))
	}
	if date {
		return values.Date(t), nil
	}
	return values.Timestamp(t), nil
}

// callNode calls a function whose arguments are all evaluated first; when
// strict, a NULL argument gives NULL without calling it.
type callNode struct {
	name   string
	fn     values.Fn
	args   []node
	strict bool
}

func (n *callNode) eval(st *state) (values.Value, error) {
	base := len(st.stack)
	for _, a := range n.args {
		v, err := a.eval(st)
		if err != nil || n.strict && v.Kind == values.KNull {
			st.stack = st.stack[:base]
			return values.Value{}, err
		}
		st.stack = append(st.stack, v)
	}
	v, err := n.fn(&st.Ctx, st.stack[base:])
	st.stack = st.stack[:base]
	if err != nil {
		return values.Value{}, fmt.Errorf("%s: %w", n.name, err)
	}
	return v, nil
}
