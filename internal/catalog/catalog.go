// Package catalog keeps lakepipe's own objects — storage connections,
// volumes, tables and their properties, pipes, dynamic tables, table streams —
// in ClickHouse tables of the lakepipe database. Each object is a JSON spec
// under (kind, schema, name); secrets live in a column of their own that only
// Secret reads, so no listing can print them.
package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/schemas"
)

// Kind names a kind of catalog object.
type Kind string

const (
	KindConnection   Kind = "connection"
	KindVolume       Kind = "volume"
	KindTable        Kind = "table"
	KindDroppedTable Kind = "dropped_table"
	KindPipe         Kind = "pipe"
	KindDynamicTable Kind = "dynamic_table"
	KindStream       Kind = "table_stream"
	// KindStreamSession is an open streaming-write (Tunnel Stream) session.
	KindStreamSession Kind = "stream_session"
)

// Catalog reads and writes catalog objects; safe for concurrent use.
type Catalog struct {
	st    *chstore.Store
	mu    sync.Mutex
	cache map[string]cached // GetCached's objects, by cacheKey
}

// cached is an object as GetCached last read it.
type cached struct {
	spec    json.RawMessage
	version uint64
}

// maxCached bounds the cache; past it the cache starts over.
const maxCached = 10000

// Open migrates the system tables to the current version and returns the
// catalog. Migrating is idempotent, so every process may call Open.
func Open(ctx context.Context, st *chstore.Store) (*Catalog, error) {
	c := &Catalog{st: st}
	if err := c.migrate(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Store returns the ClickHouse store the catalog lives in.
func (c *Catalog) Store() *chstore.Store { return c.st }

func (c *Catalog) migrate(ctx context.Context) error {
	have := 0
	vals, err := c.st.Strings(ctx, "SELECT argMax(value, version) FROM lakepipe.meta WHERE key = 'schema_version'")
	switch {
	case err == nil && len(vals) == 1 && vals[0] != "":
		have, _ = strconv.Atoi(vals[0])
	case err != nil && !chstore.IsCode(err, chstore.CodeUnknownTable) && !chstore.IsCode(err, chstore.CodeUnknownDatabase):
		return fmt.Errorf("read catalog version: %w", err)
	}
	if have > schemas.Version {
		return fmt.Errorf("the catalog in ClickHouse is version %d, newer than this lakepipe (%d): upgrade lakepipe", have, schemas.Version)
	}
	for _, m := range schemas.Migrations {
		if m.Version <= have {
			continue
		}
		for _, s := range m.Statements {
			if c.st.Replicated() {
				// Every node holds the catalog (see schemas.ForReplicatedCluster).
				s = schemas.ForReplicatedCluster(s, c.st.Cluster())
			}
			if err := c.st.Exec(ctx, s); err != nil {
				return fmt.Errorf("migrate catalog to version %d: %w", m.Version, err)
			}
		}
		// Batches, not INSERT … VALUES: the native protocol sends rows as blocks.
		if err := c.st.InsertRows(ctx, schemas.SystemDB, "meta", []string{"key", "value", "version"},
			[][]any{{"schema_version", strconv.Itoa(m.Version), nextVersion()}}); err != nil {
			return fmt.Errorf("record catalog version %d: %w", m.Version, err)
		}
	}
	return nil
}

var lastVersion atomic.Uint64

// nextVersion orders writes: nanoseconds since the epoch, strictly
// increasing within the process.
func nextVersion() uint64 {
	for {
		now := uint64(time.Now().UnixNano())
		last := lastVersion.Load()
		if now <= last {
			now = last + 1
		}
		if lastVersion.CompareAndSwap(last, now) {
			return now
		}
	}
}

// Object is one catalog entry.
type Object struct {
	Kind    Kind
	Schema  string
	Name    string
	Spec    json.RawMessage
	Updated time.Time
	Version uint64 // of the write that made this spec
}

// Decode unmarshals the spec.
func (o Object) Decode(out any) error {
	if err := json.Unmarshal(o.Spec, out); err != nil {
		return fmt.Errorf("catalog %s %s.%s: %w", o.Kind, o.Schema, o.Name, err)
	}
	return nil
}

func where(kind Kind, schema, name string) string {
	w := "kind = " + chsql.QuoteString(string(kind)) + " AND schema = " + chsql.QuoteString(schema)
	if name != "" {
		w += " AND name = " + chsql.QuoteString(name)
	}
	return w
}

// Get loads one object's spec into out; found is false when there is none.
func (c *Catalog) Get(ctx context.Context, kind Kind, schema, name string, out any) (bool, error) {
	objs, err := c.list(ctx, where(kind, schema, name))
	if err != nil || len(objs) == 0 {
		return false, err
	}
	return true, objs[0].Decode(out)
}

// List returns the live objects of a kind in a schema ("" schema matches
// the global objects: connections and volumes), ordered by name.
func (c *Catalog) List(ctx context.Context, kind Kind, schema string) ([]Object, error) {
	return c.list(ctx, where(kind, schema, ""))
}

// ListAll returns the live objects of a kind in every schema.
func (c *Catalog) ListAll(ctx context.Context, kind Kind) ([]Object, error) {
	return c.list(ctx, "kind = "+chsql.QuoteString(string(kind)))
}

func (c *Catalog) list(ctx context.Context, cond string) ([]Object, error) {
	// argMax instead of FINAL: the same answer on every ClickHouse version,
	// before and after background merges.
	q := "SELECT kind, schema, name, argMax(spec, version), argMax(deleted, version), max(updated_at), max(version) FROM lakepipe.objects WHERE " +
		cond + " GROUP BY kind, schema, name ORDER BY name"
	res, err := c.st.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read catalog: %w", err)
	}
	var out []Object
	for _, r := range res.Rows {
		if r[4].(uint8) != 0 {
			continue
		}
		out = append(out, Object{Kind: Kind(r[0].(string)), Schema: r[1].(string), Name: r[2].(string), Spec: json.RawMessage(r[3].(string)), Updated: r[5].(time.Time), Version: r[6].(uint64)})
	}
	return out, nil
}

// Put writes (creates or replaces) an object. secret is stored apart from
// the spec; pass "" for objects without one.
func (c *Catalog) Put(ctx context.Context, kind Kind, schema, name string, spec any, secret string) error {
	js, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("catalog %s %s: %w", kind, name, err)
	}
	return c.write(ctx, kind, schema, name, string(js), secret, 0)
}

// Delete removes an object (a tombstone row).
func (c *Catalog) Delete(ctx context.Context, kind Kind, schema, name string) error {
	return c.write(ctx, kind, schema, name, "{}", "", 1)
}

func (c *Catalog) write(ctx context.Context, kind Kind, schema, name, spec, secret string, deleted int) error {
	c.Forget(kind, schema, name)
	err := c.st.InsertRows(ctx, schemas.SystemDB, "objects", []string{"kind", "schema", "name", "spec", "secret", "deleted", "version", "updated_at"},
		[][]any{{string(kind), schema, name, spec, secret, uint8(deleted), nextVersion(), time.Now().UTC()}})
	if err != nil {
		// The statement holds the secret: never wrap its text.
		return fmt.Errorf("write catalog %s %s: %w", kind, name, scrubbed(err, secret))
	}
	return nil
}

// Secret returns the secret stored with an object.
func (c *Catalog) Secret(ctx context.Context, kind Kind, schema, name string) (string, error) {
	vals, err := c.st.Strings(ctx, "SELECT argMax(secret, version) FROM lakepipe.objects WHERE "+where(kind, schema, name))
	if err != nil {
		return "", fmt.Errorf("read catalog: %w", err)
	}
	if len(vals) == 0 {
		return "", nil
	}
	return vals[0], nil
}

func scrubbed(err error, secret string) error {
	if secret == "" {
		return err
	}
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), secret, "***"))
}

func cacheKey(kind Kind, schema, name string) string {
	return string(kind) + "\x00" + schema + "\x00" + name
}

// GetCached is Get for reads that run on every statement (table streams):
// the spec may come from this process's cache, written by an earlier
// GetCached or by nobody since. The caller must make the statement that
// uses it hold VersionCheck(kind, schema, name, version), so that a spec
// another process has changed since fails the statement (ClickHouse's
// throwIf, chstore code 395) instead of being used; the caller then calls
// Forget and runs the statement again. Objects not found are not cached.
func (c *Catalog) GetCached(ctx context.Context, kind Kind, schema, name string, out any) (version uint64, found bool, err error) {
	key := cacheKey(kind, schema, name)
	c.mu.Lock()
	hit, ok := c.cache[key]
	c.mu.Unlock()
	if !ok {
		objs, err := c.list(ctx, where(kind, schema, name))
		if err != nil || len(objs) == 0 {
			return 0, false, err
		}
		hit = cached{spec: objs[0].Spec, version: objs[0].Version}
		c.mu.Lock()
		if c.cache == nil || len(c.cache) >= maxCached {
			c.cache = map[string]cached{}
		}
		c.cache[key] = hit
		c.mu.Unlock()
	}
	if err := json.Unmarshal(hit.spec, out); err != nil {
		return 0, false, fmt.Errorf("catalog %s %s.%s: %w", kind, schema, name, err)
	}
	return hit.version, true, nil
}

// Forget drops an object from the cache of GetCached.
func (c *Catalog) Forget(kind Kind, schema, name string) {
	c.mu.Lock()
	delete(c.cache, cacheKey(kind, schema, name))
	c.mu.Unlock()
}

// VersionCheck is a ClickHouse condition that holds while the object is
// still at version and throws (throwIf, code 395) once it is not: changed,
// dropped, or never there. ClickHouse evaluates it once, before reading.
func VersionCheck(kind Kind, schema, name string, version uint64) string {
	return "throwIf((SELECT max(version) FROM lakepipe.objects WHERE " + where(kind, schema, name) + ") != " +
		strconv.FormatUint(version, 10) + ") = 0"
}
