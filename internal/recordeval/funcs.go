package recordeval

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/recordeval/rawjson"
	"github.com/lakepipe/lakepipe/internal/recordeval/values"
	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// funcDef describes a scalar function.
type funcDef struct {
	min, max int         // argument counts; max < 0: no limit
	kind     values.Kind // result kind when always the same, else KUnknown
	impl     values.Fn
	nullArgs bool // impl sees NULL arguments; otherwise a NULL argument gives NULL
	// build compiles special forms (lazy arguments, constant patterns,
	// memoized JSON); impl is unused then.
	build func(c *compiler, f *sqlast.FuncCall, args []node) (node, error)
}

// funcs are the scalar functions, by lower-case name. Filled by init, as
// build functions refer back to the compiler.
var funcs map[string]*funcDef

func init() {
	coalesce := &funcDef{min: 1, max: -1, build: buildCoalesce}
	ifFn := &funcDef{min: 3, max: 3, build: buildIf}
	now := &funcDef{min: 0, max: 0, kind: values.KTime, build: func(*compiler, *sqlast.FuncCall, []node) (node, error) { return &nowNode{}, nil }}
	jsonGet := &funcDef{min: 2, max: 2, kind: values.KString, build: buildGetJSON}
	funcs = map[string]*funcDef{
		// text
		"regexp_extract": {min: 2, max: 3, kind: values.KString, build: buildRegexpExtract},
		"regexp_replace": {min: 3, max: 3, kind: values.KString, build: buildRegexpReplace},
		"regexp_like":    {min: 2, max: 2, kind: values.KBool, build: buildRegexpLike},
		// NULL handling and conditions
		"coalesce": coalesce,
		"nvl":      {min: 2, max: 2, build: buildCoalesce},
		"ifnull":   {min: 2, max: 2, build: buildCoalesce},
		"if":       ifFn,
		"iff":      ifFn,
		// time
		"to_timestamp":      {min: 1, max: 2, kind: values.KTime, build: buildToTime(values.KTime, false)},
		"try_to_timestamp":  {min: 1, max: 2, kind: values.KTime, build: buildToTime(values.KTime, true)},
		"to_date":           {min: 1, max: 2, kind: values.KDate, build: buildToTime(values.KDate, false)},
		"try_to_date":       {min: 1, max: 2, kind: values.KDate, build: buildToTime(values.KDate, true)},
		"from_unixtime":     {min: 1, max: 2, kind: values.KString, build: buildFromUnixtime},
		"unix_timestamp":    {min: 0, max: 2, kind: values.KInt, build: buildUnixTimestamp},
		"date_format":       {min: 2, max: 2, kind: values.KString, build: buildDateFormat},
		"current_timestamp": now,
		"now":               now,
		"current_date": {min: 0, max: 0, kind: values.KDate, build: func(*compiler, *sqlast.FuncCall, []node) (node, error) {
			return &nowNode{date: true}, nil
		}},
		// JSON
		"parse_json":      {min: 1, max: 1, kind: values.KJSON, build: buildParseJSON(false)},
		"try_parse_json":  {min: 1, max: 1, kind: values.KJSON, build: buildParseJSON(true)},
		"get_json_object": jsonGet,
		"json_extract":    jsonGet,
	}
	for name, f := range values.Funcs() {
		funcs[name] = &funcDef{min: f.Min, max: f.Max, kind: f.Kind, impl: f.Call, nullArgs: f.NullArgs}
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

// ---- text ----

// constText returns the text of a constant argument.
func constText(n node) (string, bool) {
	c, ok := n.(*constNode)
	if !ok || c.v.Kind != values.KString {
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
		if c, ok := args[2].(*constNode); ok && c.v.Kind == values.KInt {
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

func (n *regexpExtractNode) eval(st *state) (values.Value, error) {
	sv, err := n.s.eval(st)
	if err != nil || sv.Kind == values.KNull {
		return values.Value{}, err
	}
	re, g := n.re, n.g
	if n.pat != nil {
		if re, err = st.regexpArg(n.pat); err != nil || re == nil {
			return values.Value{}, wrapFn("regexp_extract", err)
		}
	}
	if n.group != nil {
		gv, err := n.group.eval(st)
		if err != nil || gv.Kind == values.KNull {
			return values.Value{}, err
		}
		if g, err = st.IntArg(gv, "group"); err != nil {
			return values.Value{}, wrapFn("regexp_extract", err)
		}
	}
	if g < 0 || g > int64(re.NumSubexp()) {
		return values.Value{}, fmt.Errorf("regexp_extract: group %d does not exist: the pattern has %d", g, re.NumSubexp())
	}
	s, _ := st.Text(sv)
	m := re.FindSubmatchIndex(s)
	if m == nil || m[2*g] < 0 {
		return values.String(s[:0]), nil
	}
	return values.String(s[m[2*g]:m[2*g+1]]), nil
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
		n.tmpl = values.JavaReplacement([]byte(r), n.re.NumSubexp())
	} else {
		n.rep = args[2]
	}
	return n, nil
}

func (n *regexpReplaceNode) eval(st *state) (values.Value, error) {
	sv, err := n.s.eval(st)
	if err != nil || sv.Kind == values.KNull {
		return values.Value{}, err
	}
	re, tmpl := n.re, n.tmpl
	if n.pat != nil {
		if re, err = st.regexpArg(n.pat); err != nil || re == nil {
			return values.Value{}, wrapFn("regexp_replace", err)
		}
	}
	if n.rep != nil {
		rv, err := n.rep.eval(st)
		if err != nil || rv.Kind == values.KNull {
			return values.Value{}, err
		}
		r, _ := st.Text(rv)
		tmpl = values.JavaReplacement(r, re.NumSubexp())
	}
	s, _ := st.Text(sv)
	return values.String(re.ReplaceAll(s, tmpl)), nil
}

// ---- NULL handling ----

func buildCoalesce(_ *compiler, _ *sqlast.FuncCall, args []node) (node, error) {
	return &coalesceNode{args: args}, nil
}

func buildIf(_ *compiler, _ *sqlast.FuncCall, args []node) (node, error) {
	return &ifNode{cond: args[0], a: args[1], b: args[2]}, nil
}

// ---- numbers ----

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
		l, err := values.JavaLayout(p)
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
	if err != nil || v.Kind == values.KNull {
		return "", false, err
	}
	p, _ := st.Text(v)
	layout, err := values.JavaLayout(string(p))
	return layout, err == nil, err
}

// toTimeNode is to_timestamp / to_date (and their try_ forms) with a
// format; without one they are casts.
type toTimeNode struct {
	x      node
	layout layoutArg
	date   bool
	try    bool
	name   string
}

func buildToTime(k values.Kind, try bool) func(*compiler, *sqlast.FuncCall, []node) (node, error) {
	return func(_ *compiler, f *sqlast.FuncCall, args []node) (node, error) {
		if len(args) == 1 {
			t := values.TimestampTarget
			if k == values.KDate {
				t = values.DateTarget
			}
			return newCast(args[0], t, try), nil
		}
		l, err := newLayoutArg(args, 1, "")
		if err != nil {
			return nil, err
		}
		return &toTimeNode{x: args[0], layout: l, date: k == values.KDate, try: try, name: f.Name}, nil
	}
}

func (n *toTimeNode) eval(st *state) (values.Value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == values.KNull {
		return values.Value{}, err
	}
	layout, ok, err := n.layout.get(st)
	if err != nil || !ok {
		return values.Value{}, wrapFn(n.name, err)
	}
	t, err := st.ParseLayout(v, layout)
	if err != nil {
		if n.try {
			return values.Value{}, nil
		}
		return values.Value{}, wrapFn(n.name, err)
	}
	if n.date {
		return values.Date(values.TruncDay(t)), nil
	}
	return values.Timestamp(t), nil
}

// fromUnixtimeNode is from_unixtime(seconds[, format]): text in UTC,
// yyyy-MM-dd HH:mm:ss by default.
type fromUnixtimeNode struct {
	x      node
	layout layoutArg
}

func buildFromUnixtime(_ *compiler, _ *sqlast.FuncCall, args []node) (node, error) {
	l, err := newLayoutArg(args, 1, values.DefaultLayout)
	if err != nil {
		return nil, err
	}
	return &fromUnixtimeNode{x: args[0], layout: l}, nil
}

func (n *fromUnixtimeNode) eval(st *state) (values.Value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == values.KNull {
		return values.Value{}, err
	}
	sec, err := st.IntArg(v, "seconds")
	if err != nil {
		return values.Value{}, wrapFn("from_unixtime", err)
	}
	layout, ok, err := n.layout.get(st)
	if err != nil || !ok {
		return values.Value{}, wrapFn("from_unixtime", err)
	}
	start := len(st.Scratch)
	st.Scratch = time.Unix(sec, 0).UTC().AppendFormat(st.Scratch, layout)
	return st.StrResult(start)
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

func (n *unixTimestampNode) eval(st *state) (values.Value, error) {
	if n.x == nil {
		return values.Int(st.Now().Unix()), nil
	}
	v, err := n.x.eval(st)
	if err != nil || v.Kind == values.KNull {
		return values.Value{}, err
	}
	if n.layout == nil {
		t, err := st.Cast(v, &values.TimestampTarget)
		if err != nil || t.Kind == values.KNull {
			return values.Value{}, wrapFn("unix_timestamp", err)
		}
		return values.Int(t.Time().Unix()), nil
	}
	layout, ok, err := n.layout.get(st)
	if err != nil || !ok {
		return values.Value{}, wrapFn("unix_timestamp", err)
	}
	t, err := st.ParseLayout(v, layout)
	if err != nil {
		return values.Value{}, wrapFn("unix_timestamp", err)
	}
	return values.Int(t.Unix()), nil
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

func (n *dateFormatNode) eval(st *state) (values.Value, error) {
	v, err := n.x.eval(st)
	if err != nil || v.Kind == values.KNull {
		return values.Value{}, err
	}
	t, err := st.Cast(v, &values.TimestampTarget)
	if err != nil || t.Kind == values.KNull {
		return values.Value{}, wrapFn("date_format", err)
	}
	layout, ok, err := n.layout.get(st)
	if err != nil || !ok {
		return values.Value{}, wrapFn("date_format", err)
	}
	start := len(st.Scratch)
	st.Scratch = t.Time().UTC().AppendFormat(st.Scratch, layout)
	return st.StrResult(start)
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
