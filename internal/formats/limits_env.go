package formats

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
}{
	{"LAKEPIPE_MAX_LINE_BYTES", "MaxLineBytes"},
	{"LAKEPIPE_MAX_JSON_DEPTH", "MaxJSONDepth"},
	{"LAKEPIPE_MAX_COLUMNS", "MaxColumns"},
	{"LAKEPIPE_MAX_COMPRESSION_RATIO", "MaxCompressionRatio"},
	{"LAKEPIPE_ZSTD_MAX_WINDOW", "ZstdMaxWindow"},
	{"LAKEPIPE_MAX_PARQUET_FOOTER_BYTES", "MaxParquetFooterBytes"},
	{"LAKEPIPE_MAX_PARQUET_PAGE_BYTES", "MaxParquetPageBytes"},
	{"LAKEPIPE_MAX_READER_MEMORY", "MaxReaderMemory"},
	{"LAKEPIPE_MAX_ARROW_MESSAGE_BYTES", "MaxArrowMessageBytes"},
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
		switch v.Field {
		case "MaxLineBytes":
			l.MaxLineBytes = n
		case "MaxJSONDepth":
			l.MaxJSONDepth = int(n)
		case "MaxColumns":
			l.MaxColumns = int(n)
		case "MaxCompressionRatio":
			l.MaxCompressionRatio = n
		case "ZstdMaxWindow":
			l.ZstdMaxWindow = n
		case "MaxParquetFooterBytes":
			l.MaxParquetFooterBytes = n
		case "MaxParquetPageBytes":
			l.MaxParquetPageBytes = n
		case "MaxReaderMemory":
			l.MaxReaderMemory = n
		case "MaxArrowMessageBytes":
			l.MaxArrowMessageBytes = n
		}
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
