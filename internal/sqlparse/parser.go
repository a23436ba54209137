package sqlparse

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// SyntaxError is the error of every entry point of this package.
type SyntaxError struct {
	// Pos is where the offending token starts; at the end of the input it is
	// just after the last token.
	Pos sqlast.Pos
	// Near is the offending token's source text (shortened), "" at the end
	// of the input.
	Near string
	// Msg says what was expected or what is wrong.
	Msg string
}

// Error returns e.g. "line 3, column 14: syntax error near 'FROM': expected
// a table name", or "… syntax error at end of input: …".
func (e *SyntaxError) Error() string {
	where := fmt.Sprintf("line %d, column %d: syntax error", e.Pos.Line, e.Pos.Col)
	if e.Near == "" {
		where += " at end of input"
	} else {
		where += " near '" + e.Near + "'"
	}
	return where + ": " + e.Msg
}

// maxDepth bounds the nesting of queries, expressions and types, so that a
// hostile input cannot exhaust the stack.
const maxDepth = 200

var startPos = sqlast.Pos{Offset: 0, Line: 1, Col: 1}

// Parse parses exactly one statement; a trailing semicolon is allowed.
// Positions count from the start of src (line 1, column 1; columns count
// characters, not bytes). The statement's StmtBase holds the position of its
// first token and its source text without the semicolon and without leading
// or trailing comments. Parse never panics; every error is a *SyntaxError.
func Parse(src string) (sqlast.Statement, error) {
	return parseStatementAt(src, startPos, true)
}

// ParseScript splits src with Split and parses every statement, with all
// positions (in statements and in errors) relative to the whole script. It
// stops at the first error, which is a *SyntaxError.
func ParseScript(src string) ([]sqlast.Statement, error) {
	chunks, err := Split(src)
	if err != nil {
		return nil, err
	}
	stmts := make([]sqlast.Statement, 0, len(chunks))
	for _, c := range chunks {
		s, err := ParseChunk(c)
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, s)
	}
	return stmts, nil
}

// ParseChunk parses one statement cut by Split, with every position (in the
// statement and in a *SyntaxError) relative to the whole script Split was
// given, so that a caller running a script statement by statement reports
// script lines without adjusting anything.
func ParseChunk(c Chunk) (sqlast.Statement, error) {
	return parseStatementAt(c.Text, c.Start, false)
}

// ParseQuery parses one query (SELECT, WITH … SELECT, set operations, a
// parenthesised query); a trailing semicolon is allowed.
func ParseQuery(src string) (*sqlast.Query, error) {
	var q *sqlast.Query
	err := run(src, startPos, func(p *parser) {
		q = p.parseQuery()
		p.acceptOp(";")
		p.expectEnd()
	})
	if err != nil {
		return nil, err
	}
	return q, nil
}

// ParseExpr parses one scalar expression and nothing else.
func ParseExpr(src string) (sqlast.Expr, error) {
	var e sqlast.Expr
	err := run(src, startPos, func(p *parser) {
		e = p.parseExpr()
		p.expectEnd()
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

func parseStatementAt(src string, base sqlast.Pos, allowSemicolon bool) (sqlast.Statement, error) {
	var s sqlast.Statement
	err := run(src, base, func(p *parser) {
		first := p.tok()
		s = p.parseStatement()
		p.setSpan(s, first)
		if allowSemicolon {
			p.acceptOp(";")
		}
		p.expectEnd()
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// run lexes src (whose first byte is at base) and calls parse, turning the
// parser's panics into the returned error.
func run(src string, base sqlast.Pos, parse func(p *parser)) (err error) {
	toks, lerr := lex(src, base)
	if lerr != nil {
		return lerr
	}
	p := &parser{src: src, baseOff: base.Offset, toks: toks}
	defer p.recover(&err)
	parse(p)
	return nil
}

// parser is a recursive-descent parser over a token slice. Errors are raised
// by panicking with a *SyntaxError and recovered at the entry points.
type parser struct {
	src     string
	baseOff int
	toks    []token
	i       int
	depth   int
	// failedQuery remembers token indexes where a speculative "query then
	// ')'" parse failed, so that ambiguous parentheses never cost more than
	// one attempt per position.
	failedQuery map[int]bool
}

// recover turns a panic raised by fail into the returned error. Any other
// panic is a bug; it is reported as an error rather than crashing the caller.
func (p *parser) recover(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if se, ok := r.(*SyntaxError); ok {
		*err = se
		return
	}
	t := p.tok()
	*err = &SyntaxError{Pos: t.pos, Near: shorten(t.text), Msg: fmt.Sprintf("internal parser error: %v", r)}
}

func (p *parser) tok() token {
	if p.i >= len(p.toks) {
		return p.toks[len(p.toks)-1]
	}
	return p.toks[p.i]
}

func (p *parser) peek(n int) token {
	if p.i+n >= len(p.toks) {
		return p.toks[len(p.toks)-1]
	}
	return p.toks[p.i+n]
}

func (p *parser) advance() token {
	t := p.tok()
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// text returns the source from token from's start to the end of the last
// consumed token.
func (p *parser) text(from token) string {
	if p.i == 0 {
		return ""
	}
	last := p.toks[p.i-1]
	a, b := from.pos.Offset-p.baseOff, last.end-p.baseOff
	if a < 0 || b > len(p.src) || a > b {
		return ""
	}
	return p.src[a:b]
}

// rangeFrom returns the range from token from's start to the end of the
// last consumed token.
func (p *parser) rangeFrom(from token) sqlast.Range {
	if p.i == 0 {
		return sqlast.Range{}
	}
	return sqlast.Range{Start: from.pos.Offset, End: p.toks[p.i-1].end}
}

// tokRange is the range of one token.
func tokRange(t token) sqlast.Range { return sqlast.Range{Start: t.pos.Offset, End: t.end} }

// setSpan records where statement s starts and its source text.
func (p *parser) setSpan(s sqlast.Statement, first token) {
	if b, ok := s.(interface{ SetSpan(sqlast.Pos, string) }); ok {
		b.SetSpan(first.pos, p.text(first))
	}
}

func (p *parser) fail(t token, msg string) {
	near := ""
	if t.kind != tEOF {
		near = shorten(t.text)
	}
	panic(&SyntaxError{Pos: t.pos, Near: near, Msg: msg})
}

func (p *parser) failf(t token, format string, args ...any) {
	p.fail(t, fmt.Sprintf(format, args...))
}

// clauses records which optional clauses of a statement were seen, so that
// a repeated clause is an error rather than a silent overwrite.
type clauses map[string]bool

// once fails at t if clause was seen before, and records it.
func (p *parser) once(seen clauses, t token, clause string) {
	if seen[clause] {
		p.failf(t, "%s is given twice", clause)
	}
	seen[clause] = true
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxDepth {
		p.fail(p.tok(), "statement is nested too deeply")
	}
}

func (p *parser) leave() { p.depth-- }

// tryQueryInParens parses "query )" speculatively at the current token. On
// failure it restores the position and reports false.
func (p *parser) tryQueryInParens() (q *sqlast.Query, ok bool) {
	start := p.i
	if p.failedQuery[start] {
		return nil, false
	}
	depth := p.depth
	defer func() {
		if r := recover(); r != nil {
			if _, isSyn := r.(*SyntaxError); !isSyn {
				panic(r)
			}
			p.i, p.depth = start, depth
			if p.failedQuery == nil {
				p.failedQuery = map[int]bool{}
			}
			p.failedQuery[start] = true
			q, ok = nil, false
		}
	}()
	q = p.parseQuery()
	p.expectOp(")")
	return q, true
}

// ---- token tests ----

func isKw(t token, kw string) bool { return t.kind == tWord && t.upper == kw }

func isOp(t token, op string) bool { return t.kind == tOp && t.val == op }

// isIdentTok reports whether t can stand where an identifier is expected:
// any word (most keywords are not reserved there) or a quoted identifier.
func isIdentTok(t token) bool {
	return t.kind == tWord || t.kind == tQIdent
}

func (p *parser) atKw(kw string) bool { return isKw(p.tok(), kw) }

func (p *parser) atOp(op string) bool { return isOp(p.tok(), op) }

func (p *parser) acceptKw(kw string) bool {
	if p.atKw(kw) {
		p.i++
		return true
	}
	return false
}

// acceptKws consumes the keyword sequence kws if it is next in full.
func (p *parser) acceptKws(kws ...string) bool {
	for j, kw := range kws {
		if !isKw(p.peek(j), kw) {
			return false
		}
	}
	p.i += len(kws)
	return true
}

func (p *parser) acceptOp(op string) bool {
	if p.atOp(op) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectKw(kw, msg string) {
	if !p.acceptKw(kw) {
		p.fail(p.tok(), msg)
	}
}

func (p *parser) expectOp(op string) {
	if !p.acceptOp(op) {
		p.fail(p.tok(), "expected '"+op+"'")
	}
}

func (p *parser) expectEnd() {
	if t := p.tok(); t.kind != tEOF {
		if isOp(t, ";") {
			p.fail(t, "expected end of input after the statement (one statement only)")
		}
		p.fail(t, "expected end of statement")
	}
}

// ---- names and literals ----

// parseIdent parses one identifier; what names it in the error message.
func (p *parser) parseIdent(what string) string {
	t := p.tok()
	if !isIdentTok(t) {
		p.fail(t, "expected "+what)
	}
	if t.kind == tWord && sqlast.ReservedInExpr[t.val] {
		p.fail(t, "expected "+what) // a reserved word; back-quoted it would do
	}
	if t.val == "" {
		p.fail(t, "empty identifier")
	}
	p.i++
	return t.val
}

// parseObjectName parses [workspace.][schema.]name.
func (p *parser) parseObjectName(what string) sqlast.ObjectName {
	var n sqlast.ObjectName
	n.Parts = append(n.Parts, p.parseIdent(what))
	for p.atOp(".") {
		if len(n.Parts) == 3 {
			p.fail(p.tok(), "a name has at most three parts (workspace.schema.name)")
		}
		p.i++
		n.Parts = append(n.Parts, p.parseIdent(what))
	}
	return n
}

// parseIdentList parses ( a, b, … ) with at least one name.
func (p *parser) parseIdentList(what string) []string {
	p.expectOp("(")
	var out []string
	for {
		out = append(out, p.parseIdent(what))
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp(")")
	return out
}

func (p *parser) parseString(what string) string {
	t := p.tok()
	if t.kind != tString {
		p.fail(t, "expected "+what)
	}
	p.i++
	return t.val
}

// parseStringList parses ( 'a', 'b', … ), possibly empty.
func (p *parser) parseStringList(what string) []string {
	p.expectOp("(")
	var out []string
	for !p.atOp(")") {
		out = append(out, p.parseString(what))
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp(")")
	return out
}

// parseInt parses a non-negative integer literal.
func (p *parser) parseInt(what string) int {
	t := p.tok()
	if t.kind != tNumber {
		p.fail(t, "expected "+what)
	}
	n, err := strconv.Atoi(t.val)
	if err != nil || n < 0 {
		p.fail(t, "expected "+what+" (a whole number)")
	}
	p.i++
	return n
}

// parseBool parses TRUE, FALSE, 'true' or 'false'.
func (p *parser) parseBool(what string) bool {
	t := p.tok()
	v := ""
	switch t.kind {
	case tWord:
		v = t.upper
	case tString:
		v = strings.ToUpper(t.val)
	}
	switch v {
	case "TRUE":
		p.i++
		return true
	case "FALSE":
		p.i++
		return false
	}
	p.fail(t, what+" expects TRUE or FALSE")
	return false
}

// parseComment parses the string after COMMENT [=].
func (p *parser) parseComment() *string {
	p.acceptOp("=")
	s := p.parseString("a comment string")
	return &s
}

func (p *parser) parseIfNotExists() bool {
	return p.acceptKws("IF", "NOT", "EXISTS")
}

func (p *parser) parseIfExists() bool {
	return p.acceptKws("IF", "EXISTS")
}

// parseLike parses an optional LIKE 'pattern'.
func (p *parser) parseLike() *string {
	if !p.acceptKw("LIKE") {
		return nil
	}
	s := p.parseString("a LIKE pattern string")
	return &s
}

// ---- properties ----

// atKeyValue reports whether a KEY = value pair starts here.
func (p *parser) atKeyValue() bool {
	t := p.tok()
	return (t.kind == tWord || t.kind == tQIdent || t.kind == tString) && isOp(p.peek(1), "=")
}

// parseKeyValue parses KEY = value. Unquoted keys are lower-cased, quoted
// keys kept; the value is a string's content, a number's text, "true" or
// "false", or a bare word as written.
func (p *parser) parseKeyValue() sqlast.Property {
	t := p.tok()
	if !(t.kind == tWord || t.kind == tQIdent || t.kind == tString) {
		p.fail(t, "expected a property name")
	}
	p.i++
	prop := sqlast.Property{Key: t.val, Pos: t.pos}
	p.expectOp("=")
	from := p.tok()
	prop.Value = p.parsePropValue()
	prop.ValueSpan = p.rangeFrom(from)
	return prop
}

func (p *parser) parsePropValue() string {
	t := p.tok()
	switch t.kind {
	case tString, tNumber, tQIdent:
		p.i++
		return t.val
	case tWord:
		p.i++
		if t.upper == "TRUE" || t.upper == "FALSE" {
			return t.val
		}
		return t.text
	case tOp:
		if num := p.peek(1); (t.val == "-" || t.val == "+") && num.kind == tNumber {
			p.i += 2
			if t.val == "-" {
				return "-" + num.val
			}
			return num.val
		}
	}
	p.fail(t, "expected a value (a string, a number, TRUE or FALSE)")
	return ""
}

// parsePropList parses ( 'k' = 'v' [,] … ), possibly empty.
func (p *parser) parsePropList() []sqlast.Property {
	p.expectOp("(")
	var props []sqlast.Property
	for !p.atOp(")") {
		props = append(props, p.parseKeyValue())
		if !p.acceptOp(",") && !p.atKeyValue() {
			break
		}
	}
	p.expectOp(")")
	return props
}

// ---- statements ----

func (p *parser) parseStatement() sqlast.Statement {
	t := p.tok()
	if t.kind == tEOF {
		p.fail(t, "expected a statement")
	}
	if isOp(t, "(") {
		return &sqlast.QueryStmt{Query: p.parseQuery()}
	}
	switch t.upper {
	case "SELECT", "WITH":
		if t.kind == tWord {
			return &sqlast.QueryStmt{Query: p.parseQuery()}
		}
	case "CREATE":
		return p.parseCreate()
	case "DROP":
		return p.parseDrop()
	case "UNDROP":
		p.i++
		p.expectKw("TABLE", "expected TABLE after UNDROP")
		return &sqlast.UndropTable{Name: p.parseObjectName("a table name")}
	case "ALTER":
		return p.parseAlter()
	case "SHOW":
		return p.parseShow()
	case "DESC", "DESCRIBE":
		return p.parseDesc()
	case "INSERT":
		return p.parseInsert()
	case "DELETE":
		return p.parseDelete()
	case "UPDATE":
		return p.parseUpdate()
	case "MERGE":
		return p.parseMerge()
	case "COPY":
		return p.parseCopy()
	case "REFRESH":
		p.i++
		if !p.acceptKws("DYNAMIC", "TABLE") {
			p.fail(p.tok(), "expected DYNAMIC TABLE after REFRESH")
		}
		return &sqlast.RefreshDynamicTable{Name: p.parseObjectName("a dynamic table name")}
	}
	p.fail(t, "expected a statement (SELECT, INSERT, COPY, CREATE, ALTER, DROP, SHOW, DESC, …)")
	return nil
}
