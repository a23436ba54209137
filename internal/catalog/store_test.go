package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/seal"
	"github.com/lakepipe/lakepipe/schemas"
)

// allMigrations returns the statements of the migrations after version
// have, in the order Open must run them, and those versions.
func allMigrations(have int, cluster string) (stmts []string, versions []string) {
	for _, m := range schemas.Migrations {
		if m.Version <= have {
			continue
		}
		for _, s := range m.Statements {
			if cluster != "" {
				s = schemas.ForReplicatedCluster(s, cluster)
			}
			stmts = append(stmts, s)
		}
		versions = append(versions, strconv.Itoa(m.Version))
	}
	return stmts, versions
}

func TestOpenMigrates(t *testing.T) {
	tests := []struct {
		name       string
		version    []any // the answer to the version query; nil for none
		versionErr error
		replicated bool
		execErr    error
		have       int    // the migrations after have must run
		wantErr    string // substring; "" for success
	}{
		{name: "no catalog database yet", versionErr: &chstore.Exception{Code: chstore.CodeUnknownDatabase, Msg: "Database lakepipe doesn't exist"}},
		{name: "no meta table yet", versionErr: &chstore.Exception{Code: chstore.CodeUnknownTable, Msg: "Table lakepipe.meta doesn't exist"}},
		{name: "meta table empty", version: []any{""}},
		{name: "at version 1", version: []any{"1"}, have: 1},
		{name: "current", version: []any{strconv.Itoa(schemas.Version)}, have: schemas.Version},
		{name: "replicated", versionErr: &chstore.Exception{Code: chstore.CodeUnknownDatabase}, replicated: true},
		{name: "newer than this release", version: []any{strconv.Itoa(schemas.Version + 1)},
			wantErr: fmt.Sprintf("the catalog in ClickHouse is version %d, newer than this lakepipe (%d)", schemas.Version+1, schemas.Version)},
		{name: "version unreadable", versionErr: &chstore.Exception{Code: 241, Msg: "Memory limit exceeded"},
			wantErr: "read catalog version: ClickHouse error 241: Memory limit exceeded"},
		{name: "migration fails", versionErr: &chstore.Exception{Code: chstore.CodeUnknownTable}, execErr: errors.New("disk full"),
			wantErr: "migrate catalog to version 1: disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeStore{execErr: tt.execErr, replicated: tt.replicated}
			if tt.replicated {
				f.cluster = "lp_cluster"
			}
			if tt.version != nil {
				f.on(metaVersion, nil, tt.version)
			} else {
				f.on(metaVersion, tt.versionErr)
			}
			_, err := open(context.Background(), f, nil, WithSealer(nil))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			calls := f.take()
			wantStmts, wantVersions := allMigrations(tt.have, f.cluster)
			if got := queries(calls, "Exec"); !reflect.DeepEqual(got, wantStmts) {
				t.Errorf("statements:\n got %q\nwant %q", got, wantStmts)
			}
			var gotVersions []string
			for _, c := range calls {
				if c.method != "InsertRows" {
					continue
				}
				if c.query != "lakepipe.meta (key, value, version)" {
					t.Errorf("insert into %s", c.query)
					continue
				}
				row := c.args[0].([]any)
				if row[0] != "schema_version" {
					t.Errorf("meta key %v", row[0])
				}
				gotVersions = append(gotVersions, row[1].(string))
			}
			if !reflect.DeepEqual(gotVersions, wantVersions) {
				t.Errorf("recorded versions %q, want %q", gotVersions, wantVersions)
			}
		})
	}
}

// TestOpenReadsSealerFromEnv checks that Open without WithSealer fails on
// malformed secret settings rather than storing secrets unsealed.
func TestOpenReadsSealerFromEnv(t *testing.T) {
	t.Setenv(seal.EnvKey, "not base64!")
	t.Setenv(seal.EnvKeyFile, "")
	f := &fakeStore{}
	f.on(metaVersion, nil, []any{strconv.Itoa(schemas.Version)})
	if _, err := open(context.Background(), f, nil); err == nil || !strings.Contains(err.Error(), seal.EnvKey) {
		t.Fatalf("err = %v, want one naming %s", err, seal.EnvKey)
	}
	if calls := f.take(); len(calls) != 0 {
		t.Errorf("Open went to ClickHouse before checking its settings: %v", calls)
	}
}

// TestPutSealsSecret checks the one promise about secrets the catalog
// makes to ClickHouse: a secret reaches it only sealed, bound to its
// object, and Secret gives it back.
func TestPutSealsSecret(t *testing.T) {
	secrets := []string{
		"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		`it's a "secret" with \backslashes\ and 'quotes'`,
		"пароль 🔑 with unicode",
		"x", // a one-letter secret is still sealed, not searched for
	}
	key := testKey(t, 7)
	for _, secret := range secrets {
		t.Run(secret, func(t *testing.T) {
			ctx := context.Background()
			f := &fakeStore{}
			c := openFake(t, f, WithSealer(seal.New(key)))
			spec := ConnectionSpec{Type: "S3", Endpoint: "http://minio:9000", AccessID: "AKIA"}
			if err := c.Put(ctx, KindConnection, "", "s3conn", spec, secret); err != nil {
				t.Fatal(err)
			}
			calls := f.take()
			if len(secret) > 1 {
				assertNoSecret(t, calls, secret)
			}
			rows := insertedObjects(t, calls)
			if len(rows) != 1 {
				t.Fatalf("inserted %d rows, want 1: %v", len(rows), calls)
			}
			r := rows[0]
			wantSpec, _ := json.Marshal(spec)
			if r.kind != "connection" || r.schema != "" || r.name != "s3conn" || r.spec != string(wantSpec) || r.deleted != 0 {
				t.Errorf("row = %+v", r)
			}
			if id, ok := seal.StoredKeyID(r.secret); !ok || id != key.ID() {
				t.Fatalf("stored secret %q is not sealed with key %s", r.secret, key.ID())
			}
			// The stored value opens only as this object's secret.
			if _, err := seal.New(key).Open(r.secret, secretAAD(KindConnection, "", "other")); err == nil {
				t.Error("the sealed secret opens as another connection's")
			}

			// Secret reads the latest stored value and opens it.
			f.on("SELECT argMax(secret, version) FROM lakepipe.objects WHERE ", nil, []any{r.secret})
			got, err := c.Secret(ctx, KindConnection, "", "s3conn")
			if err != nil {
				t.Fatal(err)
			}
			if got != secret {
				t.Errorf("Secret = %q, want %q", got, secret)
			}
			if q := queries(f.take(), "Strings"); len(q) != 1 || q[0] != "SELECT argMax(secret, version) FROM lakepipe.objects WHERE kind = 'connection' AND schema = '' AND name = 's3conn'" {
				t.Errorf("Secret queried %q", q)
			}
		})
	}
}

func TestPutBySealer(t *testing.T) {
	const secret = "s3cr3t-value"
	key := testKey(t, 1)
	tests := []struct {
		name       string
		sealer     *seal.Sealer
		secret     string
		wantErr    error
		wantStored func(string) bool
	}{
		{"sealed", seal.New(key), secret, nil, func(s string) bool { id, _ := seal.StoredKeyID(s); return id == key.ID() }},
		{"no key refuses", nil, secret, seal.ErrNoKey, nil},
		{"open-only sealer refuses", seal.New(nil, key), secret, seal.ErrNoKey, nil},
		{"plaintext by choice", seal.Plaintext(), secret, nil, func(s string) bool { return s == secret }},
		{"no secret needs no key", nil, "", nil, func(s string) bool { return s == "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeStore{}
			c := openFake(t, f, WithSealer(tt.sealer))
			err := c.Put(context.Background(), KindPipe, "public", "p", PipeSpec{Kind: "KAFKA"}, tt.secret)
			calls := f.take()
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows the secret: %v", err)
				}
				if len(calls) != 0 {
					t.Errorf("a refused Put still went to ClickHouse: %v", calls)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rows := insertedObjects(t, calls)
			if len(rows) != 1 || !tt.wantStored(rows[0].secret) {
				t.Fatalf("stored rows %+v", rows)
			}
		})
	}
}

// TestWriteRemovesOlderSecrets checks the clean-up after writes of kinds
// that hold secrets: older rows go only when one of them holds a secret,
// and only rows older than the write.
func TestWriteRemovesOlderSecrets(t *testing.T) {
	tests := []struct {
		name       string
		kind       Kind
		del        bool
		olderCount string // answer to the count of older rows with a secret
		wantCount  bool
		wantDelete bool
	}{
		{"connection with old secrets", KindConnection, false, "2", true, true},
		{"connection without", KindConnection, false, "0", true, false},
		{"pipe dropped", KindPipe, true, "1", true, true},
		{"table never checks", KindTable, false, "5", false, false},
		{"volume dropped never checks", KindVolume, true, "5", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			f := &fakeStore{}
			c := openFake(t, f, WithSealer(seal.Plaintext()))
			f.on("SELECT toString(count()) FROM lakepipe.objects WHERE ", nil, []any{tt.olderCount})
			var err error
			if tt.del {
				err = c.Delete(ctx, tt.kind, "s", "o'brien")
			} else {
				err = c.Put(ctx, tt.kind, "s", "o'brien", map[string]int{"a": 1}, "")
			}
			if err != nil {
				t.Fatal(err)
			}
			calls := f.take()
			rows := insertedObjects(t, calls)
			if len(rows) != 1 {
				t.Fatalf("rows %+v", rows)
			}
			if tt.del && (rows[0].deleted != 1 || rows[0].spec != "{}" || rows[0].secret != "") {
				t.Errorf("tombstone %+v", rows[0])
			}
			cond := `kind = '` + string(tt.kind) + `' AND schema = 's' AND name = 'o\'brien' AND version < ` + strconv.FormatUint(rows[0].version, 10)
			var want []call
			if tt.wantCount {
				want = append(want, call{method: "Strings", query: "SELECT toString(count()) FROM lakepipe.objects WHERE " + cond + " AND secret != ''"})
			}
			if tt.wantDelete {
				want = append(want, call{method: "Exec", query: "ALTER TABLE lakepipe.objects DELETE WHERE " + cond})
			}
			var got []call
			for _, c := range calls {
				if c.method != "InsertRows" {
					got = append(got, c)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("after the insert\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestWriteErrorsHideSecret checks that a failed insert, whose error may
// quote the values it was sent, reports neither the secret nor its sealed
// form.
func TestWriteErrorsHideSecret(t *testing.T) {
	const secret = "AKIAIOSFODNN7EXAMPLE/secret"
	for _, sealer := range []*seal.Sealer{seal.New(testKey(t, 3)), seal.Plaintext()} {
		f := &fakeStore{insertErr: func(rows [][]any) error {
			return &chstore.Exception{Code: 27, Msg: fmt.Sprintf("Cannot parse row %v", rows)}
		}}
		c := openFake(t, f, WithSealer(sealer))
		err := c.Put(context.Background(), KindConnection, "", "c1", ConnectionSpec{Type: "S3"}, secret)
		if err == nil {
			t.Fatal("Put succeeded")
		}
		rows := insertedObjects(t, f.take())
		if len(rows) != 1 {
			t.Fatalf("rows %+v", rows)
		}
		for _, hidden := range []string{secret, rows[0].secret} {
			if strings.Contains(err.Error(), hidden) {
				t.Errorf("error shows %q: %v", hidden, err)
			}
		}
		if !strings.HasPrefix(err.Error(), "write catalog connection c1: ClickHouse error 27: Cannot parse row") {
			t.Errorf("error = %v", err)
		}
	}
}

func TestSecret(t *testing.T) {
	key, old := testKey(t, 5), testKey(t, 6)
	sealFor := func(k *seal.Key, kind Kind, schema, name, secret string) string {
		s, err := seal.New(k).Seal(secret, secretAAD(kind, schema, name))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name    string
		stored  []any // the query's rows; nil for none
		readErr error
		want    string
		wantErr string
	}{
		{name: "sealed", stored: []any{sealFor(key, KindPipe, "s", "p", "pw")}, want: "pw"},
		{name: "sealed with an old key", stored: []any{sealFor(old, KindPipe, "s", "p", "pw")}, want: "pw"},
		{name: "plaintext from before sealing", stored: []any{"legacy-pw"}, want: "legacy-pw"},
		{name: "no secret", stored: []any{""}, want: ""},
		{name: "no row", want: ""},
		{name: "another object's", stored: []any{sealFor(key, KindPipe, "s", "q", "pw")},
			wantErr: "catalog pipe p: secret sealed with key " + key.ID() + " does not open"},
		{name: "unknown key", stored: []any{sealFor(testKey(t, 9), KindPipe, "s", "p", "pw")},
			wantErr: "which is not configured"},
		{name: "read fails", readErr: errors.New("connection refused"), wantErr: "read catalog: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeStore{}
			c := openFake(t, f, WithSealer(seal.New(key, old)))
			if tt.stored != nil {
				f.on("SELECT argMax(secret, version)", nil, tt.stored)
			} else {
				f.on("SELECT argMax(secret, version)", tt.readErr)
			}
			got, err := c.Secret(context.Background(), KindPipe, "s", "p")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "pw") {
					t.Errorf("error shows the secret: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Secret = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestGetAndList(t *testing.T) {
	ctx := context.Background()
	f := &fakeStore{}
	c := openFake(t, f, WithSealer(nil))
	f.on(listPrefix, nil,
		listRow(KindTable, "s", "a", `{"comment":"first"}`, 0, 10),
		listRow(KindTable, "s", "gone", `{}`, 1, 11), // dropped: its last row is a tombstone
		listRow(KindTable, "s", "c", `{"comment":"third"}`, 0, 12),
	)
	objs, err := c.List(ctx, KindTable, "s")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.Name)
	}
	if !reflect.DeepEqual(names, []string{"a", "c"}) || objs[1].Version != 12 || objs[1].Kind != KindTable || objs[1].Updated.IsZero() {
		t.Errorf("List = %+v", objs)
	}
	if _, err := c.ListAll(ctx, KindTable); err != nil {
		t.Fatal(err)
	}
	var spec TableSpec
	found, err := c.Get(ctx, KindTable, "s", "a", &spec)
	if err != nil || !found || spec.Comment != "first" {
		t.Errorf("Get = %v, %v, %+v", found, err, spec)
	}
	want := []string{
		listPrefix + "kind = 'table' AND schema = 's' GROUP BY kind, schema, name ORDER BY name",
		listPrefix + "kind = 'table' GROUP BY kind, schema, name ORDER BY name",
		listPrefix + "kind = 'table' AND schema = 's' AND name = 'a' GROUP BY kind, schema, name ORDER BY name",
	}
	if got := queries(f.take(), "Query"); !reflect.DeepEqual(got, want) {
		t.Errorf("queries\n got %q\nwant %q", got, want)
	}

	f.on(listPrefix, nil, listRow(KindTable, "s", "gone", `{}`, 1, 11))
	if found, err := c.Get(ctx, KindTable, "s", "gone", &spec); found || err != nil {
		t.Errorf("Get of a dropped table = %v, %v", found, err)
	}
	f.on(listPrefix, errors.New("timeout"))
	if _, err := c.List(ctx, KindTable, "s"); err == nil || err.Error() != "read catalog: timeout" {
		t.Errorf("List error = %v", err)
	}
}

// TestGetCached checks what GetCached documents: one query per object
// until Forget (or a write through this catalog), nothing cached for
// objects not found, and errors not cached either.
func TestGetCached(t *testing.T) {
	ctx := context.Background()
	type step struct {
		op        string // get, forget, put, answer, answerErr, answerNone
		name      string
		version   uint64 // get: want; answer: rows' version
		spec      string // answer: the spec; get: want Comment
		wantQuery bool   // get: whether it went to ClickHouse
		wantFound bool
		wantErr   string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"read once, then from the cache", []step{
			{op: "answer", name: "s1", version: 5, spec: `{"comment":"v5"}`},
			{op: "get", name: "s1", version: 5, spec: "v5", wantQuery: true, wantFound: true},
			{op: "answer", name: "s1", version: 6, spec: `{"comment":"v6"}`},
			{op: "get", name: "s1", version: 5, spec: "v5", wantFound: true},
			{op: "get", name: "s1", version: 5, spec: "v5", wantFound: true},
		}},
		{"forget reads again", []step{
			{op: "answer", name: "s1", version: 5, spec: `{"comment":"v5"}`},
			{op: "get", name: "s1", version: 5, spec: "v5", wantQuery: true, wantFound: true},
			{op: "answer", name: "s1", version: 6, spec: `{"comment":"v6"}`},
			{op: "forget", name: "s1"},
			{op: "get", name: "s1", version: 6, spec: "v6", wantQuery: true, wantFound: true},
		}},
		{"forget of another object keeps this one", []step{
			{op: "answer", name: "s1", version: 5, spec: `{"comment":"v5"}`},
			{op: "get", name: "s1", version: 5, spec: "v5", wantQuery: true, wantFound: true},
			{op: "forget", name: "s2"},
			{op: "get", name: "s1", version: 5, spec: "v5", wantFound: true},
		}},
		{"a write through the catalog forgets", []step{
			{op: "answer", name: "s1", version: 5, spec: `{"comment":"v5"}`},
			{op: "get", name: "s1", version: 5, spec: "v5", wantQuery: true, wantFound: true},
			{op: "put", name: "s1"},
			{op: "answer", name: "s1", version: 7, spec: `{"comment":"v7"}`},
			{op: "get", name: "s1", version: 7, spec: "v7", wantQuery: true, wantFound: true},
		}},
		{"objects are cached apart", []step{
			{op: "answer", name: "s1", version: 5, spec: `{"comment":"v5"}`},
			{op: "get", name: "s1", version: 5, spec: "v5", wantQuery: true, wantFound: true},
			{op: "answer", name: "s2", version: 8, spec: `{"comment":"v8"}`},
			{op: "get", name: "s2", version: 8, spec: "v8", wantQuery: true, wantFound: true},
			{op: "get", name: "s1", version: 5, spec: "v5", wantFound: true},
		}},
		{"not found is not cached", []step{
			{op: "answerNone"},
			{op: "get", name: "s1", wantQuery: true},
			{op: "answer", name: "s1", version: 9, spec: `{"comment":"v9"}`},
			{op: "get", name: "s1", version: 9, spec: "v9", wantQuery: true, wantFound: true},
		}},
		{"dropped is not found", []step{
			{op: "answer", name: "s1", version: 9, spec: `deleted`},
			{op: "get", name: "s1", wantQuery: true},
		}},
		{"errors are not cached", []step{
			{op: "answerErr"},
			{op: "get", name: "s1", wantQuery: true, wantErr: "read catalog: unavailable"},
			{op: "answer", name: "s1", version: 9, spec: `{"comment":"v9"}`},
			{op: "get", name: "s1", version: 9, spec: "v9", wantQuery: true, wantFound: true},
		}},
		{"a spec that does not decode", []step{
			{op: "answer", name: "s1", version: 9, spec: `{"comment":1}`},
			{op: "get", name: "s1", wantQuery: true, wantErr: "catalog table_stream public.s1: json: cannot unmarshal number"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeStore{}
			c := openFake(t, f, WithSealer(nil))
			for i, s := range tt.steps {
				switch s.op {
				case "answer":
					deleted := uint8(0)
					if s.spec == "deleted" {
						deleted, s.spec = 1, "{}"
					}
					f.on(listPrefix, nil, listRow(KindStream, "public", s.name, s.spec, deleted, s.version))
				case "answerNone":
					f.on(listPrefix, nil)
				case "answerErr":
					f.on(listPrefix, errors.New("unavailable"))
				case "forget":
					c.Forget(KindStream, "public", s.name)
				case "put":
					if err := c.Put(ctx, KindStream, "public", s.name, StreamSpec{}, ""); err != nil {
						t.Fatal(err)
					}
					f.take()
				case "get":
					var spec StreamSpec
					v, found, err := c.GetCached(ctx, KindStream, "public", s.name, &spec)
					q := queries(f.take(), "Query")
					if s.wantErr != "" {
						if err == nil || !strings.Contains(err.Error(), s.wantErr) {
							t.Fatalf("step %d: err = %v, want it to contain %q", i, err, s.wantErr)
						}
					} else if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					if found != s.wantFound || v != s.version || (found && spec.Comment != s.spec) {
						t.Errorf("step %d: GetCached = %d, %v, %+v; want %d, %v, comment %q", i, v, found, spec, s.version, s.wantFound, s.spec)
					}
					if (len(q) > 0) != s.wantQuery {
						t.Errorf("step %d: queries %q, want a query: %v", i, q, s.wantQuery)
					}
					if len(q) > 0 && !strings.Contains(q[0], "kind = 'table_stream' AND schema = 'public' AND name = '"+s.name+"'") {
						t.Errorf("step %d: query %s", i, q[0])
					}
				}
			}
		})
	}
}

// TestGetCachedBound checks that the cache starts over once full rather
// than growing without end.
func TestGetCachedBound(t *testing.T) {
	f := &fakeStore{}
	c := openFake(t, f, WithSealer(nil))
	c.cache = map[string]cached{}
	for i := 0; i < maxCached; i++ {
		c.cache[cacheKey(KindStream, "s", strconv.Itoa(i))] = cached{spec: json.RawMessage(`{}`), version: 1}
	}
	f.on(listPrefix, nil, listRow(KindStream, "s", "new", `{}`, 0, 2))
	var spec StreamSpec
	if _, _, err := c.GetCached(context.Background(), KindStream, "s", "new", &spec); err != nil {
		t.Fatal(err)
	}
	if len(c.cache) != 1 {
		t.Errorf("cache holds %d objects after filling up, want 1", len(c.cache))
	}
}

func TestVersions(t *testing.T) {
	const versionsPrefix = "SELECT kind, schema, name, max(version) FROM lakepipe.objects WHERE "
	ctx := context.Background()
	f := &fakeStore{}
	c := openFake(t, f, WithSealer(nil))

	if v, err := c.Versions(ctx, nil); v != nil || err != nil {
		t.Errorf("Versions(nil) = %v, %v", v, err)
	}
	if calls := f.take(); len(calls) != 0 {
		t.Errorf("Versions(nil) queried: %v", calls)
	}

	refs := []Ref{
		{KindTable, "s", "t"},
		{KindStream, "s", "never"},
		{KindTable, "s", "dropped"},
		{KindTable, "s", "t"}, // asked twice, answered twice
	}
	// Rows come back in any order; a dropped object has the version of its drop.
	f.on(versionsPrefix, nil,
		[]any{"table", "s", "dropped", uint64(30)},
		[]any{"table", "s", "t", uint64(20)},
	)
	got, err := c.Versions(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{20, 0, 30, 20}; !reflect.DeepEqual(got, want) {
		t.Errorf("Versions = %v, want %v", got, want)
	}
	wantQuery := versionsPrefix +
		"(kind = 'table' AND schema = 's' AND name = 't') OR (kind = 'table_stream' AND schema = 's' AND name = 'never') OR " +
		"(kind = 'table' AND schema = 's' AND name = 'dropped') OR (kind = 'table' AND schema = 's' AND name = 't') GROUP BY kind, schema, name"
	if q := queries(f.take(), "Query"); len(q) != 1 || q[0] != wantQuery {
		t.Errorf("queries %q, want one: %s", q, wantQuery)
	}

	f.on(versionsPrefix, errors.New("too many parts"))
	if _, err := c.Versions(ctx, refs[:1]); err == nil || err.Error() != "catalog: read versions: too many parts" {
		t.Errorf("err = %v", err)
	}
}

// TestAddedBefore: a migration's ADD COLUMN that finds the column (it ran
// before, or another process ran it) is done; any other error is not.
func TestAddedBefore(t *testing.T) {
	exists := &chstore.Exception{Code: chstore.CodeIllegalColumn, Msg: "Cannot add column owner: column with this name already exists"}
	for _, c := range []struct {
		stmt string
		err  error
		want bool
	}{
		{"ALTER TABLE lakepipe.open_commits ADD COLUMN owner String", exists, true},
		{"ALTER TABLE lakepipe.open_commits ADD COLUMN owner String", fmt.Errorf("migrate: %w", exists), true},
		{"ALTER TABLE lakepipe.open_commits ADD COLUMN owner String", &chstore.Exception{Code: chstore.CodeIllegalColumn, Msg: "Illegal column"}, false},
		{"ALTER TABLE lakepipe.open_commits ADD COLUMN owner String", &chstore.Exception{Code: chstore.CodeUnknownTable, Msg: "already exists"}, false},
		{"CREATE TABLE lakepipe.x (a String) ENGINE = Log", exists, false},
		{"ALTER TABLE lakepipe.open_commits ADD COLUMN owner String", errors.New("already exists"), false},
	} {
		if got := addedBefore(c.stmt, c.err); got != c.want {
			t.Errorf("addedBefore(%q, %v) = %v, want %v", c.stmt, c.err, got, c.want)
		}
	}
}
