//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
)

// TestSessionSettingsPinned: every connection sets the settings lakepipe's
// SQL depends on (chstore.SessionSettings) itself, so that a server
// profile cannot change them under it: ClickHouse marks them changed in
// the session even where they equal the server's default.
func TestSessionSettingsPinned(t *testing.T) {
	st, _, err := openCatalog()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, want := range chstore.SessionSettings {
		got, err := st.Strings(ctx, "SELECT concat(toString(changed), ' ', value) FROM system.settings WHERE name = "+chsql.QuoteString(name))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != fmt.Sprint("1 ", want) {
			t.Errorf("%s: changed and value %q, want set to %v in the session", name, got, want)
		}
	}
}
