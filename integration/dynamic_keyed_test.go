//go:build integration

package integration

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// TestDynamicTableKeyedSource: summaries over a keyed table (PRIMARY KEY)
// that tracks changes, joined with a keyed dimension table. Random inserts
// that overwrite keys, MERGE INTO upserts and deletes, UPDATEs and DELETEs:
// an overwrite is an update to them (the replaced row taken back or its
// group recomputed), after every round each table equals its query run
// afresh, and at least 90 % of the refreshes after the first are
// INCREMENTAL.
func TestDynamicTableKeyedSource(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	rng := rand.New(rand.NewSource(testSeed(t, "LAKEPIPE_TEST_SEED")))
	s.run(`CREATE TABLE kfacts (id INT PRIMARY KEY, k STRING, g INT, x DECIMAL(10,2)) PROPERTIES ('change_tracking' = 'true')`)
	s.run(`CREATE TABLE kdim (g INT PRIMARY KEY, label STRING) PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO kdim VALUES (0, 'zero'), (1, 'one'), (2, 'two'), (3, 'three')`)
	s.run(`CREATE TABLE kstage (id INT, k STRING, g INT, x DECIMAL(10,2), del INT)`)
	// upsert writes n random rows of ids 0..39: most overwrite a key.
	rows := func(n int, del bool) string {
		vals := make([]string, n)
		for i := range vals {
			k := fmt.Sprintf("'k%d'", rng.Intn(5))
			if rng.Intn(10) == 0 {
				k = "NULL"
			}
			x := fmt.Sprintf("%d.%02d", rng.Intn(100), rng.Intn(100))
			if rng.Intn(8) == 0 {
				x = "NULL"
			}
			vals[i] = fmt.Sprintf("(%d, %s, %d, %s", rng.Intn(40), k, rng.Intn(6), x)
			if del {
				vals[i] += fmt.Sprintf(", %d", rng.Intn(3)/2)
			}
			vals[i] += ")"
		}
		return strings.Join(vals, ", ")
	}
	tables := map[string]string{
		"k_sum":  `SELECT k, COUNT(*) AS n, COUNT(x) AS cx, SUM(x) AS sx, AVG(x) AS ax FROM kfacts GROUP BY k`,
		"k_all":  `SELECT k, MIN(x) AS mn, MAX(x) AS mx, COUNT(DISTINCT g) AS dg FROM kfacts GROUP BY k`,
		"k_join": `SELECT m.label, COUNT(*) AS n, SUM(f.x) AS sx FROM kfacts f LEFT JOIN kdim m ON f.g = m.g GROUP BY m.label`,
	}
	cols := map[string]string{"k_sum": "k, n, cx, sx, ax", "k_all": "k, mn, mx, dg", "k_join": "label, n, sx"}
	s.run(`INSERT INTO kfacts VALUES ` + rows(30, false))
	for name, q := range tables {
		s.run(`CREATE DYNAMIC TABLE ` + name + ` REFRESH INTERVAL 1 HOUR AS ` + q)
		s.dropAtEnd("DYNAMIC TABLE", name)
	}
	changes := []func(){
		func() { s.run(`INSERT INTO kfacts VALUES ` + rows(1+rng.Intn(8), false)) },
		func() {
			s.run(`DELETE FROM kstage`)
			s.run(`INSERT INTO kstage VALUES ` + rows(1+rng.Intn(8), true))
			s.run(`MERGE INTO kfacts t USING kstage s ON t.id = s.id
WHEN MATCHED AND s.del = 1 THEN DELETE
WHEN MATCHED THEN UPDATE SET k = s.k, g = s.g, x = s.x
WHEN NOT MATCHED AND s.del = 0 THEN INSERT VALUES (s.id, s.k, s.g, s.x)`)
		},
		func() { s.run(fmt.Sprintf(`UPDATE kfacts SET x = x + 2 WHERE g = %d`, rng.Intn(6))) },
		func() { s.run(fmt.Sprintf(`DELETE FROM kfacts WHERE id %% 7 = %d`, rng.Intn(7))) },
		func() { s.run(fmt.Sprintf(`INSERT INTO kdim VALUES (%d, 'L%d')`, rng.Intn(8), rng.Intn(3))) },
		func() {
			// Written and overwritten between two refreshes.
			s.run(`INSERT INTO kfacts VALUES (100, 'k1', 1, 5.00)`)
			s.run(`INSERT INTO kfacts VALUES (100, 'k2', 2, 6.00)`)
		},
	}
	modes := map[string]int{}
	for round := 0; round < 10; round++ {
		for n := 1 + rng.Intn(2); n > 0; n-- {
			changes[rng.Intn(len(changes))]()
		}
		time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
		refreshAndCheck(t, s, round, tables, cols, modes)
	}
	mostlyIncremental(t, modes)
}
