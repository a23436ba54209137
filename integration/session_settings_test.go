//go:build integration

package integration

import (
	"strings"
	"testing"
)

// TestSessionSettings: lakepipe's connections set what its SQL depends on
// whatever the user's profile says (docs/operations.md), and only settings
// the server has: the settings of later releases
// (max_partitions_per_insert_block, allow_nondeterministic_mutations) are
// not sent to 18.16, which refuses a setting it does not know.
func TestSessionSettings(t *testing.T) {
	s := newStack(t)
	got, err := s.Store.Strings(s.Ctx, "SELECT concat(name, '=', value) FROM system.settings WHERE name IN "+
		"('max_query_size', 'empty_result_for_aggregation_by_empty_set', 'max_partitions_per_insert_block', 'allow_nondeterministic_mutations') ORDER BY name")
	must(t, err)
	want := "empty_result_for_aggregation_by_empty_set=0,max_query_size=8388608"
	later, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM system.settings WHERE name = 'max_partitions_per_insert_block'")
	must(t, err)
	if later[0] != "0" {
		want = "allow_nondeterministic_mutations=1,empty_result_for_aggregation_by_empty_set=0,max_partitions_per_insert_block=10000,max_query_size=8388608"
	}
	if strings.Join(got, ",") != want {
		t.Fatalf("the session's settings %v, want %s", got, want)
	}
}
