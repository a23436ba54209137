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
	// Describe lists the columns of a table Columns does not know (a
	// dynamic table's view), asking ClickHouse: only where a name is
	// needed, ORDER BY 2 after SELECT * over it, not for every *.
	Describe func(name sqlast.ObjectName) ([]string, bool)
	// Keyed reports whether a table keeps one row per key (a
	// ReplacingMergeTree): it is read with FINAL, so that a query never
	// sees a key's replaced rows that merges have not removed yet.
	Keyed func(name sqlast.ObjectName) bool
}

// Unsupported is returned for constructs that parse but that lakepipe cannot
// run on ClickHouse.
type Unsupported struct {
	What string
	Hint string // why, or what to write instead; may be empty
}

func (e *Unsupported) Error() string {
	if e.Hint != "" {
		return e.What + " is not supported: " + e.Hint
	}
	return e.What + " is not supported"
}

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
		inner := t
		for _, c := range q.With {
			inner = inner.withCTE(c.Name, c.Query)
		}
		rest := *q
		rest.With = nil
		return inner.query(b, &rest)
	}
	// ClickHouse reads ORDER BY and LIMIT written after the last SELECT of
	// a UNION ALL as that SELECT's own; in SQL they apply to the whole
	// union, which therefore becomes a subquery. SELECT * keeps the
	// union's column names, those of its first SELECT.
	_, union := q.Body.(*sqlast.SetOp)
	wrap := union && (len(q.OrderBy) > 0 || q.Limit != nil || q.Offset != nil)
	if wrap {
		b.WriteString("SELECT * FROM (")
	}
	if err := t.setExpr(b, q.Body); err != nil {
		return err
	}
	if wrap {
		b.WriteString(")")
	}
	if len(q.OrderBy) > 0 {
		b.WriteString(" ORDER BY ")
		if err := t.orderBy(b, q.OrderBy, q.Body, wrap); err != nil {
			return err
		}
	}
	if q.Limit != nil || q.Offset != nil {
		b.WriteString(" LIMIT ")
		if q.Offset != nil {
			// LIMIT m, n is the form both 18.16 and current releases accept.
			if err := t.expr(b, q.Offset); err != nil {
				return err
			}
			b.WriteString(", ")
		}
		if q.Limit != nil {
			if err := t.expr(b, q.Limit); err != nil {
				return err
			}
		} else {
			b.WriteString(noLimit)
		}
	}
	return nil
}

// noLimit is the LIMIT that goes with an OFFSET written alone: 18.16 has
// no OFFSET without LIMIT (current releases do). Not 2^64-1 nor 2^63-1:
// 18.16 adds offset and limit in signed 64-bit arithmetic that overflows
// (LIMIT 3, 18446744073709551615 returns no rows there, LIMIT 3,
// 9223372036854775807 fails "out of bound"), so 10^18 rows, which leaves
// room for any offset below 8·10^18. An 18.16-only workaround; current
// releases take either.
const noLimit = "1000000000000000000"

// withCTE returns a translator in which the one-part name name is the
// common table expression q. Each reference is replaced by q in
// parentheses, translated by t: with the CTEs defined before it in scope,
// but not itself (CTEs are not recursive; its own name there is a table).
// Inside the scope name shadows a table of that name, for * too.
func (t *Translator) withCTE(name string, q *sqlast.Query) *Translator {
	in := *t
	in.Table = func(n sqlast.ObjectName) (string, error) {
		if len(n.Parts) == 1 && n.Parts[0] == name {
			s, err := t.Query(q)
			if err != nil {
				return "", err
			}
			return "(" + s + ")", nil
		}
		if t.Table == nil {
			return "", fmt.Errorf("table %s: no table resolver", strings.Join(n.Parts, "."))
		}
		return t.Table(n)
	}
	in.Columns = func(n sqlast.ObjectName) ([]string, bool) {
		if len(n.Parts) == 1 && n.Parts[0] == name || t.Columns == nil {
			// A CTE's * is the * of its subquery, expanded there.
			return nil, false
		}
		return t.Columns(n)
	}
	return &in
}

func (t *Translator) orderBy(b *strings.Builder, items []sqlast.OrderItem, body sqlast.SetExpr, union bool) error {
	sel := firstSelect(body)
	for i, o := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := t.positional(b, o.Expr, sel, union); err != nil {
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

// positional translates an ORDER BY or GROUP BY item: a number k is the
// k-th column of the SELECT (of a UNION ALL's first, by its name), as in
// the ClickZetta Lakehouse SQL; ClickHouse 18.16 would sort by the
// constant (current releases follow enable_positional_arguments).
func (t *Translator) positional(b *strings.Builder, x sqlast.Expr, sel *sqlast.Select, union bool) error {
	lit, ok := x.(*sqlast.Literal)
	if !ok || lit.Kind != sqlast.LitNumber || sel == nil {
		return t.expr(b, x)
	}
	k, err := strconv.Atoi(lit.Value)
	if err != nil || k < 1 {
		return t.expr(b, x) // not a position: a constant, as written
	}
	var cols []string // the SELECT's columns, translated, star expanded
	names := map[int]string{}
	for _, it := range sel.Items {
		switch {
		case it.Star:
			starCols, starNames, ok := t.starColumns(sel.From, it.Qualifier)
			if !ok {
				return &Unsupported{What: "ORDER BY or GROUP BY " + lit.Value + " with SELECT * over a source whose columns are not known", Hint: "name the column"}
			}
			for i, c := range starCols {
				names[len(cols)] = starNames[i]
				cols = append(cols, c)
			}
		case it.Alias != "":
			names[len(cols)] = QuoteIdent(it.Alias)
			cols = append(cols, QuoteIdent(it.Alias))
		default:
			var e strings.Builder
			if err := t.expr(&e, it.Expr); err != nil {
				return err
			}
			if c, ok := it.Expr.(*sqlast.ColumnRef); ok {
				names[len(cols)] = QuoteIdent(c.Parts[len(c.Parts)-1])
			}
			cols = append(cols, e.String())
		}
	}
	if k > len(cols) {
		return fmt.Errorf("ORDER BY or GROUP BY position %d: the SELECT has %d columns", k, len(cols))
	}
	if !union {
		b.WriteString(cols[k-1])
		return nil
	}
	name, ok := names[k-1]
	if !ok {
		return &Unsupported{What: "ORDER BY " + lit.Value + " over a UNION ALL whose column " + lit.Value + " is an expression without a name", Hint: "give it an alias (AS name)"}
	}
	b.WriteString(name)
	return nil
}

// starColumns is starList, or over one table Describe knows or one
// subquery its output names (both lists the same then).
func (t *Translator) starColumns(from []sqlast.TableRef, qualifier string) (cols, names []string, ok bool) {
	if cols, names, ok = t.starList(from, qualifier); ok {
		return cols, names, true
	}
	if len(from) != 1 {
		return nil, nil, false // several sources, or none (SELECT * ORDER BY 1)
	}
	if tn, one := from[0].(*sqlast.TableName); one && t.Describe != nil {
		if known, ok := t.Describe(tn.Name); ok {
			for _, c := range known {
				names = append(names, QuoteIdent(c))
			}
			return names, names, len(names) > 0
		}
	}
	names, ok = t.subqueryNames(from)
	return names, names, ok
}

// firstSelect is the SELECT that names a query's columns: the first of a
// UNION ALL (nil for another kind of query part).
func firstSelect(body sqlast.SetExpr) *sqlast.Select {
	for {
		op, ok := body.(*sqlast.SetOp)
		if !ok {
			break
		}
		body = op.Left
	}
	sel, _ := body.(*sqlast.Select)
	return sel
}

// subqueryNames are the quoted output names of a FROM that is one
// subquery: its (first) SELECT's aliases and column names, stars over
// known tables expanded.
func (t *Translator) subqueryNames(from []sqlast.TableRef) ([]string, bool) {
	if len(from) != 1 {
		return nil, false
	}
	sub, ok := from[0].(*sqlast.SubqueryRef)
	if !ok {
		return nil, false
	}
	sel := firstSelect(sub.Query.Body)
	if sel == nil {
		return nil, false
	}
	var names []string
	for _, it := range sel.Items {
		switch {
		case it.Star:
			_, starNames, ok := t.starColumns(sel.From, it.Qualifier)
			if !ok {
				return nil, false
			}
			names = append(names, starNames...)
		case it.Alias != "":
			names = append(names, QuoteIdent(it.Alias))
		default:
			c, ok := it.Expr.(*sqlast.ColumnRef)
			if !ok {
				return nil, false
			}
			names = append(names, QuoteIdent(c.Parts[len(c.Parts)-1]))
		}
	}
	return names, true
}

func (t *Translator) setExpr(b *strings.Builder, s sqlast.SetExpr) error {
	switch s := s.(type) {
	case *sqlast.Select:
		return t.selectBody(b, s)
	case *sqlast.Query:
		if len(s.OrderBy) == 0 && s.Limit == nil && s.Offset == nil && len(s.With) == 0 {
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
			if err := t.positional(b, g, s, false); err != nil {
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
	if cols, _, ok := t.starList(from, qualifier); ok {
		return strings.Join(cols, ", ")
	}
	if qualifier != "" {
		return QuoteIdent(qualifier) + ".*"
	}
	return "*"
}

// starList is what a * stands for when the columns of its tables are
// known: each column quoted (qualified in a join or after t.*), and its
// name alone.
func (t *Translator) starList(from []sqlast.TableRef, qualifier string) (cols, names []string, ok bool) {
	if t.Columns == nil {
		return nil, nil, false
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
			return nil, nil, false
		}
	}
	for _, l := range leaves {
		name := l.Alias
		if name == "" {
			name = l.Name.Name()
		}
		if qualifier != "" && name != qualifier {
			continue
		}
		known, ok := t.Columns(l.Name)
		if !ok {
			return nil, nil, false
		}
		for _, c := range known {
			names = append(names, QuoteIdent(c))
			if len(leaves) > 1 || qualifier != "" {
				cols = append(cols, QuoteIdent(name)+"."+QuoteIdent(c))
			} else {
				cols = append(cols, QuoteIdent(c))
			}
		}
	}
	return cols, names, len(cols) > 0
}

func alias(b *strings.Builder, a string) {
	if a != "" {
		b.WriteString(" AS " + QuoteIdent(a))
	}
}

func (t *Translator) tableRef(b *strings.Builder, r sqlast.TableRef) error {
	return t.tableRefSide(b, r, false)
}

// tableRefSide writes a FROM item; joined is true for the right side of a
// join, where 18.16 ignores FINAL after a table (it reads the joined table
// as is), so a keyed table there is a subquery.
func (t *Translator) tableRefSide(b *strings.Builder, r sqlast.TableRef, joined bool) error {
	switch r := r.(type) {
	case *sqlast.TableName:
		if t.Table == nil {
			return fmt.Errorf("table %s: no table resolver", strings.Join(r.Name.Parts, "."))
		}
		s, err := t.Table(r.Name)
		if err != nil {
			return err
		}
		final := t.Keyed != nil && !strings.HasPrefix(s, "(") && t.Keyed(r.Name)
		if final && joined {
			s = "(SELECT * FROM " + s + " FINAL)"
		}
		b.WriteString(s)
		if final && !joined {
			alias(b, r.Alias)
			b.WriteString(" FINAL")
		} else if r.Alias == "" && strings.HasPrefix(s, "(") {
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
		if err := t.tableRefSide(b, r.Right, true); err != nil {
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
		// TRY_CAST is the same CAST: ClickHouse's CAST to Nullable(T)
		// already gives NULL for text it cannot parse, the NULL that
		// TRY_CAST promises (and that CAST should not give; see
		// docs/sql-semantics.md). toTOrNull would add nothing on 18.16 (it
		// wraps on overflow alike and takes strings only), and
		// accurateCastOrNull, which gives NULL on overflow too, came after
		// 18.16.
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
		return t.interval(b, e)
	default:
		return fmt.Errorf("unexpected expression %T", e)
	}
	return nil
}

// interval writes INTERVAL n UNIT. A unit may come inside the string, as
// in INTERVAL '3 hours'; an interval without one is refused (the parser
// refuses INTERVAL 3 already).
func (t *Translator) interval(b *strings.Builder, e *sqlast.IntervalExpr) error {
	value, unit := e.Value, strings.TrimSuffix(strings.ToUpper(e.Unit), "S")
	if l, ok := value.(*sqlast.Literal); ok && l.Kind == sqlast.LitString {
		text := strings.TrimSpace(l.Value)
		if unit == "" {
			f := strings.Fields(text)
			if len(f) != 2 {
				return fmt.Errorf("INTERVAL '%s': expected INTERVAL n UNIT or INTERVAL 'n UNIT'", l.Value)
			}
			text, unit = f[0], strings.TrimSuffix(strings.ToUpper(f[1]), "S")
			if !intervalUnits[unit] {
				return fmt.Errorf("INTERVAL '%s': unknown unit %s", l.Value, f[1])
			}
		}
		if _, err := strconv.Atoi(text); err != nil {
			return fmt.Errorf("INTERVAL '%s': not a whole number", l.Value)
		}
		b.WriteString("INTERVAL " + text + " " + unit)
		return nil
	}
	if unit == "" {
		return fmt.Errorf("INTERVAL %s: the unit is missing (INTERVAL n DAY, HOUR, …)", sqlast.FormatExpr(value))
	}
	b.WriteString("INTERVAL ")
	if err := t.expr(b, value); err != nil {
		return err
	}
	b.WriteString(" " + unit)
	return nil
}

// intervalUnits are the units of INTERVAL, singular.
var intervalUnits = map[string]bool{
	"YEAR": true, "QUARTER": true, "MONTH": true, "WEEK": true, "DAY": true,
	"HOUR": true, "MINUTE": true, "SECOND": true, "MILLISECOND": true, "MICROSECOND": true,
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
		not := op == "NOT ILIKE"
		if not {
			b.WriteString("(NOT ")
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
		if not {
			b.WriteString(")")
		}
		return nil
	case "RLIKE", "NOT RLIKE":
		// ClickHouse has no RLIKE operator; match is its regular
		// expression test (RE2, which lacks Java's look-arounds and
		// back-references: those fail there rather than mismatch).
		not := op == "NOT RLIKE"
		if not {
			b.WriteString("(NOT ")
		}
		b.WriteString("match(")
		if err := t.expr(b, e.L); err != nil {
			return err
		}
		b.WriteString(", ")
		if err := t.expr(b, e.R); err != nil {
			return err
		}
		b.WriteString(")")
		if not {
			b.WriteString(")")
		}
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
