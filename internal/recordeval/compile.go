package recordeval

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/lakepipe/lakepipe/internal/recordeval/values"
	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// Compile checks and compiles sel, the SELECT of a Kafka pipe; its FROM (the
// READ_KAFKA call) is ignored. keyFormat and valueFormat are READ_KAFKA's 9th
// and 10th arguments: "raw" (also "") or "json", in any case. Errors name the
// select item or WHERE and what is wrong: an unknown column or function
// (listing what is available), an aggregate, window function or subquery
// (the SELECT is evaluated per record), a bad cast target, pattern or JSON
// path.
func Compile(sel *sqlast.Select, keyFormat, valueFormat string) (*Program, error) {
	if sel == nil {
		return nil, errors.New("recordeval: no SELECT to compile")
	}
	c := &compiler{slots: map[string]int{}}
	var err error
	if c.keyJSON, err = isJSONFormat("key", keyFormat); err != nil {
		return nil, err
	}
	if c.valueJSON, err = isJSONFormat("value", valueFormat); err != nil {
		return nil, err
	}
	switch {
	case sel.Distinct:
		return nil, perRecord("SELECT DISTINCT")
	case len(sel.GroupBy) > 0:
		return nil, perRecord("GROUP BY")
	case sel.Having != nil:
		return nil, perRecord("HAVING")
	}
	p := &Program{keyJSON: c.keyJSON, valueJSON: c.valueJSON, keySlot: -1, valSlot: -1}
	if c.keyJSON {
		p.keySlot = c.slot("\x00key")
	}
	if c.valueJSON {
		p.valSlot = c.slot("\x00value")
	}
	for i, it := range sel.Items {
		if it.Star {
			for col, name := range recordColumns {
				p.Columns = append(p.Columns, name)
				p.cols = append(p.cols, &colNode{col: col})
			}
			continue
		}
		n, err := c.expr(it.Expr)
		if err != nil {
			return nil, fmt.Errorf("select item %d (%s): %w", i+1, sqlast.FormatExpr(it.Expr), err)
		}
		p.Columns = append(p.Columns, outputName(it, i+1))
		p.cols = append(p.cols, n)
	}
	for _, n := range p.cols {
		p.kinds = append(p.kinds, staticKind(n))
		f, _ := n.(*castNode)
		if f != nil && f.field == nil {
			f = nil
		}
		p.fields = append(p.fields, f)
	}
	if sel.Where != nil {
		if p.where, err = c.expr(sel.Where); err != nil {
			return nil, fmt.Errorf("WHERE: %w", err)
		}
	}
	p.nslots = len(c.slots)
	return p, nil
}

func isJSONFormat(what, f string) (bool, error) {
	switch strings.ToLower(f) {
	case "", "raw":
		return false, nil
	case "json":
		return true, nil
	}
	return false, fmt.Errorf("%s format %q: READ_KAFKA supports 'raw' and 'json'", what, f)
}

func perRecord(what string) error {
	return fmt.Errorf("a Kafka pipe's SELECT is evaluated per record: %s is not supported", what)
}

// outputName is the alias, else the column name, else the last ['key'] of
// an index (looking through casts and parentheses), else col<n>.
func outputName(it sqlast.SelectItem, n int) string {
	if it.Alias != "" {
		return it.Alias
	}
	e := it.Expr
	for {
		switch x := e.(type) {
		case *sqlast.ParenExpr:
			e = x.X
			continue
		case *sqlast.CastExpr:
			e = x.X
			continue
		case *sqlast.ColumnRef:
			return x.Parts[len(x.Parts)-1]
		case *sqlast.IndexExpr:
			if l, ok := x.Index.(*sqlast.Literal); ok && l.Kind == sqlast.LitString {
				return l.Value
			}
		}
		return "col" + strconv.Itoa(n)
	}
}

type compiler struct {
	keyJSON, valueJSON bool
	slots              map[string]int // memo slot of each PARSE_JSON argument text
}

// slot returns the memo slot of a JSON argument, by its canonical text.
func (c *compiler) slot(key string) int {
	if s, ok := c.slots[key]; ok {
		return s
	}
	s := len(c.slots)
	c.slots[key] = s
	return s
}

func (c *compiler) expr(e sqlast.Expr) (node, error) {
	switch e := e.(type) {
	case *sqlast.ColumnRef:
		return c.column(e)
	case *sqlast.Literal:
		return literal(e.Kind, e.Value)
	case *sqlast.ParenExpr:
		return c.expr(e.X)
	case *sqlast.UnaryExpr:
		if l, ok := e.X.(*sqlast.Literal); ok && l.Kind == sqlast.LitNumber && e.Op == "-" {
			return literal(l.Kind, "-"+l.Value)
		}
		x, err := c.expr(e.X)
		if err != nil {
			return nil, err
		}
		switch e.Op {
		case "-":
			return &negNode{x: x}, nil
		case "+":
			return x, nil
		}
		return &notNode{x: x}, nil
	case *sqlast.BinaryExpr:
		return c.binary(e)
	case *sqlast.FuncCall:
		return c.call(e)
	case *sqlast.CastExpr:
		t, err := values.TargetOf(e.Type)
		if err != nil {
			return nil, err
		}
		x, err := c.expr(e.X)
		if err != nil {
			return nil, err
		}
		n := newCast(x, t, e.Try)
		n.same = t.Kind == values.KString && c.rawColumn(x)
		return n, nil
	case *sqlast.IndexExpr:
		return c.index(e)
	case *sqlast.CaseExpr:
		return c.caseExpr(e)
	case *sqlast.InExpr:
		if e.Query != nil {
			return nil, perRecord("IN (subquery)")
		}
		x, err := c.expr(e.X)
		if err != nil {
			return nil, err
		}
		list, err := c.exprs(e.List)
		if err != nil {
			return nil, err
		}
		return &inNode{x: x, list: list, not: e.Not}, nil
	case *sqlast.BetweenExpr:
		ns, err := c.exprs([]sqlast.Expr{e.X, e.Lo, e.Hi})
		if err != nil {
			return nil, err
		}
		return &betweenNode{x: ns[0], lo: ns[1], hi: ns[2], not: e.Not}, nil
	case *sqlast.IsNullExpr:
		x, err := c.expr(e.X)
		if err != nil {
			return nil, err
		}
		return &isNullNode{x: x, not: e.Not}, nil
	case *sqlast.SubqueryExpr, *sqlast.ExistsExpr:
		return nil, perRecord("a subquery")
	case *sqlast.IntervalExpr:
		return nil, errors.New("INTERVAL is only supported as timestamp + INTERVAL n UNIT or timestamp - INTERVAL n UNIT")
	case *sqlast.StarExpr:
		return nil, errors.New("* is only allowed as SELECT *")
	}
	return nil, fmt.Errorf("unsupported expression %s", sqlast.FormatExpr(e))
}

// rawColumn reports whether x is the key or value of a record read with
// the 'raw' format: bytes, or NULL.
func (c *compiler) rawColumn(x node) bool {
	col, ok := x.(*colNode)
	return ok && (col.col == colKey && !c.keyJSON || col.col == colValue && !c.valueJSON)
}

func (c *compiler) exprs(es []sqlast.Expr) ([]node, error) {
	out := make([]node, len(es))
	for i, e := range es {
		n, err := c.expr(e)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func (c *compiler) column(e *sqlast.ColumnRef) (node, error) {
	name := strings.ToLower(e.Parts[len(e.Parts)-1])
	for i, col := range recordColumns {
		if name == col {
			return &colNode{col: i}, nil
		}
	}
	if len(e.Parts) == 1 {
		switch name {
		case "current_timestamp":
			return &nowNode{}, nil
		case "current_date":
			return &nowNode{date: true}, nil
		}
	}
	return nil, fmt.Errorf("unknown column %s (a Kafka record has %s)", sqlast.FormatExpr(e), strings.Join(recordColumns, ", "))
}

// literal compiles a constant: integers are BIGINT (DECIMAL beyond),
// other numbers DOUBLE.
func literal(k, text string) (node, error) {
	switch k {
	case sqlast.LitString:
		return &constNode{values.String([]byte(text))}, nil
	case sqlast.LitBool:
		return &constNode{values.Bool(strings.EqualFold(text, "true"))}, nil
	case sqlast.LitNull:
		return &constNode{}, nil
	}
	b := []byte(text)
	if i, err := values.ParseInt(b); err == nil {
		return &constNode{values.Int(i)}, nil
	} else if err == values.ErrIntRange {
		return &constNode{values.Decimal(b)}, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s: out of range", text)
	}
	return &constNode{values.Float(f)}, nil
}

func (c *compiler) binary(e *sqlast.BinaryExpr) (node, error) {
	if e.Op == "+" || e.Op == "-" {
		if iv, ok := e.R.(*sqlast.IntervalExpr); ok {
			return c.interval(e.L, iv, e.Op == "-")
		}
		if iv, ok := e.L.(*sqlast.IntervalExpr); ok && e.Op == "+" {
			return c.interval(e.R, iv, false)
		}
	}
	l, err := c.expr(e.L)
	if err != nil {
		return nil, err
	}
	if e.Op == "LIKE" || e.Op == "ILIKE" || e.Op == "NOT LIKE" || e.Op == "NOT ILIKE" {
		return c.like(l, e)
	}
	r, err := c.expr(e.R)
	if err != nil {
		return nil, err
	}
	switch e.Op {
	case "+", "-", "*", "/", "%":
		return &arithNode{op: e.Op[0], l: l, r: r}, nil
	case "||":
		return &concatNode{l: l, r: r}, nil
	case "=", "<>", "<", "<=", ">", ">=":
		return &cmpNode{op: e.Op, l: l, r: r}, nil
	case "AND":
		return &andNode{l: l, r: r}, nil
	case "OR":
		return &orNode{l: l, r: r}, nil
	case "RLIKE", "NOT RLIKE":
		re, err := constRegexp(r)
		if err != nil {
			return nil, err
		}
		n := &rlikeNode{x: l, re: re, not: e.Op == "NOT RLIKE"}
		if re == nil {
			n.pat = r
		}
		return n, nil
	}
	return nil, fmt.Errorf("operator %s is not supported", e.Op)
}

func (c *compiler) like(x node, e *sqlast.BinaryExpr) (node, error) {
	n := &likeNode{x: x, fold: strings.HasSuffix(e.Op, "ILIKE"), not: strings.HasPrefix(e.Op, "NOT ")}
	if l, ok := e.R.(*sqlast.Literal); ok && l.Kind == sqlast.LitString {
		p := []byte(l.Value)
		if n.fold {
			p = values.AppendLower(nil, p)
		}
		n.toks = values.CompileLike(p)
		return n, nil
	}
	pat, err := c.expr(e.R)
	if err != nil {
		return nil, err
	}
	n.pat = pat
	return n, nil
}

func (c *compiler) interval(x sqlast.Expr, iv *sqlast.IntervalExpr, minus bool) (node, error) {
	unit, val := iv.Unit, iv.Value
	if unit == "" { // INTERVAL '3 hours'
		l, ok := val.(*sqlast.Literal)
		f := []string(nil)
		if ok && l.Kind == sqlast.LitString {
			f = strings.Fields(l.Value)
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("%s: expected INTERVAL n UNIT", sqlast.FormatExpr(iv))
		}
		val = &sqlast.Literal{Kind: sqlast.LitString, Value: f[0]}
		unit = strings.TrimSuffix(strings.ToUpper(f[1]), "S")
	}
	switch unit {
	case "YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND":
	default:
		return nil, fmt.Errorf("%s: unknown unit %s", sqlast.FormatExpr(iv), unit)
	}
	xn, err := c.expr(x)
	if err != nil {
		return nil, err
	}
	vn, err := c.expr(val)
	if err != nil {
		return nil, err
	}
	n := &intervalNode{x: xn, n: vn, unit: unit, sign: 1}
	if minus {
		n.sign = -1
	}
	return n, nil
}

func (c *compiler) index(e *sqlast.IndexExpr) (node, error) {
	x, err := c.expr(e.X)
	if err != nil {
		return nil, err
	}
	k := staticKind(x)
	if c.rawColumn(x) {
		k = values.KString
	}
	if k != values.KJSON && k != values.KUnknown && k != values.KNull {
		hint := "use PARSE_JSON(…)"
		if col, ok := x.(*colNode); ok && (col.col == colKey || col.col == colValue) {
			hint = fmt.Sprintf("use PARSE_JSON(%s::STRING)[…] or READ_KAFKA's 'json' %s format", recordColumns[col.col], recordColumns[col.col])
		}
		return nil, fmt.Errorf("cannot index %s: it is a %s, not JSON (%s)", sqlast.FormatExpr(e.X), k, hint)
	}
	idx, err := c.expr(e.Index)
	if err != nil {
		return nil, err
	}
	n := &indexNode{x: x, index: idx, root: -1}
	switch x := x.(type) {
	case *parseJSONNode:
		n.root, n.parsed = x.slot, x
	case *colNode:
		if x.col == colKey && c.keyJSON {
			n.root = c.slots["\x00key"]
		}
		if x.col == colValue && c.valueJSON {
			n.root = c.slots["\x00value"]
		}
	}
	if k, ok := idx.(*constNode); ok {
		switch k.v.Kind {
		case values.KString:
			n.index, n.key, n.isKey = nil, k.v.Bytes, true
		case values.KInt:
			n.index, n.n = nil, k.v.Int
		default:
			return nil, fmt.Errorf("%s: an index is a 'key' or an integer", sqlast.FormatExpr(e))
		}
	}
	if n.index != nil || !n.isKey {
		n.parsed = nil // only PARSE_JSON(…)['key'] takes the short way
	}
	return n, nil
}

// newCast is a cast of x to t; one of PARSE_JSON(…)['key'] (how Kafka
// pipes read JSON records) calls it without an interface call between.
func newCast(x node, t values.Target, try bool) *castNode {
	n := &castNode{x: x, t: t, try: try}
	if ix, ok := x.(*indexNode); ok && ix.parsed != nil {
		n.field = ix
	}
	return n
}

// staticKind is the kind a node always yields, or KUnknown.
func staticKind(n node) values.Kind {
	switch n := n.(type) {
	case *constNode:
		return n.v.Kind
	case *castNode:
		return n.t.Kind
	case *parseJSONNode, *indexNode:
		return values.KJSON
	case *getJSONNode, *concatNode:
		return values.KString
	case *colNode:
		switch n.col {
		case colTopic:
			return values.KString
		case colPartition, colOffset:
			return values.KInt
		case colTimestamp:
			return values.KTime
		case colHeaders:
			return values.KJSON
		}
		return values.KUnknown // key and value: by format, checked in index
	case *callNode:
		if d := funcs[n.name]; d != nil {
			return d.kind
		}
	}
	return values.KUnknown
}

func (c *compiler) caseExpr(e *sqlast.CaseExpr) (node, error) {
	n := &caseNode{}
	var err error
	if e.Operand != nil {
		if n.operand, err = c.expr(e.Operand); err != nil {
			return nil, err
		}
	}
	for _, w := range e.Whens {
		cond, err := c.expr(w.Cond)
		if err != nil {
			return nil, err
		}
		res, err := c.expr(w.Result)
		if err != nil {
			return nil, err
		}
		n.whens = append(n.whens, when{cond: cond, res: res})
	}
	if e.Else != nil {
		if n.els, err = c.expr(e.Else); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func (c *compiler) call(f *sqlast.FuncCall) (node, error) {
	name := strings.ToLower(f.Name)
	if f.Over != nil {
		return nil, perRecord(fmt.Sprintf("window function %s(…) OVER (…)", name))
	}
	if aggregates[name] {
		return nil, perRecord(fmt.Sprintf("aggregate function %s(…)", name))
	}
	def, ok := funcs[name]
	if !ok {
		return nil, fmt.Errorf("unknown function %s (available: %s)", name, funcNames())
	}
	switch {
	case f.Star:
		return nil, fmt.Errorf("%s(*): * is only allowed in aggregates", name)
	case f.Distinct:
		return nil, fmt.Errorf("%s(DISTINCT …): DISTINCT is only allowed in aggregates", name)
	case len(f.Args) < def.min || def.max >= 0 && len(f.Args) > def.max:
		return nil, fmt.Errorf("%s takes %s, got %d", name, arity(def), len(f.Args))
	}
	args, err := c.exprs(f.Args)
	if err != nil {
		return nil, err
	}
	if def.build != nil {
		n, err := def.build(c, f, args)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return n, nil
	}
	return &callNode{name: name, fn: def.impl, args: args, strict: !def.nullArgs}, nil
}

func arity(d *funcDef) string {
	switch {
	case d.max < 0:
		return fmt.Sprintf("at least %d arguments", d.min)
	case d.min == d.max && d.min == 1:
		return "1 argument"
	case d.min == d.max:
		return fmt.Sprintf("%d arguments", d.min)
	}
	return fmt.Sprintf("%d to %d arguments", d.min, d.max)
}
