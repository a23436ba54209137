//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/lakepipe/lakepipe/internal/chstore"
)

// TestSecretsNeverShown runs scripts holding a storage connection's secret
// through the lakepipe command in every output format, with SHOW/DESC
// CONNECTION and failing statements involving the connection, and checks
// that the secret appears nowhere in what the command printed, nor in the
// ClickHouse server's logs.
func TestSecretsNeverShown(t *testing.T) {
	s := newStack(t)
	secret := "it-secret-" + s.ID + randID(4)
	accessID := "it-access-" + s.ID

	script := func(conn string) string {
		return fmt.Sprintf(`-- a connection whose key the endpoint does not accept
CREATE STORAGE CONNECTION %[1]s TYPE OSS ENDPOINT = '%[2]s' ACCESS_ID = '%[3]s' ACCESS_KEY = '%[4]s' COMMENT 'secret test';
SHOW CONNECTIONS LIKE '%[1]s';
DESC CONNECTION %[1]s;
-- fails: it exists already
CREATE STORAGE CONNECTION %[1]s TYPE OSS ENDPOINT = '%[2]s' ACCESS_ID = '%[3]s' ACCESS_KEY = '%[4]s';
-- fails: an unknown property next to the secret
CREATE STORAGE CONNECTION %[1]s_x TYPE OSS ENDPOINT = '%[2]s' ACCESS_ID = '%[3]s' ACCESS_KEY = '%[4]s' BUCKET_POLICY = 'x';
-- fails: the endpoint refuses the key
CREATE EXTERNAL VOLUME sv_%[1]s LOCATION '%[5]s' USING CONNECTION %[1]s DIRECTORY = (ENABLE = TRUE);
SHOW CONNECTIONS;
DROP STORAGE CONNECTION %[1]s;
`, conn, s3Endpoint, accessID, secret, s.location("secret"))
	}

	runs := []struct {
		name string
		args []string
	}{
		{"table", []string{"--format", "table"}},
		{"csv", []string{"--format", "csv"}},
		{"tsv", []string{"--format", "tsv"}},
		{"json", []string{"--format", "json"}},
		{"echo", []string{"--echo"}},
		{"echo json", []string{"--echo", "--format", "json"}},
	}
	var all strings.Builder
	for i, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			conn := fmt.Sprintf("sec_conn_%s_%d", s.ID, i)
			s.dropAtEnd("STORAGE CONNECTION", conn)
			file := writeFile(t, "secret.sql", script(conn))
			out := s.sqlCLI("", append(r.args, "--continue-on-error", "-f", file)...)
			all.WriteString(out.Stdout + out.Stderr)
			if out.Code != 1 {
				t.Errorf("exit code %d, want 1 (three statements fail)", out.Code)
			}
			// The statements ran: the connection was listed and described,
			// and each failure was reported.
			if !strings.Contains(out.Stdout, conn) {
				t.Errorf("stdout does not list the connection %s:\n%s", conn, out.Stdout)
			}
			if !strings.Contains(out.Stdout, "it-a") {
				t.Errorf("stdout shows no (masked) access id:\n%s", out.Stdout)
			}
			for _, want := range []string{"statement 4 (line 6): storage connection " + conn + " already exists", "statement 5 (line 8)", "BUCKET_POLICY", "statement 6 (line 10): volume sv_" + conn} {
				if !strings.Contains(out.Stderr, want) {
					t.Errorf("stderr does not report %q:\n%s", want, out.Stderr)
				}
			}
			for _, line := range strings.Split(out.Stderr, "\n") {
				if strings.Contains(line, "statement 6 ") {
					checkMessage(t, line, conn, "ACCESS_ID", "ACCESS_KEY")
				}
			}
			if strings.Contains(out.Stdout+out.Stderr, secret) {
				t.Errorf("the secret is in the output:\nstdout:\n%s\nstderr:\n%s", out.Stdout, out.Stderr)
			}
			// --echo prints the user's own statement, access id included;
			// everything else shows it masked.
			if !strings.Contains(r.name, "echo") && strings.Contains(out.Stdout+out.Stderr, accessID) {
				t.Errorf("the access id is shown unmasked:\nstdout:\n%s\nstderr:\n%s", out.Stdout, out.Stderr)
			}
			if strings.Contains(r.name, "echo") && !strings.Contains(out.Stdout, "ACCESS_KEY = '***'") {
				t.Errorf("--echo does not show the redacted statement:\n%s", out.Stdout)
			}
		})
	}

	// Syntax errors quote the token they stumbled on: a secret must not be
	// that token, nor be printed as part of an unterminated string.
	syntax := []struct{ name, sql string }{
		{"unterminated secret", fmt.Sprintf("SELECT 1;\nCREATE STORAGE CONNECTION sx_%s TYPE OSS ENDPOINT = '%s' ACCESS_ID = 'a' ACCESS_KEY = '%s;\n", s.ID, s3Endpoint, secret)},
		{"secret where none is expected", fmt.Sprintf("CREATE STORAGE CONNECTION sx_%s TYPE OSS ENDPOINT = '%s' ACCESS_ID = 'a' ACCESS_KEY = '%s' '%s';\n", s.ID, s3Endpoint, secret, secret)},
	}
	for _, c := range syntax {
		for _, mode := range [][]string{{"--check"}, {}} {
			t.Run(c.name+" "+strings.Join(mode, ""), func(t *testing.T) {
				file := writeFile(t, "syntax.sql", c.sql)
				out := s.sqlCLI("", append(mode, "-f", file)...)
				all.WriteString(out.Stdout + out.Stderr)
				if out.Code != 1 || !strings.Contains(out.Stderr, "syntax error") {
					t.Errorf("exit code %d, stderr %q; want a syntax error", out.Code, out.Stderr)
				}
				if strings.Contains(out.Stdout+out.Stderr, secret) {
					t.Errorf("the secret is in the syntax error:\n%s", out.Stderr)
				}
			})
		}
	}
	if !strings.Contains(all.String(), "sec_conn_"+s.ID) {
		t.Fatal("the runs printed nothing about their connections; the test saw no output")
	}

	// The ClickHouse server never saw the secret in a statement's text, so
	// it cannot have logged it.
	dir := filepath.Join(stateDir(), "clickhouse")
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) == 0 {
		t.Errorf("no ClickHouse logs under %s (LAKEPIPE_STATE)", dir)
	}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Errorf("read %s: %v", l, err)
			continue
		}
		if i := strings.Index(string(b), secret); i >= 0 {
			from, to := max(0, i-300), min(len(b), i+100)
			t.Errorf("the secret is in the ClickHouse log %s:\n…%s…", l, b[from:to])
		}
	}
	// Every statement lakepipe sends ClickHouse while handling the
	// connection is logged (log_queries = 1 for these statements), and
	// none holds the secret: catalog rows travel as native blocks.
	t.Run("query log", func(t *testing.T) {
		s.T = t
		defer func() { s.T = t }()
		conn := "ql_conn_" + s.ID
		s.dropAtEnd("STORAGE CONNECTION", conn)
		plain := s.Ctx
		s.Ctx = chstore.WithSettings(plain, clickhouse.Settings{"log_queries": 1})
		s.run(fmt.Sprintf(`CREATE STORAGE CONNECTION %s TYPE OSS ENDPOINT = '%s' ACCESS_ID = '%s' ACCESS_KEY = '%s'`, conn, s3Endpoint, accessID, secret))
		s.run(`DESC CONNECTION ` + conn)
		s.run(`SHOW CONNECTIONS LIKE '` + conn + `'`)
		s.mustFail(fmt.Sprintf(`CREATE EXTERNAL VOLUME ql_vol LOCATION '%s' USING CONNECTION %s`, s.location("ql"), conn), conn, "ACCESS_KEY")
		s.mustFail(fmt.Sprintf(`CREATE STORAGE CONNECTION %s TYPE OSS ENDPOINT = '%s' ACCESS_ID = '%s' ACCESS_KEY = '%s'`, conn, s3Endpoint, accessID, secret), "already exists")
		s.Ctx = plain
		if err := s.Store.Exec(s.Ctx, "SYSTEM FLUSH LOGS"); err != nil {
			t.Fatalf("SYSTEM FLUSH LOGS: %v", err)
		}
		// Split, so that this query's own text does not hold the secret.
		half := len(secret) / 2
		// Read through the store: lakepipe SQL cannot read system tables.
		n, err := s.Store.Strings(s.Ctx, fmt.Sprintf(`SELECT COUNT(*) FROM system.query_log WHERE position(query, '%s') > 0`, conn))
		if err != nil || len(n) != 1 || n[0] == "0" {
			t.Fatalf("system.query_log holds no statement about %s (%v): the check below would prove nothing", conn, err)
		}
		leaks, err := s.Store.Strings(s.Ctx, fmt.Sprintf(`SELECT query FROM system.query_log WHERE position(query, concat('%s', '%s')) > 0`, secret[:half], secret[half:]))
		if err != nil {
			t.Fatal(err)
		}
		if len(leaks) > 0 {
			t.Errorf("the secret is in %d statements of system.query_log, e.g. %s", len(leaks), leaks[0])
		}
	})
}
