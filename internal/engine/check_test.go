package engine

import (
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// Pipe properties are checked without a server: MAX_FILES_PER_BATCH is a
// positive number up to MaxFilesPerTurn.
func TestCheckPipeBatchSize(t *testing.T) {
	for _, tc := range []struct {
		value, want string
	}{
		{"2000", ""},
		{"10000", ""},
		{"10001", "at most 10000"},
		{"0", "positive whole number"},
		{"many", "positive whole number"},
	} {
		stmt, err := sqlparse.Parse("CREATE PIPE p MAX_FILES_PER_BATCH = '" + tc.value + "' AS COPY INTO t FROM VOLUME v USING CSV")
		if err != nil {
			t.Fatalf("%s: %v", tc.value, err)
		}
		err = Check("public", stmt)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("MAX_FILES_PER_BATCH = %s: error %v, want %q", tc.value, err, tc.want)
		}
	}
}

// ALTER PIPE SET is checked whole before anything is applied: names and
// values alike, so that --check catches what would fail at run time.
func TestCheckAlterPipeSet(t *testing.T) {
	for _, tc := range []struct {
		set, want string
	}{
		{"PIPE_EXECUTION_PAUSED = true", ""},
		{"PIPE_EXECUTION_PAUSED = 'false', COMMENT = 'x'", ""},
		{"PIPE_EXECUTION_PAUSED = 'maybe'", "expected TRUE or FALSE"},
		{"COMMENT = 'x', INGEST_MODE = 'LIST'", "INGEST_MODE is fixed when the pipe is created"},
		{"INITIAL_DELAY_IN_SECONDS = '5'", "INITIAL_DELAY_IN_SECONDS is fixed"},
		{"PIPE_EXECUTION_PAUSED = true, NO_SUCH = '1'", "NO_SUCH is not a property ALTER PIPE … SET takes"},
		{"IGNORE_TMP_FILE = 'FALSE'", ""},
		{"IGNORE_TMP_FILE = 'maybe'", "IGNORE_TMP_FILE"},
		{"POLL_INTERVAL_IN_SECONDS = '5', MAX_FILES_PER_BATCH = '100'", ""},
		{"POLL_INTERVAL_IN_SECONDS = '0'", "positive whole number"},
		{"BATCH_INTERVAL_IN_SECONDS = 'soon'", "positive whole number"},
		{"MAX_FILES_PER_BATCH = '20000'", "at most 10000"},
		{"BATCH_SIZE_PER_KAFKA_PARTITION = '-1'", "positive whole number"},
		{"VIRTUAL_CLUSTER = 'default', COMMENT = 'y'", ""},
		{"RESET_KAFKA_GROUP_OFFSETS = 'earliest'", ""},
		{"RESET_KAFKA_GROUP_OFFSETS = 'Latest'", ""},
		{"RESET_KAFKA_GROUP_OFFSETS = '1764806400000'", ""},
		{"RESET_KAFKA_GROUP_OFFSETS = 'yesterday'", "expected 'earliest', 'latest' or a time in epoch milliseconds"},
		{`COPY_JOB_HINT = '{"parallelism": 8, "max_file_size": "10GB"}'`, ""},
		{`COPY_JOB_HINT = '{"cz.sql.remote.concurrency": "4"}'`, `key "cz.sql.remote.concurrency" means nothing`},
		{`COPY_JOB_HINT = 'fast'`, "expected a JSON object"},
	} {
		stmt, err := sqlparse.Parse("ALTER PIPE p SET " + tc.set)
		if err != nil {
			t.Fatalf("%s: %v", tc.set, err)
		}
		err = Check("public", stmt)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("SET %s: error %v, want %q", tc.set, err, tc.want)
		}
	}
}

// CREATE PIPE refuses a property of the other kind of pipe, as ALTER
// does: none is accepted and ignored.
func TestCheckCreatePipeKind(t *testing.T) {
	const kafka = "AS COPY INTO t FROM (SELECT VALUE FROM TABLE(READ_KAFKA('k:9092', 'topic', '', 'g', '', '', '', '', 'raw', 'raw', 0, map())))"
	const volume = "AS COPY INTO t FROM VOLUME v USING CSV"
	for _, tc := range []struct {
		sql, want string
	}{
		{"CREATE PIPE p MAX_FILES_PER_BATCH = '5' " + kafka, "MAX_FILES_PER_BATCH applies to volume pipes"},
		{"CREATE PIPE p IGNORE_TMP_FILE = 'false' " + kafka, "IGNORE_TMP_FILE applies to volume pipes"},
		{`CREATE PIPE p COPY_JOB_HINT = '{"parallelism": 2}' ` + kafka, "COPY_JOB_HINT applies to volume pipes"},
		{"CREATE PIPE p BATCH_SIZE_PER_KAFKA_PARTITION = '10' " + volume, "applies to Kafka pipes"},
		{"CREATE PIPE p DEAD_LETTER_TABLE = 'bad' " + volume, "applies to Kafka pipes"},
		{"CREATE PIPE p BATCH_SIZE_PER_KAFKA_PARTITION = '10' " + kafka, ""},
		{`CREATE PIPE p COPY_JOB_HINT = '{"max_file_size": 1048576}' ` + volume, ""},
		{"CREATE PIPE p INGEST_MODE = 'EVENT_NOTIFICATION' EVENT_QUEUE = 'kafka://k:9092/ev' " + volume, ""},
		{"CREATE PIPE p INGEST_MODE = 'LIST' EVENT_QUEUE = 'kafka://k:9092/ev' " + volume, "goes with INGEST_MODE = 'EVENT_NOTIFICATION'"},
		{"CREATE PIPE p INGEST_MODE = 'EVENT_NOTIFICATION' EVENT_QUEUE = 'mns://q' " + volume, "SQS queue URL"},
		{"CREATE PIPE p EVENT_QUEUE = 'kafka://k:9092/ev' " + kafka, "EVENT_QUEUE applies to volume pipes"},
	} {
		checkCase(t, tc.sql, tc.want)
	}
}

// CREATE TABLE's PRIMARY KEY and properties are checked without a server.
func TestCheckCreateTableKey(t *testing.T) {
	for _, tc := range []struct{ sql, want string }{
		{"CREATE TABLE t (id BIGINT PRIMARY KEY, v STRING)", ""},
		{"CREATE TABLE t (a INT, b INT, PRIMARY KEY (A, b)) PARTITIONED BY (a)", ""},
		{"CREATE TABLE t (a INT, b INT, PRIMARY KEY (c))", "PRIMARY KEY names c, which is not a column"},
		{"CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, a))", "PRIMARY KEY names a twice"},
		{"CREATE TABLE t (a INT, b INT, PRIMARY KEY (a)) PARTITIONED BY (b)", "partition column b must be part of the PRIMARY KEY"},
		{"CREATE TABLE t (a INT) PROPERTIES ('change_trackin' = 'true')", `unknown property "change_trackin"`},
	} {
		checkCase(t, tc.sql, tc.want)
	}
}

// checkCase runs Check on sql: it must pass when want is "", else fail
// with an error that says want.
func checkCase(t *testing.T, sql, want string) {
	t.Helper()
	stmt, err := sqlparse.Parse(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	err = Check("public", stmt)
	if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
		t.Errorf("%s: error %v, want %q", sql, err, want)
	}
}
