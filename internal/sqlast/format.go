package sqlast

import (
	"strconv"
	"strings"
)

// quoteWords are the names Format back-quotes even though they are plain
// lower-case identifiers: every word the grammar treats as a keyword
// somewhere, so that no formatted name can be mistaken for syntax.
var quoteWords = union(ReservedInExpr, SelectAliasStop, TableAliasStop, WordSet(
	"add", "all", "alter", "asc", "auto_refresh", "by", "cast", "column", "comment",
	"connection", "connections", "copy", "create", "current_date", "current_timestamp",
	"date", "default", "delete", "desc",
	"describe", "directory", "drop", "dynamic", "enable", "execute", "exists", "extended",
	"external", "file_format", "first", "history", "if", "insert", "interval", "last",
	"location", "nulls", "or", "overwrite", "partition", "partitioned", "pipe", "pipes",
	"properties", "purge", "recursive", "refresh", "replace", "resume", "show", "storage",
	"stream", "streams", "suspend", "table", "tables", "tblproperties", "timestamp",
	"timestamp_ltz", "timestamp_ntz", "try_cast", "type", "undrop", "update", "vcluster",
	"volume", "volumes"))

// funcQuoteWords are the function names that must be back-quoted because,
// bare, they would parse as something other than a call.
var funcQuoteWords = union(ReservedInExpr, WordSet("cast", "try_cast", "exists", "interval", "table", "directory"))

func isPlainIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func backQuote(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// formatIdent writes a name bare when it is a plain lower-case identifier
// that is no keyword, back-quoted otherwise.
func formatIdent(s string) string {
	if isPlainIdent(s) && !quoteWords[s] {
		return s
	}
	return backQuote(s)
}

func formatFuncName(s string) string {
	if isPlainIdent(s) && !funcQuoteWords[s] {
		return s
	}
	return backQuote(s)
}

func formatIdents(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = formatIdent(n)
	}
	return strings.Join(parts, ", ")
}

func formatName(n ObjectName) string {
	parts := make([]string, len(n.Parts))
	for i, s := range n.Parts {
		parts[i] = formatIdent(s)
	}
	return strings.Join(parts, ".")
}

// formatString writes s as a single-quoted literal that the lexer reads
// back as exactly s.
func formatString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			b.WriteString("''")
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case 0:
			b.WriteString(`\0`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

func formatStrings(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = formatString(s)
	}
	return strings.Join(parts, ", ")
}

// Keys that a KEY = value list must write as strings, because bare they
// would be read as a clause of the statement rather than as a property.
var (
	keysSpecialInConnection = WordSet("comment")
	keysSpecialInPipe       = WordSet("comment")
	keysSpecialInAlterPipe  = WordSet()
	keysSpecialInCopy       = WordSet("purge", "subdirectory", "regexp")
	keysSpecialInExport     = WordSet("subdirectory", "from")
	keysSpecialInFileFormat = WordSet("type")
)

// formatKeyValues writes KEY = value pairs separated by sep. Keys that are
// plain lower-case identifiers, not reserved and not in special are written
// bare and upper-cased; others as strings (which keep their case).
func formatKeyValues(props []Property, sep string, special map[string]bool) string {
	parts := make([]string, len(props))
	for i, p := range props {
		key := formatString(p.Key)
		if isPlainIdent(p.Key) && !ReservedInExpr[p.Key] && !special[p.Key] {
			key = strings.ToUpper(p.Key)
		}
		val := formatString(p.Value)
		if p.Value == "true" || p.Value == "false" {
			val = strings.ToUpper(p.Value)
		}
		parts[i] = key + " = " + val
	}
	return strings.Join(parts, sep)
}

// formatPropList writes ('k' = 'v', …).
func formatPropList(props []Property) string {
	parts := make([]string, len(props))
	for i, p := range props {
		parts[i] = formatString(p.Key) + " = " + formatString(p.Value)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// FormatType returns the canonical text of a type, e.g. DECIMAL(10, 2),
// ARRAY<STRING>, MAP<STRING, INT>, STRUCT<a: INT, b: STRING>.
func FormatType(t TypeName) string {
	var b strings.Builder
	b.WriteString(t.Name)
	switch t.Name {
	case "ARRAY", "MAP":
		parts := make([]string, len(t.Elems))
		for i, e := range t.Elems {
			parts[i] = FormatType(e)
		}
		b.WriteString("<" + strings.Join(parts, ", ") + ">")
	case "STRUCT":
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = formatIdent(f.Name) + ": " + FormatType(f.Type)
		}
		b.WriteString("<" + strings.Join(parts, ", ") + ">")
	default:
		if len(t.Params) > 0 {
			parts := make([]string, len(t.Params))
			for i, n := range t.Params {
				parts[i] = strconv.Itoa(n)
			}
			b.WriteString("(" + strings.Join(parts, ", ") + ")")
		}
	}
	return b.String()
}

func FormatColumnDef(c ColumnDef) string {
	s := formatIdent(c.Name)
	if c.Type.Name != "" {
		s += " " + FormatType(c.Type)
	}
	if c.NotNull {
		s += " NOT NULL"
	}
	if c.Default != nil {
		s += " DEFAULT " + FormatExpr(c.Default)
	}
	if c.Comment != nil {
		s += " COMMENT " + formatString(*c.Comment)
	}
	return s
}

func formatColumnDefs(cols []ColumnDef) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = FormatColumnDef(c)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func ifNotExists(b bool) string {
	if b {
		return "IF NOT EXISTS "
	}
	return ""
}

func ifExists(b bool) string {
	if b {
		return "IF EXISTS "
	}
	return ""
}

func orReplace(b bool) string {
	if b {
		return "OR REPLACE "
	}
	return ""
}

func optComment(c *string) string {
	if c == nil {
		return ""
	}
	return " COMMENT " + formatString(*c)
}

func optLike(l *string) string {
	if l == nil {
		return ""
	}
	return " LIKE " + formatString(*l)
}

func boolWord(b bool) string {
	if b {
		return "TRUE"
	}
	return "FALSE"
}

// Format returns the canonical text of a statement in lakepipe's dialect,
// on one line and without a semicolon. For any statement produced by this
// package's parser, Parse(Format(s)) yields an equal tree apart from source
// positions and texts (StmtBase, Pos fields, QueryText). Secrets in
// properties are written as they are.
func Format(s Statement) string {
	switch s := s.(type) {
	case *CreateConnection:
		out := "CREATE STORAGE CONNECTION " + ifNotExists(s.IfNotExists) + formatIdent(s.Name) + " TYPE " + s.Kind
		if len(s.Props) > 0 {
			out += " " + formatKeyValues(s.Props, " ", keysSpecialInConnection)
		}
		return out + optComment(s.Comment)
	case *DropConnection:
		return "DROP STORAGE CONNECTION " + ifExists(s.IfExists) + formatIdent(s.Name)
	case *ShowConnections:
		return "SHOW CONNECTIONS" + optLike(s.Like)
	case *DescConnection:
		return "DESC CONNECTION " + formatIdent(s.Name)
	case *CreateVolume:
		return "CREATE EXTERNAL VOLUME " + ifNotExists(s.IfNotExists) + formatIdent(s.Name) +
			" LOCATION " + formatString(s.Location) +
			" USING CONNECTION " + formatIdent(s.Connection) +
			" DIRECTORY = (ENABLE = " + boolWord(s.DirectoryEnable) + ", AUTO_REFRESH = " + boolWord(s.AutoRefresh) + ")" +
			" RECURSIVE = " + boolWord(s.Recursive) + optComment(s.Comment)
	case *AlterVolume:
		return "ALTER VOLUME " + formatIdent(s.Name) + " " + s.Action
	case *ShowVolumes:
		return "SHOW VOLUMES" + optLike(s.Like)
	case *DescVolume:
		return "DESC VOLUME " + formatIdent(s.Name)
	case *DropVolume:
		return "DROP VOLUME " + ifExists(s.IfExists) + formatIdent(s.Name)
	case *CreateTable:
		out := "CREATE TABLE " + ifNotExists(s.IfNotExists) + formatName(s.Name)
		if s.Columns != nil {
			out += " " + formatColumnDefs(s.Columns)
			if s.PrimaryKey != nil {
				out = strings.TrimSuffix(out, ")") + ", PRIMARY KEY (" + formatIdents(s.PrimaryKey) + "))"
			}
		}
		if s.PartitionBy != nil {
			out += " PARTITIONED BY (" + formatIdents(s.PartitionBy) + ")"
		}
		out += optComment(s.Comment)
		if s.Props != nil {
			out += " PROPERTIES " + formatPropList(s.Props)
		}
		if s.AsQuery != nil {
			out += " AS " + FormatQuery(s.AsQuery)
		}
		return out
	case *DropTable:
		return "DROP TABLE " + ifExists(s.IfExists) + formatName(s.Name)
	case *UndropTable:
		return "UNDROP TABLE " + formatName(s.Name)
	case *AlterTable:
		out := "ALTER TABLE " + formatName(s.Name)
		switch s.Action {
		case "SET_PROPERTIES":
			return out + " SET PROPERTIES " + formatPropList(s.Props)
		case "ADD_COLUMN":
			if s.Column != nil {
				return out + " ADD COLUMN " + FormatColumnDef(*s.Column)
			}
		case "DROP_COLUMN":
			return out + " DROP COLUMN " + formatIdent(s.ColumnName)
		}
		return out + " " + s.Action
	case *ShowTables:
		return "SHOW TABLES" + optLike(s.Like)
	case *DescTable:
		out := "DESC TABLE " + formatName(s.Name)
		if s.Extended {
			out += " EXTENDED"
		}
		return out
	case *Insert:
		out := "INSERT INTO "
		if s.Overwrite {
			out = "INSERT OVERWRITE "
		}
		out += formatName(s.Table)
		if s.Columns != nil {
			out += " (" + formatIdents(s.Columns) + ")"
		}
		if s.Query != nil {
			return out + " " + FormatQuery(s.Query)
		}
		rows := make([]string, len(s.Values))
		for i, r := range s.Values {
			rows[i] = "(" + FormatExprs(r) + ")"
		}
		return out + " VALUES " + strings.Join(rows, ", ")
	case *Delete:
		out := "DELETE FROM " + formatName(s.Table)
		if s.Where != nil {
			out += " WHERE " + FormatExpr(s.Where)
		}
		return out
	case *Update:
		out := "UPDATE " + formatName(s.Table) + " SET " + formatAssignments(s.Set)
		if s.Where != nil {
			out += " WHERE " + FormatExpr(s.Where)
		}
		return out
	case *MergeInto:
		return formatMerge(s)
	case *QueryStmt:
		return FormatQuery(s.Query)
	case *CopyIntoTable:
		return formatCopyIntoTable(s)
	case *CopyIntoVolume:
		out := "COPY INTO VOLUME " + formatIdent(s.Volume)
		if s.Subdirectory != "" {
			out += " SUBDIRECTORY " + formatString(s.Subdirectory)
		}
		if s.FromQuery != nil {
			out += " FROM (" + FormatQuery(s.FromQuery) + ")"
		} else if s.FromTable != nil {
			out += " FROM TABLE " + formatName(*s.FromTable)
		}
		if s.FileFormat != "" || len(s.FormatOptions) > 0 {
			var items []string
			if s.FileFormat != "" {
				items = append(items, "TYPE = "+s.FileFormat)
			}
			if len(s.FormatOptions) > 0 {
				items = append(items, formatKeyValues(s.FormatOptions, ", ", keysSpecialInFileFormat))
			}
			out += " FILE_FORMAT = (" + strings.Join(items, ", ") + ")"
		}
		if len(s.Options) > 0 {
			out += " " + formatKeyValues(s.Options, " ", keysSpecialInExport)
		}
		return out
	case *CreatePipe:
		out := "CREATE PIPE " + ifNotExists(s.IfNotExists) + formatIdent(s.Name)
		if len(s.Props) > 0 {
			out += " " + formatKeyValues(s.Props, " ", keysSpecialInPipe)
		}
		out += optComment(s.Comment) + " AS "
		if s.Copy != nil {
			out += formatCopyIntoTable(s.Copy)
		}
		return out
	case *ShowPipes:
		return "SHOW PIPES" + optLike(s.Like)
	case *DescPipe:
		out := "DESC PIPE "
		if s.Extended {
			out += "EXTENDED "
		}
		return out + formatIdent(s.Name)
	case *AlterPipe:
		out := "ALTER PIPE " + formatIdent(s.Name) + " "
		switch s.Action {
		case "SET":
			return out + "SET " + formatKeyValues(s.Props, ", ", keysSpecialInAlterPipe)
		case "SET_COPY":
			if s.Copy != nil {
				return out + "AS " + formatCopyIntoTable(s.Copy)
			}
		}
		return out + s.Action
	case *DropPipe:
		return "DROP PIPE " + ifExists(s.IfExists) + formatIdent(s.Name)
	case *CreateDynamicTable:
		out := "CREATE " + orReplace(s.OrReplace) + "DYNAMIC TABLE " + ifNotExists(s.IfNotExists) + formatName(s.Name)
		if s.Columns != nil {
			out += " " + formatColumnDefs(s.Columns)
		}
		if s.IntervalUnit != "" {
			out += " REFRESH INTERVAL " + strconv.Itoa(s.IntervalN) + " " + s.IntervalUnit
		}
		if s.VCluster != "" {
			out += " VCLUSTER " + formatIdent(s.VCluster)
		}
		out += optComment(s.Comment)
		if s.Query != nil {
			out += " AS " + FormatQuery(s.Query)
		}
		return out
	case *RefreshDynamicTable:
		return "REFRESH DYNAMIC TABLE " + formatName(s.Name)
	case *ShowRefreshHistory:
		out := "SHOW DYNAMIC TABLE REFRESH HISTORY"
		if s.Where != nil {
			out += " WHERE " + FormatExpr(s.Where)
		}
		if s.Limit != nil {
			out += " LIMIT " + strconv.Itoa(*s.Limit)
		}
		return out
	case *ShowDynamicTables:
		return "SHOW DYNAMIC TABLES" + optLike(s.Like)
	case *DescDynamicTable:
		return "DESC DYNAMIC TABLE " + formatName(s.Name)
	case *DropDynamicTable:
		return "DROP DYNAMIC TABLE " + ifExists(s.IfExists) + formatName(s.Name)
	case *AlterDynamicTable:
		return "ALTER DYNAMIC TABLE " + formatName(s.Name) + " " + s.Action
	case *CreateTableStream:
		out := "CREATE " + orReplace(s.OrReplace) + "TABLE STREAM " + ifNotExists(s.IfNotExists) +
			formatName(s.Name) + " ON TABLE " + formatName(s.Table)
		if s.Props != nil {
			out += " WITH PROPERTIES " + formatPropList(s.Props)
		}
		return out + optComment(s.Comment)
	case *ShowTableStreams:
		return "SHOW TABLE STREAMS" + optLike(s.Like)
	case *DescTableStream:
		return "DESC TABLE STREAM " + formatName(s.Name)
	case *DropTableStream:
		return "DROP TABLE STREAM " + ifExists(s.IfExists) + formatName(s.Name)
	}
	return ""
}

func formatCopyIntoTable(s *CopyIntoTable) string {
	out := "COPY INTO "
	if s.Overwrite {
		out = "COPY OVERWRITE "
	}
	out += formatName(s.Table)
	if s.Columns != nil {
		out += " (" + formatIdents(s.Columns) + ")"
	}
	if s.Volume != nil {
		out += " FROM " + formatVolumeSource(s.Volume)
	} else if s.Query != nil {
		out += " FROM (" + FormatQuery(s.Query) + ")"
	}
	if s.Purge {
		out += " PURGE = TRUE"
	}
	if len(s.Options) > 0 {
		out += " " + formatKeyValues(s.Options, " ", keysSpecialInCopy)
	}
	return out
}

func formatVolumeSource(v *VolumeSource) string {
	out := "VOLUME " + formatIdent(v.Volume)
	if v.Schema != nil {
		out += " " + formatColumnDefs(v.Schema)
	}
	out += " USING " + v.Format
	if v.Options != nil {
		out += " OPTIONS " + formatPropList(v.Options)
	}
	if v.Files != nil {
		out += " FILES (" + formatStrings(v.Files) + ")"
	}
	if v.Subdirectory != nil {
		out += " SUBDIRECTORY " + formatString(*v.Subdirectory)
	}
	if v.Regexp != nil {
		out += " REGEXP " + formatString(*v.Regexp)
	}
	return out
}

// FormatQuery returns the canonical text of a query; ParseQuery of it
// yields an equal tree for any query this package parsed.
func FormatQuery(q *Query) string {
	if q == nil {
		return ""
	}
	var b strings.Builder
	if len(q.With) > 0 {
		b.WriteString("WITH ")
		for i, c := range q.With {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(formatIdent(c.Name) + " AS (" + FormatQuery(c.Query) + ")")
		}
		b.WriteString(" ")
	}
	b.WriteString(formatSetExpr(q.Body, 0))
	if len(q.OrderBy) > 0 {
		b.WriteString(" ORDER BY " + formatOrderItems(q.OrderBy))
	}
	if q.Limit != nil {
		b.WriteString(" LIMIT " + FormatExpr(q.Limit))
	}
	if q.Offset != nil {
		b.WriteString(" OFFSET " + FormatExpr(q.Offset))
	}
	return b.String()
}

// set operation precedence: UNION and EXCEPT bind looser than INTERSECT.
func setPrec(e SetExpr) int {
	if s, ok := e.(*SetOp); ok {
		if s.Op == "INTERSECT" {
			return 2
		}
		return 1
	}
	return 3
}

func formatSetExpr(e SetExpr, min int) string {
	switch e := e.(type) {
	case *Select:
		if e != nil {
			return FormatSelect(e)
		}
	case *Query:
		return "(" + FormatQuery(e) + ")"
	case *SetOp:
		if e == nil {
			return ""
		}
		prec := setPrec(e)
		op := e.Op
		if e.All {
			op += " ALL"
		}
		s := formatSetExpr(e.Left, prec) + " " + op + " " + formatSetExpr(e.Right, prec+1)
		if prec < min {
			s = "(" + s + ")"
		}
		return s
	}
	return ""
}

func FormatSelect(s *Select) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	if s.Distinct {
		b.WriteString("DISTINCT ")
	}
	for i, it := range s.Items {
		if i > 0 {
			b.WriteString(", ")
		}
		switch {
		case it.Star && it.Qualifier != "":
			b.WriteString(formatIdent(it.Qualifier) + ".*")
		case it.Star:
			b.WriteString("*")
		default:
			b.WriteString(FormatExpr(it.Expr))
			if it.Alias != "" {
				b.WriteString(" AS " + formatIdent(it.Alias))
			}
		}
	}
	if len(s.From) > 0 {
		b.WriteString(" FROM ")
		for i, r := range s.From {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(formatTableRef(r))
		}
	}
	if s.Where != nil {
		b.WriteString(" WHERE " + FormatExpr(s.Where))
	}
	if len(s.GroupBy) > 0 {
		b.WriteString(" GROUP BY " + FormatExprs(s.GroupBy))
	}
	if s.Having != nil {
		b.WriteString(" HAVING " + FormatExpr(s.Having))
	}
	return b.String()
}

func optAlias(a string) string {
	if a == "" {
		return ""
	}
	return " AS " + formatIdent(a)
}

func formatTableRef(r TableRef) string {
	switch r := r.(type) {
	case *TableName:
		return formatName(r.Name) + optAlias(r.Alias)
	case *SubqueryRef:
		return "(" + FormatQuery(r.Query) + ")" + optAlias(r.Alias)
	case *JoinRef:
		kind := r.Kind + " JOIN"
		if r.Kind == "INNER" || r.Kind == "" {
			kind = "JOIN"
		}
		right := formatTableRef(r.Right)
		if _, ok := r.Right.(*JoinRef); ok {
			right = "(" + right + ")"
		}
		out := formatTableRef(r.Left) + " " + kind + " " + right
		if r.On != nil {
			out += " ON " + FormatExpr(r.On)
		}
		if r.Using != nil {
			out += " USING (" + formatIdents(r.Using) + ")"
		}
		return out
	case *VolumeRef:
		return formatVolumeSource(&r.Source) + optAlias(r.Alias)
	case *DirectoryRef:
		return "DIRECTORY(VOLUME " + formatIdent(r.Volume) + ")" + optAlias(r.Alias)
	case *FuncRef:
		fn := formatFuncCall(r.Func)
		if r.Wrapped {
			fn = "TABLE(" + fn + ")"
		}
		return fn + optAlias(r.Alias)
	}
	return ""
}

func formatOrderItems(items []OrderItem) string {
	parts := make([]string, len(items))
	for i, it := range items {
		s := FormatExpr(it.Expr)
		if it.Desc {
			s += " DESC"
		}
		if it.NullsFirst != nil {
			if *it.NullsFirst {
				s += " NULLS FIRST"
			} else {
				s += " NULLS LAST"
			}
		}
		parts[i] = s
	}
	return strings.Join(parts, ", ")
}

func FormatExprs(es []Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = FormatExpr(e)
	}
	return strings.Join(parts, ", ")
}

// Expression precedence levels, loosest first.
const (
	precOr = 1 + iota
	precAnd
	precNot
	precCmp
	precConcat
	precAdd
	precMul
	precUnary
	precPostfix
	precPrimary
)

func exprPrec(e Expr) int {
	switch e := e.(type) {
	case *BinaryExpr:
		switch e.Op {
		case "OR":
			return precOr
		case "AND":
			return precAnd
		case "||":
			return precConcat
		case "+", "-":
			return precAdd
		case "*", "/", "%":
			return precMul
		}
		return precCmp
	case *UnaryExpr:
		if e.Op == "NOT" {
			return precNot
		}
		return precUnary
	case *InExpr, *BetweenExpr, *IsNullExpr:
		return precCmp
	case *ExistsExpr:
		if e.Not {
			return precNot
		}
	case *CastExpr:
		if e.DoubleColon && !e.Try {
			return precPostfix
		}
	case *IndexExpr:
		return precPostfix
	case *IntervalExpr:
		if e.Unit == "" {
			// its value would swallow a following :: or [ ]
			return precUnary
		}
	}
	return precPrimary
}

// FormatExpr returns the canonical text of an expression; ParseExpr of it
// yields an equal tree for any expression this package parsed. Parentheses
// are added where the tree's shape needs them.
func FormatExpr(e Expr) string {
	return formatExpr(e, 0)
}

func formatExpr(e Expr, min int) string {
	s := formatExprBare(e)
	if e != nil && exprPrec(e) < min {
		return "(" + s + ")"
	}
	return s
}

func formatExprBare(e Expr) string {
	switch e := e.(type) {
	case *ColumnRef:
		parts := make([]string, len(e.Parts))
		for i, p := range e.Parts {
			parts[i] = formatIdent(p)
		}
		return strings.Join(parts, ".")
	case *Literal:
		switch e.Kind {
		case LitString:
			return formatString(e.Value)
		case LitBool:
			return strings.ToUpper(e.Value)
		case LitNull:
			return "NULL"
		}
		return e.Value
	case *StarExpr:
		return "*"
	case *BinaryExpr:
		p := exprPrec(e)
		return formatExpr(e.L, p) + " " + e.Op + " " + formatExpr(e.R, p+1)
	case *UnaryExpr:
		if e.Op == "NOT" {
			return "NOT " + formatExpr(e.X, precNot)
		}
		x := formatExpr(e.X, precUnary)
		if strings.HasPrefix(x, "-") || strings.HasPrefix(x, "+") {
			return e.Op + " " + x
		}
		return e.Op + x
	case *FuncCall:
		return formatFuncCall(e)
	case *CastExpr:
		if e.DoubleColon && !e.Try {
			return formatExpr(e.X, precPostfix) + "::" + FormatType(e.Type)
		}
		fn := "CAST("
		if e.Try {
			fn = "TRY_CAST("
		}
		return fn + FormatExpr(e.X) + " AS " + FormatType(e.Type) + ")"
	case *CaseExpr:
		var b strings.Builder
		b.WriteString("CASE")
		if e.Operand != nil {
			b.WriteString(" " + FormatExpr(e.Operand))
		}
		for _, w := range e.Whens {
			b.WriteString(" WHEN " + FormatExpr(w.Cond) + " THEN " + FormatExpr(w.Result))
		}
		if e.Else != nil {
			b.WriteString(" ELSE " + FormatExpr(e.Else))
		}
		b.WriteString(" END")
		return b.String()
	case *InExpr:
		s := formatExpr(e.X, precCmp)
		if e.Not {
			s += " NOT"
		}
		if e.Query != nil {
			return s + " IN (" + FormatQuery(e.Query) + ")"
		}
		return s + " IN (" + FormatExprs(e.List) + ")"
	case *BetweenExpr:
		s := formatExpr(e.X, precCmp)
		if e.Not {
			s += " NOT"
		}
		return s + " BETWEEN " + formatExpr(e.Lo, precConcat) + " AND " + formatExpr(e.Hi, precConcat)
	case *IsNullExpr:
		if e.Not {
			return formatExpr(e.X, precCmp) + " IS NOT NULL"
		}
		return formatExpr(e.X, precCmp) + " IS NULL"
	case *IndexExpr:
		return formatExpr(e.X, precPostfix) + "[" + FormatExpr(e.Index) + "]"
	case *ParenExpr:
		return "(" + FormatExpr(e.X) + ")"
	case *SubqueryExpr:
		return "(" + FormatQuery(e.Query) + ")"
	case *ExistsExpr:
		s := "EXISTS (" + FormatQuery(e.Query) + ")"
		if e.Not {
			s = "NOT " + s
		}
		return s
	case *IntervalExpr:
		s := "INTERVAL " + formatExpr(e.Value, precUnary)
		if e.Unit != "" {
			s += " " + e.Unit
		}
		return s
	}
	return ""
}

func formatFuncCall(f *FuncCall) string {
	if f == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(formatFuncName(f.Name) + "(")
	switch {
	case f.Star:
		b.WriteString("*")
	default:
		if f.Distinct {
			b.WriteString("DISTINCT ")
		}
		b.WriteString(FormatExprs(f.Args))
	}
	b.WriteString(")")
	if f.Over != nil {
		var parts []string
		if len(f.Over.PartitionBy) > 0 {
			parts = append(parts, "PARTITION BY "+FormatExprs(f.Over.PartitionBy))
		}
		if len(f.Over.OrderBy) > 0 {
			parts = append(parts, "ORDER BY "+formatOrderItems(f.Over.OrderBy))
		}
		b.WriteString(" OVER (" + strings.Join(parts, " ") + ")")
	}
	return b.String()
}

func formatAssignments(set []Assignment) string {
	out := make([]string, len(set))
	for i, a := range set {
		out[i] = formatIdent(a.Column) + " = " + FormatExpr(a.Value)
	}
	return strings.Join(out, ", ")
}

func formatMerge(s *MergeInto) string {
	out := "MERGE INTO " + formatName(s.Table)
	if s.Alias != "" {
		out += " AS " + formatIdent(s.Alias)
	}
	out += " USING " + formatTableRef(s.Source) + " ON " + FormatExpr(s.On)
	for _, c := range s.Clauses {
		out += " WHEN "
		if !c.Matched {
			out += "NOT "
		}
		out += "MATCHED"
		if c.Cond != nil {
			out += " AND " + FormatExpr(c.Cond)
		}
		out += " THEN "
		switch c.Action {
		case "UPDATE":
			out += "UPDATE SET " + formatAssignments(c.Set)
		case "DELETE":
			out += "DELETE"
		default:
			out += "INSERT"
			if c.Columns != nil {
				out += " (" + formatIdents(c.Columns) + ")"
			}
			out += " VALUES (" + FormatExprs(c.Values) + ")"
		}
	}
	return out
}
