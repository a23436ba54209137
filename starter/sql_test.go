package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLExecWarnsOfSecrets: `lakepipe sql -e` warns once on stderr when
// its text holds a secret; -f and standard input do not warn.
func TestSQLExecWarnsOfSecrets(t *testing.T) {
	const warning = "-e puts it in the process list; use -f FILE or standard input"
	conn := "CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = 'http://h:1' ACCESS_ID = 'id' ACCESS_KEY = 'Sup3r''Secr3t'"
	kafka := "CREATE PIPE p AS COPY INTO t FROM (SELECT value::STRING AS v FROM READ_KAFKA('h:9092', 't', '', 'g', '', '', '', '', 'raw', 'raw', 0, map('sasl.password', 'pw')))"
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		warns bool
	}{
		{"connection", []string{"--check", "-e", conn}, "", true},
		{"two secrets", []string{"--check", "-e", conn + ";" + kafka}, "", true},
		{"kafka", []string{"--check", "-e", kafka}, "", true},
		{"no secret", []string{"--check", "-e", "SELECT 'Sup3r''Secr3t'"}, "", false},
		{"stdin", []string{"--check"}, conn + ";", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			runSQL(context.Background(), tc.args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if n := strings.Count(stderr.String(), warning); n != map[bool]int{true: 1, false: 0}[tc.warns] {
				t.Errorf("stderr holds the warning %d times:\n%s", n, stderr.String())
			}
			if out := stdout.String() + stderr.String(); strings.Contains(out, "Secr3t") || strings.Contains(out, "'pw'") {
				t.Errorf("a secret shows:\n%s", out)
			}
		})
	}
}

// TestTokensUsage: `lakepipe tokens` checks its arguments before it needs
// a server (and its flags do not clash with the connection flags).
func TestTokensUsage(t *testing.T) {
	for _, args := range [][]string{
		{"tokens"},
		{"tokens", "mint"},
		{"tokens", "create", "x"},
		{"tokens", "create", "x", "--scope", "table:nodot"},
		{"tokens", "revoke"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != 2 {
			t.Errorf("lakepipe %v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}

// TestSQLCheckGuards: `lakepipe sql --check` refuses what execution
// refuses (lakepipe's own databases, system, outside table functions),
// without a server.
func TestSQLCheckGuards(t *testing.T) {
	for _, tc := range []struct {
		sql, want string
	}{
		{"SELECT name, secret FROM lakepipe.objects", "lakepipe.objects"},
		{"SELECT * FROM t WHERE x IN (SELECT x FROM system.tables)", "system.tables"},
		{"SELECT * FROM remote('h', db.t)", "remote"},
		{"SELECT count(*) FROM t", ""},
	} {
		var stdout, stderr bytes.Buffer
		code := runSQL(context.Background(), []string{"--check", "--schema", "public", "-e", tc.sql}, strings.NewReader(""), &stdout, &stderr)
		if tc.want == "" {
			if code != 0 {
				t.Errorf("%s: exit %d, want 0:\n%s", tc.sql, code, stderr.String())
			}
			continue
		}
		if code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: exit %d, stderr %q: want a refusal naming %q", tc.sql, code, stderr.String(), tc.want)
		}
	}
}

// TestSQLScriptBound: a script longer than LAKEPIPE_MAX_SCRIPT_BYTES, from
// stdin or -f, fails before any statement, naming the setting; one within
// it is read (checked here with --check, without a server).
func TestSQLScriptBound(t *testing.T) {
	t.Setenv("LAKEPIPE_MAX_SCRIPT_BYTES", "64")
	short := "SELECT 1;\n"
	long := strings.Repeat("SELECT 1;\n", 10)
	file := filepath.Join(t.TempDir(), "long.sql")
	if err := os.WriteFile(file, []byte(long), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		fails bool
	}{
		{"stdin within", []string{"--check"}, short, false},
		{"stdin over", []string{"--check"}, long, true},
		{"file over", []string{"--check", "-f", file}, "", true},
	} {
		var stdout, stderr bytes.Buffer
		code := runSQL(context.Background(), append(tc.args, "--schema", "public"), strings.NewReader(tc.stdin), &stdout, &stderr)
		if !tc.fails {
			if code != 0 {
				t.Errorf("%s: exit %d:\n%s", tc.name, code, stderr.String())
			}
			continue
		}
		if code == 0 || !strings.Contains(stderr.String(), "LAKEPIPE_MAX_SCRIPT_BYTES") || !strings.Contains(stderr.String(), "COPY INTO") {
			t.Errorf("%s: exit %d, stderr %q: want the script refused, naming the setting", tc.name, code, stderr.String())
		}
	}
}
