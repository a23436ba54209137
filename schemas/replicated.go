package schemas

import (
	"regexp"
	"strings"
)

var (
	createDB    = regexp.MustCompile(`^(CREATE DATABASE IF NOT EXISTS \w+)$`)
	createTable = regexp.MustCompile(`(?s)^(CREATE TABLE IF NOT EXISTS (\w+)\.(\w+)) (\(.*\) ENGINE = )(\w*MergeTree)(\(([^)]*)\))?(.*)$`)
)

// ForReplicatedCluster rewrites a migration statement for a cluster whose
// servers share a Keeper: it runs ON CLUSTER, and the system tables become
// Replicated*MergeTree tables under one Keeper path per table, with every
// node a replica ({shard}-{replica} names it), so that every node holds the
// whole catalog and its histories. Statements it does not know are
// returned unchanged; the migrations only create databases and tables.
func ForReplicatedCluster(stmt, cluster string) string {
	on := " ON CLUSTER `" + strings.ReplaceAll(cluster, "`", "``") + "`"
	if m := createDB.FindStringSubmatch(stmt); m != nil {
		return m[1] + on
	}
	m := createTable.FindStringSubmatch(stmt)
	if m == nil {
		return stmt
	}
	args := "'/clickhouse/lakepipe/" + strings.ReplaceAll(cluster, "'", "") + "/" + m[2] + "/" + m[3] + "', '{shard}-{replica}'"
	if m[7] != "" {
		args += ", " + m[7]
	}
	return m[1] + on + " " + m[4] + "Replicated" + m[5] + "(" + args + ")" + m[8]
}
