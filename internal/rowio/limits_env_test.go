package rowio

import (
	"testing"
)

func TestLimitsFromEnv(t *testing.T) {
	env := map[string]string{
		"LAKEPIPE_MAX_LINE_BYTES":            "8MiB",
		"LAKEPIPE_MAX_JSON_DEPTH":            "50",
		"LAKEPIPE_MAX_COMPRESSION_RATIO":     "500",
		"LAKEPIPE_MAX_READER_MEMORY":         "1073741824",
		"LAKEPIPE_MAX_PARQUET_ROWS_PER_BYTE": "100000",
	}
	l, err := LimitsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if l.MaxLineBytes != 8<<20 || l.MaxJSONDepth != 50 || l.MaxCompressionRatio != 500 || l.MaxReaderMemory != 1<<30 || l.MaxParquetRowsPerByte != 100_000 || l.MaxColumns != 0 {
		t.Errorf("LimitsFromEnv = %+v", l)
	}
	for _, bad := range []string{"x", "-1", "0", "10TB", "99999999999GiB"} {
		if _, err := LimitsFromEnv(func(k string) string {
			if k == "LAKEPIPE_MAX_COLUMNS" {
				return bad
			}
			return ""
		}); err == nil {
			t.Errorf("LAKEPIPE_MAX_COLUMNS=%q accepted", bad)
		}
	}
}
