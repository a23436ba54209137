// Package catalogtest gives other packages' tests a catalog.Catalog
// holding the objects they choose, kept in memory: no ClickHouse needed.
//
// Its store answers only the statements package catalog itself sends for
// reading objects (Get, GetCached, List, ListAll, Versions, Secret) and
// for writing them (Put, Delete); it matches their exact shapes and is not
// a SQL interpreter. Any other statement fails the test. Catalog.Store
// returns nil for its catalogs, so code that goes to ClickHouse through
// the catalog's store cannot run over one.
package catalogtest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/schemas"
)

// Updated is the update time of the objects given to New without one.
var Updated = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// New returns a catalog holding objs, live. An object without a Version
// gets its position in objs plus one, one without an Updated time gets
// Updated, and one without a Spec gets {}; of objects with the same kind,
// schema and name the last wins. The catalog seals no secrets (a Put with
// a secret fails, as catalog.WithSealer(nil) says), whatever the
// environment holds.
func New(t testing.TB, objs ...catalog.Object) *catalog.Catalog {
	t.Helper()
	s := &store{t: t, objects: map[key]row{}}
	for i, o := range objs {
		r := row{spec: string(o.Spec), version: o.Version, updated: o.Updated}
		if r.version == 0 {
			r.version = uint64(i + 1)
		}
		if r.updated.IsZero() {
			r.updated = Updated
		}
		if r.spec == "" {
			r.spec = "{}"
		}
		s.objects[key{string(o.Kind), o.Schema, o.Name}] = r
	}
	c, err := catalog.OpenBackend(context.Background(), s, catalog.WithSealer(nil))
	if err != nil {
		t.Fatalf("catalogtest: %v", err)
	}
	return c
}

// Object is a catalog object of the given kind, name and version whose
// spec is spec as JSON (a catalog.TableSpec, a catalog.DynamicTableSpec, …).
func Object(t testing.TB, kind catalog.Kind, schema, name string, version uint64, spec any) catalog.Object {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatalf("catalogtest: %s %s.%s: %v", kind, schema, name, err)
	}
	return catalog.Object{Kind: kind, Schema: schema, Name: name, Spec: js, Version: version}
}

type key struct{ kind, schema, name string }

// row is an object's last write, as lakepipe.objects would give it
// (argMax over its versions).
type row struct {
	spec, secret string
	deleted      uint8
	version      uint64
	updated      time.Time
}

// store is the in-memory catalog.Backend.
type store struct {
	t       testing.TB
	mu      sync.Mutex
	objects map[key]row
}

var _ catalog.Backend = (*store)(nil)

// The statements of package catalog this store answers (see catalog.go).
const (
	metaVersion   = "SELECT argMax(value, version) FROM lakepipe.meta WHERE key = 'schema_version'"
	listHead      = "SELECT kind, schema, name, argMax(spec, version), argMax(deleted, version), max(updated_at), max(version) FROM lakepipe.objects WHERE "
	listTail      = " GROUP BY kind, schema, name ORDER BY name"
	versionsHead  = "SELECT kind, schema, name, max(version) FROM lakepipe.objects WHERE "
	versionsTail  = " GROUP BY kind, schema, name"
	secretHead    = "SELECT argMax(secret, version) FROM lakepipe.objects WHERE "
	oldSecretHead = "SELECT toString(count()) FROM lakepipe.objects WHERE "
	objectsTable  = "objects"
)

var objectsColumns = []string{"kind", "schema", "name", "spec", "secret", "deleted", "version", "updated_at"}

// refuse fails the test for a statement this store does not answer.
func (s *store) refuse(method, query string) error {
	s.t.Errorf("catalogtest: %s of a statement the in-memory catalog does not answer: %s", method, query)
	return fmt.Errorf("catalogtest: %s %q: not a statement of package catalog's reads and writes", method, query)
}

func (s *store) Exec(_ context.Context, query string, _ ...any) error {
	// The catalog is at the current schema version: no migration runs,
	// and removeOlderSecrets never finds a secret to delete (see Strings).
	return s.refuse("Exec", query)
}

func (s *store) Query(_ context.Context, query string, args ...any) (*chstore.Result, error) {
	if len(args) > 0 {
		return nil, s.refuse("Query", query)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cond, ok := cut(query, listHead, listTail); ok {
		f, rest, ok := parseFilter(cond)
		if !ok || rest != "" {
			return nil, s.refuse("Query", query)
		}
		res := &chstore.Result{Columns: []string{"kind", "schema", "name", "spec", "deleted", "updated_at", "version"}}
		for _, k := range s.matching([]filter{f}) {
			r := s.objects[k]
			res.Rows = append(res.Rows, []any{k.kind, k.schema, k.name, r.spec, r.deleted, r.updated, r.version})
		}
		return res, nil
	}
	if conds, ok := cut(query, versionsHead, versionsTail); ok {
		var fs []filter
		for rest := conds; ; {
			r, ok := strings.CutPrefix(rest, "(")
			var f filter
			if ok {
				f, r, ok = parseFilter(r)
			}
			if ok {
				r, ok = strings.CutPrefix(r, ")")
			}
			if !ok {
				return nil, s.refuse("Query", query)
			}
			fs = append(fs, f)
			if r == "" {
				break
			}
			if rest, ok = strings.CutPrefix(r, " OR "); !ok {
				return nil, s.refuse("Query", query)
			}
		}
		res := &chstore.Result{Columns: []string{"kind", "schema", "name", "version"}}
		for _, k := range s.matching(fs) {
			res.Rows = append(res.Rows, []any{k.kind, k.schema, k.name, s.objects[k].version})
		}
		return res, nil
	}
	return nil, s.refuse("Query", query)
}

func (s *store) Strings(_ context.Context, query string, args ...any) ([]string, error) {
	if len(args) > 0 {
		return nil, s.refuse("Strings", query)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case query == metaVersion:
		return []string{strconv.Itoa(schemas.Version)}, nil
	case strings.HasPrefix(query, secretHead):
		f, rest, ok := parseFilter(strings.TrimPrefix(query, secretHead))
		if !ok || rest != "" || f.name == nil {
			return nil, s.refuse("Strings", query)
		}
		// An aggregate over no rows is one row of its default value.
		return []string{s.objects[f.key()].secret}, nil
	case strings.HasPrefix(query, oldSecretHead):
		// Only an object's last write is kept: no older row holds a secret.
		f, rest, ok := parseFilter(strings.TrimPrefix(query, oldSecretHead))
		if !ok || f.name == nil || !strings.HasPrefix(rest, " AND version < ") || !strings.HasSuffix(rest, " AND secret != ''") {
			return nil, s.refuse("Strings", query)
		}
		return []string{"0"}, nil
	}
	return nil, s.refuse("Strings", query)
}

func (s *store) InsertRows(_ context.Context, db, table string, cols []string, rows [][]any) error {
	query := db + "." + table + " (" + strings.Join(cols, ", ") + ")"
	if db != schemas.SystemDB || table != objectsTable || strings.Join(cols, ",") != strings.Join(objectsColumns, ",") {
		return s.refuse("InsertRows", query)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rows {
		if len(r) != len(objectsColumns) {
			return s.refuse("InsertRows", query)
		}
		kind, _ := r[0].(string)
		schema, _ := r[1].(string)
		name, _ := r[2].(string)
		spec, _ := r[3].(string)
		secret, _ := r[4].(string)
		deleted, _ := r[5].(uint8)
		version, _ := r[6].(uint64)
		updated, _ := r[7].(time.Time)
		k := key{kind, schema, name}
		if old, ok := s.objects[k]; ok && old.version > version {
			continue // argMax keeps the later write
		}
		s.objects[k] = row{spec: spec, secret: secret, deleted: deleted, version: version, updated: updated}
	}
	return nil
}

func (s *store) Replicated() bool { return false }
func (s *store) Cluster() string  { return "" }

// matching lists the objects any of fs selects, ordered by name (then
// kind and schema, which ClickHouse leaves in no particular order).
func (s *store) matching(fs []filter) []key {
	var out []key
	for k := range s.objects {
		for _, f := range fs {
			if f.match(k) {
				out = append(out, k)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.name != b.name {
			return a.name < b.name
		}
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		return a.schema < b.schema
	})
	return out
}

// filter is a condition of catalog.where: a kind, and the schema and name
// when it names them.
type filter struct {
	kind         string
	schema, name *string
}

func (f filter) match(k key) bool {
	return k.kind == f.kind && (f.schema == nil || k.schema == *f.schema) && (f.name == nil || k.name == *f.name)
}

func (f filter) key() key { return key{f.kind, deref(f.schema), deref(f.name)} }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// parseFilter reads a condition catalog.where or ListAll writes,
// "kind = 'k'[ AND schema = 's'[ AND name = 'n']]", from the start of
// text; rest is what follows it.
func parseFilter(text string) (f filter, rest string, ok bool) {
	if f.kind, rest, ok = parseEq(text, "kind = "); !ok {
		return f, text, false
	}
	for _, part := range []struct {
		prefix string
		dst    **string
	}{{" AND schema = ", &f.schema}, {" AND name = ", &f.name}} {
		v, r, ok := parseEq(rest, part.prefix)
		if !ok {
			break
		}
		*part.dst, rest = &v, r
	}
	return f, rest, true
}

// parseEq reads prefix and a string literal as chsql.QuoteString writes
// it from the start of text.
func parseEq(text, prefix string) (value, rest string, ok bool) {
	text, ok = strings.CutPrefix(text, prefix)
	if !ok || !strings.HasPrefix(text, "'") {
		return "", text, false
	}
	var b strings.Builder
	for i := 1; i < len(text); i++ {
		switch c := text[i]; c {
		case '\'':
			return b.String(), text[i+1:], true
		case '\\':
			if i+1 == len(text) {
				return "", text, false
			}
			i++
			switch e := text[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case '0':
				b.WriteByte(0)
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", text, false
}

// cut returns the middle of query when it starts with head and ends with tail.
func cut(query, head, tail string) (string, bool) {
	mid, ok := strings.CutPrefix(query, head)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(mid, tail)
}
