package schemas

import (
	"strings"
	"testing"
)

func TestForReplicatedCluster(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"CREATE DATABASE IF NOT EXISTS lakepipe", "CREATE DATABASE IF NOT EXISTS lakepipe ON CLUSTER `c1`"},
		{"CREATE TABLE IF NOT EXISTS lakepipe.meta (\n key String\n) ENGINE = ReplacingMergeTree(version) ORDER BY key",
			"CREATE TABLE IF NOT EXISTS lakepipe.meta ON CLUSTER `c1` (\n key String\n) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/lakepipe/c1/lakepipe/meta', '{shard}-{replica}', version) ORDER BY key"},
		{"CREATE TABLE IF NOT EXISTS lakepipe.directory (a String) ENGINE = MergeTree ORDER BY (a)",
			"CREATE TABLE IF NOT EXISTS lakepipe.directory ON CLUSTER `c1` (a String) ENGINE = ReplicatedMergeTree('/clickhouse/lakepipe/c1/lakepipe/directory', '{shard}-{replica}') ORDER BY (a)"},
		{"ALTER TABLE lakepipe.x ADD COLUMN y String", "ALTER TABLE lakepipe.x ADD COLUMN y String"},
	} {
		if got := ForReplicatedCluster(tt.in, "c1"); got != tt.want {
			t.Errorf("ForReplicatedCluster(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
	// Every statement of every migration is one it knows: DDL that makes
	// something runs on every node; an ALTER of a catalog table runs on
	// one, and its replicas take it through ZooKeeper.
	for _, m := range Migrations {
		for _, s := range m.Statements {
			if strings.HasPrefix(s, "ALTER TABLE lakepipe.") {
				continue
			}
			if got := ForReplicatedCluster(s, "c1"); !strings.Contains(got, "ON CLUSTER") {
				t.Errorf("migration %d: not rewritten: %s", m.Version, s)
			}
		}
	}
}
