package sqlast

import "reflect"

// Inspect traverses a tree depth-first, in source order, like go/ast.Inspect:
// it calls f(node); if f returns true, Inspect visits each of node's
// children and then calls f(nil).
//
// The nodes passed to f are statements, *Query, *SetOp, *Select, the
// TableRef types and the Expr types (including the *FuncCall of a FuncRef).
// Other parts of the tree (select items, CTEs, ORDER BY items, column
// definitions, window specs) are walked through without being passed to f:
// their queries and expressions are visited. A statement that holds no query
// or expression is visited alone. Nil nodes are skipped.
func Inspect(node any, f func(node any) bool) {
	if isNilNode(node) || !f(node) {
		return
	}
	v := func(n any) { Inspect(n, f) }
	exprs := func(es []Expr) {
		for _, e := range es {
			v(e)
		}
	}
	order := func(items []OrderItem) {
		for _, it := range items {
			v(it.Expr)
		}
	}
	defaults := func(cols []ColumnDef) {
		for _, c := range cols {
			v(c.Default)
		}
	}
	switch n := node.(type) {
	// statements
	case *CreateTable:
		defaults(n.Columns)
		v(n.AsQuery)
	case *AlterTable:
		if n.Column != nil {
			v(n.Column.Default)
		}
	case *Insert:
		for _, row := range n.Values {
			exprs(row)
		}
		v(n.Query)
	case *Delete:
		v(n.Where)
	case *Update:
		for _, a := range n.Set {
			v(a.Value)
		}
		v(n.Where)
	case *MergeInto:
		v(n.Source)
		v(n.On)
		for _, c := range n.Clauses {
			v(c.Cond)
			for _, a := range c.Set {
				v(a.Value)
			}
			exprs(c.Values)
		}
	case *QueryStmt:
		v(n.Query)
	case *CopyIntoTable:
		if n.Volume != nil {
			defaults(n.Volume.Schema)
		}
		v(n.Query)
	case *CopyIntoVolume:
		v(n.FromQuery)
	case *CreatePipe:
		v(n.Copy)
	case *AlterPipe:
		v(n.Copy)
	case *CreateDynamicTable:
		defaults(n.Columns)
		v(n.Query)
	case *ShowRefreshHistory:
		v(n.Where)

	// queries
	case *Query:
		for _, c := range n.With {
			v(c.Query)
		}
		v(n.Body)
		order(n.OrderBy)
		v(n.Limit)
		v(n.Offset)
	case *SetOp:
		v(n.Left)
		v(n.Right)
	case *Select:
		for _, it := range n.Items {
			v(it.Expr)
		}
		for _, r := range n.From {
			v(r)
		}
		v(n.Where)
		exprs(n.GroupBy)
		v(n.Having)

	// sources
	case *SubqueryRef:
		v(n.Query)
	case *JoinRef:
		v(n.Left)
		v(n.Right)
		v(n.On)
	case *VolumeRef:
		defaults(n.Source.Schema)
	case *FuncRef:
		v(n.Func)

	// expressions
	case *BinaryExpr:
		v(n.L)
		v(n.R)
	case *UnaryExpr:
		v(n.X)
	case *FuncCall:
		exprs(n.Args)
		if n.Over != nil {
			exprs(n.Over.PartitionBy)
			order(n.Over.OrderBy)
		}
	case *CastExpr:
		v(n.X)
	case *CaseExpr:
		v(n.Operand)
		for _, w := range n.Whens {
			v(w.Cond)
			v(w.Result)
		}
		v(n.Else)
	case *InExpr:
		v(n.X)
		exprs(n.List)
		v(n.Query)
	case *BetweenExpr:
		v(n.X)
		v(n.Lo)
		v(n.Hi)
	case *IsNullExpr:
		v(n.X)
	case *IndexExpr:
		v(n.X)
		v(n.Index)
	case *ParenExpr:
		v(n.X)
	case *SubqueryExpr:
		v(n.Query)
	case *ExistsExpr:
		v(n.Query)
	case *IntervalExpr:
		v(n.Value)
	}
	f(nil)
}

// isNilNode reports whether n is nil or a nil pointer inside an interface.
func isNilNode(n any) bool {
	if n == nil {
		return true
	}
	rv := reflect.ValueOf(n)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
