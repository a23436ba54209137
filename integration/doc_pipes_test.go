//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDocPipeGuidePipes runs the two pipes of the ClickZetta Lakehouse
// documentation's pipe guide ("Pipe 与 Table Stream") statement for
// statement, with only the storage connection, the bucket and the Kafka
// address made the local stack's: the volume pipe with an inline schema
// over CSV files with a header (orders_oss_pipe), and the Kafka pipe that
// keeps each message whole (kafka_orders_pipe into orders_raw), then the
// guide's monitoring and management statements.
func TestDocPipeGuidePipes(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	conn := s.connection()
	run := "run-" + s.ID

	// The volume pipe.
	for _, q := range []string{
		fmt.Sprintf(`CREATE EXTERNAL VOLUME orders_pipe_vol
LOCATION '%s'
USING CONNECTION %s
DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE)
RECURSIVE = TRUE;`, s.location("orders_incoming"), conn),
		`CREATE TABLE IF NOT EXISTS orders (
order_id INT,
amount DECIMAL(10,2),
status STRING
);`,
		`CREATE PIPE orders_oss_pipe
VIRTUAL_CLUSTER = 'default'
INGEST_MODE = 'LIST_PURGE'
AS
COPY INTO orders
FROM VOLUME orders_pipe_vol (order_id INT, amount DECIMAL(10,2), status STRING)
USING CSV OPTIONS('header' = 'true')
PURGE = TRUE;`,
	} {
		s.run(q)
	}
	s.dropAtEnd("VOLUME", "orders_pipe_vol")
	s.put("orders_incoming/2026-12-04/orders-1.csv", []byte("order_id,amount,status\n1,10.50,PAID\n2,3.00,NEW\n"))
	// 约 30 秒检测一次; the guide's REFRESH scans at once.
	s.run(`ALTER PIPE orders_oss_pipe REFRESH;`)
	pipeWait(t, 30*time.Second, "orders-1.csv loads", func() bool { return s.pipeCount("orders") == 2 })
	wantRows(t, "orders", s.run(`SELECT order_id, amount, status FROM orders ORDER BY order_id`), "1|10.50|PAID", "2|3.00|NEW")
	pipeWait(t, 30*time.Second, "LIST_PURGE removes the loaded file", func() bool { return len(s.files("orders_incoming")) == 0 })
	lh := s.run(`SELECT * FROM load_history('orders');`)
	for _, c := range []string{"file_path", "last_copy_time", "file_size", "status", "first_error_message"} {
		column(t, lh, c)
	}
	if r := table(lh); len(r) != 1 || r[0][column(t, lh, "status")] != "LOADED" || !strings.HasSuffix(r[0][column(t, lh, "file_path")], "orders-1.csv") {
		t.Fatalf("load_history('orders'):\n%s", rowsText(lh))
	}

	// The Kafka pipe: the guide's topic and group names, fixed across runs
	// (a pipe on the group goes on from its offsets), so this run's
	// messages carry the run's tag.
	prod := kafkaTopic(t, "orders_topic", 2)
	produce(t, prod, fmt.Sprintf(`{"run":"%s","order_id":1}`, run), fmt.Sprintf(`{"run":"%s","order_id":2}`, run))
	s.run(`CREATE TABLE IF NOT EXISTS orders_raw (raw_msg STRING)`)
	s.run(strings.ReplaceAll(`CREATE PIPE kafka_orders_pipe
VIRTUAL_CLUSTER = 'default'
BATCH_INTERVAL_IN_SECONDS = '60'
AS
COPY INTO orders_raw
FROM (
SELECT CAST(value AS STRING) AS raw_msg
FROM TABLE(READ_KAFKA(
'kafka-host:9092', -- bootstrap.servers
'orders_topic', -- topic
'', -- topic pattern（暂不支持，留空）
'pipe_orders_group', -- group_id（同 Topic 不同 Pipe 必须不同）
'', '', '', '', -- 起止位点和时间戳，Pipe 自动管理
'raw', 'raw', -- key/value 格式
0, map() -- 最大错误数、额外 Kafka 配置
))
);`, "kafka-host:9092", kafkaAddr))
	s.dropAtEnd("PIPE", "kafka_orders_pipe")
	mine := fmt.Sprintf(`SELECT COUNT(*) FROM orders_raw WHERE raw_msg LIKE '%%"run":"%s"%%'`, run)
	pipeWait(t, time.Minute, "the messages produced before CREATE PIPE arrive whole", func() bool { return s.pipeScalar(mine) == "2" })
	produce(t, prod, fmt.Sprintf(`{"run":"%s","order_id":3}`, run))
	s.run(`ALTER PIPE kafka_orders_pipe EXECUTE;`)
	pipeWait(t, 30*time.Second, "EXECUTE loads the next message", func() bool { return s.pipeScalar(mine) == "3" })
	wantRows(t, "a message kept whole", s.run(fmt.Sprintf(`SELECT raw_msg FROM orders_raw WHERE raw_msg LIKE '%%"run":"%s","order_id":3%%'`, run)),
		fmt.Sprintf(`{"run":"%s","order_id":3}`, run))

	// 监控和管理, as the guide writes it.
	sp := s.run(`SHOW PIPES;`)
	kinds := map[string]string{}
	for _, r := range table(sp) {
		kinds[r[column(t, sp, "name")]] = r[column(t, sp, "pipe_kind")] + " " + r[column(t, sp, "status")]
	}
	if kinds["orders_oss_pipe"] != "VOLUME RUNNING" || kinds["kafka_orders_pipe"] != "READ_KAFKA RUNNING" {
		t.Fatalf("SHOW PIPES:\n%s", rowsText(sp))
	}
	d := map[string]string{}
	for _, r := range table(s.run(`DESC PIPE orders_oss_pipe;`)) {
		d[r[0]] = r[1]
	}
	if d["pipe_status"] != "RUNNING" || d["pipe_kind"] != "VOLUME" || !strings.Contains(d["properties"], "ingest_mode") ||
		!strings.Contains(d["input_name"], "orders_pipe_vol") || !strings.HasSuffix(d["output_name"], ".orders") || d["invalid_reason"] != "" {
		t.Fatalf("DESC PIPE orders_oss_pipe: %v", d)
	}
	s.run(`ALTER PIPE orders_oss_pipe SET PIPE_EXECUTION_PAUSED = TRUE;`)
	if st := s.pipeDesc("orders_oss_pipe")["pipe_status"]; st != "PAUSED" {
		t.Fatalf("after PAUSED = TRUE, pipe_status %s", st)
	}
	s.run(`ALTER PIPE orders_oss_pipe SET PIPE_EXECUTION_PAUSED = FALSE;`)
	if st := s.pipeDesc("orders_oss_pipe")["pipe_status"]; st != "RUNNING" {
		t.Fatalf("after PAUSED = FALSE, pipe_status %s", st)
	}
	s.run(`DROP PIPE orders_oss_pipe;`)
	if n := s.pipeCount("orders"); n != 2 {
		t.Fatalf("DROP PIPE left %d rows in orders, want 2 (删除 Pipe 不影响目标表数据)", n)
	}
}
