//go:build integration

// Package integration holds lakepipe's end-to-end tests against the real
// local stack (deploy/local): ClickHouse, the S3 server, Temporal and Kafka.
// They run with `go test -tags integration ./integration/` while the stack is
// up (`./task test` starts it). Every test works in a schema and a bucket
// prefix of its own (it_<random>, it-<random>/), so tests never collide and
// can run again and again against the same stack.
package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/internal/seal"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
	"github.com/lakepipe/lakepipe/schemas"
)

// env reads a LAKEPIPE_* setting with the default of deploy/local/env.sh.
func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// The local stack's settings (deploy/local/env.sh).
var (
	chAddr      = env("LAKEPIPE_CLICKHOUSE_ADDR", "127.0.0.1:"+env("LAKEPIPE_CLICKHOUSE_PORT", "19000"))
	s3Endpoint  = env("LAKEPIPE_S3_ENDPOINT", "http://127.0.0.1:"+env("LAKEPIPE_S3_PORT", "7070"))
	s3AccessKey = env("LAKEPIPE_S3_ACCESS_KEY", "lakepipe-test-access")
	s3SecretKey = env("LAKEPIPE_S3_SECRET_KEY", "lakepipe-test-secret-9f3c2a")
	s3Bucket    = env("LAKEPIPE_S3_BUCKET", "lakepipe")
	s3Region    = env("LAKEPIPE_S3_REGION", "us-east-1")
)

// repoRoot is the module root (this file's directory's parent).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// stackBin is the path of a program deploy/local/install.sh installed: in
// LAKEPIPE_BIN when the environment names it, as install.sh and start.sh read
// it, so that the tests exec the very binaries the stack was started with.
func stackBin(name string) string {
	return filepath.Join(env("LAKEPIPE_BIN", filepath.Join(repoRoot(), ".bin")), name)
}

// stateDir is where deploy/local keeps the stack's data and logs.
func stateDir() string { return env("LAKEPIPE_STATE", filepath.Join(repoRoot(), ".stack")) }

// randID returns n random lower-case hex bytes (2n characters).
func randID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// One ClickHouse pool and one catalog for the whole package: opening the
// catalog migrates the system tables, which needs doing once.
var (
	storeOnce sync.Once
	store     *chstore.Store
	cat       *catalog.Catalog
	storeErr  error
)

func openCatalog() (*chstore.Store, *catalog.Catalog, error) {
	storeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := chstore.Open(ctx, chstore.Config{Addr: chAddr, User: env("LAKEPIPE_CLICKHOUSE_USER", "default"), Password: os.Getenv("LAKEPIPE_CLICKHOUSE_PASSWORD")})
		if err != nil {
			storeErr = err
			return
		}
		// The key of deploy/local (LAKEPIPE_SECRET_KEY_FILE), as the
		// lakepipe processes the tests start use it.
		sealer, err := seal.FromEnv(os.Getenv)
		if err != nil {
			st.Close()
			storeErr = err
			return
		}
		c, err := catalog.Open(ctx, st, catalog.WithSealer(sealer))
		if err != nil {
			st.Close()
			storeErr = err
			return
		}
		store, cat = st, c
	})
	return store, cat, storeErr
}

var (
	s3Once   sync.Once
	s3Client *minio.Client
	s3Err    error
)

// rawS3 is a plain client of the test bucket, for writing files lakepipe
// must then read (malformed CSV, compressed files) and checking what it
// wrote or deleted.
func rawS3(t testing.TB) *minio.Client {
	t.Helper()
	s3Once.Do(func() {
		ep, secure := s3Endpoint, true
		switch {
		case strings.HasPrefix(ep, "http://"):
			ep, secure = strings.TrimPrefix(ep, "http://"), false
		case strings.HasPrefix(ep, "https://"):
			ep = strings.TrimPrefix(ep, "https://")
		}
		s3Client, s3Err = minio.New(strings.TrimSuffix(ep, "/"), &minio.Options{
			Creds: credentials.NewStaticV4(s3AccessKey, s3SecretKey, ""), Secure: secure, Region: s3Region,
		})
		if s3Err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ok, err := s3Client.BucketExists(ctx, s3Bucket)
		if err != nil {
			s3Err = fmt.Errorf("S3 server at %s: %w", s3Endpoint, err)
		} else if !ok {
			s3Err = fmt.Errorf("bucket %q does not exist at %s", s3Bucket, s3Endpoint)
		}
	})
	if s3Err != nil {
		t.Fatalf("the local S3 server is needed (deploy/local/start.sh s3): %v", s3Err)
	}
	return s3Client
}

// Stack is one test's view of the stack: an engine on a fresh schema and a
// fresh prefix of the test bucket, both removed when the test ends.
type Stack struct {
	T      *testing.T
	Ctx    context.Context
	Eng    *engine.Engine
	Store  *chstore.Store
	Schema string                 // it_<id>: the engine's schema and ClickHouse database
	ID     string                 // random part of Schema and Prefix
	Prefix string                 // it-<id>/: the test's bucket prefix
	conn   string                 // the test's storage connection, once made
	Orch   *orchestrator.Temporal // set by withWorker
}

// newStack opens the stack for one test; it skips the test when
// ClickHouse does not answer.
func newStack(t *testing.T) *Stack {
	t.Helper()
	st, _, err := openCatalog()
	if err != nil {
		t.Skipf("ClickHouse is not reachable at %s (start the local stack: ./task up): %v", chAddr, err)
	}
	_, c, _ := openCatalog()
	id := randID(5)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	s := &Stack{T: t, Ctx: ctx, Store: st, Schema: "it_" + id, ID: id, Prefix: "it-" + id + "/"}
	s.Eng = engine.New(c, core.Config{Workspace: "default", Schema: s.Schema})
	t.Cleanup(func() {
		defer cancel()
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		_ = st.Exec(cctx, "DROP DATABASE IF EXISTS "+chsql.QuoteIdent(s.Schema))
		forgetSchema(cctx, st, c, s.Schema)
		if s3Client != nil {
			s.removePrefix(cctx, s.Prefix)
		}
	})
	return s
}

// forgetSchema removes a test schema's tables from the catalog, its change
// logs, and its dropped tables from the trash, so that runs do not pile
// them up.
func forgetSchema(ctx context.Context, st *chstore.Store, c *catalog.Catalog, schema string) {
	for _, k := range []catalog.Kind{catalog.KindTable, catalog.KindDynamicTable, catalog.KindStream} {
		objs, _ := c.List(ctx, k, schema)
		for _, o := range objs {
			_ = c.Delete(ctx, k, schema, o.Name)
		}
	}
	// The schema's change logs and dynamic-table states, and its commits.
	logs, _ := st.Strings(ctx, "SELECT name FROM system.tables WHERE database = "+chsql.QuoteString(schemas.ChangesDB)+
		" AND (startsWith(name, "+chsql.QuoteString(schema+"__")+") OR startsWith(name, "+chsql.QuoteString("dt__"+schema+"__")+"))")
	for _, l := range logs {
		_ = st.Exec(ctx, "DROP TABLE IF EXISTS "+chsql.Table(schemas.ChangesDB, l))
	}
	_ = st.Exec(ctx, "ALTER TABLE lakepipe.table_commits DELETE WHERE db = "+chsql.QuoteString(schema))
	_ = st.Exec(ctx, "ALTER TABLE lakepipe.removal_origins DELETE WHERE db = "+chsql.QuoteString(schema))
	_ = st.Exec(ctx, "ALTER TABLE lakepipe.open_commits DELETE WHERE db = "+chsql.QuoteString(schema))
	dropped, _ := c.List(ctx, catalog.KindDroppedTable, schemas.TrashDB)
	for _, o := range dropped {
		var d catalog.DroppedTableSpec
		if o.Decode(&d) == nil && d.Schema == schema {
			if st.Exec(ctx, "DROP TABLE IF EXISTS "+chsql.Table(schemas.TrashDB, o.Name)) == nil {
				_ = c.Delete(ctx, catalog.KindDroppedTable, schemas.TrashDB, o.Name)
			}
		}
	}
}

func (s *Stack) removePrefix(ctx context.Context, prefix string) {
	objs := s3Client.ListObjects(ctx, s3Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true})
	for e := range s3Client.RemoveObjects(ctx, s3Bucket, objs, minio.RemoveObjectsOptions{}) {
		s.T.Logf("cleanup: could not remove %s: %v", e.ObjectName, e.Err)
	}
}

// exec parses and runs a script, returning every statement's result and
// the first error (with the statement it came from).
func (s *Stack) exec(sql string) ([]*core.Result, error) {
	stmts, err := sqlparse.ParseScript(sql)
	if err != nil {
		return nil, err
	}
	var out []*core.Result
	for _, st := range stmts {
		res, err := s.Eng.Exec(s.Ctx, st)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// run runs a script and returns the last statement's result, failing the
// test on any error.
func (s *Stack) run(sql string) *core.Result {
	s.T.Helper()
	res, err := s.exec(sql)
	if err != nil {
		s.T.Fatalf("%s\nfailed: %v", strings.TrimSpace(sql), err)
	}
	if len(res) == 0 {
		s.T.Fatalf("%q holds no statement", sql)
	}
	return res[len(res)-1]
}

// runErr runs a script and returns its first error (nil when all ran).
func (s *Stack) runErr(sql string) error {
	s.T.Helper()
	_, err := s.exec(sql)
	return err
}

// mustFail runs a script that must fail and checks that the message is
// clear: it holds every want (case-insensitive) and no server stack trace.
func (s *Stack) mustFail(sql string, want ...string) error {
	s.T.Helper()
	err := s.runErr(sql)
	if err == nil {
		s.T.Fatalf("%s\nsucceeded; want an error mentioning %q", strings.TrimSpace(sql), want)
	}
	checkMessage(s.T, err.Error(), want...)
	return err
}

// checkMessage asserts that msg holds every want and no stack trace.
func checkMessage(t testing.TB, msg string, want ...string) {
	t.Helper()
	low := strings.ToLower(msg)
	for _, w := range want {
		if !strings.Contains(low, strings.ToLower(w)) {
			t.Errorf("error %q does not mention %q", msg, w)
		}
	}
	for _, bad := range []string{"stack trace", "goroutine ", "panic:", ".go:"} {
		if strings.Contains(low, bad) {
			t.Errorf("error %q looks like it carries a stack trace or internals (%q)", msg, bad)
		}
	}
}

// connection creates a storage connection to the local S3 server with a
// unique name and returns the name. Connections are workspace-wide, so the
// name carries the test's id; it is dropped at the end of the test.
func (s *Stack) connection() string {
	s.T.Helper()
	if s.conn != "" {
		return s.conn
	}
	name := "it_conn_" + s.ID
	s.run(fmt.Sprintf(`CREATE STORAGE CONNECTION IF NOT EXISTS %s TYPE S3 ENDPOINT = '%s' ACCESS_ID = '%s' ACCESS_KEY = '%s' REGION = '%s'`,
		name, s3Endpoint, s3AccessKey, s3SecretKey, s3Region))
	s.dropAtEnd("STORAGE CONNECTION", name)
	s.conn = name
	return name
}

// dropAtEnd drops a workspace-wide object when the test ends (after the
// volumes, which Cleanup runs first as they were registered later).
func (s *Stack) dropAtEnd(kind, name string) {
	s.T.Cleanup(func() {
		stmt, err := sqlparse.Parse("DROP " + kind + " IF EXISTS " + name)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = s.Eng.Exec(ctx, stmt)
	})
}

// location returns the oss:// location of a directory under the test's
// prefix ("" for the prefix itself).
func (s *Stack) location(dir string) string {
	loc := "oss://" + s3Bucket + "/" + s.Prefix + strings.Trim(dir, "/")
	return strings.TrimSuffix(loc, "/") + "/"
}

// volume creates an external volume (directory enabled) on a directory
// under the test's prefix, with the given AUTO_REFRESH, and returns its
// name.
func (s *Stack) volume(name, dir string, autoRefresh bool) string {
	s.T.Helper()
	conn := s.connection()
	s.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME %s LOCATION '%s' USING CONNECTION %s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = %v) RECURSIVE = TRUE`,
		name, s.location(dir), conn, strings.ToUpper(fmt.Sprint(autoRefresh))))
	s.dropAtEnd("VOLUME", name)
	return name
}

// key returns the object key of a path under the test's prefix.
func (s *Stack) key(rel string) string { return s.Prefix + strings.TrimPrefix(rel, "/") }

// put writes a raw file at a path under the test's prefix.
func (s *Stack) put(rel string, data []byte) {
	s.T.Helper()
	c := rawS3(s.T)
	if _, err := c.PutObject(s.Ctx, s3Bucket, s.key(rel), bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		s.T.Fatalf("put %s: %v", rel, err)
	}
}

// putMany writes n files under the test's prefix, 16 at a time as
// parallel writers do: file i at rel(i), holding data(i).
func (s *Stack) putMany(n int, rel func(i int) string, data func(i int) []byte) {
	s.T.Helper()
	c := rawS3(s.T)
	var (
		next     atomic.Int64
		failOnce sync.Once
		failed   error
		wg       sync.WaitGroup
	)
	next.Store(-1)
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1)); i < n; i = int(next.Add(1)) {
				d := data(i)
				if _, err := c.PutObject(s.Ctx, s3Bucket, s.key(rel(i)), bytes.NewReader(d), int64(len(d)), minio.PutObjectOptions{}); err != nil {
					failOnce.Do(func() { failed = fmt.Errorf("put %s: %w", rel(i), err) })
					return
				}
			}
		})
	}
	wg.Wait()
	if failed != nil {
		s.T.Fatal(failed)
	}
}

// exists reports whether a file under the test's prefix exists.
func (s *Stack) exists(rel string) bool {
	s.T.Helper()
	c := rawS3(s.T)
	_, err := c.StatObject(s.Ctx, s3Bucket, s.key(rel), minio.StatObjectOptions{})
	if err == nil {
		return true
	}
	if minio.ToErrorResponse(err).Code == "NoSuchKey" || minio.ToErrorResponse(err).StatusCode == 404 {
		return false
	}
	s.T.Fatalf("stat %s: %v", rel, err)
	return false
}

// files lists the files under a directory of the test's prefix, relative
// to that directory.
func (s *Stack) files(dir string) []string {
	s.T.Helper()
	c := rawS3(s.T)
	prefix := s.key(strings.Trim(dir, "/") + "/")
	if strings.Trim(dir, "/") == "" {
		prefix = s.Prefix
	}
	var out []string
	for o := range c.ListObjects(s.Ctx, s3Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			s.T.Fatalf("list %s: %v", prefix, o.Err)
		}
		out = append(out, strings.TrimPrefix(o.Key, prefix))
	}
	return out
}

// text renders a cell the way a user reads it: NULL, Decimal with its
// column's scale (8999.00), dates as yyyy-mm-dd.
func text(v any, chType string) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case []byte:
		return string(x)
	case decimal.Decimal:
		base, _ := schemas.BaseOf(chType)
		var p, sc int32
		if _, err := fmt.Sscanf(strings.ReplaceAll(base, " ", ""), "Decimal(%d,%d)", &p, &sc); err == nil {
			return x.StringFixed(sc)
		}
		return x.String()
	case time.Time:
		base, _ := schemas.BaseOf(chType)
		if base == "Date" {
			return x.Format("2006-01-02")
		}
		return x.Format("2006-01-02 15:04:05")
	}
	return fmt.Sprint(v)
}

// table renders a result's rows as text, one []string per row.
func table(res *core.Result) [][]string {
	out := make([][]string, len(res.Rows))
	for i, r := range res.Rows {
		out[i] = make([]string, len(r))
		for j, v := range r {
			t := ""
			if j < len(res.Types) {
				t = res.Types[j]
			}
			out[i][j] = text(v, t)
		}
	}
	return out
}

// rowsText is a result's rows as one comparable string: cells joined by
// '|', rows by '\n'.
func rowsText(res *core.Result) string {
	var lines []string
	for _, r := range table(res) {
		lines = append(lines, strings.Join(r, "|"))
	}
	return strings.Join(lines, "\n")
}

// wantRows fails the test unless the result's rows are exactly want
// (cells joined by '|').
func wantRows(t testing.TB, what string, res *core.Result, want ...string) {
	t.Helper()
	got := rowsText(res)
	if w := strings.Join(want, "\n"); got != w {
		t.Errorf("%s:\n got rows:\n%s\nwant:\n%s", what, indent(got), indent(w))
	}
}

// wantColumns fails the test unless the result has exactly these columns.
func wantColumns(t testing.TB, what string, res *core.Result, want ...string) {
	t.Helper()
	if strings.Join(res.Columns, ",") != strings.Join(want, ",") {
		t.Errorf("%s: columns %v, want %v", what, res.Columns, want)
	}
}

// column returns the index of a named column, failing the test when the
// result has none.
func column(t testing.TB, res *core.Result, name string) int {
	t.Helper()
	for i, c := range res.Columns {
		if c == name {
			return i
		}
	}
	t.Fatalf("result has no column %q (columns %v)", name, res.Columns)
	return -1
}

// scalar returns the single cell of a one-row, one-column result as text.
func scalar(t testing.TB, res *core.Result) string {
	t.Helper()
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		t.Fatalf("want one value, got columns %v rows %v", res.Columns, res.Rows)
	}
	return table(res)[0][0]
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

// ---- the lakepipe command ----

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

// lakepipeBin builds the lakepipe command once for the package.
func lakepipeBin(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "lakepipe-it-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "lakepipe")
		cmd := exec.Command("go", "build", "-o", binPath, "./starter")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./starter: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if store != nil {
		store.Close()
	}
	os.Exit(code)
}

// cliResult is what one run of the lakepipe command printed.
type cliResult struct {
	Code   int
	Stdout string
	Stderr string
}

// cli runs `lakepipe args…` in dir with extra environment entries
// (KEY=value) on top of the test process's own, and stdin.
func cli(t testing.TB, dir string, extraEnv []string, stdin string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, lakepipeBin(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := cliResult{Stdout: out.String(), Stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("lakepipe %v: %v", args, err)
	}
	return res
}

// sqlCLI runs `lakepipe sql args…` in the stack's schema.
func (s *Stack) sqlCLI(stdin string, args ...string) cliResult {
	s.T.Helper()
	return cli(s.T, s.T.TempDir(), []string{"LAKEPIPE_SCHEMA=" + s.Schema, "LAKEPIPE_CLICKHOUSE_ADDR=" + chAddr}, stdin, append([]string{"sql"}, args...)...)
}

// writeFile writes a file in a fresh temporary directory and returns its path.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// testSeed seeds a randomized test: from the variable env when set (to
// replay a failure), else from the clock. It logs the seed and how to
// replay it.
func testSeed(t testing.TB, env string) int64 {
	t.Helper()
	seed := time.Now().UnixNano()
	if v := os.Getenv(env); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: want a whole number", env, v)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, env, seed)
	return seed
}
