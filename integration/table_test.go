//go:build integration

package integration

import (
	"strings"
	"sync"
	"testing"

	"github.com/lakepipe/lakepipe/internal/chsql"
)

// TestTableLifecycle covers CREATE, DROP, UNDROP and DROP IF EXISTS.
func TestTableLifecycle(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE orders (id BIGINT, amount DECIMAL(10,2)); INSERT INTO orders VALUES (1, 10.50), (2, 20.25)`)

	res := s.run(`DROP TABLE orders`)
	if !strings.Contains(res.Message, "UNDROP") {
		t.Errorf("DROP TABLE said %q; want it to mention UNDROP", res.Message)
	}
	s.mustFail(`SELECT * FROM orders`, "orders")
	if rows := s.run(`SHOW TABLES LIKE 'orders'`).Rows; len(rows) != 0 {
		t.Errorf("SHOW TABLES lists the dropped table: %v", rows)
	}

	s.run(`UNDROP TABLE orders`)
	wantRows(t, "undropped table keeps its rows", s.run(`SELECT id, amount FROM orders ORDER BY id`), "1|10.50", "2|20.25")
	s.mustFail(`UNDROP TABLE orders`, "orders", "exists")

	// Drop, create anew, drop again: UNDROP brings back the newest.
	s.run(`DROP TABLE orders; CREATE TABLE orders (id BIGINT, amount DECIMAL(10,2)); INSERT INTO orders VALUES (3, 30.00); DROP TABLE orders; UNDROP TABLE orders`)
	wantRows(t, "UNDROP restores the latest drop", s.run(`SELECT id, amount FROM orders`), "3|30.00")

	res = s.run(`DROP TABLE IF EXISTS never_was`)
	if !strings.Contains(res.Message, "never_was") {
		t.Errorf("DROP TABLE IF EXISTS of a missing table said %q", res.Message)
	}
	s.mustFail(`DROP TABLE never_was`, "never_was", "does not exist")
	s.mustFail(`UNDROP TABLE never_was`, "never_was")
}

// TestInsert covers INSERT … VALUES (with casts and NULLs), INSERT …
// SELECT, and INSERT with a column list.
func TestInsert(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE src (id INT, name STRING, price DECIMAL(10,2), ok BOOLEAN, day DATE, ts TIMESTAMP, score DOUBLE)`)
	res := s.run(`INSERT INTO src VALUES (1, 'a', 1.10, TRUE, '2026-06-01', '2026-06-01 10:20:30', 0.5), (2, 'b''s', 2.20, FALSE, '2026-06-02', '2026-06-02 00:00:00', NULL), (3, NULL, NULL, NULL, NULL, NULL, 1000.5)`)
	if !strings.HasPrefix(res.Message, "3 rows inserted") {
		t.Errorf("INSERT said %q, want 3 rows inserted", res.Message)
	}
	wantRows(t, "src", s.run(`SELECT id, name, price, ok, day, ts, score FROM src ORDER BY id`),
		"1|a|1.10|1|2026-06-01|2026-06-01 10:20:30|0.5",
		"2|b's|2.20|0|2026-06-02|2026-06-02 00:00:00|NULL",
		"3|NULL|NULL|NULL|NULL|NULL|1000.5")

	s.run(`CREATE TABLE dst (id BIGINT, name STRING, total DECIMAL(12,2))`)
	res = s.run(`INSERT INTO dst SELECT id, name, price * 2 FROM src WHERE price IS NOT NULL`)
	if !strings.HasPrefix(res.Message, "2 rows inserted") {
		t.Errorf("INSERT … SELECT said %q, want 2 rows inserted", res.Message)
	}
	s.run(`INSERT INTO dst (name, id) VALUES ('only name', 9)`)
	wantRows(t, "dst", s.run(`SELECT id, name, total FROM dst ORDER BY id`), "1|a|2.20", "2|b's|4.40", "9|only name|NULL")

	s.mustFail(`INSERT INTO dst VALUES (1, 'x')`, "dst", "2 values", "3 columns")
	s.mustFail(`INSERT INTO dst (nope) VALUES (1)`, "dst", "nope")
	s.mustFail(`INSERT INTO missing_table VALUES (1)`, "missing_table", "does not exist")
}

// TestInsertOverwriteReadsFirst: INSERT OVERWRITE runs its query before it
// empties the table, so that a query of the table itself keeps its rows
// (the common de-duplication idiom) and a query that fails leaves the
// table as it was; on a plain table and on one that tracks changes.
func TestInsertOverwriteReadsFirst(t *testing.T) {
	s := newStack(t)
	for _, tbl := range []string{"dup", "dup_tracked"} {
		s.run(`CREATE TABLE ` + tbl + ` (id INT, v STRING)`)
		if tbl == "dup_tracked" {
			s.run(`ALTER TABLE ` + tbl + ` SET PROPERTIES ('change_tracking' = 'true')`)
		}
		s.run(`INSERT INTO ` + tbl + ` VALUES (1, 'a'), (1, 'a'), (2, 'b')`)
		res := s.run(`INSERT OVERWRITE ` + tbl + ` SELECT DISTINCT id, v FROM ` + tbl)
		if !strings.HasPrefix(res.Message, "2 rows inserted") {
			t.Errorf("%s: INSERT OVERWRITE said %q, want 2 rows inserted", tbl, res.Message)
		}
		wantRows(t, tbl+" after INSERT OVERWRITE … SELECT DISTINCT from itself", s.run(`SELECT id, v FROM `+tbl+` ORDER BY id`), "1|a", "2|b")
		s.mustFail(`INSERT OVERWRITE `+tbl+` SELECT id + v, v FROM `+tbl, tbl)
		wantRows(t, tbl+" after an INSERT OVERWRITE whose query failed", s.run(`SELECT id, v FROM `+tbl+` ORDER BY id`), "1|a", "2|b")
	}
}

// TestDescShowAlterTable covers DESC TABLE (types, comments), DESC TABLE
// EXTENDED with properties, ALTER TABLE … SET PROPERTIES and SHOW TABLES
// LIKE.
func TestDescShowAlterTable(t *testing.T) {
	s := newStack(t)
	s.run(salesSourceDDL)
	s.run(`CREATE TABLE sales_ods (id BIGINT, flag BOOLEAN NOT NULL, at TIMESTAMP, d DATE, tags ARRAY<STRING>) COMMENT 'ods'`)
	s.run(`CREATE TABLE other (x INT)`)

	res := s.run(`DESC TABLE sales_source`)
	wantColumns(t, "DESC TABLE", res, "column_name", "data_type", "comment")
	for _, r := range res.Rows {
		// DECIMAL(10,2) and DECIMAL(10, 2) are the same type.
		if typ, ok := r[1].(string); ok {
			r[1] = strings.ReplaceAll(typ, " ", "")
		}
	}
	wantRows(t, "DESC TABLE sales_source", res,
		"id|BIGINT|订单ID", "product|STRING|商品名", "category|STRING|品类", "amount|DECIMAL(10,2)|金额", "dt|STRING|日期")
	wantRows(t, "DESC TABLE sales_ods", s.run(`DESC TABLE sales_ods`),
		"id|BIGINT|", "flag|BOOLEAN|", "at|TIMESTAMP|", "d|DATE|", "tags|ARRAY<STRING>|")

	// The declared types reach ClickHouse as the mapped types.
	// (Read through the store: lakepipe SQL cannot read system tables.)
	chTypes, err := s.Store.Strings(s.Ctx, `SELECT concat(name, '|', type) FROM system.columns WHERE database = '`+s.Schema+`' AND table = 'sales_ods' AND name IN ('at', 'd', 'flag', 'id', 'tags') ORDER BY name`)
	if got, want := strings.Join(chTypes, "\n"), "at|Nullable(DateTime)\nd|Nullable(Date)\nflag|UInt8\nid|Nullable(Int64)\ntags|Array(Nullable(String))"; err != nil || got != want {
		t.Errorf("ClickHouse types (%v):\n got rows:\n%s\nwant:\n%s", err, indent(got), indent(want))
	}

	res = s.run(`SHOW TABLES LIKE 'sales%'`)
	if got := rowsText(res); got != s.Schema+"|sales_ods|false|false|false|false\n"+s.Schema+"|sales_source|false|false|false|false" {
		t.Errorf("SHOW TABLES LIKE 'sales%%':\n%s", indent(got))
	}
	if got := s.run(`SHOW TABLES`); len(got.Rows) != 3 {
		t.Errorf("SHOW TABLES lists %d tables, want 3: %v", len(got.Rows), table(got))
	}

	extended := func() map[string]string {
		m := map[string]string{}
		for _, r := range table(s.run(`DESC TABLE EXTENDED sales_ods`)) {
			m[r[0]] = r[1]
		}
		return m
	}
	if v, ok := extended()["properties.change_tracking"]; ok {
		t.Errorf("change_tracking is %q before it was set", v)
	}
	s.run(`INSERT INTO sales_ods (id, flag) VALUES (1, TRUE), (2, FALSE)`)
	res = s.run(`ALTER TABLE sales_ods SET PROPERTIES ('change_tracking' = 'true')`)
	if !strings.Contains(res.Message, "sales_ods") {
		t.Errorf("ALTER TABLE said %q", res.Message)
	}
	ext := extended()
	for k, v := range map[string]string{"properties.change_tracking": "true", "comment": "ods", "rows": "2", "name": "sales_ods", "schema": s.Schema} {
		if ext[k] != v {
			t.Errorf("DESC TABLE EXTENDED %s = %q, want %q (all: %v)", k, ext[k], v, ext)
		}
	}
	s.run(`ALTER TABLE sales_ods SET PROPERTIES ('change_tracking' = 'false')`)
	if v := extended()["properties.change_tracking"]; v != "false" {
		t.Errorf("change_tracking after setting it false = %q", v)
	}
	s.mustFail(`ALTER TABLE sales_ods SET PROPERTIES ('no_such_thing' = '1')`, "sales_ods", "no_such_thing")
	s.mustFail(`ALTER TABLE sales_ods SET PROPERTIES ('change_tracking' = 'maybe')`, "change_tracking", "maybe")
}

// TestDeleteUpdate checks that DELETE and UPDATE change exactly the rows
// their WHERE names and are finished when the statement returns.
func TestDeleteUpdate(t *testing.T) {
	s := newStack(t)
	s.run(salesSourceDDL)
	s.run(salesInsert)
	s.run(`DELETE FROM sales_source WHERE category = 'Sports' AND amount < 500`)
	wantRows(t, "after DELETE", s.run(`SELECT id FROM sales_source ORDER BY id`), "1", "2", "3", "4")
	s.run(`UPDATE sales_source SET amount = amount * 2, dt = '2026-06-02' WHERE id IN (1, 4)`)
	wantRows(t, "after UPDATE", s.run(`SELECT id, amount, dt FROM sales_source ORDER BY id`),
		"1|17998.00|2026-06-02", "2|14999.00|2026-06-01", "3|1299.00|2026-06-01", "4|1798.00|2026-06-02")
	s.run(`DELETE FROM sales_source`)
	if n := scalar(t, s.run(`SELECT COUNT(*) FROM sales_source`)); n != "0" {
		t.Errorf("DELETE without WHERE left %s rows", n)
	}
	s.mustFail(`UPDATE sales_source SET nope = 1`, "sales_source", "nope")
	s.mustFail(`DELETE FROM nowhere WHERE id = 1`, "nowhere", "does not exist")
}

// TestInsertRepeatedValues: equal values in a row and a SELECT naming one
// column twice fill every column (rows are wrapped to add their commit
// id, which must not merge same-named columns).
func TestInsertRepeatedValues(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE pairs (a INT, b INT, c STRING)`)
	s.run(`INSERT INTO pairs VALUES (1, 1, 'x'), (2, 2, 'y')`)
	s.run(`INSERT INTO pairs SELECT a, a, c FROM pairs WHERE a = 1`)
	s.run(`INSERT INTO pairs (a, b, c) SELECT a + 10 AS a10, a + 10, c FROM pairs WHERE a = 2 UNION ALL SELECT 7, 7, 'z'`)
	wantRows(t, "pairs", s.run(`SELECT a, b, c FROM pairs ORDER BY a, c`), "1|1|x", "1|1|x", "2|2|y", "7|7|z", "12|12|y")
}

// TestFailingDMLLeavesNoMutation: a DELETE or UPDATE whose expression fails
// on the table's rows fails as a statement and leaves no mutation behind.
// A failing mutation would never finish, and on ClickHouse 18.16 (no KILL
// MUTATION) every later mutation of the table, a pipe's clean-up of a
// dead load included, would wait behind it for ever.
func TestFailingDMLLeavesNoMutation(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE fm (id BIGINT, name STRING)`)
	s.run(`INSERT INTO fm VALUES (1, '1'), (2, 'two'), (3, '3')`)
	s.mustFail(`DELETE FROM fm WHERE id % (id - 2) = 0`, "cannot run on its rows") // modulo by zero at id 2
	s.mustFail(`UPDATE fm SET name = CAST(id % (id - 2) AS STRING) WHERE id > 0`, "cannot run on its rows")
	n, err := s.Store.Strings(s.Ctx, "SELECT count() FROM system.mutations WHERE database = "+chsql.QuoteString(s.Schema)+" AND table = 'fm' AND is_done = 0")
	if err != nil || len(n) != 1 || n[0] != "0" {
		t.Fatalf("unfinished mutations of fm: %v %v, want none", n, err)
	}
	s.run(`DELETE FROM fm WHERE id = 1`) // not held back
	wantRows(t, "after the DELETE", s.run(`SELECT COUNT(*) FROM fm`), "2")
}

// TestInsertCountsItsOwnRows: an INSERT reports, and registers in the
// change log, the rows it wrote, while other writes go into the same table
// (a pipe loading it). It counted the table before and after, and took the
// rows of every write that ended in between for its own.
func TestInsertCountsItsOwnRows(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE cnt (id BIGINT)`)
	s.run(`ALTER TABLE cnt SET PROPERTIES ('change_tracking' = 'true')`)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Store.Exec(s.Ctx, "INSERT INTO "+chsql.Table(s.Schema, "cnt")+" (id) SELECT number FROM system.numbers LIMIT 1000"); err != nil {
				t.Error(err)
				return
			}
		}
	})
	defer wg.Wait()
	defer close(stop)
	for i := range 20 {
		if msg := s.run(`INSERT INTO cnt VALUES (1), (2), (3)`).Message; !strings.HasPrefix(msg, "3 rows inserted") {
			t.Fatalf("INSERT %d beside other writes: %q, want 3 rows", i, msg)
		}
	}
	rows, err := s.Store.Strings(s.Ctx, "SELECT DISTINCT toString(rows) FROM lakepipe.table_commits WHERE db = "+chsql.QuoteString(s.Schema)+" AND table = 'cnt' AND kind = 'INSERT'")
	if err != nil || strings.Join(rows, ",") != "3" {
		t.Fatalf("the INSERTs' commits register %v rows (%v), want 3 each", rows, err)
	}
}
