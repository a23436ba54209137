package catalog

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/seal"
	"github.com/lakepipe/lakepipe/schemas"
)

// call is one request the catalog made of its store.
type call struct {
	method string // Exec, Query, Strings or InsertRows
	query  string // the SQL; for InsertRows, "db.table (col, …)"
	args   []any  // the statement's arguments; for InsertRows, the rows
}

// answer is a canned result for the queries that start with prefix.
type answer struct {
	prefix string
	res    *chstore.Result
	err    error
}

// fakeStore stands in for *chstore.Store: it records every call and
// answers queries from canned results chosen by the query's prefix. It does
// not interpret SQL, so tests assert on the statements the catalog sends
// and feed it the rows ClickHouse would have returned.
type fakeStore struct {
	mu         sync.Mutex
	calls      []call
	answers    []answer // the longest matching prefix wins; no match is an empty result
	insertErr  func(rows [][]any) error
	execErr    error
	replicated bool
	cluster    string
}

var _ Backend = (*fakeStore)(nil)

// on makes queries starting with prefix return rows (or err), unless a
// longer prefix matches too; a later on for the same prefix replaces the
// earlier one.
func (f *fakeStore) on(prefix string, err error, rows ...[]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := answer{prefix: prefix, res: &chstore.Result{Rows: rows}, err: err}
	for i := range f.answers {
		if f.answers[i].prefix == prefix {
			f.answers[i] = a
			return
		}
	}
	f.answers = append(f.answers, a)
}

func (f *fakeStore) record(c call) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
}

func (f *fakeStore) lookup(query string) (*chstore.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var best *answer
	for i, a := range f.answers {
		if strings.HasPrefix(query, a.prefix) && (best == nil || len(a.prefix) > len(best.prefix)) {
			best = &f.answers[i]
		}
	}
	switch {
	case best == nil:
		return &chstore.Result{}, nil
	case best.err != nil:
		return nil, best.err
	}
	return &chstore.Result{Rows: append([][]any(nil), best.res.Rows...)}, nil
}

func (f *fakeStore) Exec(_ context.Context, query string, args ...any) error {
	f.record(call{method: "Exec", query: query, args: args})
	return f.execErr
}

func (f *fakeStore) Query(_ context.Context, query string, args ...any) (*chstore.Result, error) {
	f.record(call{method: "Query", query: query, args: args})
	return f.lookup(query)
}

// Strings returns the first column as text, as chstore.Store.Strings does.
func (f *fakeStore) Strings(_ context.Context, query string, args ...any) ([]string, error) {
	f.record(call{method: "Strings", query: query, args: args})
	res, err := f.lookup(query)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range res.Rows {
		out = append(out, fmt.Sprint(r[0]))
	}
	return out, nil
}

func (f *fakeStore) InsertRows(_ context.Context, db, table string, cols []string, rows [][]any) error {
	var args []any
	for _, r := range rows {
		args = append(args, append([]any(nil), r...))
	}
	f.record(call{method: "InsertRows", query: db + "." + table + " (" + strings.Join(cols, ", ") + ")", args: args})
	if f.insertErr != nil {
		return f.insertErr(rows)
	}
	return nil
}

func (f *fakeStore) Replicated() bool { return f.replicated }
func (f *fakeStore) Cluster() string  { return f.cluster }

// take returns the calls recorded so far and forgets them.
func (f *fakeStore) take() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// objectsColumns are the columns writeAt inserts into lakepipe.objects.
const objectsColumns = "lakepipe.objects (kind, schema, name, spec, secret, deleted, version, updated_at)"

// objectRow is one row InsertRows sent to lakepipe.objects.
type objectRow struct {
	kind, schema, name, spec, secret string
	deleted                          uint8
	version                          uint64
	updated                          time.Time
}

// insertedObjects returns the rows of the calls that wrote lakepipe.objects.
func insertedObjects(t *testing.T, calls []call) []objectRow {
	t.Helper()
	var out []objectRow
	for _, c := range calls {
		if c.method != "InsertRows" || c.query != objectsColumns {
			continue
		}
		for _, a := range c.args {
			r := a.([]any)
			out = append(out, objectRow{
				kind: r[0].(string), schema: r[1].(string), name: r[2].(string),
				spec: r[3].(string), secret: r[4].(string), deleted: r[5].(uint8),
				version: r[6].(uint64), updated: r[7].(time.Time),
			})
		}
	}
	return out
}

// queries returns the SQL of the calls of one method, in order.
func queries(calls []call, method string) []string {
	var out []string
	for _, c := range calls {
		if c.method == method {
			out = append(out, c.query)
		}
	}
	return out
}

// assertNoSecret fails if secret appears in clear in any statement or
// argument the store was sent.
func assertNoSecret(t *testing.T, calls []call, secret string) {
	t.Helper()
	for _, c := range calls {
		if strings.Contains(c.query, secret) || strings.Contains(fmt.Sprintf("%#v", c.args), secret) {
			t.Errorf("%s sent the secret in clear: %s %#v", c.method, c.query, c.args)
		}
	}
}

// metaVersion is the query migrate reads the catalog's version with.
const metaVersion = "SELECT argMax(value, version) FROM lakepipe.meta WHERE key = 'schema_version'"

// listPrefix starts every query of list (Get, List, GetCached).
const listPrefix = "SELECT kind, schema, name, argMax(spec, version), argMax(deleted, version), max(updated_at), max(version) FROM lakepipe.objects WHERE "

// testKey returns a fixed master key, so that failures reproduce.
func testKey(t *testing.T, fill byte) *seal.Key {
	t.Helper()
	material := make([]byte, seal.KeySize)
	for i := range material {
		material[i] = fill
	}
	k, err := seal.NewKey(material)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// openFake opens a catalog over f, already at the current schema version,
// and clears the calls Open made.
func openFake(t *testing.T, f *fakeStore, opts ...Option) *Catalog {
	t.Helper()
	f.on(metaVersion, nil, []any{fmt.Sprint(schemas.Version)})
	c, err := open(context.Background(), f, nil, opts...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	f.take()
	return c
}

// listRow is a row of list's query as ClickHouse returns it.
func listRow(kind Kind, schema, name, spec string, deleted uint8, version uint64) []any {
	return []any{string(kind), schema, name, spec, deleted, time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), version}
}
