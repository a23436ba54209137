package query

import (
	"reflect"
	"strings"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/schemas"
)

// The guard keeps the statements users write away from what is not theirs:
// lakepipe's own databases (the catalog with its secrets, the histories, the
// trash, the change logs, the temporary tables), ClickHouse's system
// databases, and the table functions and scalar functions that reach files,
// URLs, other servers or dictionaries. Those are read through lakepipe's
// statements instead (SHOW …, DESC …, load_history('t'), DIRECTORY(VOLUME v),
// SHOW DYNAMIC TABLE REFRESH HISTORY, table streams), whose SQL the engine
// writes itself and which the guard does not see.

// GuardError is returned, before anything runs, for a statement that names
// a table of a reserved database or uses a table function lakepipe does not
// implement (scalar functions are refused with a *chsql.RefusedFunction).
// Its message names the culprit and what to use instead.
type GuardError struct {
	msg string
}

func (e *GuardError) Error() string { return e.msg }

const (
	lakepipeHint = "lakepipe's own tables cannot be read or written by SQL; use SHOW CONNECTIONS, SHOW VOLUMES, " +
		"SHOW TABLES, SHOW PIPES, DESC …, load_history('t'), DIRECTORY(VOLUME v) or SHOW DYNAMIC TABLE REFRESH HISTORY instead"
	systemHint = "ClickHouse's system tables cannot be read or written through lakepipe; use SHOW TABLES, DESC TABLE t, " +
		"SHOW PIPES or DESC PIPE p instead"
)

// allowedTableFunctions are the table functions lakepipe itself implements
// (see session.source); ClickHouse's own (remote, s3, file, url, mysql,
// merge, …) are never passed through.
var allowedTableFunctions = map[string]bool{"load_history": true, "pipe_history": true, "read_kafka": true}

// reservedDatabase reports whether SQL may not name tables of database db,
// and what to say if so. Names compare case-insensitively, so that no
// quoting (`LakePipe`, "SYSTEM") gets around it.
func reservedDatabase(db string) (hint string, reserved bool) {
	l := strings.ToLower(db)
	switch {
	case l == schemas.SystemDB,
		strings.HasPrefix(l, schemas.TrashDB),
		strings.HasPrefix(l, schemas.ChangesDB),
		strings.HasPrefix(l, schemas.TempDB),
		strings.HasPrefix(l, schemas.LocksDB):
		return lakepipeHint, true
	case l == "system", l == "information_schema":
		return systemHint, true
	}
	return "", false
}

// guardName refuses a table (or other schema object) name of a reserved
// database; an unqualified name is in the session's schema.
func (e *Runner) guardName(n sqlast.ObjectName) error {
	return guardName(e.Cfg.Schema, n)
}

func guardName(schema string, n sqlast.ObjectName) error {
	db := schema
	if len(n.Parts) >= 2 {
		db = n.Parts[len(n.Parts)-2]
	}
	if hint, ok := reservedDatabase(db); ok {
		return &GuardError{msg: strings.Join(n.Parts, ".") + ": " + hint}
	}
	return nil
}

// Guard checks every table a user statement names — its targets, and the
// sources of its queries at any depth (subqueries, JOINs, CTEs, UNION
// branches, IN (SELECT …)) — and every function it calls.
func (e *Runner) Guard(stmt sqlast.Statement) error {
	return Guard(e.Cfg.Schema, stmt)
}

// Guard is Engine.guard for a session in schema (`lakepipe sql --check`
// runs it without an engine).
func Guard(schema string, stmt sqlast.Statement) error {
	ctes := map[string]bool{}
	sqlast.Inspect(stmt, func(n any) bool {
		if q, ok := n.(*sqlast.Query); ok {
			for _, c := range q.With {
				ctes[c.Name] = true
			}
		}
		return true
	})
	var err error
	sqlast.Inspect(stmt, func(n any) bool {
		if err != nil {
			return false // the first refusal is the answer
		}
		switch n := n.(type) {
		case sqlast.Statement:
			for _, name := range statementNames(n) {
				if err = guardName(schema, name); err != nil {
					break
				}
			}
		case *sqlast.TableName:
			if len(n.Name.Parts) != 1 || !ctes[n.Name.Parts[0]] {
				err = guardName(schema, n.Name)
			}
		case *sqlast.FuncRef:
			if !allowedTableFunctions[strings.ToLower(n.Func.Name)] {
				err = &GuardError{msg: n.Func.Name + "(…): only load_history('t'), pipe_history('p') and READ_KAFKA(…) can be used as table functions; " +
					"ClickHouse's table functions (remote, cluster, s3, url, file, mysql, merge, …) are not available in lakepipe SQL"}
			}
		case *sqlast.FuncCall:
			err = chsql.CheckFunction(n.Name)
		case *sqlast.ColumnRef:
			// db.table.column (or workspace.db.table.column).
			if len(n.Parts) >= 3 {
				err = guardName(schema, sqlast.ObjectName{Parts: n.Parts[:len(n.Parts)-1]})
			}
		case *sqlast.InExpr:
			// x IN (db.table): ClickHouse reads a bare table name there.
			for _, x := range n.List {
				if c, ok := x.(*sqlast.ColumnRef); ok && len(c.Parts) == 2 && err == nil {
					err = guardName(schema, sqlast.ObjectName{Parts: c.Parts})
				}
			}
		}
		return err == nil
	})
	return err
}

var objectNameType = reflect.TypeFor[sqlast.ObjectName]()

// statementNames lists the object names a statement holds in its own fields
// (the table of INSERT, DELETE, COPY INTO, CREATE …, a stream's table, …),
// found by type so that a statement added later is covered too. Names in
// its queries are found by walking them.
func statementNames(stmt sqlast.Statement) []sqlast.ObjectName {
	v := reflect.ValueOf(stmt)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	v = v.Elem()
	var names []sqlast.ObjectName
	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() {
			continue
		}
		switch f := v.Field(i); {
		case f.Type() == objectNameType:
			names = append(names, f.Interface().(sqlast.ObjectName))
		case f.Type() == reflect.PointerTo(objectNameType) && !f.IsNil():
			names = append(names, *f.Interface().(*sqlast.ObjectName))
		}
	}
	return names
}
