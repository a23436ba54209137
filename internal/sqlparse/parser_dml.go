package sqlparse

import (
	"strings"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// fileFormats are the formats of USING and FILE_FORMAT = (TYPE = …).
var fileFormats = map[string]bool{"CSV": true, "JSON": true, "PARQUET": true}

// atQueryStart reports whether the token at offset k can start a query.
func (p *parser) atQueryStart(k int) bool {
	t := p.peek(k)
	return isKw(t, "SELECT") || isKw(t, "WITH") || isOp(t, "(")
}

func (p *parser) parseInsert() sqlast.Statement {
	p.advance() // INSERT
	s := &sqlast.Insert{}
	switch {
	case p.acceptKw("INTO"):
	case p.acceptKw("OVERWRITE"):
		s.Overwrite = true
	default:
		p.fail(p.tok(), "expected INTO or OVERWRITE after INSERT")
	}
	if n := p.peek(1); p.atKw("TABLE") && isIdentTok(n) && !isKw(n, "VALUES") && !isKw(n, "SELECT") && !isKw(n, "WITH") {
		p.i++
	}
	s.Table = p.parseObjectName("a table name")
	if p.atOp("(") && !p.atQueryStart(1) {
		s.Columns = p.parseIdentList("a column name")
	}
	switch {
	case p.acceptKw("VALUES"):
		for {
			p.expectOp("(")
			s.Values = append(s.Values, p.parseExprList())
			p.expectOp(")")
			if !p.acceptOp(",") {
				break
			}
		}
	case p.atQueryStart(0):
		s.Query = p.parseQuery()
	default:
		p.fail(p.tok(), "expected VALUES (…) or SELECT …")
	}
	return s
}

func (p *parser) parseDelete() sqlast.Statement {
	p.advance() // DELETE
	p.expectKw("FROM", "expected FROM after DELETE")
	s := &sqlast.Delete{Table: p.parseObjectName("a table name")}
	if p.acceptKw("WHERE") {
		s.Where = p.parseExpr()
	}
	return s
}

func (p *parser) parseUpdate() sqlast.Statement {
	p.advance() // UPDATE
	s := &sqlast.Update{Table: p.parseObjectName("a table name")}
	p.expectKw("SET", "expected SET column = value")
	s.Set = p.parseAssignments()
	if p.acceptKw("WHERE") {
		s.Where = p.parseExpr()
	}
	return s
}

// parseCopy parses COPY INTO|OVERWRITE <table> … and COPY INTO VOLUME ….
func (p *parser) parseCopy() sqlast.Statement {
	p.advance() // COPY
	t := p.tok()
	overwrite := false
	switch {
	case p.acceptKw("INTO"):
	case p.acceptKw("OVERWRITE"):
		overwrite = true
		if p.atKw("INTO") && isIdentTok(p.peek(1)) && !isKw(p.peek(1), "FROM") {
			p.i++
		}
	default:
		p.fail(t, "expected INTO or OVERWRITE after COPY")
	}
	if n := p.peek(1); p.atKw("VOLUME") && isIdentTok(n) && !isKw(n, "FROM") {
		if overwrite {
			p.fail(t, "COPY OVERWRITE loads a table; to export into a volume use COPY INTO VOLUME")
		}
		p.i++
		return p.parseCopyIntoVolume()
	}
	s := &sqlast.CopyIntoTable{Overwrite: overwrite}
	s.Table = p.parseObjectName("a table name")
	if p.atOp("(") {
		s.Columns = p.parseIdentList("a column name")
	}
	p.expectKw("FROM", "expected FROM VOLUME … or FROM (SELECT …)")
	switch {
	case p.atKw("VOLUME"):
		vs := p.parseVolumeHead()
		s.Volume = &vs
	case p.acceptOp("("):
		s.Query = p.parseQuery()
		p.expectOp(")")
	default:
		p.fail(p.tok(), "expected VOLUME <volume> … or (SELECT …)")
	}
	afterComma := false
	for {
		t := p.tok()
		switch {
		case s.Volume != nil && p.parseVolumeClause(s.Volume):
		case isKw(t, "PURGE") && isOp(p.peek(1), "="):
			p.i += 2
			s.Purge = p.parseBool("PURGE")
		case p.atKeyValue():
			s.Options = append(s.Options, p.parseKeyValue())
		default:
			if afterComma {
				p.fail(t, "expected an option (KEY = value)")
			}
			return s
		}
		afterComma = p.acceptOp(",")
	}
}

// parseVolumeHead parses VOLUME v [(col TYPE, …)] USING CSV|JSON|PARQUET.
func (p *parser) parseVolumeHead() sqlast.VolumeSource {
	p.expectKw("VOLUME", "expected VOLUME")
	vs := sqlast.VolumeSource{Volume: p.parseIdent("a volume name")}
	if p.atOp("(") {
		vs.Schema = p.parseColumnDefs(false)
	}
	p.expectKw("USING", "expected USING CSV, JSON or PARQUET")
	f := p.tok()
	if f.kind != tWord || !fileFormats[f.upper] {
		p.fail(f, "expected the file format CSV, JSON or PARQUET")
	}
	p.i++
	vs.Format = f.upper
	return vs
}

// parseVolumeClause parses one of OPTIONS(…), FILES(…), SUBDIRECTORY '…'
// and REGEXP '…' if it comes next, reporting whether it did.
func (p *parser) parseVolumeClause(vs *sqlast.VolumeSource) bool {
	t := p.tok()
	if t.kind != tWord {
		return false
	}
	eq := 1
	if isOp(p.peek(1), "=") {
		eq = 2
	}
	switch t.upper {
	case "OPTIONS", "FILES":
		if !isOp(p.peek(eq), "(") {
			return false
		}
		p.i += eq
		if t.upper == "OPTIONS" {
			vs.Options = append(vs.Options, p.parsePropList()...)
		} else {
			vs.Files = append(vs.Files, p.parseStringList("a file path string")...)
		}
	case "SUBDIRECTORY", "REGEXP":
		if p.peek(eq).kind != tString {
			return false
		}
		p.i += eq
		v := p.parseString("a string")
		dst := &vs.Subdirectory
		if t.upper == "REGEXP" {
			dst = &vs.Regexp
		}
		if *dst != nil {
			p.failf(t, "%s is given twice", t.upper)
		}
		*dst = &v
	default:
		return false
	}
	return true
}

// parseCopyIntoVolume parses the rest of COPY INTO VOLUME v: SUBDIRECTORY,
// FROM TABLE t | FROM (query), FILE_FORMAT = (…) and options in any order.
func (p *parser) parseCopyIntoVolume() sqlast.Statement {
	s := &sqlast.CopyIntoVolume{Volume: p.parseIdent("a volume name")}
	seen, afterComma := clauses{}, false
	for {
		t := p.tok()
		switch {
		case isKw(t, "SUBDIRECTORY") && (p.peek(1).kind == tString || isOp(p.peek(1), "=") && p.peek(2).kind == tString):
			p.once(seen, t, "SUBDIRECTORY")
			p.i++
			p.acceptOp("=")
			s.Subdirectory = p.parseString("a subdirectory string")
		case isKw(t, "FROM"):
			p.once(seen, t, "FROM")
			p.i++
			if p.acceptOp("(") {
				s.FromQuery = p.parseQuery()
				p.expectOp(")")
				break
			}
			if p.atKw("TABLE") && isIdentTok(p.peek(1)) {
				p.i++
			}
			n := p.parseObjectName("TABLE <table> or (SELECT …)")
			s.FromTable = &n
		case isKw(t, "FILE_FORMAT") && (isOp(p.peek(1), "(") || isOp(p.peek(1), "=") && isOp(p.peek(2), "(")):
			p.once(seen, t, "FILE_FORMAT")
			p.i++
			p.acceptOp("=")
			p.parseFileFormat(s)
		case p.atKeyValue():
			s.Options = append(s.Options, p.parseKeyValue())
		default:
			if afterComma {
				p.fail(t, "expected an option (KEY = value)")
			}
			if s.FromTable == nil && s.FromQuery == nil {
				p.fail(t, "expected FROM TABLE <table> or FROM (SELECT …)")
			}
			return s
		}
		afterComma = p.acceptOp(",")
	}
}

// parseFileFormat parses ( TYPE = CSV [,] other = value … ).
func (p *parser) parseFileFormat(s *sqlast.CopyIntoVolume) {
	p.expectOp("(")
	seen := clauses{}
	for !p.atOp(")") {
		t := p.tok()
		if isKw(t, "TYPE") && (p.peek(1).kind != tOp || isOp(p.peek(1), "=")) {
			p.once(seen, t, "TYPE")
			p.i++
			p.acceptOp("=")
			f := p.tok()
			v := f.upper
			if f.kind == tString {
				v = strings.ToUpper(f.val)
			} else if f.kind != tWord {
				v = ""
			}
			if !fileFormats[v] {
				p.fail(f, "expected the file format CSV, PARQUET or JSON")
			}
			p.i++
			s.FileFormat = v
		} else {
			s.FormatOptions = append(s.FormatOptions, p.parseKeyValue())
		}
		p.acceptOp(",")
	}
	p.i++ // )
}

// parseMerge parses MERGE INTO t [AS a] USING source ON cond followed by
// WHEN MATCHED [AND cond] THEN UPDATE SET …|DELETE and WHEN NOT MATCHED
// [AND cond] THEN INSERT [(cols)] VALUES (…) clauses.
func (p *parser) parseMerge() sqlast.Statement {
	p.advance() // MERGE
	p.expectKw("INTO", "expected INTO after MERGE")
	s := &sqlast.MergeInto{Table: p.parseObjectName("a table name")}
	s.Alias = p.parseAlias(sqlast.TableAliasStop)
	p.expectKw("USING", "expected USING <table> or USING (SELECT …)")
	t := p.tok()
	switch src := p.parseTablePrimary().(type) {
	case *sqlast.TableName, *sqlast.SubqueryRef:
		s.Source = src
	default:
		p.fail(t, "expected a table, a table stream or (SELECT …) after USING")
	}
	p.expectKw("ON", "expected ON <condition>")
	s.On = p.parseExpr()
	for p.acceptKw("WHEN") {
		c := sqlast.MergeClause{Matched: !p.acceptKw("NOT")}
		p.expectKw("MATCHED", "expected MATCHED or NOT MATCHED after WHEN")
		if p.acceptKw("AND") {
			c.Cond = p.parseExpr()
		}
		p.expectKw("THEN", "expected THEN")
		a := p.tok()
		switch {
		case c.Matched && p.acceptKw("UPDATE"):
			p.expectKw("SET", "expected SET column = value")
			c.Action, c.Set = "UPDATE", p.parseAssignments()
		case c.Matched && p.acceptKw("DELETE"):
			c.Action = "DELETE"
		case !c.Matched && p.acceptKw("INSERT"):
			c.Action = "INSERT"
			if p.atOp("(") {
				c.Columns = p.parseIdentList("a column name")
			}
			p.expectKw("VALUES", "expected VALUES (…)")
			p.expectOp("(")
			c.Values = p.parseExprList()
			p.expectOp(")")
		case c.Matched:
			p.fail(a, "expected UPDATE SET … or DELETE after WHEN MATCHED THEN")
		default:
			p.fail(a, "expected INSERT [(columns)] VALUES (…) after WHEN NOT MATCHED THEN")
		}
		s.Clauses = append(s.Clauses, c)
	}
	if len(s.Clauses) == 0 {
		p.fail(p.tok(), "expected WHEN MATCHED THEN … or WHEN NOT MATCHED THEN …")
	}
	return s
}

// parseAssignments parses col = expr, … (UPDATE SET, MERGE's UPDATE SET).
func (p *parser) parseAssignments() []sqlast.Assignment {
	var set []sqlast.Assignment
	for {
		a := sqlast.Assignment{Column: p.parseIdent("a column name")}
		p.expectOp("=")
		a.Value = p.parseExpr()
		set = append(set, a)
		if !p.acceptOp(",") {
			return set
		}
	}
}
