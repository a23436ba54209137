package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/query"
	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// merge runs MERGE INTO on a keyed table. The source is read once into a
// temporary table; it is joined (ALL LEFT JOIN, on the ON equalities) with
// the target's rows of the keys it names, read with FINAL; each joined row
// takes the first WHEN clause that holds; the result (new values of every
// column and whether the key is new, updated or deleted) is applied by
// applyKeyed. A source row that matches no clause changes nothing.
func (e *Engine) merge(ctx context.Context, s *sqlast.MergeInto) (*core.Result, error) {
	schema, name, spec, err := e.Table(ctx, s.Table)
	if err != nil {
		return nil, err
	}
	display := core.Display(schema, name)
	if !spec.Keyed() {
		return nil, fmt.Errorf("MERGE INTO %s: the table has no PRIMARY KEY; MERGE INTO writes tables that keep one row per key (CREATE TABLE … (…, PRIMARY KEY (col)))", display)
	}
	sess := e.Session(ctx)
	defer sess.Close()
	m := merger{spec: spec, target: s.Alias}
	if m.target == "" {
		m.target = s.Table.Parts[len(s.Table.Parts)-1]
	}
	var srcQuery *sqlast.Query
	switch r := s.Source.(type) {
	case *sqlast.TableName:
		srcQuery = &sqlast.Query{Body: &sqlast.Select{Items: []sqlast.SelectItem{{Star: true}}, From: []sqlast.TableRef{&sqlast.TableName{Name: r.Name}}}}
		m.source = r.Alias
		if m.source == "" {
			m.source = r.Name.Parts[len(r.Name.Parts)-1]
		}
	case *sqlast.SubqueryRef:
		srcQuery, m.source = r.Query, r.Alias
		query.UniqueOutputNames(srcQuery)
	default:
		return nil, fmt.Errorf("MERGE INTO %s: USING takes a table, a table stream or (SELECT …)", display)
	}
	body, err := sess.Translate(srcQuery)
	if err != nil {
		return nil, err
	}
	src, srcCols, err := sess.Materialize(body)
	if err != nil {
		return nil, fmt.Errorf("MERGE INTO %s: read the source: %w", display, err)
	}
	m.srcCols = srcCols
	rowsQuery, err := m.rows(sess, s, src, changes.Rows(schema, name, spec))
	if err != nil {
		return nil, fmt.Errorf("MERGE INTO %s: %w", display, err)
	}
	rows, _, err := sess.Materialize(rowsQuery)
	if err != nil {
		return nil, fmt.Errorf("MERGE INTO %s: %w", display, err)
	}
	n, err := e.applyKeyed(ctx, schema, name, spec, rows, spec.Columns)
	if err != nil {
		return nil, fmt.Errorf("MERGE INTO %s: %w", display, err)
	}
	if err := sess.ConsumeStreams(); err != nil {
		return nil, fmt.Errorf("MERGE INTO %s: done (%s), but %w", display, n, err)
	}
	return core.Message("MERGE INTO %s: %s", display, n), nil
}

// merger builds the query of a MERGE INTO's rows. In it the target's
// columns are __t_<i> (spec order) and the source's __s_<i>.
type merger struct {
	spec           catalog.TableSpec
	target, source string // the names that qualify their columns
	srcCols        []string
}

func (m *merger) targetCol(i int) string { return chsql.QuoteIdent("__t_" + strconv.Itoa(i)) }
func (m *merger) sourceCol(i int) string { return chsql.QuoteIdent("__s_" + strconv.Itoa(i)) }

// resolve names the column of the join a column reference of the
// statement means, and whether it is the target's.
func (m *merger) resolve(c *sqlast.ColumnRef) (string, bool, error) {
	col := c.Parts[len(c.Parts)-1]
	qual := ""
	if len(c.Parts) > 1 {
		qual = c.Parts[len(c.Parts)-2]
	}
	ti, si := -1, -1
	for i, tc := range m.spec.Columns {
		if strings.EqualFold(tc.Name, col) {
			ti = i
		}
	}
	for i, sc := range m.srcCols {
		if strings.EqualFold(sc, col) {
			si = i
		}
	}
	switch {
	case qual != "" && strings.EqualFold(qual, m.target) && (m.source == "" || !strings.EqualFold(qual, m.source)):
		si = -1
	case qual != "" && strings.EqualFold(qual, m.source):
		ti = -1
	case qual != "":
		return "", false, fmt.Errorf("%s: %s is neither the target (%s) nor the source", strings.Join(c.Parts, "."), qual, m.target)
	case ti >= 0 && si >= 0:
		return "", false, fmt.Errorf("column %s is in both the target and the source: qualify it (%s.%s or the source's alias)", col, m.target, col)
	}
	switch {
	case ti >= 0:
		return "__t_" + strconv.Itoa(ti), true, nil
	case si >= 0:
		return "__s_" + strconv.Itoa(si), false, nil
	}
	return "", false, fmt.Errorf("unknown column %s (the target %s has %s; the source has %s)", strings.Join(c.Parts, "."), m.target, columnNames(m.spec.Columns), strings.Join(m.srcCols, ", "))
}

func columnNames(cols []catalog.ColumnSpec) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// expr translates an expression of the statement over the join's columns,
// reporting which sides it reads. Subqueries in it keep their own names.
func (m *merger) expr(sess *query.Session, x sqlast.Expr) (string, bool, bool, error) {
	var err error
	var readsT, readsS bool
	sqlast.Inspect(x, func(n any) bool {
		switch c := n.(type) {
		case *sqlast.Query:
			return false
		case *sqlast.ColumnRef:
			name, isT, rerr := m.resolve(c)
			if rerr != nil && err == nil {
				err = rerr
			}
			if rerr == nil {
				c.Parts = []string{name}
				readsT, readsS = readsT || isT, readsS || !isT
			}
		}
		return true
	})
	if err != nil {
		return "", false, false, err
	}
	s, err := sess.Tr.Expr(x)
	return s, readsT, readsS, err
}

// rows renders the query of the MERGE's rows: every column's new value and
// __lp_kind, for the source rows a clause applies to.
func (m *merger) rows(sess *query.Session, s *sqlast.MergeInto, src, target string) (string, error) {
	// ON: equalities between an expression of the target and one of the
	// source, joined by AND (18.16 joins on equal keys only).
	var tKeys, sKeys []string
	plain := true // every target side is a column: the lookup can use the key
	var conj []sqlast.Expr
	var split func(x sqlast.Expr)
	split = func(x sqlast.Expr) {
		if b, ok := x.(*sqlast.BinaryExpr); ok && strings.EqualFold(b.Op, "AND") {
			split(b.L)
			split(b.R)
			return
		}
		conj = append(conj, x)
	}
	split(s.On)
	onErr := fmt.Errorf("ON must be equalities between the target's columns and the source's, joined by AND (%s.id = s.id AND …)", m.target)
	for _, c := range conj {
		b, ok := c.(*sqlast.BinaryExpr)
		if !ok || b.Op != "=" {
			return "", onErr
		}
		_, lIsCol := b.L.(*sqlast.ColumnRef)
		_, rIsCol := b.R.(*sqlast.ColumnRef)
		l, lt, ls, err := m.expr(sess, b.L)
		if err != nil {
			return "", err
		}
		r, rt, rs, err := m.expr(sess, b.R)
		if err != nil {
			return "", err
		}
		switch {
		case lt && !ls && rs && !rt:
			tKeys, sKeys = append(tKeys, l), append(sKeys, r)
			plain = plain && lIsCol
		case rt && !rs && ls && !lt:
			tKeys, sKeys = append(tKeys, r), append(sKeys, l)
			plain = plain && rIsCol
		default:
			return "", onErr
		}
	}
	// The source's keys take the target's types: 18.16 joins only keys of
	// one type.
	keyNames := make([]string, len(tKeys))
	tSel, sSel := make([]string, len(tKeys)), make([]string, len(sKeys))
	for i := range tKeys {
		keyNames[i] = chsql.QuoteIdent("__k_" + strconv.Itoa(i))
		tSel[i] = tKeys[i] + " AS " + keyNames[i]
		if t, ok := m.columnType(tKeys[i]); ok {
			// A NULL key matches nothing (it is joined as the type's
			// default and flagged by __s_null).
			sSel[i] = "CAST(assumeNotNull(" + sKeys[i] + ") AS " + t + ") AS " + keyNames[i]
		} else {
			sSel[i] = sKeys[i] + " AS " + keyNames[i]
		}
	}
	srcRenamed := make([]string, len(m.srcCols))
	for i, c := range m.srcCols {
		srcRenamed[i] = chsql.QuoteIdent(c) + " AS " + m.sourceCol(i)
	}
	tgtRenamed := make([]string, 0, len(m.spec.Columns)+1)
	for i, c := range m.spec.Columns {
		tgtRenamed = append(tgtRenamed, chsql.QuoteIdent(c.Name)+" AS "+m.targetCol(i))
	}
	nulls := make([]string, len(sKeys))
	for i, k := range sKeys {
		nulls[i] = "isNull(" + k + ")"
	}
	left := "SELECT *, " + strings.Join(sSel, ", ") + ", toUInt8(" + strings.Join(nulls, " OR ") + ") AS __s_null FROM (SELECT " + strings.Join(srcRenamed, ", ") + " FROM " + src + ")"
	lookup := ""
	if plain {
		// Only the target rows of the source's keys, filtered in the
		// table's own SELECT (18.16 does not push a condition into a
		// subquery): ordered by its key, the table reads their granules.
		cols := make([]string, len(tKeys))
		for i, k := range tKeys {
			cols[i] = chsql.QuoteIdent(m.columnName(k))
		}
		lookup = " WHERE (" + strings.Join(cols, ", ") + ") GLOBAL IN (SELECT " + strings.Join(keyNames, ", ") + " FROM (" + left + "))"
	}
	right := "SELECT *, " + strings.Join(tSel, ", ") + ", toUInt8(1) AS __t_m FROM (SELECT " + strings.Join(tgtRenamed, ", ") + " FROM " + target + lookup + ")"
	joined := "SELECT * FROM (" + left + ") ALL LEFT JOIN (" + right + ") USING (" + strings.Join(keyNames, ", ") + ")"

	for _, c := range s.Clauses {
		for _, name := range c.Columns {
			found := false
			for _, col := range m.spec.Columns {
				found = found || strings.EqualFold(col.Name, name)
			}
			if !found {
				return "", fmt.Errorf("INSERT names %s, which is not a column of %s (%s)", name, m.target, columnNames(m.spec.Columns))
			}
		}
	}
	// Which clause applies: the first whose condition holds.
	var acts, kinds []string
	kindOf := map[string]int{"INSERT": keyNew, "UPDATE": keyUpdated, "DELETE": keyDeleted}
	for i, c := range s.Clauses {
		cond := "(__t_m = 1 AND __s_null = 0)"
		if !c.Matched {
			cond = "(__t_m = 0 OR __s_null = 1)"
		}
		if c.Cond != nil {
			x, _, _, err := m.expr(sess, c.Cond)
			if err != nil {
				return "", err
			}
			cond += " AND ifNull((" + x + "), 0)"
		}
		acts = append(acts, cond, strconv.Itoa(i+1))
		kinds = append(kinds, "__lp_act = "+strconv.Itoa(i+1), strconv.Itoa(kindOf[c.Action]))
	}
	values := make([]string, len(m.spec.Columns))
	for ci, col := range m.spec.Columns {
		var branches []string
		for i, c := range s.Clauses {
			v, err := m.value(sess, c, ci, col)
			if err != nil {
				return "", err
			}
			if v != "" {
				branches = append(branches, "__lp_act = "+strconv.Itoa(i+1), v)
			}
		}
		if len(branches) == 0 {
			values[ci] = m.targetCol(ci) + " AS " + chsql.QuoteIdent(col.Name)
			continue
		}
		values[ci] = "multiIf(" + strings.Join(branches, ", ") + ", " + m.targetCol(ci) + ") AS " + chsql.QuoteIdent(col.Name)
	}
	return "SELECT " + strings.Join(values, ", ") + ", toUInt8(multiIf(" + strings.Join(kinds, ", ") + ", 0)) AS " + kindColumn +
		" FROM (SELECT *, multiIf(" + strings.Join(acts, ", ") + ", 0) AS __lp_act FROM (" + joined + ")) WHERE __lp_act > 0", nil
}

// column is the target column that a translated key expression names, if
// it is one.
func (m *merger) column(key string) (catalog.ColumnSpec, bool) {
	for i, c := range m.spec.Columns {
		if key == m.targetCol(i) {
			return c, true
		}
	}
	return catalog.ColumnSpec{}, false
}

func (m *merger) columnType(key string) (string, bool) {
	c, ok := m.column(key)
	return c.CHType, ok
}

func (m *merger) columnName(key string) string {
	c, _ := m.column(key)
	return c.Name
}

// value is the new value clause c gives column ci ("" for the row's own).
func (m *merger) value(sess *query.Session, c sqlast.MergeClause, ci int, col catalog.ColumnSpec) (string, error) {
	cast := func(x sqlast.Expr) (string, error) {
		v, _, _, err := m.expr(sess, x)
		if err != nil {
			return "", err
		}
		// materialize: see UPDATE (a constant Nullable breaks 18.16's if).
		return "materialize(CAST(" + v + " AS " + col.CHType + "))", nil
	}
	switch c.Action {
	case "UPDATE":
		for _, a := range c.Set {
			if strings.EqualFold(a.Column, col.Name) {
				if isKeyColumn(m.spec, col.Name) {
					return "", fmt.Errorf("%s is a PRIMARY KEY column and cannot be changed by UPDATE SET", col.Name)
				}
				return cast(a.Value)
			}
		}
		return "", nil
	case "INSERT":
		if c.Columns == nil {
			if len(c.Values) != len(m.spec.Columns) {
				return "", fmt.Errorf("INSERT VALUES has %d values for the %d columns of %s (%s); name the columns to give fewer", len(c.Values), len(m.spec.Columns), m.target, columnNames(m.spec.Columns))
			}
			return cast(c.Values[ci])
		}
		if len(c.Columns) != len(c.Values) {
			return "", fmt.Errorf("INSERT names %d columns and gives %d values", len(c.Columns), len(c.Values))
		}
		for i, name := range c.Columns {
			if strings.EqualFold(name, col.Name) {
				return cast(c.Values[i])
			}
		}
		if !strings.HasPrefix(col.CHType, "Nullable(") {
			return "", fmt.Errorf("INSERT gives no value for %s, which cannot be NULL", col.Name)
		}
		return "CAST(NULL AS " + col.CHType + ")", nil
	}
	return "", nil
}
