package kafkaload

import (
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

func TestReadKafkaArguments(t *testing.T) {
	const ok = `'h1:9092,h2:9092', 'app_logs', '', 'g', '', '', '', '', 'raw', 'json', 10, map('kafka.auto.offset.reset', 'latest', 'sasl.password', 's3cr3t')`
	for _, tc := range []struct {
		name, args, wantErr string
	}{
		{"seed", ok, ""},
		{"too few", `'h', 't', '', 'g'`, "takes 12 arguments, 4 given"},
		{"pattern", strings.Replace(ok, "'app_logs', ''", "'app_logs', 'app_.*'", 1), "topic pattern"},
		{"no group", strings.Replace(ok, "'g'", "''", 1), "group_id (argument 4) is required"},
		{"offsets", strings.Replace(ok, "'g', ''", "'g', '100'", 1), "argument 5"},
		{"format", strings.Replace(ok, "'raw', 'json'", "'raw', 'avro'", 1), "value format"},
		{"max errors", strings.Replace(ok, ", 10,", ", -1,", 1), "max_errors"},
		{"not a map", strings.Replace(ok, "map('kafka.auto.offset.reset', 'latest', 'sasl.password', 's3cr3t')", "'x'", 1), "map("},
		{"odd map", strings.Replace(ok, ", 'sasl.password', 's3cr3t'", ", 'sasl.password'", 1), "map("},
		{"unknown setting", strings.Replace(ok, "kafka.auto.offset.reset", "auto.offset.rest", 1), "unknown setting"},
		{"not a literal", strings.Replace(ok, "'app_logs'", "app_logs", 1), "argument 2 (topic) must be a string literal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stmt, err := sqlparse.Parse("CREATE PIPE p AS COPY INTO t FROM (SELECT value::STRING AS v FROM READ_KAFKA(" + tc.args + "))")
			if err != nil {
				t.Fatal(err)
			}
			cp := stmt.(*sqlast.CreatePipe)
			_, fc, err := KafkaQuery(cp.Copy.Query)
			if err != nil {
				t.Fatal(err)
			}
			rk, err := ParseReadKafka(fc)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rk.Src.Bootstrap) != 2 || rk.Src.Topic != "app_logs" || rk.Src.Group != "g" || rk.KeyFormat != "raw" || rk.ValueFormat != "json" || rk.MaxErrors != 10 {
				t.Fatalf("parsed %+v", rk)
			}
			if len(rk.Secrets) != 1 || rk.Secrets[0] != "s3cr3t" {
				t.Fatalf("secrets %v", rk.Secrets)
			}
			if got := core.Redact(cp); strings.Contains(got, "s3cr3t") || !strings.Contains(got, "'***'") {
				t.Fatalf("Redact: %s", got)
			}
		})
	}
}

func TestKafkaQueryShape(t *testing.T) {
	for _, tc := range []struct{ sql, wantErr string }{
		{"SELECT value FROM READ_KAFKA('h','t','','g','','','','','raw','raw',0,map()) GROUP BY value", "GROUP BY"},
		{"SELECT value FROM READ_KAFKA('h','t','','g','','','','','raw','raw',0,map()) ORDER BY value", "ORDER BY"},
		{"SELECT a FROM t", "READ_KAFKA"},
		{"SELECT value FROM READ_KAFKA('h','t','','g','','','','','raw','raw',0,map()) UNION ALL SELECT value FROM READ_KAFKA('h','t','','g','','','','','raw','raw',0,map())", "UNION"},
	} {
		q, err := sqlparse.ParseQuery(tc.sql)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if _, _, err := KafkaQuery(q); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err = %v, want one containing %q", tc.sql, err, tc.wantErr)
		}
	}
}

func TestTypedFits(t *testing.T) {
	for _, c := range []struct {
		typed, chType string
		want          bool
	}{
		{"TIMESTAMP", "DateTime", true},
		{"TIMESTAMP", "Nullable(DateTime64(3))", true},
		{"DATE", "Date", true},
		{"TIMESTAMP", "String", false},
		{"BIGINT", "Int32", true},
		{"BIGINT", "Nullable(UInt8)", true},
		{"BIGINT", "Float64", true},
		{"BIGINT", "Decimal(10, 2)", false},
		{"DOUBLE", "Float32", true},
		{"DOUBLE", "Int64", false},
		{"", "String", false},
	} {
		if got := TypedFits(c.typed, c.chType); got != c.want {
			t.Errorf("typedFits(%q, %q) = %v", c.typed, c.chType, got)
		}
	}
}
