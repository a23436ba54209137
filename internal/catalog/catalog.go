// Package catalog keeps lakepipe's own objects — storage connections,
// volumes, tables and their properties, pipes, dynamic tables, table streams —
// in ClickHouse tables of the lakepipe database. Each object is a JSON spec
// under (kind, schema, name); secrets live in a column of their own that only
// Secret reads, so no listing can print them, sealed (internal/seal) with
// the object's kind, schema and name as additional data.
package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/seal"
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
	st        Backend        // every statement goes through st
	chst      *chstore.Store // what Store returns (nil over a test's fake)
	sealer    *seal.Sealer
	sealerSet bool
	mu        sync.Mutex
	cache     map[string]cached // GetCached's objects, by cacheKey
}

// Backend is what a catalog keeps its objects in: the part of
// *chstore.Store it uses. Open keeps them in ClickHouse; OpenBackend
// takes any other, such as the in-memory one of package catalogtest,
// which lets tests run without a server.
type Backend interface {
	Exec(ctx context.Context, query string, args ...any) error
	Query(ctx context.Context, query string, args ...any) (*chstore.Result, error)
	Strings(ctx context.Context, query string, args ...any) ([]string, error)
	InsertRows(ctx context.Context, db, table string, cols []string, rows [][]any) error
	Replicated() bool
	Cluster() string
}

var _ Backend = (*chstore.Store)(nil)

// cached is an object as GetCached last read it.
type cached struct {
	spec    json.RawMessage
	version uint64
}

// maxCached bounds the cache; past it the cache starts over.
const maxCached = 10000

// Option configures Open.
type Option func(*Catalog)

// WithSealer makes the catalog seal secrets with s (see Put and Secret).
// A nil s refuses to store secrets and reads only plaintext ones.
func WithSealer(s *seal.Sealer) Option {
	return func(c *Catalog) { c.sealer = s; c.sealerSet = true }
}

// Open migrates the system tables to the current version and returns the
// catalog. Migrating is idempotent, so every process may call Open.
// Without WithSealer the catalog seals secrets as the process environment
// says (seal.FromEnv: LAKEPIPE_SECRET_KEY, LAKEPIPE_SECRET_KEY_FILE,
// LAKEPIPE_SECRET_OLD_KEYS, LAKEPIPE_SECRET_PLAINTEXT), and fails to open
// when those settings are malformed.
func Open(ctx context.Context, st *chstore.Store, opts ...Option) (*Catalog, error) {
	return open(ctx, st, st, opts...)
}

// OpenBackend is Open over another backend than a ClickHouse store (for
// tests: see package catalogtest): it migrates the backend's system tables
// as Open does, and Store returns nil for the catalog it returns.
func OpenBackend(ctx context.Context, b Backend, opts ...Option) (*Catalog, error) {
	return open(ctx, b, nil, opts...)
}

// open is Open over any backend; chst is what Store returns.
func open(ctx context.Context, st Backend, chst *chstore.Store, opts ...Option) (*Catalog, error) {
	c := &Catalog{st: st, chst: chst}
	for _, o := range opts {
		o(c)
	}
	if !c.sealerSet {
		s, err := seal.FromEnv(os.Getenv)
		if err != nil {
			return nil, err
		}
		c.sealer = s
	}
	if err := c.migrate(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Store returns the ClickHouse store the catalog lives in.
func (c *Catalog) Store() *chstore.Store { return c.chst }

// Sealer returns the sealer of the catalog's secrets (nil: none).
func (c *Catalog) Sealer() *seal.Sealer { return c.sealer }

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
			if err := c.st.Exec(ctx, s); err != nil && !addedBefore(s, err) {
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

// addedBefore reports whether err says that the column an ALTER TABLE …
// ADD COLUMN adds is there already: the statement ran before (ClickHouse
// 18.16 has no ADD COLUMN IF NOT EXISTS, which current releases have).
func addedBefore(stmt string, err error) bool {
	return strings.Contains(stmt, " ADD COLUMN ") && chstore.IsCode(err, chstore.CodeIllegalColumn) &&
		strings.Contains(err.Error(), "already exists")
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
// the spec, sealed by the catalog's sealer; pass "" for objects without
// one. A secret without a key to seal it with is refused (seal.ErrNoKey)
// unless plaintext storage was chosen. Replacing a connection or a pipe
// whose older rows hold a secret removes those rows (see write).
func (c *Catalog) Put(ctx context.Context, kind Kind, schema, name string, spec any, secret string) error {
	js, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("catalog %s %s: %w", kind, name, err)
	}
	stored, err := c.sealer.Seal(secret, secretAAD(kind, schema, name))
	if err != nil {
		return fmt.Errorf("catalog %s %s: store its secret: %w", kind, name, err)
	}
	return c.write(ctx, kind, schema, name, string(js), stored, 0, secret)
}

// Delete removes an object (a tombstone row); for a connection or a pipe,
// its older rows holding a secret too.
func (c *Catalog) Delete(ctx context.Context, kind Kind, schema, name string) error {
	return c.write(ctx, kind, schema, name, "{}", "", 1, "")
}

// secretKinds are the kinds whose objects may hold a secret.
var secretKinds = map[Kind]bool{KindConnection: true, KindPipe: true}

// write inserts a row of the object; plain is its secret before sealing,
// scrubbed from errors. For kinds that may hold a secret it then removes
// the object's older rows when any of them holds one, so that a DROP or a
// REPLACE leaves no old secret in ClickHouse once the mutation has run.
func (c *Catalog) write(ctx context.Context, kind Kind, schema, name, spec, stored string, deleted int, plain string) error {
	return c.writeAt(ctx, kind, schema, name, spec, stored, deleted, plain, time.Now().UTC())
}

func (c *Catalog) writeAt(ctx context.Context, kind Kind, schema, name, spec, stored string, deleted int, plain string, updated time.Time) error {
	c.Forget(kind, schema, name)
	version := nextVersion()
	err := c.st.InsertRows(ctx, schemas.SystemDB, "objects", []string{"kind", "schema", "name", "spec", "secret", "deleted", "version", "updated_at"},
		[][]any{{string(kind), schema, name, spec, stored, uint8(deleted), version, updated}})
	if err != nil {
		// The statement holds the secret: never wrap its text.
		return fmt.Errorf("write catalog %s %s: %w", kind, name, scrubbed(scrubbed(err, stored), plain))
	}
	if secretKinds[kind] {
		if err := c.removeOlderSecrets(ctx, kind, schema, name, version); err != nil {
			return fmt.Errorf("write catalog %s %s: remove the secrets of its earlier versions: %w", kind, name, err)
		}
	}
	return nil
}

// removeOlderSecrets deletes an object's rows older than version when one
// of them holds a secret (the common case, a write of an object that never
// had one, costs one small query and no mutation). ALTER … DELETE is a
// mutation: ClickHouse rewrites the parts holding those rows in the
// background, so the old values leave the disk once it has run and the
// parts it replaced are cleaned up. ClickHouse 18.16 has no mutations_sync
// setting, hence no waiting here; on a replicated catalog the mutation
// replicates through the table's ZooKeeper path, so no ON CLUSTER.
func (c *Catalog) removeOlderSecrets(ctx context.Context, kind Kind, schema, name string, version uint64) error {
	cond := where(kind, schema, name) + " AND version < " + strconv.FormatUint(version, 10)
	n, err := c.st.Strings(ctx, "SELECT toString(count()) FROM lakepipe.objects WHERE "+cond+" AND secret != ''")
	if err != nil {
		return err
	}
	if len(n) == 0 || n[0] == "0" {
		return nil
	}
	return c.st.Exec(ctx, "ALTER TABLE lakepipe.objects DELETE WHERE "+cond)
}

// secretAAD binds a sealed secret to its object.
func secretAAD(kind Kind, schema, name string) []byte {
	return []byte(string(kind) + "\x00" + schema + "\x00" + name)
}

// Secret returns the secret stored with an object, opened by the
// catalog's sealer: a secret stored before sealing existed (plaintext) is
// returned as it is; one sealed with a key the sealer lacks fails with an
// error naming that key's id.
func (c *Catalog) Secret(ctx context.Context, kind Kind, schema, name string) (string, error) {
	vals, err := c.st.Strings(ctx, "SELECT argMax(secret, version) FROM lakepipe.objects WHERE "+where(kind, schema, name))
	if err != nil {
		return "", fmt.Errorf("read catalog: %w", err)
	}
	if len(vals) == 0 {
		return "", nil
	}
	secret, err := c.sealer.Open(vals[0], secretAAD(kind, schema, name))
	if err != nil {
		return "", fmt.Errorf("catalog %s %s: %w", kind, name, err)
	}
	return secret, nil
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

// Ref names one catalog object.
type Ref struct {
	Kind         Kind
	Schema, Name string
}

// Versions returns the version of each object's last write (a drop is a
// write too), 0 for one never written, in one query: what a caller that
// kept something built from these objects checks before using it again.
func (c *Catalog) Versions(ctx context.Context, refs []Ref) ([]uint64, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	conds := make([]string, len(refs))
	for i, r := range refs {
		conds[i] = "(" + where(r.Kind, r.Schema, r.Name) + ")"
	}
	res, err := c.st.Query(ctx, "SELECT kind, schema, name, max(version) FROM lakepipe.objects WHERE "+strings.Join(conds, " OR ")+" GROUP BY kind, schema, name")
	if err != nil {
		return nil, fmt.Errorf("catalog: read versions: %w", err)
	}
	found := make(map[Ref]uint64, len(res.Rows))
	for _, row := range res.Rows {
		k, _ := row[0].(string)
		s, _ := row[1].(string)
		n, _ := row[2].(string)
		v, _ := row[3].(uint64)
		found[Ref{Kind(k), s, n}] = v
	}
	out := make([]uint64, len(refs))
	for i, r := range refs {
		out[i] = found[r]
	}
	return out, nil
}
