package sqlast

// Pos is a position in the parsed text; Line and Col count from 1.
type Pos struct {
	Offset int
	Line   int
	Col    int
}

// Range is the byte range [Start, End) of a piece of source text. Its
// offsets are counted like Pos.Offset: from the start of the text the parser
// was given (for a statement parsed with ParseChunk, the whole script), so
// that a Range and a statement's Span compare directly. The zero Range marks
// a node that was not read from source text.
type Range struct {
	Start, End int
}

// Statement is one parsed statement.
type Statement interface {
	// Span returns where the statement starts and its exact source text
	// (without the terminating semicolon).
	Span() (Pos, string)
	stmt()
}

// StmtBase carries the source span of a statement.
type StmtBase struct {
	Start Pos
	Text  string
}

func (b *StmtBase) Span() (Pos, string) { return b.Start, b.Text }

// SetSpan records where the statement starts and its source text (the
// parser's job).
func (b *StmtBase) SetSpan(start Pos, text string) {
	b.Start = start
	b.Text = text
}

func (*StmtBase) stmt() {}

// ObjectName is a possibly qualified name: [workspace.][schema.]name.
type ObjectName struct {
	Parts []string
}

// Name returns the last part, the object's own name.
func (n ObjectName) Name() string {
	if len(n.Parts) == 0 {
		return ""
	}
	return n.Parts[len(n.Parts)-1]
}

// Schema returns the part before the name, or "" when unqualified.
func (n ObjectName) Schema() string {
	if len(n.Parts) < 2 {
		return ""
	}
	return n.Parts[len(n.Parts)-2]
}

// Property is one KEY = 'value' (or 'key' = 'value') pair. Key is lower-cased
// for unquoted keys and kept verbatim for string keys; Value is the literal's
// text (string content, number, TRUE/FALSE as "true"/"false"). ValueSpan is
// where the value is written, quotes and sign included: Redact hides a
// secret property by this range.
type Property struct {
	Key       string
	Value     string
	Pos       Pos
	ValueSpan Range
}

// TypeName is a column type as written: INT, DECIMAL(10,2), ARRAY<STRING>,
// MAP<STRING,INT>, STRUCT<a:INT, b:STRING>. Name is upper-cased.
type TypeName struct {
	Name   string
	Params []int       // DECIMAL(p,s), VARCHAR(n), CHAR(n)
	Elems  []TypeName  // ARRAY<elem>, MAP<key,value>
	Fields []TypeField // STRUCT<...>
}

// TypeField is one field of a STRUCT type.
type TypeField struct {
	Name string
	Type TypeName
}

// ColumnDef defines one column in CREATE TABLE or in a file schema.
type ColumnDef struct {
	Name    string
	Type    TypeName
	NotNull bool
	Comment *string
	Default Expr
	Pos     Pos
}

// CreateConnection is CREATE STORAGE CONNECTION. Props holds ENDPOINT,
// ACCESS_ID, ACCESS_KEY, REGION, … with lower-cased keys, in source order.
type CreateConnection struct {
	StmtBase
	IfNotExists bool
	Name        string
	Kind        string // OSS, COS, S3 (upper-cased)
	Props       []Property
	Comment     *string
}

type DropConnection struct {
	StmtBase
	IfExists bool
	Name     string
}

type ShowConnections struct {
	StmtBase
	Like *string
}

type DescConnection struct {
	StmtBase
	Name string
}

// CreateVolume is CREATE EXTERNAL VOLUME.
type CreateVolume struct {
	StmtBase
	IfNotExists     bool
	Name            string
	Location        string
	Connection      string
	DirectoryEnable bool
	AutoRefresh     bool
	Recursive       bool
	Comment         *string
}

// AlterVolume is ALTER VOLUME v REFRESH.
type AlterVolume struct {
	StmtBase
	Name   string
	Action string // REFRESH
}

type ShowVolumes struct {
	StmtBase
	Like *string
}

type DescVolume struct {
	StmtBase
	Name string
}

type DropVolume struct {
	StmtBase
	IfExists bool
	Name     string
}

type CreateTable struct {
	StmtBase
	IfNotExists bool
	Name        ObjectName
	Columns     []ColumnDef
	PartitionBy []string // PARTITIONED BY (a, b) — column names
	Comment     *string
	Props       []Property // PROPERTIES (…) / TBLPROPERTIES (…)
	AsQuery     *Query     // CREATE TABLE t AS SELECT …
	// PrimaryKey names the key columns of PRIMARY KEY (a, b) in the column
	// list, or of a column declared PRIMARY KEY; nil for a table without.
	PrimaryKey []string
}

type DropTable struct {
	StmtBase
	IfExists bool
	Name     ObjectName
}

type UndropTable struct {
	StmtBase
	Name ObjectName
}

// AlterTable is ALTER TABLE t SET PROPERTIES (…) and the column changes
// ADD COLUMN / DROP COLUMN (needed by schema-version tests of streaming writes).
type AlterTable struct {
	StmtBase
	Name       ObjectName
	Action     string // SET_PROPERTIES, ADD_COLUMN, DROP_COLUMN
	Props      []Property
	Column     *ColumnDef // ADD COLUMN
	ColumnName string     // DROP COLUMN
}

type ShowTables struct {
	StmtBase
	Like *string
}

type DescTable struct {
	StmtBase
	Name     ObjectName
	Extended bool
}

// Insert is INSERT INTO|OVERWRITE t [(cols)] VALUES … | SELECT ….
type Insert struct {
	StmtBase
	Overwrite bool
	Table     ObjectName
	Columns   []string
	Values    [][]Expr
	Query     *Query
}

type Delete struct {
	StmtBase
	Table ObjectName
	Where Expr
}

type Assignment struct {
	Column string
	Value  Expr
}

type Update struct {
	StmtBase
	Table ObjectName
	Set   []Assignment
	Where Expr
}

// MergeInto is MERGE INTO target [AS a] USING source ON cond followed by
// WHEN [NOT] MATCHED [AND cond] THEN … clauses, applied first match first.
type MergeInto struct {
	StmtBase
	Table   ObjectName
	Alias   string
	Source  TableRef // *TableName or *SubqueryRef, with its alias
	On      Expr
	Clauses []MergeClause
}

// MergeClause is one WHEN clause of MERGE INTO. Action is UPDATE (Set),
// DELETE, or INSERT (Columns, optional, and Values).
type MergeClause struct {
	Matched bool
	Cond    Expr // AND …; nil when absent
	Action  string
	Set     []Assignment
	Columns []string
	Values  []Expr
}

// QueryStmt is a SELECT (or WITH … SELECT, or a UNION of them).
type QueryStmt struct {
	StmtBase
	Query *Query
}

// VolumeSource is FROM VOLUME v [(schema)] USING fmt [OPTIONS(…)]
// [FILES(…)] [SUBDIRECTORY '…'], in COPY INTO table and in SELECT's FROM.
type VolumeSource struct {
	Volume       string
	Schema       []ColumnDef
	Format       string // CSV, JSON, PARQUET (upper-cased)
	Options      []Property
	Files        []string
	Subdirectory *string
	Regexp       *string // REGEXP '…' file filter, when given
}

// CopyIntoTable is COPY INTO t [(cols)] FROM VOLUME … | FROM (SELECT …)
// [PURGE = TRUE] [ON_ERROR = …].
type CopyIntoTable struct {
	StmtBase
	Overwrite bool // COPY OVERWRITE
	Table     ObjectName
	Columns   []string
	Volume    *VolumeSource // exactly one of Volume and Query is set
	Query     *Query        // FROM (SELECT … FROM READ_KAFKA(…) | VOLUME …)
	Purge     bool
	Options   []Property // trailing KEY = value options other than PURGE (ON_ERROR, …)
}

// CopyIntoVolume exports a table or query result to files in a volume.
type CopyIntoVolume struct {
	StmtBase
	Volume        string
	Subdirectory  string
	FromTable     *ObjectName // exactly one of FromTable and FromQuery is set
	FromQuery     *Query
	FileFormat    string     // CSV, PARQUET, JSON (upper-cased)
	FormatOptions []Property // other FILE_FORMAT = (…) keys
	Options       []Property // trailing options (OVERWRITE = TRUE, …)
}

// CreatePipe is CREATE PIPE; Props holds VIRTUAL_CLUSTER, INGEST_MODE,
// BATCH_INTERVAL_IN_SECONDS, POLL_INTERVAL_IN_SECONDS, … lower-cased.
type CreatePipe struct {
	StmtBase
	IfNotExists bool
	Name        string
	Props       []Property
	Comment     *string
	Copy        *CopyIntoTable
}

type ShowPipes struct {
	StmtBase
	Like *string
}

type DescPipe struct {
	StmtBase
	Name     string
	Extended bool
}

// AlterPipe is ALTER PIPE p REFRESH | EXECUTE | SET k = v, … | AS COPY …
// (the last is parsed so that it can be refused with a clear message).
type AlterPipe struct {
	StmtBase
	Name   string
	Action string // REFRESH, EXECUTE, SET, SET_COPY
	Props  []Property
	Copy   *CopyIntoTable // SET_COPY: the new COPY, with its own span
}

type DropPipe struct {
	StmtBase
	IfExists bool
	Name     string
}

type CreateDynamicTable struct {
	StmtBase
	OrReplace    bool
	IfNotExists  bool
	Name         ObjectName
	Columns      []ColumnDef // optional column list
	IntervalN    int         // REFRESH INTERVAL n UNIT; 0 when absent
	IntervalUnit string      // SECOND, MINUTE, HOUR, DAY (singular, upper-cased)
	VCluster     string
	Comment      *string
	Query        *Query
	QueryText    string // the AS SELECT … text as written
}

type RefreshDynamicTable struct {
	StmtBase
	Name ObjectName
}

// ShowRefreshHistory is SHOW DYNAMIC TABLE REFRESH HISTORY [WHERE …] [LIMIT n].
type ShowRefreshHistory struct {
	StmtBase
	Where Expr
	Limit *int
}

type ShowDynamicTables struct {
	StmtBase
	Like *string
}

type DescDynamicTable struct {
	StmtBase
	Name ObjectName
}

type DropDynamicTable struct {
	StmtBase
	IfExists bool
	Name     ObjectName
}

type AlterDynamicTable struct {
	StmtBase
	Name   ObjectName
	Action string // SUSPEND, RESUME
}

type CreateTableStream struct {
	StmtBase
	OrReplace   bool
	IfNotExists bool
	Name        ObjectName
	Table       ObjectName
	Props       []Property // WITH PROPERTIES ('TABLE_STREAM_MODE' = …); keys as written
	Comment     *string
}

type ShowTableStreams struct {
	StmtBase
	Like *string
}

type DescTableStream struct {
	StmtBase
	Name ObjectName
}

type DropTableStream struct {
	StmtBase
	IfExists bool
	Name     ObjectName
}

// Query is [WITH …] body [ORDER BY …] [LIMIT n [OFFSET m]].
type Query struct {
	With    []CTE
	Body    SetExpr
	OrderBy []OrderItem
	Limit   Expr
	Offset  Expr
}

type CTE struct {
	Name  string
	Query *Query
}

// SetExpr is *Select, *SetOp or *Query (parenthesised).
type SetExpr interface{ setExpr() }

// SetOp is UNION [ALL|DISTINCT], INTERSECT, EXCEPT/MINUS.
type SetOp struct {
	Op    string // UNION, INTERSECT, EXCEPT
	All   bool
	Left  SetExpr
	Right SetExpr
}

type Select struct {
	Distinct bool
	Items    []SelectItem
	From     []TableRef // comma-separated sources; joins are nested in JoinRef
	Where    Expr
	GroupBy  []Expr
	Having   Expr
}

// SelectItem is expr [AS alias], * or qualifier.*.
type SelectItem struct {
	Expr      Expr
	Alias     string
	Star      bool
	Qualifier string // t in t.*
}

type OrderItem struct {
	Expr       Expr
	Desc       bool
	NullsFirst *bool
}

func (*Select) setExpr() {}

func (*SetOp) setExpr() {}

func (*Query) setExpr() {}

// TableRef is one source in FROM.
type TableRef interface{ tableRef() }

type TableName struct {
	Name  ObjectName
	Alias string
}

type SubqueryRef struct {
	Query *Query
	Alias string
}

type JoinRef struct {
	Kind  string // INNER, LEFT, RIGHT, FULL, CROSS
	Left  TableRef
	Right TableRef
	On    Expr
	Using []string
}

// VolumeRef is FROM VOLUME … in a query.
type VolumeRef struct {
	Source VolumeSource
	Alias  string
}

// DirectoryRef is FROM DIRECTORY(VOLUME v).
type DirectoryRef struct {
	Volume string
	Alias  string
}

// FuncRef is a table function: load_history('t'), READ_KAFKA(…),
// TABLE(READ_KAFKA(…)) (Wrapped set).
type FuncRef struct {
	Func    *FuncCall
	Wrapped bool
	Alias   string
}

func (*TableName) tableRef() {}

func (*SubqueryRef) tableRef() {}

func (*JoinRef) tableRef() {}

func (*VolumeRef) tableRef() {}

func (*DirectoryRef) tableRef() {}

func (*FuncRef) tableRef() {}

// Expr is a scalar expression.
type Expr interface{ expr() }

// ColumnRef is a, t.a or s.t.a; Parts keep identifier case rules.
type ColumnRef struct {
	Parts []string
}

// Literal kinds.
const (
	LitString = "string"
	LitNumber = "number"
	LitBool   = "bool"
	LitNull   = "null"
)

// Literal is a constant. Value is the string content (unescaped), the
// number's text, "true"/"false", or "" for NULL. Span is where the literal
// is written (a string's quotes included); it is zero for a literal built
// by code rather than parsed.
type Literal struct {
	Kind  string
	Value string
	Span  Range
}

// StarExpr is the * in COUNT(*).
type StarExpr struct{}

// BinaryExpr: + - * / % || = <> != < <= > >= AND OR LIKE ILIKE RLIKE
// NOT LIKE NOT ILIKE. Op is upper-cased, "!=" kept as "<>".
type BinaryExpr struct {
	Op   string
	L, R Expr
}

// UnaryExpr: - + NOT.
type UnaryExpr struct {
	Op string
	X  Expr
}

// FuncCall is name(args); Name is lower-cased unless back-quoted.
type FuncCall struct {
	Name     string
	Distinct bool
	Args     []Expr
	Star     bool // COUNT(*)
	Over     *WindowSpec
}

// WindowSpec is OVER (PARTITION BY … ORDER BY …).
type WindowSpec struct {
	PartitionBy []Expr
	OrderBy     []OrderItem
}

// CastExpr is CAST(x AS T), TRY_CAST(x AS T) or x::T.
type CastExpr struct {
	X           Expr
	Type        TypeName
	DoubleColon bool
	Try         bool
}

type When struct {
	Cond   Expr
	Result Expr
}

type CaseExpr struct {
	Operand Expr // nil for searched CASE
	Whens   []When
	Else    Expr
}

type InExpr struct {
	X     Expr
	Not   bool
	List  []Expr
	Query *Query
}

type BetweenExpr struct {
	X      Expr
	Not    bool
	Lo, Hi Expr
}

type IsNullExpr struct {
	X   Expr
	Not bool
}

// IndexExpr is x[i] / x['key'] (PARSE_JSON(v)['a']['b']).
type IndexExpr struct {
	X     Expr
	Index Expr
}

type ParenExpr struct {
	X Expr
}

type SubqueryExpr struct {
	Query *Query
}

type ExistsExpr struct {
	Query *Query
	Not   bool
}

// IntervalExpr is INTERVAL n UNIT or INTERVAL 'n' UNIT.
type IntervalExpr struct {
	Value Expr
	Unit  string
}

func (*ColumnRef) expr() {}

func (*Literal) expr() {}

func (*StarExpr) expr() {}

func (*BinaryExpr) expr() {}

func (*UnaryExpr) expr() {}

func (*FuncCall) expr() {}

func (*CastExpr) expr() {}

func (*CaseExpr) expr() {}

func (*InExpr) expr() {}

func (*BetweenExpr) expr() {}

func (*IsNullExpr) expr() {}

func (*IndexExpr) expr() {}

func (*ParenExpr) expr() {}

func (*SubqueryExpr) expr() {}

func (*ExistsExpr) expr() {}

func (*IntervalExpr) expr() {}
