package chsql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lakepipe/lakepipe/internal/sqlast"

	"github.com/lakepipe/lakepipe/schemas"
)

// Translator turns parsed queries into ClickHouse SQL. It is cheap to build
// and holds no state between calls besides its callbacks.
type Translator struct {
	// Table resolves a table or view name of the query to quoted ClickHouse
	// text (`db`.`t`). It reports unknown tables with an error.
	Table func(name sqlast.ObjectName) (string, error)
	// Source renders the sources ClickHouse has no notion of: VOLUME …,
	// DIRECTORY(VOLUME …) and table functions such as load_history('t'). It
	// returns a FROM item: a quoted table or a parenthesised subquery.
	Source func(ref sqlast.TableRef) (string, error)
	// Columns lists the user-visible columns of a table, when known, so
	// that * leaves out lakepipe's bookkeeping columns (_lp_…).
	Columns func(name sqlast.ObjectName) ([]string, bool)
}

// Unsupported is returned for constructs that parse but that lakepipe cannot
// run on ClickHouse.
type Unsupported struct{ What string }

func (e *Unsupported) Error() string { return e.What + " is not supported" }

// Query translates a whole query.
func (t *Translator) Query(q *sqlast.Query) (string, error) {
	var b strings.Builder
	if err := t.query(&b, q); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Expr translates one scalar expression.
func (t *Translator) Expr(e sqlast.Expr) (string, error) {
	var b strings.Builder
	if err := t.expr(&b, e); err != nil {
		return "", err
	}
	return b.String(), nil
}

func (t *Translator) query(b *strings.Builder, q *sqlast.Query) error {
	if len(q.With) > 0 {
		// ClickHouse 18.16 has no common table expressions; inline them by
		// substituting the CTE for each reference.
		inner := *t
		ctes := map[string]*sqlast.Query{}
		for _, c := range q.With {
			ctes[c.Name] = c.Query
		}
		outerTable := t.Table
		inner.Table = func(name sqlast.ObjectName) (string, error) {
			if len(name.Parts) == 1 {
				if cq, ok := ctes[name.Parts[0]]; ok {
					s, err := t.Query(cq)
					if err != nil {
						return "", err
					}
					return "(" + s + ")", nil
				}
			}
			return outerTable(name)
		}
		rest := *q
		rest.With = nil
		return inner.query(b, &rest)
	}
	if err := t.setExpr(b, q.Body); err != nil {
		return err
	}
	if len(q.OrderBy) > 0 {
		b.WriteString(" ORDER BY ")
		if err := t.orderBy(b, q.OrderBy); err != nil {
			return err
		}
	}
	if q.Limit != nil {
		b.WriteString(" LIMIT ")
		if q.Offset != nil {
			// LIMIT m, n is the form both 18.16 and current releases accept.
			if err := t.expr(b, q.Offset); err != nil {
				return err
			}
			b.WriteString(", ")
		}
		if err := t.expr(b, q.Limit); err != nil {
			return err
		}
	}
	return nil
}

func (t *Translator) orderBy(b *strings.Builder, items []sqlast.OrderItem) error {
	for i, o := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := t.expr(b, o.Expr); err != nil {
			return err
		}
		if o.Desc {
			b.WriteString(" DESC")
		}
		if o.NullsFirst != nil {
			if *o.NullsFirst {
				b.WriteString(" NULLS FIRST")
			} else {
				b.WriteString(" NULLS LAST")
			}
		}
	}
	return nil
}

func (t *Translator) setExpr(b *strings.Builder, s sqlast.SetExpr) error {
	switch s := s.(type) {
	case *sqlast.Select:
		return t.selectBody(b, s)
	case *sqlast.Query:
		if len(s.OrderBy) == 0 && s.Limit == nil && len(s.With) == 0 {
			return t.setExpr(b, s.Body)
		}
		b.WriteString("SELECT * FROM (")
		if err := t.query(b, s); err != nil {
			return err
		}
		b.WriteString(")")
		return nil
	case *sqlast.SetOp:
		if s.Op != "UNION" || !s.All {
			return &Unsupported{What: s.Op + map[bool]string{true: " ALL", false: ""}[s.All] + " (use UNION ALL)"}
		}
		if err := t.setExpr(b, s.Left); err != nil {
			return err
		}
		b.WriteString(" UNION ALL ")
		return t.setExpr(b, s.Right)
	}
	return fmt.Errorf("unexpected query part %T", s)
}

func (t *Translator) selectBody(b *strings.Builder, s *sqlast.Select) error {
	b.WriteString("SELECT ")
	if s.Distinct {
		b.WriteString("DISTINCT ")
	}
	for i, it := range s.Items {
		if i > 0 {
			b.WriteString(", ")
		}
		switch {
		case it.Star:
			b.WriteString(t.star(s.From, it.Qualifier))
		default:
			if err := t.expr(b, it.Expr); err != nil {
				return err
			}
			if it.Alias != "" {
				b.WriteString(" AS " + QuoteIdent(it.Alias))
			}
		}
	}
	if len(s.From) > 0 {
		b.WriteString(" FROM ")
		if err := t.from(b, s.From); err != nil {
			return err
		}
	}
	if s.Where != nil {
		b.WriteString(" WHERE ")
		if err := t.expr(b, s.Where); err != nil {
			return err
		}
	}
	if len(s.GroupBy) > 0 {
		b.WriteString(" GROUP BY ")
		for i, g := range s.GroupBy {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := t.expr(b, g); err != nil {
				return err
			}
		}
	}
	if s.Having != nil {
		b.WriteString(" HAVING ")
		if err := t.expr(b, s.Having); err != nil {
			return err
		}
	}
	return nil
}

// From translates the sources of a FROM clause (without the keyword).
func (t *Translator) From(refs []sqlast.TableRef) (string, error) {
	var b strings.Builder
	if err := t.from(&b, refs); err != nil {
		return "", err
	}
	return b.String(), nil
}

func (t *Translator) from(b *strings.Builder, refs []sqlast.TableRef) error {
	for i, f := range refs {
		if i > 0 {
			b.WriteString(" CROSS JOIN ")
		}
		if err := t.tableRef(b, f); err != nil {
			return err
		}
	}
	return nil
}

// star expands * (or q.*) into the visible columns of the tables it
// covers; it stays * when a source's columns are not known.
func (t *Translator) star(from []sqlast.TableRef, qualifier string) string {
	plain := "*"
	if qualifier != "" {
		plain = QuoteIdent(qualifier) + ".*"
	}
	if t.Columns == nil {
		return plain
	}
	var leaves []*sqlast.TableName
	var walk func(r sqlast.TableRef) bool
	walk = func(r sqlast.TableRef) bool {
		switch r := r.(type) {
		case *sqlast.TableName:
			leaves = append(leaves, r)
			return true
		case *sqlast.JoinRef:
			return walk(r.Left) && walk(r.Right)
		}
		return false
	}
	for _, f := range from {
		if !walk(f) {
			return plain
		}
	}
	var cols []string
	for _, l := range leaves {
		name := l.Alias
		if name == "" {
			name = l.Name.Name()
		}
		if qualifier != "" && name != qualifier {
			continue
		}
		names, ok := t.Columns(l.Name)
		if !ok {
			return plain
		}
		for _, c := range names {
			if len(leaves) > 1 || qualifier != "" {
				cols = append(cols, QuoteIdent(name)+"."+QuoteIdent(c))
			} else {
				cols = append(cols, QuoteIdent(c))
			}
		}
	}
	if len(cols) == 0 {
		return plain
	}
	return strings.Join(cols, ", ")
}

func alias(b *strings.Builder, a string) {
	if a != "" {
		b.WriteString(" AS " + QuoteIdent(a))
	}
}

func (t *Translator) tableRef(b *strings.Builder, r sqlast.TableRef) error {
	switch r := r.(type) {
	case *sqlast.TableName:
		if t.Table == nil {
			return fmt.Errorf("table %s: no table resolver", strings.Join(r.Name.Parts, "."))
		}
		s, err := t.Table(r.Name)
		if err != nil {
			return err
		}
		b.WriteString(s)
		if r.Alias == "" && strings.HasPrefix(s, "(") {
			// A name that resolves to a subquery (a table stream) keeps
			// its name, so that s.col still works.
			alias(b, r.Name.Parts[len(r.Name.Parts)-1])
		} else {
			alias(b, r.Alias)
		}
	case *sqlast.SubqueryRef:
		b.WriteString("(")
		if err := t.query(b, r.Query); err != nil {
			return err
		}
		b.WriteString(")")
		alias(b, r.Alias)
	case *sqlast.JoinRef:
		if err := t.tableRef(b, r.Left); err != nil {
			return err
		}
		switch r.Kind {
		case "CROSS":
			b.WriteString(" CROSS JOIN ")
		case "", "INNER":
			// ALL is spelled out: 18.16 refuses a JOIN without strictness.
			b.WriteString(" ALL INNER JOIN ")
		default:
			b.WriteString(" ALL " + r.Kind + " JOIN ")
		}
		if err := t.tableRef(b, r.Right); err != nil {
			return err
		}
		if r.On != nil {
			b.WriteString(" ON ")
			if err := t.expr(b, r.On); err != nil {
				return err
			}
		}
		if len(r.Using) > 0 {
			b.WriteString(" USING (")
			for i, u := range r.Using {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(QuoteIdent(u))
			}
			b.WriteString(")")
		}
	case *sqlast.VolumeRef, *sqlast.DirectoryRef, *sqlast.FuncRef:
		if t.Source == nil {
			return &Unsupported{What: "this source here"}
		}
		s, err := t.Source(r)
		if err != nil {
			return err
		}
		b.WriteString(s)
		switch r := r.(type) {
		case *sqlast.VolumeRef:
			alias(b, r.Alias)
		case *sqlast.DirectoryRef:
			alias(b, r.Alias)
		case *sqlast.FuncRef:
			alias(b, r.Alias)
		}
	default:
		return fmt.Errorf("unexpected FROM item %T", r)
	}
	return nil
}

// functions maps the ClickZetta Lakehouse (and common warehouse) function names to
// ClickHouse's; names not listed pass through unchanged.
var functions = map[string]string{
	"count": "count", "sum": "sum", "avg": "avg", "min": "min", "max": "max",
	"upper": "upperUTF8", "lower": "lowerUTF8", "length": "lengthUTF8", "char_length": "lengthUTF8",
	"substr": "substringUTF8", "substring": "substringUTF8", "concat": "concat",
	"coalesce": "coalesce", "ifnull": "ifNull", "nvl": "ifNull", "nullif": "nullIf",
	"if": "if", "iff": "if", "abs": "abs", "round": "round", "floor": "floor", "ceil": "ceil",
	"now": "now", "current_timestamp": "now", "current_date": "today", "today": "today",
	"to_date": "toDate", "date": "toDate", "to_timestamp": "toDateTime",
	"year": "toYear", "month": "toMonth", "day": "toDayOfMonth", "dayofmonth": "toDayOfMonth",
	"hour": "toHour", "minute": "toMinute", "second": "toSecond",
	"trim": "trimBoth", "ltrim": "trimLeft", "rtrim": "trimRight",
	"replace": "replaceAll", "split": "splitByString", "md5": "MD5",
	"stddev": "stddevSamp", "variance": "varSamp", "any_value": "any",
	"approx_count_distinct": "uniq", "row_number": "row_number", "rand": "rand",
	"todate": "toDate", "todatetime": "toDateTime", "tostring": "toString", "toint64": "toInt64",
	"toyear": "toYear", "tomonth": "toMonth", "tostartofday": "toStartOfDay", "tostartofhour": "toStartOfHour",
	"uniq": "uniq", "uniqexact": "uniqExact", "groupArray": "groupArray", "grouparray": "groupArray",
	"parse_json": "", // handled below
}

func (t *Translator) expr(b *strings.Builder, e sqlast.Expr) error {
	switch e := e.(type) {
	case *sqlast.ColumnRef:
		for i, p := range e.Parts {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(QuoteIdent(p))
		}
	case *sqlast.Literal:
		switch e.Kind {
		case sqlast.LitString:
			b.WriteString(QuoteString(e.Value))
		case sqlast.LitNumber:
			if _, err := strconv.ParseFloat(e.Value, 64); err != nil {
				return fmt.Errorf("bad number %q", e.Value)
			}
			b.WriteString(e.Value)
		case sqlast.LitBool:
			if e.Value == "true" {
				b.WriteString("1")
			} else {
				b.WriteString("0")
			}
		default:
			b.WriteString("NULL")
		}
	case *sqlast.StarExpr:
		b.WriteString("*")
	case *sqlast.ParenExpr:
		b.WriteString("(")
		if err := t.expr(b, e.X); err != nil {
			return err
		}
		b.WriteString(")")
	case *sqlast.UnaryExpr:
		if e.Op == "NOT" {
			b.WriteString("NOT (")
		} else {
			b.WriteString(e.Op + "(")
		}
		if err := t.expr(b, e.X); err != nil {
			return err
		}
		b.WriteString(")")
	case *sqlast.BinaryExpr:
		return t.binary(b, e)
	case *sqlast.FuncCall:
		return t.call(b, e)
	case *sqlast.CastExpr:
		if e.Type.Name == "JSON" || e.Type.Name == "VARIANT" {
			// PARSE_JSON-style casts keep the text: JSON is stored as String.
			return t.expr(b, e.X)
		}
		// Nullable, so that NULL casts to NULL as in SQL, not to an error.
		ch, err := schemas.ClickHouseType(e.Type, false)
		if err != nil {
			return err
		}
		b.WriteString("CAST(")
		if err := t.expr(b, e.X); err != nil {
			return err
		}
		b.WriteString(" AS " + ch + ")")
	case *sqlast.CaseExpr:
		b.WriteString("CASE")
		if e.Operand != nil {
			b.WriteString(" ")
			if err := t.expr(b, e.Operand); err != nil {
				return err
			}
		}
		for _, w := range e.Whens {
			b.WriteString(" WHEN ")
			if err := t.expr(b, w.Cond); err != nil {
				return err
			}
			b.WriteString(" THEN ")
			if err := t.expr(b, w.Result); err != nil {
				return err
			}
		}
		if e.Else != nil {
			b.WriteString(" ELSE ")
			if err := t.expr(b, e.Else); err != nil {
				return err
			}
		}
		b.WriteString(" END")
	case *sqlast.InExpr:
		if err := t.expr(b, e.X); err != nil {
			return err
		}
		if e.Not {
			b.WriteString(" NOT")
		}
		b.WriteString(" IN (")
		if e.Query != nil {
			if err := t.query(b, e.Query); err != nil {
				return err
			}
		} else {
			for i, x := range e.List {
				if i > 0 {
					b.WriteString(", ")
				}
				if err := t.expr(b, x); err != nil {
					return err
				}
			}
		}
		b.WriteString(")")
	case *sqlast.BetweenExpr:
		// (NOT (x BETWEEN …)): ClickHouse 18.16 cannot parse x NOT
		// BETWEEN (an 18.16-only workaround; current releases can).
		if e.Not {
			b.WriteString("(NOT ")
		}
		b.WriteString("(")
		if err := t.expr(b, e.X); err != nil {
			return err
		}
		b.WriteString(" BETWEEN ")
		if err := t.expr(b, e.Lo); err != nil {
			return err
		}
		b.WriteString(" AND ")
		if err := t.expr(b, e.Hi); err != nil {
			return err
		}
		b.WriteString(")")
		if e.Not {
			b.WriteString(")")
		}
	case *sqlast.IsNullExpr:
		if e.Not {
			b.WriteString("isNotNull(")
		} else {
			b.WriteString("isNull(")
		}
		if err := t.expr(b, e.X); err != nil {
			return err
		}
		b.WriteString(")")
	case *sqlast.IndexExpr:
		return &Unsupported{What: "subscripts ([…]) in queries run by ClickHouse"}
	case *sqlast.SubqueryExpr:
		b.WriteString("(")
		if err := t.query(b, e.Query); err != nil {
			return err
		}
		b.WriteString(")")
	case *sqlast.ExistsExpr:
		return &Unsupported{What: "EXISTS (rewrite as IN (SELECT …))"}
	case *sqlast.IntervalExpr:
		b.WriteString("INTERVAL ")
		if l, ok := e.Value.(*sqlast.Literal); ok && l.Kind == sqlast.LitString {
			if _, err := strconv.Atoi(strings.TrimSpace(l.Value)); err != nil {
				return fmt.Errorf("INTERVAL '%s': not a whole number", l.Value)
			}
			b.WriteString(strings.TrimSpace(l.Value))
		} else if err := t.expr(b, e.Value); err != nil {
			return err
		}
		b.WriteString(" " + strings.TrimSuffix(strings.ToUpper(e.Unit), "S"))
	default:
		return fmt.Errorf("unexpected expression %T", e)
	}
	return nil
}

func (t *Translator) binary(b *strings.Builder, e *sqlast.BinaryExpr) error {
	op := e.Op
	switch op {
	case "||":
		b.WriteString("concat(")
		if err := t.expr(b, e.L); err != nil {
			return err
		}
		b.WriteString(", ")
		if err := t.expr(b, e.R); err != nil {
			return err
		}
		b.WriteString(")")
		return nil
	case "ILIKE", "NOT ILIKE":
		// 18.16 has no ILIKE.
		if op == "NOT ILIKE" {
			b.WriteString("NOT ")
		}
		b.WriteString("(lowerUTF8(")
		if err := t.expr(b, e.L); err != nil {
			return err
		}
		b.WriteString(") LIKE lowerUTF8(")
		if err := t.expr(b, e.R); err != nil {
			return err
		}
		b.WriteString("))")
		return nil
	case "RLIKE":
		b.WriteString("match(")
		if err := t.expr(b, e.L); err != nil {
			return err
		}
		b.WriteString(", ")
		if err := t.expr(b, e.R); err != nil {
			return err
		}
		b.WriteString(")")
		return nil
	case "!=":
		op = "<>"
	}
	b.WriteString("(")
	if err := t.expr(b, e.L); err != nil {
		return err
	}
	b.WriteString(" " + op + " ")
	if err := t.expr(b, e.R); err != nil {
		return err
	}
	b.WriteString(")")
	return nil
}

func (t *Translator) call(b *strings.Builder, f *sqlast.FuncCall) error {
	if f.Over != nil {
		return &Unsupported{What: "window functions (OVER …) on this ClickHouse"}
	}
	name := strings.ToLower(f.Name)
	switch name {
	case "parse_json", "to_json", "json":
		// JSON values are kept as their text in ClickHouse.
		if len(f.Args) != 1 {
			return fmt.Errorf("%s takes one argument", strings.ToUpper(name))
		}
		return t.expr(b, f.Args[0])
	case "current_timestamp", "current_date":
		b.WriteString(functions[name] + "()")
		return nil
	}
	if err := CheckFunction(f.Name); err != nil {
		return err
	}
	if mapped, ok := functions[name]; ok && mapped != "" {
		name = mapped
	} else {
		name = f.Name
	}
	if !isPlainIdent(name) {
		return fmt.Errorf("function name %q is not valid", f.Name)
	}
	b.WriteString(name + "(")
	if f.Distinct {
		b.WriteString("DISTINCT ")
	}
	if f.Star {
		if name != "count" {
			return fmt.Errorf("%s(*) is not valid; only COUNT(*)", strings.ToUpper(f.Name))
		}
	}
	for i, a := range f.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := t.expr(b, a); err != nil {
			return err
		}
	}
	b.WriteString(")")
	return nil
}

func isPlainIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// RefusedFunction is returned for a scalar function that would let a query
// reach past the tables it names: dictionaries, files on the server, Join
// tables, other tables' structure.
type RefusedFunction struct {
	Name string // as written
	Hint string // what to write instead
}

func (e *RefusedFunction) Error() string {
	msg := e.Name + "(…): functions that read dictionaries, server files or other tables " +
		"(dictGet…, joinGet, file, hasColumnInTable) are not available in lakepipe SQL"
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// readingFunctions are ClickHouse functions that read something other than
// their arguments, by name (lower-cased). The in… forms are the function
// spelling of IN, which also takes a bare table name.
var readingFunctions = map[string]string{
	"file":             "read files with SELECT … FROM VOLUME v",
	"joinget":          "JOIN the table instead",
	"joingetornull":    "JOIN the table instead",
	"hascolumnintable": "DESC TABLE t lists a table's columns",
	"modelevaluate":    "",
	"catboostevaluate": "",
	"in":               "write x IN (…)",
	"notin":            "write x NOT IN (…)",
	"globalin":         "write x IN (…)",
	"globalnotin":      "write x NOT IN (…)",
	"nullin":           "write x IN (…)",
	"notnullin":        "write x NOT IN (…)",
	"globalnullin":     "write x IN (…)",
	"globalnotnullin":  "write x NOT IN (…)",
	"notinignoreset":   "write x NOT IN (…)",
	"inignoreset":      "write x IN (…)",
}

// CheckFunction refuses, with a *RefusedFunction, the scalar functions a
// query through lakepipe may not call (see readingFunctions; every dict…
// function reads a dictionary). Other names are allowed: the translator
// passes them through to ClickHouse.
func CheckFunction(name string) error {
	l := strings.ToLower(name)
	if hint, ok := readingFunctions[l]; ok {
		return &RefusedFunction{Name: name, Hint: hint}
	}
	if strings.HasPrefix(l, "dict") {
		return &RefusedFunction{Name: name, Hint: "JOIN the table the dictionary is built from instead"}
	}
	return nil
}
