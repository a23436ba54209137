package sqlparse

import "github.com/lakepipe/lakepipe/internal/sqlast"

// parseQuery parses [WITH …] body [ORDER BY …] [LIMIT n] [OFFSET m].
func (p *parser) parseQuery() *sqlast.Query {
	p.enter()
	defer p.leave()
	q := &sqlast.Query{}
	if p.acceptKw("WITH") {
		for {
			c := sqlast.CTE{Name: p.parseIdent("a CTE name")}
			p.expectKw("AS", "expected AS (SELECT …)")
			p.expectOp("(")
			c.Query = p.parseQuery()
			p.expectOp(")")
			q.With = append(q.With, c)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	q.Body = p.parseSetExpr()
	if p.acceptKws("ORDER", "BY") {
		q.OrderBy = p.parseOrderItems()
	}
	if p.acceptKw("LIMIT") {
		q.Limit = p.parseExpr()
	}
	if p.acceptKw("OFFSET") {
		q.Offset = p.parseExpr()
	}
	return q
}

// parseSetExpr parses UNION / EXCEPT (MINUS) chains, left-associative, over
// INTERSECT chains, which bind tighter.
func (p *parser) parseSetExpr() sqlast.SetExpr {
	left := p.parseSetTerm()
	for {
		t := p.tok()
		var op string
		switch {
		case isKw(t, "UNION"):
			op = "UNION"
		case isKw(t, "EXCEPT"), isKw(t, "MINUS"):
			op = "EXCEPT"
		default:
			return left
		}
		p.i++
		all := p.parseSetQuantifier()
		left = &sqlast.SetOp{Op: op, All: all, Left: left, Right: p.parseSetTerm()}
	}
}

func (p *parser) parseSetTerm() sqlast.SetExpr {
	left := p.parseSetPrimary()
	for p.acceptKw("INTERSECT") {
		all := p.parseSetQuantifier()
		left = &sqlast.SetOp{Op: "INTERSECT", All: all, Left: left, Right: p.parseSetPrimary()}
	}
	return left
}

func (p *parser) parseSetQuantifier() bool {
	if p.acceptKw("ALL") {
		return true
	}
	p.acceptKw("DISTINCT")
	return false
}

func (p *parser) parseSetPrimary() sqlast.SetExpr {
	switch t := p.tok(); {
	case isKw(t, "SELECT"):
		return p.parseSelect()
	case isOp(t, "("):
		p.i++
		q := p.parseQuery()
		p.expectOp(")")
		return q
	default:
		p.fail(t, "expected SELECT")
		return nil
	}
}

func (p *parser) parseSelect() *sqlast.Select {
	p.advance() // SELECT
	s := &sqlast.Select{}
	if p.acceptKw("DISTINCT") {
		s.Distinct = true
	} else {
		p.acceptKw("ALL")
	}
	for {
		s.Items = append(s.Items, p.parseSelectItem())
		if !p.acceptOp(",") {
			break
		}
	}
	if p.acceptKw("FROM") {
		for {
			s.From = append(s.From, p.parseJoinTree())
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.acceptKw("WHERE") {
		s.Where = p.parseExpr()
	}
	if p.acceptKws("GROUP", "BY") {
		s.GroupBy = p.parseExprList()
	}
	if p.acceptKw("HAVING") {
		s.Having = p.parseExpr()
	}
	return s
}

func (p *parser) parseSelectItem() sqlast.SelectItem {
	t := p.tok()
	if isOp(t, "*") {
		p.i++
		return sqlast.SelectItem{Star: true}
	}
	if (t.kind == tWord || t.kind == tQIdent) && t.val != "" && isOp(p.peek(1), ".") && isOp(p.peek(2), "*") {
		p.i += 3
		return sqlast.SelectItem{Star: true, Qualifier: t.val}
	}
	it := sqlast.SelectItem{Expr: p.parseExpr()}
	it.Alias = p.parseAlias(sqlast.SelectAliasStop)
	return it
}

// parseAlias parses AS name, or a bare name that is not in stop.
func (p *parser) parseAlias(stop map[string]bool) string {
	if p.acceptKw("AS") {
		return p.parseIdent("an alias")
	}
	t := p.tok()
	if t.kind == tQIdent || (t.kind == tWord && !stop[t.val]) {
		return p.parseIdent("an alias")
	}
	return ""
}

func (p *parser) parseOrderItems() []sqlast.OrderItem {
	var items []sqlast.OrderItem
	for {
		it := sqlast.OrderItem{Expr: p.parseExpr()}
		if p.acceptKw("DESC") {
			it.Desc = true
		} else {
			p.acceptKw("ASC")
		}
		if p.acceptKws("NULLS", "FIRST") {
			v := true
			it.NullsFirst = &v
		} else if p.acceptKws("NULLS", "LAST") {
			v := false
			it.NullsFirst = &v
		}
		items = append(items, it)
		if !p.acceptOp(",") {
			return items
		}
	}
}

// parseJoinTree parses a source followed by any number of joins,
// left-associative.
func (p *parser) parseJoinTree() sqlast.TableRef {
	left := p.parseTablePrimary()
	for {
		kind := p.parseJoinKind()
		if kind == "" {
			return left
		}
		j := &sqlast.JoinRef{Kind: kind, Left: left, Right: p.parseTablePrimary()}
		if kind != "CROSS" {
			if p.acceptKw("ON") {
				j.On = p.parseExpr()
			} else if p.acceptKw("USING") {
				j.Using = p.parseIdentList("a column name")
			}
		}
		left = j
	}
}

func (p *parser) parseJoinKind() string {
	switch {
	case p.acceptKw("JOIN"), p.acceptKws("INNER", "JOIN"):
		return "INNER"
	case p.acceptKws("LEFT", "JOIN"), p.acceptKws("LEFT", "OUTER", "JOIN"):
		return "LEFT"
	case p.acceptKws("RIGHT", "JOIN"), p.acceptKws("RIGHT", "OUTER", "JOIN"):
		return "RIGHT"
	case p.acceptKws("FULL", "JOIN"), p.acceptKws("FULL", "OUTER", "JOIN"):
		return "FULL"
	case p.acceptKws("CROSS", "JOIN"):
		return "CROSS"
	}
	return ""
}

// parseTablePrimary parses one FROM source: a table, a subquery, a
// parenthesised join, VOLUME …, DIRECTORY(VOLUME v), a table function or
// TABLE(function(…)).
func (p *parser) parseTablePrimary() sqlast.TableRef {
	p.enter()
	defer p.leave()
	t := p.tok()
	switch {
	case isOp(t, "("):
		p.i++
		if isKw(p.tok(), "SELECT") || isKw(p.tok(), "WITH") {
			q := p.parseQuery()
			p.expectOp(")")
			return &sqlast.SubqueryRef{Query: q, Alias: p.parseAlias(sqlast.TableAliasStop)}
		}
		if p.atOp("(") {
			if q, ok := p.tryQueryInParens(); ok {
				return &sqlast.SubqueryRef{Query: q, Alias: p.parseAlias(sqlast.TableAliasStop)}
			}
		}
		ref := p.parseJoinTree()
		p.expectOp(")")
		return ref
	case isKw(t, "VOLUME") && (p.peek(1).kind == tQIdent || p.peek(1).kind == tWord && !sqlast.TableAliasStop[p.peek(1).val]):
		// VOLUME v …; a table named volume must be back-quoted when aliased
		vs := p.parseVolumeHead()
		for p.parseVolumeClause(&vs) {
		}
		return &sqlast.VolumeRef{Source: vs, Alias: p.parseAlias(sqlast.TableAliasStop)}
	case isKw(t, "DIRECTORY") && isOp(p.peek(1), "(") && isKw(p.peek(2), "VOLUME") && isIdentTok(p.peek(3)) && isOp(p.peek(4), ")"):
		p.i += 3
		d := &sqlast.DirectoryRef{Volume: p.parseIdent("a volume name")}
		p.expectOp(")")
		d.Alias = p.parseAlias(sqlast.TableAliasStop)
		return d
	case isKw(t, "TABLE") && isOp(p.peek(1), "("):
		p.i += 2
		fn := p.parseTableFunc()
		p.expectOp(")")
		return &sqlast.FuncRef{Func: fn, Wrapped: true, Alias: p.parseAlias(sqlast.TableAliasStop)}
	case (t.kind == tWord || t.kind == tQIdent) && isOp(p.peek(1), "("):
		fn := p.parseTableFunc()
		return &sqlast.FuncRef{Func: fn, Alias: p.parseAlias(sqlast.TableAliasStop)}
	}
	n := p.parseObjectName("a table name")
	return &sqlast.TableName{Name: n, Alias: p.parseAlias(sqlast.TableAliasStop)}
}

// parseTableFunc parses name(args) in FROM.
func (p *parser) parseTableFunc() *sqlast.FuncCall {
	t := p.tok()
	if !(t.kind == tWord || t.kind == tQIdent) || !isOp(p.peek(1), "(") {
		p.fail(t, "expected a table function call such as READ_KAFKA(…)")
	}
	name := p.parseIdent("a function name")
	return p.parseFuncCall(name, false)
}
