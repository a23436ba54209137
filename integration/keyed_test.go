//go:build integration

package integration

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
)

// TestKeyedTableStatements: a table with a PRIMARY KEY keeps one row per
// key, the latest write winning, whatever merges ClickHouse has done;
// UPDATE, DELETE and MERGE INTO change keys, and a stream on the table
// shows a MERGE's updates, deletes and new keys.
func TestKeyedTableStatements(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE users (id BIGINT PRIMARY KEY, name STRING, score INT) PROPERTIES ('change_tracking' = 'true')`)
	desc := map[string]string{}
	for _, r := range table(s.run(`DESC TABLE users EXTENDED`)) {
		desc[r[0]] = r[1]
	}
	if desc["primary_key"] != "id" {
		t.Errorf("DESC TABLE EXTENDED: primary_key %q, want id", desc["primary_key"])
	}
	// Background merges would hide the duplicates FINAL is there for (until
	// the joins: mutations are merges too).
	must(t, s.Store.Exec(s.Ctx, "SYSTEM STOP MERGES "+chsql.Table(s.Schema, "users")))
	s.run(`INSERT INTO users VALUES (1, 'ann', 10), (2, 'bob', 20), (1, 'ann2', 11)`)
	s.run(`INSERT INTO users VALUES (2, 'bob2', 21), (3, 'cy', 30)`)
	s.run(`INSERT INTO users VALUES (4, 'di', 40)`)
	wantRows(t, "rows after inserts with repeated keys", s.run(`SELECT id, name, score FROM users ORDER BY id`), "1|ann2|11", "2|bob2|21", "3|cy|30", "4|di|40")
	if n := s.pipeCount("users"); n != 4 {
		t.Errorf("count() = %d, want 4 (one per key)", n)
	}
	if raw := rawCount(t, s, "users"); raw != 6 {
		t.Errorf("the table holds %d rows, want 6 (merges stopped): the test no longer shows FINAL at work", raw)
	}
	if desc := table(s.run(`DESC TABLE users EXTENDED`)); !strings.Contains(fmt.Sprint(desc), "rows 4") {
		t.Errorf("DESC TABLE EXTENDED counts the rows of every version: %v", desc)
	}
	// Mutations run as merges: DELETE and MERGE INTO need them back.
	must(t, s.Store.Exec(s.Ctx, "SYSTEM START MERGES "+chsql.Table(s.Schema, "users")))
	// A keyed table on the right of a join is deduplicated too.
	s.run(`CREATE TABLE orders (user_id BIGINT NOT NULL, amount INT)`)
	s.run(`INSERT INTO orders VALUES (1, 5), (2, 7), (2, 8)`)
	wantRows(t, "join with a keyed table", s.run(`SELECT o.user_id, u.name, o.amount FROM orders o JOIN users u ON u.id = o.user_id ORDER BY o.amount`),
		"1|ann2|5", "2|bob2|7", "2|bob2|8")

	s.run(`CREATE TABLE STREAM users_changes ON TABLE users`)
	s.run(`UPDATE users SET score = score + 100 WHERE id = 4`)
	s.mustFail(`UPDATE users SET id = 9 WHERE id = 4`, "id is a PRIMARY KEY column")
	s.run(`CREATE TABLE staging (id BIGINT, name STRING, score INT, op STRING)`)
	s.run(`INSERT INTO staging VALUES (1, 'ann3', 1, 'upsert'), (3, NULL, NULL, 'delete'), (5, 'eve', 50, 'upsert'), (6, 'fay', 60, 'delete')`)
	res := s.run(`MERGE INTO users t USING staging s ON t.id = s.id
WHEN MATCHED AND s.op = 'delete' THEN DELETE
WHEN MATCHED THEN UPDATE SET name = s.name, score = t.score + s.score
WHEN NOT MATCHED AND s.op <> 'delete' THEN INSERT (id, name, score) VALUES (s.id, s.name, s.score)`)
	checkMessage(t, fmt.Sprint(res.Message), "1 rows inserted", "1 updated", "1 deleted")
	wantRows(t, "rows after MERGE INTO", s.run(`SELECT id, name, score FROM users ORDER BY id`), "1|ann3|12", "2|bob2|21", "4|di|140", "5|eve|50")
	s.waitStream(`SELECT id, name, score, __change_type FROM users_changes`,
		"1|ann2|11|UPDATE_BEFORE", "1|ann3|12|UPDATE_AFTER", "3|cy|30|DELETE",
		"4|di|40|UPDATE_BEFORE", "4|di|140|UPDATE_AFTER", "5|eve|50|INSERT")
	// The stream is consumed by a statement that reads it; a DELETE then
	// shows alone.
	s.run(`CREATE TABLE audit (id BIGINT, change STRING)`)
	s.run(`INSERT INTO audit SELECT id, __change_type FROM users_changes`)
	s.run(`DELETE FROM users WHERE name = 'bob2'`)
	s.waitStream(`SELECT id, name, __change_type FROM users_changes`, "2|bob2|DELETE")
	wantRows(t, "rows after DELETE", s.run(`SELECT id FROM users ORDER BY id`), "1", "4", "5")
	// An ON that is not the key: a row NOT MATCHED by it may still replace
	// the row of its key, and the change log keeps that one too.
	s.run(`INSERT INTO audit SELECT id, __change_type FROM users_changes`)
	s.run(`MERGE INTO users t USING (SELECT 1 AS id, 'zed' AS name, 0 AS score) s ON t.name = s.name
WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, s.score)`)
	s.waitStream(`SELECT id, name, __change_type FROM users_changes`, "1|ann3|UPDATE_BEFORE", "1|zed|UPDATE_AFTER")

	// A source row whose key is NULL matches nothing (not the key 0 its
	// join value defaults to).
	s.run(`INSERT INTO users VALUES (0, 'zero', 0)`)
	s.run(`INSERT INTO staging VALUES (NULL, 'nobody', 1, 'upsert')`)
	s.run(`MERGE INTO users t USING staging s ON t.id = s.id
WHEN MATCHED AND s.name = 'nobody' THEN UPDATE SET name = s.name
WHEN NOT MATCHED AND s.id IS NOT NULL AND s.name = 'nobody' THEN INSERT VALUES (s.id, s.name, s.score)`)
	wantRows(t, "after a MERGE of a NULL key", s.run(`SELECT id, name FROM users WHERE id = 0`), "0|zero")
	// A key of two columns, tracked and not.
	for _, props := range []string{"", ` PROPERTIES ('change_tracking' = 'true')`} {
		s.run(`CREATE TABLE IF NOT EXISTS pairs (a INT, b STRING, v INT, PRIMARY KEY (a, b))` + props)
		s.run(`INSERT INTO pairs VALUES (1, 'x', 1), (1, 'y', 2), (1, 'x', 3)`)
		s.run(`UPDATE pairs SET v = v + 10 WHERE b = 'y'`)
		s.run(`DELETE FROM pairs WHERE v = 3`)
		s.run(`MERGE INTO pairs t USING (SELECT 1 AS a, 'y' AS b, 0 AS v UNION ALL SELECT 2 AS a, 'z' AS b, 5 AS v) s ON t.a = s.a AND t.b = s.b
WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (s.a, s.b, s.v)`)
		wantRows(t, "a two-column key"+props, s.run(`SELECT a, b, v FROM pairs ORDER BY a, b`), "2|z|5")
		s.run(`DROP TABLE pairs`)
	}
	s.mustFail(`MERGE INTO orders o USING staging s ON o.user_id = s.id WHEN MATCHED THEN DELETE`, "has no PRIMARY KEY")
	s.mustFail(`MERGE INTO users t USING staging s ON t.id > s.id WHEN MATCHED THEN DELETE`, "ON must be equalities")
	s.mustFail(`MERGE INTO users t USING staging s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = 1`, "PRIMARY KEY column")
	s.mustFail(`MERGE INTO users t USING staging s ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = score`, "qualify it")
	s.mustFail(`CREATE TABLE bad (a INT, b INT, PRIMARY KEY (c))`, "PRIMARY KEY names c")
	s.mustFail(`CREATE TABLE bad (a INT, b INT, PRIMARY KEY (a)) PARTITIONED BY (b)`, "partition column b must be part of the PRIMARY KEY")
}

// TestKeyedTableLoadsTracked: loads into a keyed table that tracks changes
// (a volume pipe, a Kafka pipe delivering every record twice, COPY) keep
// the rows they replace: a stream shows each overwrite as an update, a
// new key as an insert, and a summary over the table refreshes
// INCREMENTAL and equals its query.
func TestKeyedTableLoadsTracked(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE kv (id BIGINT PRIMARY KEY, v STRING) PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO kv VALUES (1, 'a'), (2, 'b')`)
	s.run(`CREATE TABLE STREAM kv_changes ON TABLE kv`)
	s.run(`CREATE DYNAMIC TABLE kv_by_v REFRESH INTERVAL 1 HOUR AS SELECT v, COUNT(*) AS n FROM kv GROUP BY v`)
	s.dropAtEnd("DYNAMIC TABLE", "kv_by_v")
	s.run(`CREATE TABLE kv_log (id BIGINT, v STRING, change STRING)`)
	consume := func() { s.run(`INSERT INTO kv_log SELECT id, v, __change_type FROM kv_changes`) }
	refreshed := func(what string) {
		t.Helper()
		time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
		checkMessage(t, s.run(`REFRESH DYNAMIC TABLE kv_by_v`).Message, "INCREMENTAL")
		got := rowsText(s.run(`SELECT v, n FROM kv_by_v ORDER BY v`))
		if want := rowsText(s.run(`SELECT v, COUNT(*) AS n FROM kv GROUP BY v ORDER BY v`)); got != want {
			t.Fatalf("after %s: kv_by_v\n%s\nwant\n%s", what, indent(got), indent(want))
		}
	}

	s.volume("kv_vol", "kv", true)
	s.run(`CREATE PIPE kv_files INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO kv FROM VOLUME kv_vol USING CSV`)
	s.dropAtEnd("PIPE", "kv_files")
	s.put("kv/a.csv", []byte("1,a2\n3,c\n3,c2\n"))
	s.waitStream(`SELECT id, v, __change_type FROM kv_changes`, "1|a|UPDATE_BEFORE", "1|a2|UPDATE_AFTER", "3|c2|INSERT")
	refreshed("a file pipe's load")
	consume()

	topic := "kv_" + s.ID
	prod := kafkaTopic(t, topic, 2)
	s.run(fmt.Sprintf(`CREATE PIPE kv_kafka BATCH_INTERVAL_IN_SECONDS = '1' AS COPY INTO kv FROM (
SELECT CAST(PARSE_JSON(VALUE::STRING)['id'] AS BIGINT) AS id, PARSE_JSON(VALUE::STRING)['v']::STRING AS v
FROM TABLE(READ_KAFKA('%s', '%s', '', '%s', '', '', '', '', 'raw', 'raw', 0, map())))`, kafkaAddr, topic, "kv_"+s.ID))
	s.dropAtEnd("PIPE", "kv_kafka")
	two, four := `{"id": 2, "v": "b2"}`, `{"id": 4, "v": "d"}`
	produce(t, prod, two, two, four, four)
	s.waitStream(`SELECT id, v, __change_type FROM kv_changes`, "2|b|UPDATE_BEFORE", "2|b2|UPDATE_AFTER", "4|d|INSERT")
	refreshed("a Kafka batch with every record twice")
	consume()

	s.volume("kv_copy_vol", "kvcopy", false) // not under the pipe's volume
	s.put("kvcopy/b.csv", []byte("4,d2\n5,e\n"))
	s.run(`COPY INTO kv FROM VOLUME kv_copy_vol USING CSV FILES('b.csv')`)
	s.waitStream(`SELECT id, v, __change_type FROM kv_changes`, "4|d|UPDATE_BEFORE", "4|d2|UPDATE_AFTER", "5|e|INSERT")
	refreshed("COPY INTO")
	consume()

	// A streaming write: staged, shown whole, the rows it replaces kept.
	s.flushRows("kv", []any{int64(5), "e2"}, []any{int64(6), "f"})
	s.waitStream(`SELECT id, v, __change_type FROM kv_changes`, "5|e|UPDATE_BEFORE", "5|e2|UPDATE_AFTER", "6|f|INSERT")
	refreshed("a streaming write")
	wantRows(t, "kv at the end", s.run(`SELECT id, v FROM kv ORDER BY id`), "1|a2", "2|b2", "3|c2", "4|d2", "5|e2", "6|f")
}

// TestKeyedTableKafkaTwice: a Kafka pipe whose topic delivers every record
// twice, into a keyed table: the table shows each key once at every
// moment sampled while the pipe loads, and every key in the end.
func TestKeyedTableKafkaTwice(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE events (id BIGINT PRIMARY KEY, level STRING, message STRING)`)
	must(t, s.Store.Exec(s.Ctx, "SYSTEM STOP MERGES "+chsql.Table(s.Schema, "events")))
	topic := "twice_" + s.ID
	prod := kafkaTopic(t, topic, 3)
	s.run(fmt.Sprintf(`CREATE PIPE twice BATCH_INTERVAL_IN_SECONDS = '1' AS COPY INTO events FROM (
SELECT CAST(PARSE_JSON(VALUE::STRING)['id'] AS BIGINT) AS id,
       PARSE_JSON(VALUE::STRING)['level']::STRING AS level,
       PARSE_JSON(VALUE::STRING)['message']::STRING AS message
FROM TABLE(READ_KAFKA('%s', '%s', '', '%s', '', '', '', '', 'raw', 'raw', 0, map())))`, kafkaAddr, topic, "twice_"+s.ID))
	s.dropAtEnd("PIPE", "twice")

	const rounds, perRound = 10, 100
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := 0; r < rounds; r++ {
			var vals []string
			for i := 0; i < perRound; i++ {
				id := r*perRound + i
				v := fmt.Sprintf(`{"id": %d, "level": "INFO", "message": "event %d"}`, id, id)
				vals = append(vals, v, v) // every record twice, the copies in other partitions
			}
			produce(t, prod, vals...)
			time.Sleep(300 * time.Millisecond)
		}
	}()
	samples, lastCount := 0, int64(0)
	pipeWait(t, 2*time.Minute, "every key loaded", func() bool {
		r := table(s.run(`SELECT count(), count(DISTINCT id) FROM events`))
		if r[0][0] != r[0][1] {
			t.Fatalf("count() = %s but %s distinct keys: a key shows twice", r[0][0], r[0][1])
		}
		samples++
		lastCount, _ = strconv.ParseInt(r[0][0], 10, 64)
		return lastCount == rounds*perRound
	})
	wg.Wait()
	t.Logf("%d samples, each with one row per key", samples)
	// The pipe did load every copy (merges are stopped): FINAL hid them.
	if raw := rawCount(t, s, "events"); raw != 2*rounds*perRound {
		t.Errorf("the table holds %d rows, want %d (every record twice)", raw, 2*rounds*perRound)
	}
}

// rawCount counts a table's stored rows, every version of a key.
func rawCount(t *testing.T, s *Stack, tbl string) int64 {
	t.Helper()
	n, err := s.Store.Strings(s.Ctx, "SELECT count() FROM "+chsql.Table(s.Schema, tbl))
	must(t, err)
	v, err := strconv.ParseInt(n[0], 10, 64)
	must(t, err)
	return v
}
