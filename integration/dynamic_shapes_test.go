//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDynamicTableQueryShapes: dynamic tables whose queries select a
// group key twice, name their tables by alias or by name (summaries,
// rows, rows with s.* of a join, a summary of a join), or read a WITH
// query, over change-tracked tables. After every refresh each equals its
// query run afresh; refreshes after the first are INCREMENTAL while only
// rows come, and FULL, saying why, after a change only a FULL refresh can
// take even when no new source row comes with it: a new row of a table
// joined to the changing one, a DELETE. The WITH query's name is not one
// of its sources, even when a dynamic table has that name.
func TestDynamicTableQueryShapes(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE sales (region STRING, amount DECIMAL(10,2), cust INT)`)
	s.run(`CREATE TABLE cust (id INT, country STRING)`)
	s.run(`INSERT INTO cust VALUES (1, 'fr'), (2, 'de'), (3, 'it')`)
	s.run(`ALTER TABLE sales SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`ALTER TABLE cust SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO sales VALUES ('eu', 10.00, 1), ('eu', 250.00, 2), ('us', 0.00, 3), ('asia', 120.50, 4)`)

	type shape struct {
		name, query, cols string // cols: the table's columns, in order
		full              bool
		rows              bool // a table of rows (not a summary): a DELETE takes its rows back by source commit
	}
	shapes := []shape{
		{name: "sh_twice", query: `SELECT region, region AS r2, COUNT(*) AS n FROM sales GROUP BY region`, cols: "region, r2, n"},
		{name: "sh_alias", query: `SELECT s.region, COUNT(*) AS n, SUM(s.amount) AS total FROM sales s WHERE s.amount > 0 GROUP BY s.region`, cols: "region, n, total"},
		{name: "sh_tname", query: `SELECT sales.region, COUNT(*) AS n FROM sales WHERE sales.amount > 0 GROUP BY sales.region`, cols: "region, n"},
		{name: "sh_rows_alias", query: `SELECT s.region, s.amount FROM sales AS s WHERE s.amount > 0`, cols: "region, amount", rows: true},
		{name: "sh_star_join", query: `SELECT s.*, c.country FROM sales s JOIN cust c ON s.cust = c.id`, cols: "region, amount, cust, country", rows: true},
		{name: "sh_agg_join", query: `SELECT c.country, COUNT(*) AS n, SUM(s.amount) AS total FROM sales s LEFT JOIN cust c ON s.cust = c.id GROUP BY c.country`,
			cols: "country, n, total"},
		{name: "sh_with", query: `WITH big AS (SELECT region, amount FROM sales WHERE amount > 100) SELECT region, amount FROM big`, cols: "region, amount", full: true},
	}
	// A dynamic table with the name of sh_with's WITH query: not its
	// upstream.
	s.run(`CREATE DYNAMIC TABLE big REFRESH INTERVAL 1 HOUR AS SELECT region, COUNT(*) AS n FROM sales GROUP BY region`)
	s.dropAtEnd("DYNAMIC TABLE", "big")
	for _, sh := range shapes {
		s.run(fmt.Sprintf(`CREATE DYNAMIC TABLE %s REFRESH INTERVAL 1 HOUR AS %s`, sh.name, sh.query))
		s.dropAtEnd("DYNAMIC TABLE", sh.name)
	}
	same := func(when string, sh shape, mode string) {
		t.Helper()
		res := s.run(`SELECT * FROM ` + sh.name + ` ORDER BY ` + sh.cols)
		wantColumns(t, sh.name, res, strings.Split(sh.cols, ", ")...)
		if got, want := rowsText(res), rowsText(s.run(`SELECT * FROM (`+sh.query+`) ORDER BY `+sh.cols)); got != want {
			t.Fatalf("%s, %s (%s): the dynamic table\n%s\nwant (the query afresh)\n%s", when, sh.name, mode, indent(got), indent(want))
		}
	}
	// refresh refreshes every table once the changes are readable and
	// checks each: its mode (FULL for the tables in full, INCREMENTAL for
	// the others), the history's reason for a FULL one, its contents.
	const either = "\x00either" // in full: INCREMENTAL or FULL, both right
	refresh := func(when string, full map[string]string) {
		t.Helper()
		time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
		for _, sh := range shapes {
			msg := s.run(`REFRESH DYNAMIC TABLE ` + sh.name).Message
			if strings.Contains(msg, "after its upstream") {
				t.Fatalf("%s, %s: refreshed after an upstream: %s", when, sh.name, msg)
			}
			why, isFull := full[sh.name]
			mode := "INCREMENTAL"
			if sh.full || isFull {
				mode = "FULL"
			}
			if why == either {
				why, mode = "", "FULL"
				if strings.Contains(msg, "(INCREMENTAL)") {
					mode = "INCREMENTAL"
				}
			}
			if !strings.Contains(msg, "("+mode+")") {
				h := s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = '` + sh.name + `' LIMIT 1`)
				t.Fatalf("%s, %s: refreshed %q, want %s\n%s", when, sh.name, msg, mode, rowsText(h))
			}
			if why != "" {
				h := s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = '` + sh.name + `' LIMIT 1`)
				if r := table(h); len(r) != 1 || !strings.Contains(r[0][column(t, h, "mode_reason")], why) {
					t.Fatalf("%s, %s: the history's reason, want one saying %q:\n%s", when, sh.name, why, rowsText(h))
				}
			}
			same(when, sh, mode)
		}
	}
	refresh("the first refresh", nil)
	for round := 0; round < 3; round++ {
		s.run(fmt.Sprintf(`INSERT INTO sales VALUES ('eu', %d.25, 1), ('us', %d.00, 2), ('africa', 150.00, %d), (NULL, 5.00, 3)`, round, 200+round, 5+round))
		if round == 1 {
			s.run(`INSERT INTO sales VALUES ('eu', 0.00, 2)`) // two commits in one refresh
		}
		refresh(fmt.Sprintf("round %d", round), nil)
	}

	// reason says that a refresh of each table named took rows back.
	reason := func(when string, names []string, want string) {
		t.Helper()
		for _, name := range names {
			h := s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = '` + name + `' LIMIT 1`)
			if r := table(h); len(r) != 1 || !strings.Contains(r[0][column(t, h, "mode_reason")], want) {
				t.Fatalf("%s, %s: the history's reason, want one saying %q:\n%s", when, name, want, rowsText(h))
			}
		}
	}
	// A new row of the dimension table, no new sales: the table of rows
	// joining it writes the rows of the sales rows that join the new
	// rows (its marker row must not take the version past the
	// change without them), the summary joining it the groups the new
	// rows join, the others have nothing new.
	s.run(`INSERT INTO cust VALUES (5, 'za'), (6, 'ng')`)
	refresh("after a change of the dimension alone", nil)
	reason("after a change of the dimension alone", []string{"sh_star_join"}, "joining changed rows of a joined table were written again")
	s.run(`INSERT INTO sales VALUES ('africa', 7.00, 6)`)
	refresh("after the change of the dimension, new sales", nil)

	// A DELETE, no new sales: the summaries (COUNT and SUM) take the rows
	// back, and the group 'us' goes; the tables of rows take back the
	// rows the deleted rows gave.
	s.run(`DELETE FROM sales WHERE region = 'us'`)
	var rows []string
	for _, sh := range shapes {
		if sh.rows {
			rows = append(rows, sh.name)
		}
	}
	// (A table of rows whose removed rows gave half its rows or more is
	// rebuilt instead: with these few rows, either.)
	eitherMode := map[string]string{}
	for _, name := range rows {
		eitherMode[name] = either
	}
	refresh("after a DELETE alone", eitherMode)
	reason("after a DELETE alone", rows, "taken back")
	s.run(`INSERT INTO sales VALUES ('us', 300.00, 1)`)
	refresh("after the DELETE, new sales", nil)
	// An UPDATE moves rows from one group to another.
	s.run(`UPDATE sales SET region = 'eu', amount = amount + 1 WHERE region = 'africa'`)
	refresh("after an UPDATE", eitherMode)
	reason("after an UPDATE", rows, "taken back")

	d := map[string]string{}
	for _, r := range table(s.run(`DESC DYNAMIC TABLE sh_with`)) {
		d[r[0]] = r[1]
	}
	if d["source_tables"] != s.Schema+".sales" {
		t.Fatalf("DESC DYNAMIC TABLE sh_with: source_tables %q, want %s.sales (the WITH query's name is not a table)", d["source_tables"], s.Schema)
	}
}
