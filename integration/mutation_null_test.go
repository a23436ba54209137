//go:build integration

package integration

import "testing"

// TestMutationsSkipNullConditions: DELETE and UPDATE touch only the rows
// where their WHERE is TRUE. ClickHouse 18.16 deleted the rows where it is
// NULL too (DELETE WHERE c runs as a filter NOT c), and on a
// change-tracked table an UPDATE then removed such rows for good, with no
// trace in the change log.
func TestMutationsSkipNullConditions(t *testing.T) {
	s := newStack(t)
	for _, tracked := range []bool{false, true} {
		name := "plain_nulls"
		if tracked {
			name = "tracked_nulls"
		}
		s.run(`CREATE TABLE ` + name + ` (region STRING, x INT)`)
		if tracked {
			s.run(`ALTER TABLE ` + name + ` SET PROPERTIES ('change_tracking' = 'true')`)
		}
		s.run(`INSERT INTO ` + name + ` VALUES ('us', 1), (NULL, 2), ('eu', 3), ('us', 4), (NULL, 5)`)
		s.run(`DELETE FROM ` + name + ` WHERE region = 'us' AND x = 1`)
		wantRows(t, name+" after DELETE", s.run(`SELECT region, x FROM `+name+` ORDER BY x`), "NULL|2", "eu|3", "us|4", "NULL|5")
		s.run(`UPDATE ` + name + ` SET x = x * 10 WHERE region = 'us'`)
		wantRows(t, name+" after UPDATE", s.run(`SELECT region, x FROM `+name+` ORDER BY x`), "NULL|2", "eu|3", "NULL|5", "us|40")
		s.run(`DELETE FROM ` + name + ` WHERE region != 'eu'`)
		wantRows(t, name+" after the second DELETE", s.run(`SELECT region, x FROM `+name+` ORDER BY x`), "NULL|2", "eu|3", "NULL|5")
	}
}
