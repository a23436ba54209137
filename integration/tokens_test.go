//go:build integration

package integration

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/tunnelserver"
	"github.com/lakepipe/lakepipe/tunnel"
)

// TestScopedWriteTokens: a token made with `lakepipe tokens create --table`
// writes its table, gets 403 on another, shows in `tokens list` without its
// secret, and gets 401 once `tokens revoke` ran; the catalog keeps only
// its hash.
func TestScopedWriteTokens(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE tok_a (id BIGINT)`)
	s.run(`CREATE TABLE tok_b (id BIGINT)`)
	url, _ := s.writeService(tunnelserver.Config{TokenCacheTTL: 100 * time.Millisecond})
	name := "it_tok_" + s.ID

	out := s.sqlCLIbin(t, "tokens", "create", name, "--scope", "table:"+s.Schema+".tok_a")
	token := strings.TrimSpace(out)
	if !strings.HasPrefix(token, "lpw."+name+".") {
		t.Fatalf("tokens create printed %q", out)
	}
	t.Cleanup(func() { cli(t, repoRoot(), nil, "", "tokens", "revoke", name) })
	if stored, _ := s.Store.Strings(s.Ctx, "SELECT spec FROM lakepipe.objects WHERE kind = 'write_token' AND name = '"+name+"'"); len(stored) == 0 || strings.Contains(strings.Join(stored, ""), strings.TrimPrefix(token, "lpw."+name+".")) {
		t.Fatalf("the catalog holds %q", stored)
	}
	if list := s.sqlCLIbin(t, "tokens", "list"); !strings.Contains(list, name) || !strings.Contains(list, "table:"+s.Schema+".tok_a") || strings.Contains(list, token) {
		t.Fatalf("tokens list: %s", list)
	}

	c := s.tunnelClient(url, token)
	write := func(table string) error {
		sess, err := c.BuildStreamUploadSession(s.Schema, table).Build(s.Ctx)
		if err != nil {
			return err
		}
		pack, err := sess.NewRecordPack()
		if err != nil {
			return err
		}
		r := sess.NewRecord()
		must(t, r.SetBigint("id", 1))
		must(t, pack.Append(r))
		_, err = pack.Flush()
		return err
	}
	if err := write("tok_a"); err != nil {
		t.Fatalf("a flush into the token's table: %v", err)
	}
	var te *tunnel.Error
	if err := write("tok_b"); !errors.As(err, &te) || te.Status != 403 || te.Code != tunnel.CodeForbidden {
		t.Fatalf("a flush into another table: %v, want 403 Forbidden", err)
	}
	s.sqlCLIbin(t, "tokens", "revoke", name)
	time.Sleep(200 * time.Millisecond)
	if err := write("tok_a"); !errors.Is(err, tunnel.ErrUnauthorized) {
		t.Fatalf("a revoked token: %v, want 401", err)
	}
	if n := s.pipeScalar("SELECT count() FROM tok_a"); n != "1" {
		t.Errorf("tok_a has %s rows, want 1", n)
	}
}

// sqlCLIbin runs the lakepipe command with the stack's settings and
// returns its standard output, failing the test on a non-zero exit.
func (s *Stack) sqlCLIbin(t *testing.T, args ...string) string {
	t.Helper()
	r := cli(t, repoRoot(), nil, "", args...)
	if r.Code != 0 {
		t.Fatalf("lakepipe %s: exit %d\n%s", strings.Join(args, " "), r.Code, r.Stderr)
	}
	return r.Stdout
}
