package query

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/fileread"
	"github.com/lakepipe/lakepipe/internal/pipehistory"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/schemas"
)

// Session is the state of one statement's translation: the translator with
// lakepipe's sources wired in, and the temporary tables to drop afterwards.
type Session struct {
	e    *Runner
	ctx  context.Context
	Tr   *chsql.Translator
	temp []string
	// streams are the table streams the statement reads (see streamSource).
	streams map[string]streamRead
	// specs caches what names the statement uses turned out to be.
	specs map[string]streamLookup
	// checks are the catalog version checks of the specs the statement
	// took from the catalog's cache (catalog.GetCached), and cachedKeys
	// those objects, to forget when a check fails.
	checks     []string
	cachedKeys []cachedKey
	// cached makes stream reads use the catalog's cache; only plain
	// queries do, as they can simply run again when a check fails.
	cached bool
	// speculate lets stream reads take their commits from the engine's
	// commit cache; unchecked are the reads so served, which the
	// statement checks against the change log while its query runs.
	speculate bool
	unchecked []commitRead
	// noMeta spares stream reads the metadata columns: set for a query
	// that reads none of them (see readsChangeColumns).
	noMeta bool
	// used fingerprints the cached values the statement was translated
	// from (catalog entries, commit lists), for freshness.
	used map[string]string
	// token is the parts token read before the statement's first check
	// of the change log, and checked what those checks found current.
	token     string
	tokenRead bool
	checked   map[string]string
}

// use notes a cached value the statement's translation relies on.
func (s *Session) use(key, print string) {
	if s.used == nil {
		s.used = map[string]string{}
	}
	s.used[key] = print
}

func sameCommit(a, b changes.CommitRef) bool {
	return a.Version == b.Version && a.ID == b.ID && a.Kind == b.Kind && a.At.Equal(b.At)
}

// commitRead is a read of a table's change log above a version.
type commitRead struct {
	schema, name string
	from         uint64
	commits      []changes.CommitRef
}

// readCommits lists the commits of a table above a version: from the
// commit cache when the statement speculates, else from the change log,
// with the statement's version checks.
func (s *Session) readCommits(schema, name string, from uint64) ([]changes.CommitRef, error) {
	if s.speculate {
		if c, ok := s.e.Commits.Get(schema, name, from); ok {
			s.unchecked = append(s.unchecked, commitRead{schema, name, from, c})
			s.use(commitsUse(schema, name, from), changes.CommitsPrint(c))
			return c, nil
		}
	}
	if s.cached && !s.tokenRead {
		// Read before the first check, so that what the checks find
		// current can be vouched for by this token in later reads (see
		// freshness); on an error the statement just records nothing.
		s.tokenRead = true
		if !s.e.Fresh.Skipping() {
			s.token, _ = s.e.PartsToken(s.ctx)
		}
	}
	c, err := s.e.CommitsBetween(s.ctx, schema, name, from, ^uint64(0), strings.Join(s.checks, " AND "))
	if err == nil {
		s.e.Commits.Put(schema, name, from, c)
		s.use(commitsUse(schema, name, from), changes.CommitsPrint(c))
		// The read checked every cached catalog entry used so far.
		s.checked = maps.Clone(s.used)
	}
	return c, err
}

// commitsUse names a commit list among the values a statement used.
func commitsUse(schema, name string, from uint64) string {
	return fmt.Sprintf("commits %s.%s %d", schema, name, from)
}

// checkCommits reads afresh the commits the statement took from the cache,
// with its version checks, and reports whether they were still the same.
func (s *Session) checkCommits(ctx context.Context) (bool, error) {
	same := true
	for i, r := range s.unchecked {
		guard := ""
		if i == 0 {
			guard = strings.Join(s.checks, " AND ")
		}
		c, err := s.e.CommitsBetween(ctx, r.schema, r.name, r.from, ^uint64(0), guard)
		if err != nil {
			return false, err
		}
		if !slices.EqualFunc(c, r.commits, sameCommit) {
			s.e.Commits.Put(r.schema, r.name, r.from, c)
			same = false
		}
	}
	return same, nil
}

type cachedKey struct {
	kind         catalog.Kind
	schema, name string
}

// cachedGet reads a catalog object through the catalog's cache and makes
// the statement check its version.
func (s *Session) cachedGet(kind catalog.Kind, schema, name string, out any) (bool, error) {
	if !s.cached {
		return s.e.Cat.Get(s.ctx, kind, schema, name, out)
	}
	v, ok, err := s.e.Cat.GetCached(s.ctx, kind, schema, name, out)
	if err != nil || !ok {
		return ok, err
	}
	s.use(fmt.Sprintf("%s %s.%s", kind, schema, name), strconv.FormatUint(v, 10))
	check := catalog.VersionCheck(kind, schema, name, v)
	if !slices.Contains(s.checks, check) {
		s.checks = append(s.checks, check)
		s.cachedKeys = append(s.cachedKeys, cachedKey{kind, schema, name})
	}
	return true, nil
}

// staleCache reports whether err is a failed version check, and forgets
// the statement's cached objects if so.
func (s *Session) staleCache(err error) bool {
	if len(s.checks) == 0 || !chstore.IsCode(err, chstore.CodeThrowIf) {
		return false
	}
	for _, k := range s.cachedKeys {
		s.e.Cat.Forget(k.kind, k.schema, k.name)
	}
	return true
}

// streamLookup is a name looked up as a table stream.
type streamLookup struct {
	schema, name string
	spec         catalog.StreamSpec
	ok           bool
}

// stream looks a name up as a table stream, once per statement.
func (s *Session) stream(n sqlast.ObjectName) (streamLookup, error) {
	key := strings.Join(n.Parts, ".")
	if l, ok := s.specs[key]; ok {
		return l, nil
	}
	var l streamLookup
	var err error
	if l.schema, l.name, err = s.e.Qualify(n); err != nil {
		return l, err
	}
	if l.ok, err = s.cachedGet(catalog.KindStream, l.schema, l.name, &l.spec); err != nil {
		return l, err
	}
	if s.specs == nil {
		s.specs = map[string]streamLookup{}
	}
	s.specs[key] = l
	return l, nil
}

func (e *Runner) Session(ctx context.Context) *Session {
	s := &Session{e: e, ctx: ctx}
	s.Tr = &chsql.Translator{
		Table: func(n sqlast.ObjectName) (string, error) {
			// Again here, for the queries of dynamic tables stored
			// before Exec checked them.
			if err := e.guardName(n); err != nil {
				return "", err
			}
			if l, err := s.stream(n); err != nil {
				return "", err
			} else if l.ok {
				return s.streamSource(l.schema, l.name, l.spec)
			}
			return e.TableRef(ctx, n)
		},
		Source: s.source,
		Keyed: func(n sqlast.ObjectName) bool {
			_, _, spec, err := e.Table(ctx, n)
			return err == nil && spec.Keyed()
		},
		Describe: s.dynamicColumns,
		Columns: func(n sqlast.ObjectName) ([]string, bool) {
			var extra []string
			var spec catalog.TableSpec
			if l, err := s.stream(n); err == nil && l.ok {
				schema, table, _ := strings.Cut(l.spec.Table, ".")
				if ok, err := s.cachedGet(catalog.KindTable, schema, table, &spec); err != nil || !ok {
					return nil, false
				}
				extra = streamColumns
			} else if _, _, spec, err = e.Table(ctx, n); err != nil {
				return nil, false
			}
			cols := make([]string, len(spec.Columns))
			for i, c := range spec.Columns {
				cols[i] = c.Name
			}
			return append(cols, extra...), true
		},
	}
	return s
}

func (s *Session) Translate(q *sqlast.Query) (string, error) { return s.Tr.Query(q) }

// dynamicColumns lists the columns of a dynamic table (its view's, which
// has no bookkeeping columns), so that * over it is known too (ORDER BY 2
// needs the second column's name).
func (s *Session) dynamicColumns(n sqlast.ObjectName) ([]string, bool) {
	schema, name, err := s.e.Qualify(n)
	if err != nil {
		return nil, false
	}
	var spec catalog.DynamicTableSpec
	if ok, err := s.cachedGet(catalog.KindDynamicTable, schema, name, &spec); err != nil || !ok {
		return nil, false
	}
	r, err := s.e.St.Query(s.ctx, "DESCRIBE TABLE "+chsql.Table(schema, name))
	if err != nil {
		return nil, false
	}
	cols := make([]string, len(r.Rows))
	for i, row := range r.Rows {
		cols[i], _ = row[0].(string)
	}
	return cols, true
}

// Close drops the temporary tables, on a fresh context so that a cancelled
// statement still cleans up.
func (s *Session) Close() {
	for _, t := range s.temp {
		_ = s.e.St.Exec(context.Background(), "DROP TABLE IF EXISTS "+chsql.Table(schemas.TempDB, t))
	}
}

func (s *Session) source(ref sqlast.TableRef) (string, error) {
	switch r := ref.(type) {
	case *sqlast.DirectoryRef:
		return s.e.directorySource(s.ctx, r.Volume)
	case *sqlast.VolumeRef:
		return s.volumeSource(&r.Source)
	case *sqlast.FuncRef:
		switch strings.ToLower(r.Func.Name) {
		case "load_history":
			return s.e.LoadHistorySource(s.ctx, r.Func)
		case "pipe_history":
			return pipehistory.Source(s.ctx, &s.e.Core, r.Func)
		case "read_kafka":
			return "", fmt.Errorf("READ_KAFKA reads a topic inside CREATE PIPE … AS COPY INTO … FROM (SELECT … FROM READ_KAFKA(…)): %w", core.ErrNotSupportedYet)
		}
		return "", fmt.Errorf("unknown table function %s (known: load_history, pipe_history, READ_KAFKA)", r.Func.Name)
	}
	return "", fmt.Errorf("unexpected source %T", ref)
}

func tempName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "q_" + hex.EncodeToString(b[:])
}

// volumeSource reads the files a VOLUME source names into a temporary
// Memory table and returns that table, so that ClickHouse can run any query
// over them. Columns are named by the schema, the header or the file
// (Parquet, JSON), else f0, f1, ….
func (s *Session) volumeSource(src *sqlast.VolumeSource) (string, error) {
	e := s.e
	vol, _, err := e.Volume(s.ctx, src.Volume)
	if err != nil {
		return "", err
	}
	files, err := e.SelectFiles(s.ctx, vol, src)
	if err != nil {
		return "", err
	}
	opts, err := e.FileOptions(src)
	if err != nil {
		return "", err
	}
	var cols []rowio.Column
	if len(opts.Schema) > 0 {
		cols = opts.Schema
	} else if len(files) > 0 {
		if cols, err = e.FileColumns(s.ctx, vol, files[0], src.Format, opts); err != nil {
			return "", err
		}
	} else {
		return "", fmt.Errorf("volume %s has no files to read here (and no schema was given)", src.Volume)
	}
	for i := range cols {
		if cols[i].Type == "" {
			cols[i].Type = "Nullable(String)"
		}
	}
	name := tempName()
	defs := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = chsql.QuoteIdent(c.Name) + " " + c.Type
	}
	if err := e.St.Exec(s.ctx, "CREATE DATABASE IF NOT EXISTS "+chsql.QuoteIdent(schemas.TempDB)); err != nil {
		return "", err
	}
	if err := e.St.Exec(s.ctx, "CREATE TABLE "+chsql.Table(schemas.TempDB, name)+" ("+strings.Join(defs, ", ")+") ENGINE = Memory"); err != nil {
		return "", fmt.Errorf("read volume %s: %w", src.Volume, err)
	}
	s.temp = append(s.temp, name)
	target := core.LoadTarget{DB: schemas.TempDB, Table: name, Display: "VOLUME " + src.Volume, Cols: cols}
	for _, f := range files {
		res, err := e.SafeLoadFile(s.ctx, vol, f, src, opts, target, fileread.OnErrorAbort)
		if err != nil {
			return "", err
		}
		_ = res
	}
	return chsql.Table(schemas.TempDB, name), nil
}

// Stage runs a translated query once into a temporary table of the
// statement, stored on disk (a whole table's rows may pass through it),
// and returns a query of its rows: INSERT OVERWRITE reads its input this
// way before it empties the table, which the input may read.
func (s *Session) Stage(body string) (string, error) {
	t, err := s.tempTable("MergeTree ORDER BY tuple()", body)
	if err != nil {
		return "", err
	}
	return "SELECT * FROM " + t, nil
}

// tempTable runs body once into a temporary table of the statement with
// the given engine, dropped when the session closes.
func (s *Session) tempTable(engine, body string) (string, error) {
	if err := s.e.St.Exec(s.ctx, "CREATE DATABASE IF NOT EXISTS "+chsql.QuoteIdent(schemas.TempDB)); err != nil {
		return "", err
	}
	name := tempName()
	s.temp = append(s.temp, name)
	if err := s.e.St.Exec(s.ctx, "CREATE TABLE "+chsql.Table(schemas.TempDB, name)+" ENGINE = "+engine+" AS SELECT * FROM ("+body+")"); err != nil {
		return "", core.QueryError(err)
	}
	return chsql.Table(schemas.TempDB, name), nil
}

// Materialize runs a translated query once into a temporary Memory table of
// the statement and returns the table and its column names, in order: a
// statement that reads its input more than once (MERGE INTO, a write of a
// keyed table that tracks changes) reads the same rows each time.
func (s *Session) Materialize(body string) (string, []string, error) {
	t, err := s.tempTable("Memory", body)
	if err != nil {
		return "", nil, err
	}
	r, err := s.e.St.Query(s.ctx, "DESCRIBE TABLE "+t)
	if err != nil {
		return "", nil, err
	}
	cols := make([]string, len(r.Rows))
	for i, row := range r.Rows {
		cols[i], _ = row[0].(string)
	}
	return t, cols, nil
}
