//go:build integration

package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/seal"
)

// TestSealedSecrets checks that a connection's secret reaches ClickHouse
// sealed (its bytes are in no part file of lakepipe.objects, the column
// holds lpseal1: values), that a volume on a sealed connection works, that
// DROP leaves no row holding the secret, and that without a key storing a
// secret is refused and reading a sealed one fails naming the key.
func TestSealedSecrets(t *testing.T) {
	s := newStack(t)
	// 16 random hex characters each, in no other row.
	secretMark, idMark := randID(8), randID(8)
	secret, accessID := "sealed-secret-"+secretMark, "sealed-id-"+idMark
	conn := "it_sealed_" + s.ID
	s.dropAtEnd("STORAGE CONNECTION", conn)
	s.run(fmt.Sprintf(`CREATE STORAGE CONNECTION %s TYPE OSS ENDPOINT = '%s' ACCESS_ID = '%s' ACCESS_KEY = '%s'`, conn, s3Endpoint, accessID, secret))
	if err := s.Store.Exec(s.Ctx, "OPTIMIZE TABLE lakepipe.objects FINAL"); err != nil {
		t.Fatal(err)
	}
	stored := storedSecret(t, s.Store, s.Ctx, conn)
	if !strings.HasPrefix(stored, seal.Prefix) {
		t.Fatalf("the secret column holds %.12q…, want a %s value", stored, seal.Prefix)
	}

	// The part files of lakepipe.objects (active or not, as ClickHouse
	// says where they are: the stack may be another checkout's): the
	// access id (in the spec) is there, which shows the search sees the
	// data; the secret is not.
	paths, err := s.Store.Strings(s.Ctx, "SELECT path FROM system.parts WHERE database = 'lakepipe' AND table = 'objects' AND active LIMIT 1")
	if err != nil || len(paths) == 0 {
		t.Fatalf("the parts of lakepipe.objects: %v %q", err, paths)
	}
	dir := filepath.Dir(filepath.Clean(paths[0]))
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("ClickHouse's data directory is not on this machine (%v)", err)
	}
	// Any 8 characters of the marks: ClickHouse compresses the files
	// (LZ4), which may store a few of a mark's characters as a copy of
	// the same characters earlier in the block, and the other rows are
	// full of hex ids (once in CI: the whole access id was in no file).
	if n := filesHolding(t, dir, windows(idMark, 8)...); n == 0 {
		t.Fatalf("no file under %s holds the connection's access id: the search does not see the data", dir)
	}
	if n := filesHolding(t, dir, windows(secretMark, 8)...); n != 0 {
		t.Errorf("%d files under %s hold the secret in clear", n, dir)
	}

	// A volume on a connection with a sealed secret works.
	s.put("sealed/a.csv", []byte("a,1\n"))
	vol := s.volume("it_sealed_vol_"+s.ID, "sealed", false)
	s.run(`ALTER VOLUME ` + vol + ` REFRESH`)
	if got := rowsText(s.run(`SELECT relative_path FROM DIRECTORY(VOLUME ` + vol + `)`)); !strings.Contains(got, "a.csv") {
		t.Fatalf("DIRECTORY of a volume on a sealed connection lists %q, want a.csv", got)
	}

	// Without a key: storing is refused, reading names the key.
	noKey := []string{"LAKEPIPE_SCHEMA=" + s.Schema, "LAKEPIPE_CLICKHOUSE_ADDR=" + chAddr, "LAKEPIPE_SECRET_KEY=", "LAKEPIPE_SECRET_KEY_FILE=", "LAKEPIPE_SECRET_OLD_KEYS=", "LAKEPIPE_SECRET_PLAINTEXT="}
	out := cli(t, t.TempDir(), noKey, "", "sql", "-e", fmt.Sprintf(`CREATE STORAGE CONNECTION %s_nokey TYPE OSS ENDPOINT = '%s' ACCESS_ID = 'x' ACCESS_KEY = '%s'`, conn, s3Endpoint, secret))
	if out.Code == 0 || !strings.Contains(out.Stderr, "LAKEPIPE_SECRET_PLAINTEXT=true") || strings.Contains(out.Stdout+out.Stderr, secret) {
		t.Errorf("CREATE CONNECTION without a key: code %d\n%s%s", out.Code, out.Stdout, out.Stderr)
	}
	id, _ := seal.StoredKeyID(stored)
	out = cli(t, t.TempDir(), noKey, "", "sql", "-e", `ALTER VOLUME `+vol+` REFRESH`)
	if out.Code == 0 || !strings.Contains(out.Stderr, id) {
		t.Errorf("reading a sealed secret without the key: code %d, want an error naming key %s\n%s%s", out.Code, id, out.Stdout, out.Stderr)
	}

	// DROP leaves no row of the connection holding a secret (once
	// ClickHouse has run the mutation: 18.16 cannot wait for it).
	s.run(`DROP STORAGE CONNECTION ` + conn)
	q := "SELECT toString(count()) FROM lakepipe.objects WHERE kind = 'connection' AND schema = '' AND name = " + chsql.QuoteString(conn) + " AND secret != ''"
	waitStrings(t, s.Ctx, s.Store, q, "0")
}

// TestSealedSecretsRotate rotates the keys of a catalog of its own (on the
// stack's second ClickHouse server, so that no other test's secrets change
// key): after `lakepipe secrets rotate` to a new key, a connection sealed
// with the old key and one stored in plaintext before sealing existed both
// work with the new key alone, and the old key opens nothing.
func TestSealedSecretsRotate(t *testing.T) {
	s := newStack(t)
	ctx := s.Ctx
	st2, err := chstore.Open(ctx, chstore.Config{Addr: ch2Addr})
	if err != nil {
		t.Skipf("the second ClickHouse server (%s) is needed: %v", ch2Addr, err)
	}
	defer st2.Close()
	cat2, err := catalog.Open(ctx, st2, catalog.WithSealer(seal.Plaintext()))
	if err != nil {
		t.Fatal(err)
	}
	// Earlier runs that died before their cleanup leave connections
	// sealed with keys gone with them; they would fail the rotation.
	left, _ := cat2.ListAll(ctx, catalog.KindConnection)
	for _, o := range left {
		if strings.HasPrefix(o.Name, "it_rot_") {
			_ = cat2.Delete(ctx, catalog.KindConnection, o.Schema, o.Name)
		}
	}

	keyFile := func() (path, text, id string) {
		b := make([]byte, seal.KeySize)
		_, _ = rand.Read(b)
		text = base64.StdEncoding.EncodeToString(b)
		path = filepath.Join(t.TempDir(), "secret.key")
		if err := os.WriteFile(path, []byte(text+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path, text, seal.KeyID(b)
	}
	fileA, textA, idA := keyFile()
	fileB, _, idB := keyFile()
	envOf := func(file, old string) []string {
		return []string{"LAKEPIPE_SCHEMA=" + s.Schema, "LAKEPIPE_CLICKHOUSE_ADDR=" + ch2Addr, "LAKEPIPE_SECRET_KEY=",
			"LAKEPIPE_SECRET_KEY_FILE=" + file, "LAKEPIPE_SECRET_OLD_KEYS=" + old, "LAKEPIPE_SECRET_PLAINTEXT="}
	}
	sql := func(env []string, stmts string) cliResult {
		return cli(t, t.TempDir(), env, "", "sql", "-e", stmts)
	}
	conn, vol := "it_rot_"+s.ID, "it_rot_vol_"+s.ID
	legacy, legacyVol := "it_rot_legacy_"+s.ID, "it_rot_legacy_vol_"+s.ID
	t.Cleanup(func() {
		sql(envOf(fileB, ""), "DROP VOLUME IF EXISTS "+vol+"; DROP STORAGE CONNECTION IF EXISTS "+conn+
			"; DROP VOLUME IF EXISTS "+legacyVol+"; DROP STORAGE CONNECTION IF EXISTS "+legacy)
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = st2.Exec(cctx, "DROP DATABASE IF EXISTS "+chsql.QuoteIdent(s.Schema))
	})
	s.put("rot/a.csv", []byte("a,1\n"))
	worksOn := func(vol string, env []string) cliResult {
		return sql(env, "ALTER VOLUME "+vol+" REFRESH; SELECT relative_path FROM DIRECTORY(VOLUME "+vol+")")
	}
	works := func(env []string) cliResult { return worksOn(vol, env) }
	out := sql(envOf(fileA, ""), fmt.Sprintf(`CREATE STORAGE CONNECTION %s TYPE S3 ENDPOINT = '%s' ACCESS_ID = '%s' ACCESS_KEY = '%s' REGION = '%s';
		CREATE EXTERNAL VOLUME %s LOCATION '%s' USING CONNECTION %s DIRECTORY = (ENABLE = TRUE)`,
		conn, s3Endpoint, s3AccessKey, s3SecretKey, s3Region, vol, s.location("rot"), conn))
	if out.Code != 0 {
		t.Fatalf("create with key A: code %d\n%s%s", out.Code, out.Stdout, out.Stderr)
	}
	if out := works(envOf(fileA, "")); out.Code != 0 || !strings.Contains(out.Stdout, "a.csv") {
		t.Fatalf("volume with key A: code %d\n%s%s", out.Code, out.Stdout, out.Stderr)
	}
	if stored := storedSecret(t, st2, ctx, conn); !strings.HasPrefix(stored, seal.Prefix+idA+":") {
		t.Fatalf("stored %.30q…, want a value sealed with key %s", stored, idA)
	}
	// A connection stored before sealing existed: its secret in clear.
	if err := cat2.Put(ctx, catalog.KindConnection, "", legacy, catalog.ConnectionSpec{Type: "S3", Endpoint: s3Endpoint, Region: s3Region, AccessID: s3AccessKey, CreatedAt: time.Now()}, s3SecretKey); err != nil {
		t.Fatal(err)
	}
	if stored := storedSecret(t, st2, ctx, legacy); stored != s3SecretKey {
		t.Fatalf("the legacy connection's secret is stored as %.12q…, want it in clear", stored)
	}
	out = sql(envOf(fileA, ""), fmt.Sprintf(`CREATE EXTERNAL VOLUME %s LOCATION '%s' USING CONNECTION %s DIRECTORY = (ENABLE = TRUE)`, legacyVol, s.location("rot"), legacy))
	if out.Code != 0 {
		t.Fatalf("volume on the legacy connection: code %d\n%s%s", out.Code, out.Stdout, out.Stderr)
	}
	if out := worksOn(legacyVol, envOf(fileA, "")); out.Code != 0 || !strings.Contains(out.Stdout, "a.csv") {
		t.Fatalf("volume on the legacy connection with key A: code %d\n%s%s", out.Code, out.Stdout, out.Stderr)
	}

	out = cli(t, t.TempDir(), envOf(fileB, textA), "", "secrets", "rotate")
	if out.Code != 0 || !strings.Contains(out.Stdout, "2 secrets resealed with key "+idB) {
		t.Fatalf("secrets rotate: code %d\n%s%s", out.Code, out.Stdout, out.Stderr)
	}
	t.Logf("rotate: %s", strings.TrimSpace(out.Stdout))
	if out := works(envOf(fileB, "")); out.Code != 0 || !strings.Contains(out.Stdout, "a.csv") {
		t.Errorf("volume with key B alone after the rotation: code %d\n%s%s", out.Code, out.Stdout, out.Stderr)
	}
	if out := worksOn(legacyVol, envOf(fileB, "")); out.Code != 0 || !strings.Contains(out.Stdout, "a.csv") {
		t.Errorf("volume on the legacy connection with key B alone after the rotation: code %d\n%s%s", out.Code, out.Stdout, out.Stderr)
	}
	if stored := storedSecret(t, st2, ctx, legacy); !strings.HasPrefix(stored, seal.Prefix+idB+":") {
		t.Errorf("the legacy connection's secret after the rotation: %.30q…, want a value sealed with key %s", stored, idB)
	}
	for _, v := range []string{vol, legacyVol} {
		if out := worksOn(v, envOf(fileA, "")); out.Code == 0 || !strings.Contains(out.Stderr, idB) {
			t.Errorf("volume %s with key A alone after the rotation: code %d, want an error naming key %s\n%s%s", v, out.Code, idB, out.Stdout, out.Stderr)
		}
	}
	out = cli(t, t.TempDir(), envOf(fileB, ""), "", "secrets", "status")
	if out.Code != 0 || !strings.Contains(out.Stdout, idB+"\t") || strings.Contains(out.Stdout, idA) || strings.Contains(out.Stdout, s3SecretKey) {
		t.Errorf("secrets status: code %d\n%s%s", out.Code, out.Stdout, out.Stderr)
	}
	// No row sealed with key A, nor the plaintext, is left (the
	// rotation's mutations remove the connections' earlier rows).
	waitStrings(t, ctx, st2, "SELECT toString(count()) FROM lakepipe.objects WHERE startsWith(secret, "+chsql.QuoteString(seal.Prefix+idA)+
		") OR secret = "+chsql.QuoteString(s3SecretKey), "0")
}

// storedSecret is the secret column of a connection's latest row.
func storedSecret(t *testing.T, st *chstore.Store, ctx context.Context, conn string) string {
	t.Helper()
	v, err := st.Strings(ctx, "SELECT argMax(secret, version) FROM lakepipe.objects WHERE kind = 'connection' AND schema = '' AND name = "+chsql.QuoteString(conn))
	if err != nil || len(v) != 1 {
		t.Fatalf("read the secret column: %v %q", err, v)
	}
	return v[0]
}

// windows are the substrings of s n long.
func windows(s string, n int) []string {
	var out []string
	for i := 0; i+n <= len(s); i++ {
		out = append(out, s[i:i+n])
	}
	return out
}

// filesHolding counts the files under dir holding any of marks.
func filesHolding(t *testing.T, dir string, marks ...string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // a part a merge removed
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		for _, m := range marks {
			if bytes.Contains(b, []byte(m)) {
				n++
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitStrings waits up to a minute for q to answer want (a mutation to run).
func waitStrings(t *testing.T, ctx context.Context, st *chstore.Store, q, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		v, err := st.Strings(ctx, q)
		if err == nil && len(v) == 1 && v[0] == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q, %v after a minute; want %s", q, v, err, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
