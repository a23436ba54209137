package sqlparse

import "github.com/lakepipe/lakepipe/internal/sqlast"

// Expression grammar, loosest first:
//
//	OR < AND < NOT < comparison (= <> != < <= > >= LIKE ILIKE RLIKE IN
//	BETWEEN IS [NOT] NULL) < || < + - < * / % < unary - + < postfix (::T,
//	[i]) < primary
//
// Binary operators of one level associate to the left.

func (p *parser) parseExpr() sqlast.Expr {
	p.enter()
	defer p.leave()
	return p.parseOr()
}

// parseExprList parses expr, expr, … (at least one).
func (p *parser) parseExprList() []sqlast.Expr {
	var out []sqlast.Expr
	for {
		out = append(out, p.parseExpr())
		if !p.acceptOp(",") {
			return out
		}
	}
}

func (p *parser) parseOr() sqlast.Expr {
	l := p.parseAnd()
	for p.acceptKw("OR") {
		l = &sqlast.BinaryExpr{Op: "OR", L: l, R: p.parseAnd()}
	}
	return l
}

func (p *parser) parseAnd() sqlast.Expr {
	l := p.parseNot()
	for p.acceptKw("AND") {
		l = &sqlast.BinaryExpr{Op: "AND", L: l, R: p.parseNot()}
	}
	return l
}

// parseNot parses NOT x. NOT EXISTS (…) becomes an ExistsExpr with Not set.
func (p *parser) parseNot() sqlast.Expr {
	if !p.atKw("NOT") {
		return p.parseComparison()
	}
	p.i++
	p.enter()
	defer p.leave()
	x := p.parseNot()
	if e, ok := x.(*sqlast.ExistsExpr); ok && !e.Not {
		e.Not = true
		return e
	}
	return &sqlast.UnaryExpr{Op: "NOT", X: x}
}

var comparisonOps = map[string]string{"=": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

func (p *parser) parseComparison() sqlast.Expr {
	l := p.parseConcat()
	for {
		t := p.tok()
		if t.kind == tOp {
			op, ok := comparisonOps[t.val]
			if !ok {
				return l
			}
			p.i++
			l = &sqlast.BinaryExpr{Op: op, L: l, R: p.parseConcat()}
			continue
		}
		if t.kind != tWord {
			return l
		}
		not := false
		if t.upper == "NOT" {
			switch n := p.peek(1); {
			case isKw(n, "LIKE"), isKw(n, "ILIKE"), isKw(n, "RLIKE"), isKw(n, "IN"), isKw(n, "BETWEEN"):
				not = true
				p.i++
				t = n
			default:
				return l
			}
		}
		switch t.upper {
		case "LIKE", "ILIKE", "RLIKE":
			p.i++
			op := t.upper
			if not {
				op = "NOT " + op
			}
			l = &sqlast.BinaryExpr{Op: op, L: l, R: p.parseConcat()}
		case "IN":
			p.i++
			l = p.parseIn(l, not)
		case "BETWEEN":
			p.i++
			b := &sqlast.BetweenExpr{X: l, Not: not, Lo: p.parseConcat()}
			p.expectKw("AND", "expected AND in BETWEEN … AND …")
			b.Hi = p.parseConcat()
			l = b
		case "IS":
			p.i++
			e := &sqlast.IsNullExpr{X: l, Not: p.acceptKw("NOT")}
			p.expectKw("NULL", "expected NULL after IS [NOT]")
			l = e
		default:
			return l
		}
	}
}

// parseIn parses the ( list ) or ( query ) after [NOT] IN.
func (p *parser) parseIn(x sqlast.Expr, not bool) sqlast.Expr {
	e := &sqlast.InExpr{X: x, Not: not}
	p.expectOp("(")
	switch {
	case p.atKw("SELECT"), p.atKw("WITH"):
		e.Query = p.parseQuery()
		p.expectOp(")")
		return e
	case p.atOp("("):
		if q, ok := p.tryQueryInParens(); ok {
			e.Query = q
			return e
		}
	}
	e.List = p.parseExprList()
	p.expectOp(")")
	return e
}

func (p *parser) parseConcat() sqlast.Expr {
	l := p.parseAdditive()
	for p.acceptOp("||") {
		l = &sqlast.BinaryExpr{Op: "||", L: l, R: p.parseAdditive()}
	}
	return l
}

func (p *parser) parseAdditive() sqlast.Expr {
	l := p.parseMultiplicative()
	for {
		t := p.tok()
		if !isOp(t, "+") && !isOp(t, "-") {
			return l
		}
		p.i++
		l = &sqlast.BinaryExpr{Op: t.val, L: l, R: p.parseMultiplicative()}
	}
}

func (p *parser) parseMultiplicative() sqlast.Expr {
	l := p.parseUnary()
	for {
		t := p.tok()
		if !isOp(t, "*") && !isOp(t, "/") && !isOp(t, "%") {
			return l
		}
		p.i++
		l = &sqlast.BinaryExpr{Op: t.val, L: l, R: p.parseUnary()}
	}
}

func (p *parser) parseUnary() sqlast.Expr {
	t := p.tok()
	if isOp(t, "-") || isOp(t, "+") {
		p.i++
		p.enter()
		defer p.leave()
		return &sqlast.UnaryExpr{Op: t.val, X: p.parseUnary()}
	}
	return p.parsePostfix()
}

func (p *parser) parsePostfix() sqlast.Expr {
	x := p.parsePrimary()
	for {
		switch {
		case p.acceptOp("::"):
			x = &sqlast.CastExpr{X: x, Type: p.parseType(), DoubleColon: true}
		case p.acceptOp("["):
			x = &sqlast.IndexExpr{X: x, Index: p.parseExpr()}
			p.expectOp("]")
		default:
			return x
		}
	}
}

// intervalUnits maps the units of INTERVAL to their singular form.
var intervalUnits = map[string]string{}

func init() {
	for _, u := range []string{"YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND"} {
		intervalUnits[u] = u
		intervalUnits[u+"S"] = u
	}
}

// typedLiteralTypes are the types usable as DATE '…' literals, parsed as a
// CAST of the string.
var typedLiteralTypes = sqlast.WordSet("DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ")

func (p *parser) parsePrimary() sqlast.Expr {
	p.enter()
	defer p.leave()
	t := p.tok()
	next := p.peek(1)
	switch t.kind {
	case tNumber:
		p.i++
		return &sqlast.Literal{Kind: sqlast.LitNumber, Value: t.val, Span: tokRange(t)}
	case tString:
		p.i++
		return &sqlast.Literal{Kind: sqlast.LitString, Value: t.val, Span: tokRange(t)}
	case tOp:
		if t.val == "(" {
			return p.parseParen()
		}
		p.fail(t, "expected an expression")
	case tQIdent:
		if t.val == "" {
			p.fail(t, "empty identifier")
		}
		if isOp(next, "(") {
			p.i++
			return p.parseFuncCall(t.val, true)
		}
		return p.parseColumnRef()
	case tWord:
		switch t.upper {
		case "NULL":
			p.i++
			return &sqlast.Literal{Kind: sqlast.LitNull, Span: tokRange(t)}
		case "TRUE", "FALSE":
			p.i++
			return &sqlast.Literal{Kind: sqlast.LitBool, Value: t.val, Span: tokRange(t)}
		case "CASE":
			return p.parseCase()
		case "CAST", "TRY_CAST":
			if isOp(next, "(") {
				p.i += 2
				c := &sqlast.CastExpr{X: p.parseExpr(), Try: t.upper == "TRY_CAST"}
				p.expectKw("AS", "expected AS <type> in CAST")
				c.Type = p.parseType()
				p.expectOp(")")
				return c
			}
		case "EXISTS":
			if isOp(next, "(") {
				p.i += 2
				q := p.parseQuery()
				p.expectOp(")")
				return &sqlast.ExistsExpr{Query: q}
			}
		case "INTERVAL":
			if next.kind == tString || next.kind == tNumber || isOp(next, "-") || isOp(next, "+") || isOp(next, "(") {
				p.i++
				e := &sqlast.IntervalExpr{Value: p.parseUnary()}
				if u := p.tok(); u.kind == tWord && intervalUnits[u.upper] != "" {
					p.i++
					e.Unit = intervalUnits[u.upper]
				} else if l, ok := e.Value.(*sqlast.Literal); !ok || l.Kind != sqlast.LitString {
					// Only a string may carry its unit inside (INTERVAL
					// '3 hours'); INTERVAL 3 alone means nothing.
					p.fail(u, "expected the unit of the INTERVAL (YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND or MICROSECOND)")
				}
				return e
			}
		}
		if typedLiteralTypes[t.upper] && next.kind == tString {
			p.i += 2
			return &sqlast.CastExpr{X: &sqlast.Literal{Kind: sqlast.LitString, Value: next.val, Span: tokRange(next)}, Type: sqlast.TypeName{Name: t.upper}}
		}
		if sqlast.ReservedInExpr[t.val] {
			p.fail(t, "expected an expression")
		}
		if (t.upper == "CURRENT_TIMESTAMP" || t.upper == "CURRENT_DATE") && !isOp(next, "(") && !isOp(next, ".") {
			// SQL's niladic functions, written without parentheses; a
			// column of that name must be quoted.
			p.i++
			return &sqlast.FuncCall{Name: t.val}
		}
		if isOp(next, "(") {
			p.i++
			return p.parseFuncCall(t.val, true)
		}
		return p.parseColumnRef()
	}
	if t.kind == tEOF {
		p.fail(t, "expected an expression")
	}
	p.fail(t, "unexpected character")
	return nil
}

// parseParen parses ( expr ), ( query ) or, for "((", whichever of the two
// fits.
func (p *parser) parseParen() sqlast.Expr {
	p.i++ // (
	switch {
	case p.atKw("SELECT"), p.atKw("WITH"):
		q := p.parseQuery()
		p.expectOp(")")
		return &sqlast.SubqueryExpr{Query: q}
	case p.atOp("("):
		if q, ok := p.tryQueryInParens(); ok {
			return &sqlast.SubqueryExpr{Query: q}
		}
	}
	x := p.parseExpr()
	p.expectOp(")")
	return &sqlast.ParenExpr{X: x}
}

// parseColumnRef parses a, t.a or s.t.a.
func (p *parser) parseColumnRef() sqlast.Expr {
	c := &sqlast.ColumnRef{Parts: []string{p.parseIdent("a column name")}}
	for p.atOp(".") && (p.peek(1).kind == tWord || p.peek(1).kind == tQIdent) {
		p.i++
		c.Parts = append(c.Parts, p.parseIdent("a column name"))
	}
	return c
}

// parseFuncCall parses the ( args ) of a call to name, at the '('.
func (p *parser) parseFuncCall(name string, allowOver bool) *sqlast.FuncCall {
	p.expectOp("(")
	f := &sqlast.FuncCall{Name: name}
	switch {
	case p.atOp(")"):
	case p.atOp("*") && isOp(p.peek(1), ")"):
		p.i++
		f.Star = true
	default:
		if p.acceptKw("DISTINCT") {
			f.Distinct = true
		} else if p.atKw("ALL") && !isOp(p.peek(1), ")") && !isOp(p.peek(1), ",") {
			p.i++
		}
		f.Args = p.parseExprList()
	}
	p.expectOp(")")
	if allowOver && p.acceptKw("OVER") {
		f.Over = p.parseWindowSpec()
	}
	return f
}

func (p *parser) parseWindowSpec() *sqlast.WindowSpec {
	p.expectOp("(")
	w := &sqlast.WindowSpec{}
	if p.acceptKws("PARTITION", "BY") {
		w.PartitionBy = p.parseExprList()
	}
	if p.acceptKws("ORDER", "BY") {
		w.OrderBy = p.parseOrderItems()
	}
	if !p.atOp(")") {
		p.fail(p.tok(), "expected ')' (a window has PARTITION BY and ORDER BY only; frames are not supported)")
	}
	p.i++
	return w
}

func (p *parser) parseCase() sqlast.Expr {
	p.advance() // CASE
	c := &sqlast.CaseExpr{}
	if !p.atKw("WHEN") {
		c.Operand = p.parseExpr()
	}
	for p.acceptKw("WHEN") {
		w := sqlast.When{Cond: p.parseExpr()}
		p.expectKw("THEN", "expected THEN")
		w.Result = p.parseExpr()
		c.Whens = append(c.Whens, w)
	}
	if c.Whens == nil {
		p.fail(p.tok(), "expected WHEN")
	}
	if p.acceptKw("ELSE") {
		c.Else = p.parseExpr()
	}
	p.expectKw("END", "expected END to close CASE")
	return c
}

// ---- types ----

// typeParams gives, for each scalar type name, how many (…) parameters it
// may take; ARRAY, MAP and STRUCT take <…> instead.
var typeParams = map[string]int{
	"INT": 0, "INTEGER": 0, "BIGINT": 0, "SMALLINT": 0, "TINYINT": 0,
	"FLOAT": 0, "DOUBLE": 0, "DECIMAL": 2, "NUMERIC": 2,
	"STRING": 0, "VARCHAR": 1, "CHAR": 1, "BOOLEAN": 0,
	"DATE": 0, "TIMESTAMP": 0, "TIMESTAMP_NTZ": 0, "TIMESTAMP_LTZ": 0,
	"BINARY": 0, "JSON": 0, "ARRAY": 0, "MAP": 0, "STRUCT": 0,
}

func (p *parser) atTypeName() bool {
	t := p.tok()
	_, ok := typeParams[t.upper]
	return t.kind == tWord && ok
}

// parseType parses a column type; Name is upper-cased.
func (p *parser) parseType() sqlast.TypeName {
	p.enter()
	defer p.leave()
	t := p.tok()
	if !p.atTypeName() {
		p.fail(t, "expected a type name (INT, BIGINT, DECIMAL(p,s), STRING, TIMESTAMP, ARRAY<…>, …)")
	}
	p.i++
	tn := sqlast.TypeName{Name: t.upper}
	switch tn.Name {
	case "ARRAY":
		p.expectOp("<")
		tn.Elems = []sqlast.TypeName{p.parseType()}
		p.expectOp(">")
	case "MAP":
		p.expectOp("<")
		k := p.parseType()
		p.expectOp(",")
		v := p.parseType()
		p.expectOp(">")
		tn.Elems = []sqlast.TypeName{k, v}
	case "STRUCT":
		if p.acceptOp("<>") {
			break
		}
		p.expectOp("<")
		for !p.atOp(">") {
			f := sqlast.TypeField{Name: p.parseIdent("a field name")}
			p.acceptOp(":")
			f.Type = p.parseType()
			tn.Fields = append(tn.Fields, f)
			if !p.acceptOp(",") {
				break
			}
		}
		p.expectOp(">")
	default:
		max := typeParams[tn.Name]
		if max == 0 || !p.atOp("(") {
			break
		}
		p.i++
		for {
			n := p.tok()
			if len(tn.Params) == max {
				p.failf(n, "%s takes at most %d parameter(s)", tn.Name, max)
			}
			tn.Params = append(tn.Params, p.parseInt("a type parameter"))
			if !p.acceptOp(",") {
				break
			}
		}
		p.expectOp(")")
	}
	return tn
}
