package sqlparse

import (
	"strconv"
	"strings"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// connectionKinds are the storage services a connection may point at.
var connectionKinds = map[string]bool{"OSS": true, "COS": true, "S3": true}

// atTableStream reports whether the token at offset k is the STREAM of
// TABLE STREAM. In CREATE (create set) a name followed by ON must come
// next, so that "CREATE TABLE stream (…)" still creates a table named
// stream; elsewhere IF or a name must follow.
func (p *parser) atTableStream(k int, create bool) bool {
	if !isKw(p.peek(k), "STREAM") {
		return false
	}
	j := k + 1
	if isKw(p.peek(j), "IF") {
		return true
	}
	if !isIdentTok(p.peek(j)) {
		return false
	}
	if !create {
		return true
	}
	j++
	for isOp(p.peek(j), ".") && isIdentTok(p.peek(j+1)) {
		j += 2
	}
	return isKw(p.peek(j), "ON")
}

func (p *parser) parseCreate() sqlast.Statement {
	p.advance() // CREATE
	orReplace := p.acceptKws("OR", "REPLACE")
	t := p.tok()
	if p.acceptKws("DYNAMIC", "TABLE") {
		return p.parseCreateDynamicTable(orReplace)
	}
	if isKw(t, "TABLE") && p.atTableStream(1, true) {
		p.i += 2
		return p.parseCreateTableStream(orReplace)
	}
	if orReplace {
		p.fail(t, "OR REPLACE is supported only for DYNAMIC TABLE and TABLE STREAM")
	}
	switch {
	case p.acceptKws("STORAGE", "CONNECTION"), p.acceptKw("CONNECTION"):
		return p.parseCreateConnection()
	case p.acceptKws("EXTERNAL", "VOLUME"), p.acceptKw("VOLUME"):
		return p.parseCreateVolume()
	case p.acceptKw("TABLE"):
		return p.parseCreateTable()
	case p.acceptKw("PIPE"):
		return p.parseCreatePipe()
	}
	p.fail(t, "expected TABLE, EXTERNAL VOLUME, STORAGE CONNECTION, PIPE, DYNAMIC TABLE or TABLE STREAM after CREATE")
	return nil
}

// parseCreateConnection parses the rest of CREATE STORAGE CONNECTION: name,
// TYPE kind and KEY = 'value' pairs in any order, separated by whitespace or
// commas, and COMMENT '…'.
func (p *parser) parseCreateConnection() sqlast.Statement {
	s := &sqlast.CreateConnection{}
	s.IfNotExists = p.parseIfNotExists()
	s.Name = p.parseIdent("a connection name")
	seen, afterComma := clauses{}, false
	for {
		t := p.tok()
		switch {
		case isKw(t, "TYPE") && (p.peek(1).kind == tWord || isOp(p.peek(1), "=") && p.peek(2).kind == tWord):
			p.once(seen, t, "TYPE")
			p.i++
			p.acceptOp("=")
			k := p.tok()
			if k.kind != tWord || !connectionKinds[k.upper] {
				p.fail(k, "expected the connection type OSS, COS or S3")
			}
			p.i++
			s.Kind = k.upper
		case isKw(t, "COMMENT"):
			p.once(seen, t, "COMMENT")
			p.i++
			s.Comment = p.parseComment()
		case p.atKeyValue():
			s.Props = append(s.Props, p.parseKeyValue())
		default:
			if afterComma {
				p.fail(t, "expected a property (KEY = 'value')")
			}
			if s.Kind == "" {
				p.fail(t, "expected TYPE OSS, COS or S3")
			}
			return s
		}
		afterComma = p.acceptOp(",")
	}
}

// parseCreateVolume parses the rest of CREATE EXTERNAL VOLUME; its clauses
// may come in any order.
func (p *parser) parseCreateVolume() sqlast.Statement {
	s := &sqlast.CreateVolume{}
	s.IfNotExists = p.parseIfNotExists()
	s.Name = p.parseIdent("a volume name")
	seen := clauses{}
	for {
		t := p.tok()
		switch {
		case isKw(t, "LOCATION"):
			p.once(seen, t, "LOCATION")
			p.i++
			p.acceptOp("=")
			s.Location = p.parseString("a location string such as 'oss://bucket/dir/'")
		case isKw(t, "USING"):
			p.once(seen, t, "USING CONNECTION")
			p.i++
			p.expectKw("CONNECTION", "expected CONNECTION after USING")
			s.Connection = p.parseIdent("a connection name")
		case isKw(t, "DIRECTORY"):
			p.once(seen, t, "DIRECTORY")
			p.i++
			p.acceptOp("=")
			p.expectOp("(")
			for !p.atOp(")") {
				k := p.tok()
				switch {
				case isKw(k, "ENABLE"):
					p.i++
					p.expectOp("=")
					s.DirectoryEnable = p.parseBool("ENABLE")
				case isKw(k, "AUTO_REFRESH"):
					p.i++
					p.expectOp("=")
					s.AutoRefresh = p.parseBool("AUTO_REFRESH")
				default:
					p.fail(k, "expected ENABLE or AUTO_REFRESH in DIRECTORY = (…)")
				}
				p.acceptOp(",")
			}
			p.i++
		case isKw(t, "RECURSIVE"):
			p.once(seen, t, "RECURSIVE")
			p.i++
			p.acceptOp("=")
			s.Recursive = p.parseBool("RECURSIVE")
		case isKw(t, "COMMENT"):
			p.once(seen, t, "COMMENT")
			p.i++
			s.Comment = p.parseComment()
		default:
			if !seen["LOCATION"] {
				p.fail(t, "expected LOCATION 'oss://bucket/dir/'")
			}
			if !seen["USING CONNECTION"] {
				p.fail(t, "expected USING CONNECTION <connection>")
			}
			return s
		}
	}
}

// parseCreateTable parses the rest of CREATE TABLE: a column list and/or
// AS query, with PARTITIONED BY, COMMENT and PROPERTIES in any order.
func (p *parser) parseCreateTable() sqlast.Statement {
	s := &sqlast.CreateTable{}
	s.IfNotExists = p.parseIfNotExists()
	s.Name = p.parseObjectName("a table name")
	if p.atOp("(") && !p.atQueryStart(1) {
		s.Columns, s.PrimaryKey = p.parseTableElements()
	}
	seen := clauses{}
	for {
		t := p.tok()
		switch {
		case isKw(t, "PARTITIONED"):
			p.once(seen, t, "PARTITIONED BY")
			p.i++
			p.expectKw("BY", "expected BY after PARTITIONED")
			s.PartitionBy = p.parseIdentList("a partition column name")
		case isKw(t, "COMMENT"):
			p.once(seen, t, "COMMENT")
			p.i++
			s.Comment = p.parseComment()
		case isKw(t, "PROPERTIES"), isKw(t, "TBLPROPERTIES"):
			p.once(seen, t, "PROPERTIES")
			p.i++
			s.Props = p.parsePropList()
		default:
			if p.acceptKw("AS") {
				s.AsQuery = p.parseQuery()
			}
			if s.Columns == nil && s.AsQuery == nil {
				p.fail(t, "expected a column list (col TYPE, …) or AS SELECT …")
			}
			return s
		}
	}
}

// parseTableElements parses the column list of CREATE TABLE: column
// definitions, any of them followed by PRIMARY KEY, and a PRIMARY KEY (a, …)
// element; the key is declared once, either way.
func (p *parser) parseTableElements() ([]sqlast.ColumnDef, []string) {
	p.expectOp("(")
	var cols []sqlast.ColumnDef
	var key []string
	declared := false
	once := func(t token) {
		if declared {
			p.fail(t, "PRIMARY KEY is declared twice")
		}
		declared = true
	}
	for {
		if t := p.tok(); isKw(t, "PRIMARY") && isKw(p.peek(1), "KEY") && isOp(p.peek(2), "(") {
			once(t)
			p.i += 2
			key = p.parseIdentList("a key column name")
		} else {
			var isKey bool
			keyTok := p.tok()
			c := p.parseColumnDefKey(false, &isKey)
			if isKey {
				once(keyTok)
				key = []string{c.Name}
			}
			cols = append(cols, c)
		}
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp(")")
	return cols, key
}

// parseColumnDefs parses ( col TYPE [NOT NULL] [DEFAULT e] [COMMENT '…'], … ).
func (p *parser) parseColumnDefs(typeOptional bool) []sqlast.ColumnDef {
	p.expectOp("(")
	var cols []sqlast.ColumnDef
	for {
		cols = append(cols, p.parseColumnDef(typeOptional))
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp(")")
	return cols
}

func (p *parser) parseColumnDef(typeOptional bool) sqlast.ColumnDef {
	return p.parseColumnDefKey(typeOptional, nil)
}

// parseColumnDefKey parses a column definition that may say PRIMARY KEY
// among its options when key is not nil (CREATE TABLE's columns).
func (p *parser) parseColumnDefKey(typeOptional bool, key *bool) sqlast.ColumnDef {
	c := sqlast.ColumnDef{Pos: p.tok().pos}
	seen := clauses{}
	c.Name = p.parseIdent("a column name")
	if !typeOptional || p.atTypeName() {
		c.Type = p.parseType()
	}
	for {
		t := p.tok()
		switch {
		case isKw(t, "NOT") && isKw(p.peek(1), "NULL"):
			p.i += 2
			c.NotNull = true
		case isKw(t, "NULL"):
			p.i++
			c.NotNull = false
		case isKw(t, "DEFAULT"):
			p.once(seen, t, "DEFAULT")
			p.i++
			c.Default = p.parseExpr()
		case isKw(t, "COMMENT"):
			p.once(seen, t, "COMMENT")
			p.i++
			c.Comment = p.parseComment()
		case key != nil && isKw(t, "PRIMARY") && isKw(p.peek(1), "KEY"):
			p.once(seen, t, "PRIMARY KEY")
			if *key {
				p.fail(t, "PRIMARY KEY is declared twice")
			}
			p.i += 2
			*key = true
		default:
			return c
		}
	}
}

// parseCreatePipe parses the rest of CREATE PIPE: name, KEY = 'value'
// properties and COMMENT in any order, then AS COPY INTO ….
func (p *parser) parseCreatePipe() sqlast.Statement {
	s := &sqlast.CreatePipe{}
	s.IfNotExists = p.parseIfNotExists()
	s.Name = p.parseIdent("a pipe name")
	seen := clauses{}
	for !(p.atKw("AS") && !isOp(p.peek(1), "=")) {
		t := p.tok()
		switch {
		case isKw(t, "COMMENT"):
			p.once(seen, t, "COMMENT")
			p.i++
			s.Comment = p.parseComment()
		case p.atKeyValue():
			s.Props = append(s.Props, p.parseKeyValue())
		default:
			p.fail(t, "expected a pipe property (KEY = 'value'), COMMENT or AS COPY INTO …")
		}
		p.acceptOp(",")
	}
	p.i++ // AS
	s.Copy = p.parsePipeCopy()
	return s
}

// parsePipeCopy parses the COPY INTO <table> of a pipe, with its own span.
func (p *parser) parsePipeCopy() *sqlast.CopyIntoTable {
	t := p.tok()
	if !isKw(t, "COPY") {
		p.fail(t, "expected COPY INTO <table> after AS")
	}
	c, ok := p.parseCopy().(*sqlast.CopyIntoTable)
	if !ok {
		p.fail(t, "a pipe loads into a table: expected COPY INTO <table>, not COPY INTO VOLUME")
	}
	c.SetSpan(t.pos, p.text(t))
	return c
}

// refreshUnits maps the units of REFRESH INTERVAL to their singular form.
var refreshUnits = map[string]string{
	"SECOND": "SECOND", "SECONDS": "SECOND",
	"MINUTE": "MINUTE", "MINUTES": "MINUTE",
	"HOUR": "HOUR", "HOURS": "HOUR",
	"DAY": "DAY", "DAYS": "DAY",
}

// parseCreateDynamicTable parses the rest of CREATE DYNAMIC TABLE: name,
// optional column list, REFRESH INTERVAL, VCLUSTER and COMMENT in any order,
// then AS query.
func (p *parser) parseCreateDynamicTable(orReplace bool) sqlast.Statement {
	s := &sqlast.CreateDynamicTable{OrReplace: orReplace}
	s.IfNotExists = p.parseIfNotExists()
	s.Name = p.parseObjectName("a dynamic table name")
	if p.atOp("(") && !p.atQueryStart(1) {
		s.Columns = p.parseColumnDefs(true)
	}
	seen := clauses{}
	for {
		t := p.tok()
		switch {
		case isKw(t, "REFRESH"):
			p.once(seen, t, "REFRESH INTERVAL")
			p.i++
			p.expectKw("INTERVAL", "expected INTERVAL after REFRESH")
			if n := p.tok(); n.kind == tString {
				// REFRESH INTERVAL '5' MINUTE
				v, err := strconv.Atoi(strings.TrimSpace(n.val))
				if err != nil || v < 0 {
					p.fail(n, "expected the refresh interval, a whole number")
				}
				p.i++
				s.IntervalN = v
			} else {
				s.IntervalN = p.parseInt("the refresh interval, a whole number")
			}
			u := p.tok()
			unit, ok := refreshUnits[u.upper]
			if u.kind != tWord || !ok {
				p.fail(u, "expected SECOND, MINUTE, HOUR or DAY")
			}
			p.i++
			s.IntervalUnit = unit
		case isKw(t, "VCLUSTER"):
			p.once(seen, t, "VCLUSTER")
			p.i++
			p.acceptOp("=")
			if v := p.tok(); v.kind == tString {
				p.i++
				s.VCluster = v.val
			} else {
				s.VCluster = p.parseIdent("a virtual cluster name")
			}
		case isKw(t, "COMMENT"):
			p.once(seen, t, "COMMENT")
			p.i++
			s.Comment = p.parseComment()
		case isKw(t, "AS"):
			p.i++
			start := p.tok()
			s.Query = p.parseQuery()
			s.QueryText = p.text(start)
			return s
		default:
			p.fail(t, "expected REFRESH INTERVAL, VCLUSTER, COMMENT or AS SELECT …")
		}
	}
}

// parseCreateTableStream parses the rest of CREATE TABLE STREAM.
func (p *parser) parseCreateTableStream(orReplace bool) sqlast.Statement {
	s := &sqlast.CreateTableStream{OrReplace: orReplace}
	s.IfNotExists = p.parseIfNotExists()
	s.Name = p.parseObjectName("a table stream name")
	p.expectKw("ON", "expected ON TABLE <table>")
	p.expectKw("TABLE", "expected TABLE after ON")
	s.Table = p.parseObjectName("a table name")
	seen := clauses{}
	for {
		t := p.tok()
		switch {
		case isKw(t, "WITH") && isKw(p.peek(1), "PROPERTIES"), isKw(t, "PROPERTIES"):
			p.once(seen, t, "PROPERTIES")
			p.acceptKw("WITH")
			p.i++
			s.Props = p.parsePropList()
		case isKw(t, "COMMENT"):
			p.once(seen, t, "COMMENT")
			p.i++
			s.Comment = p.parseComment()
		default:
			return s
		}
	}
}

func (p *parser) parseDrop() sqlast.Statement {
	p.advance() // DROP
	t := p.tok()
	switch {
	case p.acceptKws("STORAGE", "CONNECTION"), p.acceptKw("CONNECTION"):
		s := &sqlast.DropConnection{IfExists: p.parseIfExists()}
		s.Name = p.parseIdent("a connection name")
		return s
	case p.acceptKws("EXTERNAL", "VOLUME"), p.acceptKw("VOLUME"):
		s := &sqlast.DropVolume{IfExists: p.parseIfExists()}
		s.Name = p.parseIdent("a volume name")
		return s
	case p.acceptKw("PIPE"):
		s := &sqlast.DropPipe{IfExists: p.parseIfExists()}
		s.Name = p.parseIdent("a pipe name")
		return s
	case p.acceptKws("DYNAMIC", "TABLE"):
		s := &sqlast.DropDynamicTable{IfExists: p.parseIfExists()}
		s.Name = p.parseObjectName("a dynamic table name")
		return s
	case isKw(t, "TABLE") && p.atTableStream(1, false):
		p.i += 2
		s := &sqlast.DropTableStream{IfExists: p.parseIfExists()}
		s.Name = p.parseObjectName("a table stream name")
		return s
	case p.acceptKw("TABLE"):
		s := &sqlast.DropTable{IfExists: p.parseIfExists()}
		s.Name = p.parseObjectName("a table name")
		return s
	}
	p.fail(t, "expected TABLE, VOLUME, CONNECTION, PIPE, DYNAMIC TABLE or TABLE STREAM after DROP")
	return nil
}

func (p *parser) parseAlter() sqlast.Statement {
	p.advance() // ALTER
	t := p.tok()
	switch {
	case p.acceptKws("EXTERNAL", "VOLUME"), p.acceptKw("VOLUME"):
		s := &sqlast.AlterVolume{Name: p.parseIdent("a volume name")}
		p.expectKw("REFRESH", "expected REFRESH")
		s.Action = "REFRESH"
		return s
	case p.acceptKws("DYNAMIC", "TABLE"):
		s := &sqlast.AlterDynamicTable{Name: p.parseObjectName("a dynamic table name")}
		a := p.tok()
		if !isKw(a, "SUSPEND") && !isKw(a, "RESUME") {
			p.fail(a, "expected SUSPEND or RESUME")
		}
		p.i++
		s.Action = a.upper
		return s
	case p.acceptKw("PIPE"):
		return p.parseAlterPipe()
	case p.acceptKw("TABLE"):
		return p.parseAlterTable()
	}
	p.fail(t, "expected TABLE, VOLUME, PIPE or DYNAMIC TABLE after ALTER")
	return nil
}

func (p *parser) parseAlterTable() sqlast.Statement {
	s := &sqlast.AlterTable{Name: p.parseObjectName("a table name")}
	t := p.tok()
	switch {
	case p.acceptKws("SET", "PROPERTIES"), p.acceptKws("SET", "TBLPROPERTIES"):
		s.Action = "SET_PROPERTIES"
		s.Props = p.parsePropList()
	case p.acceptKw("ADD"):
		if isKw(p.tok(), "COLUMN") && isIdentTok(p.peek(1)) {
			p.i++
		}
		s.Action = "ADD_COLUMN"
		c := p.parseColumnDef(false)
		s.Column = &c
	case p.acceptKw("DROP"):
		if isKw(p.tok(), "COLUMN") && isIdentTok(p.peek(1)) {
			p.i++
		}
		s.Action = "DROP_COLUMN"
		s.ColumnName = p.parseIdent("a column name")
	default:
		p.fail(t, "expected SET PROPERTIES (…), ADD COLUMN or DROP COLUMN")
	}
	return s
}

func (p *parser) parseAlterPipe() sqlast.Statement {
	s := &sqlast.AlterPipe{Name: p.parseIdent("a pipe name")}
	t := p.tok()
	switch {
	case p.acceptKw("REFRESH"):
		s.Action = "REFRESH"
	case p.acceptKw("EXECUTE"):
		s.Action = "EXECUTE"
	case p.acceptKw("SET"):
		s.Action = "SET"
		for {
			if !p.atKeyValue() {
				p.fail(p.tok(), "expected a pipe property (KEY = value)")
			}
			s.Props = append(s.Props, p.parseKeyValue())
			if !p.acceptOp(",") && !p.atKeyValue() {
				break
			}
		}
	case p.acceptKw("AS"):
		s.Action = "SET_COPY"
		s.Copy = p.parsePipeCopy()
	default:
		p.fail(t, "expected REFRESH, EXECUTE, SET or AS COPY …")
	}
	return s
}

func (p *parser) parseShow() sqlast.Statement {
	p.advance() // SHOW
	t := p.tok()
	switch {
	case p.acceptKws("STORAGE", "CONNECTIONS"), p.acceptKw("CONNECTIONS"):
		return &sqlast.ShowConnections{Like: p.parseLike()}
	case p.acceptKws("EXTERNAL", "VOLUMES"), p.acceptKw("VOLUMES"):
		return &sqlast.ShowVolumes{Like: p.parseLike()}
	case p.acceptKw("TABLES"):
		return &sqlast.ShowTables{Like: p.parseLike()}
	case p.acceptKw("PIPES"):
		return &sqlast.ShowPipes{Like: p.parseLike()}
	case p.acceptKws("DYNAMIC", "TABLES"):
		return &sqlast.ShowDynamicTables{Like: p.parseLike()}
	case p.acceptKws("DYNAMIC", "TABLE", "REFRESH", "HISTORY"):
		s := &sqlast.ShowRefreshHistory{}
		if p.acceptKw("WHERE") {
			s.Where = p.parseExpr()
		}
		if p.acceptKw("LIMIT") {
			n := p.parseInt("a row count")
			s.Limit = &n
		}
		return s
	case p.acceptKws("TABLE", "STREAMS"):
		return &sqlast.ShowTableStreams{Like: p.parseLike()}
	}
	p.fail(t, "expected TABLES, VOLUMES, CONNECTIONS, PIPES, DYNAMIC TABLES, DYNAMIC TABLE REFRESH HISTORY or TABLE STREAMS after SHOW")
	return nil
}

// acceptExtended consumes EXTENDED when a name follows it (so that a table
// named extended can still be described).
func (p *parser) acceptExtended() bool {
	if p.atKw("EXTENDED") && isIdentTok(p.peek(1)) {
		p.i++
		return true
	}
	return false
}

func (p *parser) parseDesc() sqlast.Statement {
	p.advance() // DESC | DESCRIBE
	ext := p.acceptExtended()
	t := p.tok()
	named := func(k int) bool { return isIdentTok(p.peek(k)) }
	switch {
	case isKw(t, "STORAGE") && isKw(p.peek(1), "CONNECTION") && named(2):
		p.i += 2
		return &sqlast.DescConnection{Name: p.parseIdent("a connection name")}
	case isKw(t, "CONNECTION") && named(1):
		p.i++
		return &sqlast.DescConnection{Name: p.parseIdent("a connection name")}
	case isKw(t, "EXTERNAL") && isKw(p.peek(1), "VOLUME") && named(2):
		p.i += 2
		return &sqlast.DescVolume{Name: p.parseIdent("a volume name")}
	case isKw(t, "VOLUME") && named(1):
		p.i++
		return &sqlast.DescVolume{Name: p.parseIdent("a volume name")}
	case isKw(t, "PIPE") && named(1):
		p.i++
		s := &sqlast.DescPipe{Extended: ext}
		if p.acceptExtended() {
			s.Extended = true
		}
		s.Name = p.parseIdent("a pipe name")
		if p.acceptKw("EXTENDED") {
			s.Extended = true
		}
		return s
	case isKw(t, "DYNAMIC") && isKw(p.peek(1), "TABLE") && named(2):
		p.i += 2
		return &sqlast.DescDynamicTable{Name: p.parseObjectName("a dynamic table name")}
	case isKw(t, "TABLE") && p.atTableStream(1, false):
		p.i += 2
		return &sqlast.DescTableStream{Name: p.parseObjectName("a table stream name")}
	case isKw(t, "TABLE") && named(1):
		p.i++
		if p.acceptExtended() {
			ext = true
		}
	}
	s := &sqlast.DescTable{Extended: ext}
	s.Name = p.parseObjectName("a table name")
	if p.acceptKw("EXTENDED") {
		s.Extended = true
	}
	return s
}
