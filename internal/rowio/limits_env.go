package rowio

import (
	"fmt"
	"strconv"
	"strings"
)

// LimitVars names the environment variable of each Limits field, as the
// lakepipe programs (worker, sql, serve) read them with LimitsFromEnv.
var LimitVars = []struct {
	Env   string
	Field string
	set   func(*Limits, int64)
}{
	{"LAKEPIPE_MAX_LINE_BYTES", "MaxLineBytes", func(l *Limits, n int64) { l.MaxLineBytes = n }},
	{"LAKEPIPE_MAX_JSON_DEPTH", "MaxJSONDepth", func(l *Limits, n int64) { l.MaxJSONDepth = int(min(n, 1<<20)) }},
	{"LAKEPIPE_MAX_COLUMNS", "MaxColumns", func(l *Limits, n int64) { l.MaxColumns = int(min(n, 1<<30)) }},
	{"LAKEPIPE_MAX_COMPRESSION_RATIO", "MaxCompressionRatio", func(l *Limits, n int64) { l.MaxCompressionRatio = n }},
	{"LAKEPIPE_ZSTD_MAX_WINDOW", "ZstdMaxWindow", func(l *Limits, n int64) { l.ZstdMaxWindow = n }},
	{"LAKEPIPE_MAX_PARQUET_FOOTER_BYTES", "MaxParquetFooterBytes", func(l *Limits, n int64) { l.MaxParquetFooterBytes = n }},
	{"LAKEPIPE_MAX_PARQUET_PAGE_BYTES", "MaxParquetPageBytes", func(l *Limits, n int64) { l.MaxParquetPageBytes = n }},
	{"LAKEPIPE_MAX_PARQUET_ROWS_PER_BYTE", "MaxParquetRowsPerByte", func(l *Limits, n int64) { l.MaxParquetRowsPerByte = n }},
	{"LAKEPIPE_MAX_READER_MEMORY", "MaxReaderMemory", func(l *Limits, n int64) { l.MaxReaderMemory = n }},
	{"LAKEPIPE_MAX_ARROW_MESSAGE_BYTES", "MaxArrowMessageBytes", func(l *Limits, n int64) { l.MaxArrowMessageBytes = n }},
	{"LAKEPIPE_MAX_KAFKA_BATCH_BYTES", "MaxKafkaBatchBytes", func(l *Limits, n int64) { l.MaxKafkaBatchBytes = n }},
	{"LAKEPIPE_MAX_KAFKA_FETCH_MEMORY", "MaxKafkaFetchMemory", func(l *Limits, n int64) { l.MaxKafkaFetchMemory = n }},
	{"LAKEPIPE_MAX_STATEMENT_FILES", "MaxStatementFiles", func(l *Limits, n int64) { l.MaxStatementFiles = n }},
	{"LAKEPIPE_MAX_RESULT_BYTES", "MaxResultBytes", func(l *Limits, n int64) { l.MaxResultBytes = n }},
	{"LAKEPIPE_MAX_SCRIPT_BYTES", "MaxScriptBytes", func(l *Limits, n int64) { l.MaxScriptBytes = n }},
}

// LimitsFromEnv reads the Limits set in the environment (see LimitVars);
// an unset variable leaves its default. Sizes take a plain byte count or
// a KiB, MiB or GiB suffix ("64MiB"). A bad value is an error naming the
// variable.
func LimitsFromEnv(getenv func(string) string) (Limits, error) {
	var l Limits
	for _, v := range LimitVars {
		s := strings.TrimSpace(getenv(v.Env))
		if s == "" {
			continue
		}
		n, err := parseSize(s)
		if err != nil || n <= 0 {
			return Limits{}, fmt.Errorf("%s=%q: want a positive number (bytes may carry KiB, MiB or GiB)", v.Env, s)
		}
		v.set(&l, n)
	}
	return l, nil
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("too large")
	}
	return n * mult, nil
}
