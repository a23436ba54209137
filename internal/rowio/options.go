package rowio

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Source is one file to read. CSV, JSON and ARROW read R; Parquet needs
// random access and reads At, of Size bytes. Name is the file's path: its
// extension selects the decompressor when Options.Compression is auto, and
// errors name it.
type Source struct {
	R    io.Reader
	At   io.ReaderAt
	Size int64
	Name string
}

// DefaultBatchRows is the number of rows a batch holds when
// Options.BatchRows is not set.
const DefaultBatchRows = 65536

// Compression modes accepted by Options.Compression.
const (
	CompressionAuto = "auto"
	CompressionNone = "none"
	CompressionGzip = "gzip"
	CompressionZstd = "zstd"
)

// Options control how a file is read (and, for CSV, written). The zero
// value is valid and means the defaults: no header, ',' separator, '"'
// quote escaped by doubling, no NULL marker, compression detected
// automatically, DefaultBatchRows rows per batch, the default Limits.
type Options struct {
	// Header: the first record (after SkipRows lines) holds column names.
	Header bool
	// Delimiter separates CSV fields; 0 means ','.
	Delimiter byte
	// Quote encloses CSV fields; 0 means '"'. NoQuote turns quoting off
	// so that the quote character is ordinary data.
	Quote   byte
	NoQuote bool
	// Escape, inside a quoted field, makes the next byte literal. 0 means
	// none: only a doubled quote stands for a quote.
	Escape byte
	// NullValue is the unquoted CSV field that means NULL, when
	// HasNullValue is set. A quoted field is never NULL, so "" stays an
	// empty string even with NullValue "".
	NullValue    string
	HasNullValue bool
	// Compression is one of the Compression* constants; "" means auto.
	Compression string
	// SkipRows lines are dropped before anything else is read.
	SkipRows int
	// Schema, when set, names (and for writers types) the columns; readers
	// then yield exactly these columns in this order.
	Schema []Column
	// BatchRows is the maximum number of rows in a batch; 0 means
	// DefaultBatchRows.
	BatchRows int
	// Limits bound what a reader allocates on the word of the file; the
	// zero value means the defaults (see Limits).
	Limits Limits
}

// optionKeys maps the accepted spellings (lower case) of the SQL OPTIONS
// keys to their canonical name.
var optionKeys = map[string]string{
	"header":          "header",
	"sep":             "sep",
	"delimiter":       "sep",
	"field_delimiter": "sep",
	"quote":           "quote",
	"escape":          "escape",
	"nullvalue":       "null_value",
	"null_value":      "null_value",
	"compression":     "compression",
	"skip_rows":       "skip_rows",
	"batch_rows":      "batch_rows",
}

// ParseOptions reads the key/value pairs of a SQL OPTIONS(...) clause.
// Keys are case-insensitive; an unknown key or a bad value is an error that
// names the key. The result has every default filled in.
func ParseOptions(kv map[string]string) (Options, error) {
	o := Options{}
	// Sorted so that, with several bad keys, the error is deterministic.
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	seen := map[string]string{}
	for _, k := range keys {
		v := kv[k]
		canon, ok := optionKeys[strings.ToLower(strings.TrimSpace(k))]
		if !ok {
			return Options{}, fmt.Errorf("unknown option %q (known options: %s)", k, knownOptions())
		}
		if prev, dup := seen[canon]; dup {
			return Options{}, fmt.Errorf("options %q and %q both set %s", prev, k, canon)
		}
		seen[canon] = k
		switch canon {
		case "header":
			b, err := parseBool(v)
			if err != nil {
				return Options{}, fmt.Errorf("option %q: %w", k, err)
			}
			o.Header = b
		case "sep":
			c, err := parseChar(v, false)
			if err != nil {
				return Options{}, fmt.Errorf("option %q: %w", k, err)
			}
			if c == '\n' || c == '\r' {
				return Options{}, fmt.Errorf("option %q: a line break cannot separate fields", k)
			}
			o.Delimiter = c
		case "quote":
			c, err := parseChar(v, true)
			if err != nil {
				return Options{}, fmt.Errorf("option %q: %w", k, err)
			}
			if c == 0 {
				o.NoQuote = true
			} else {
				o.Quote = c
			}
		case "escape":
			c, err := parseChar(v, true)
			if err != nil {
				return Options{}, fmt.Errorf("option %q: %w", k, err)
			}
			o.Escape = c
		case "null_value":
			o.NullValue, o.HasNullValue = v, true
		case "compression":
			switch m := strings.ToLower(strings.TrimSpace(v)); m {
			case "", CompressionAuto:
				o.Compression = CompressionAuto
			case CompressionNone, CompressionGzip, CompressionZstd:
				o.Compression = m
			case "gz", "gzip2":
				o.Compression = CompressionGzip
			case "zst", "zstandard":
				o.Compression = CompressionZstd
			default:
				return Options{}, fmt.Errorf("option %q: unknown compression %q (use auto, none, gzip or zstd)", k, v)
			}
		case "skip_rows", "batch_rows":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				return Options{}, fmt.Errorf("option %q: want a non-negative integer, got %q", k, v)
			}
			if canon == "skip_rows" {
				o.SkipRows = n
			} else {
				o.BatchRows = n
			}
		}
	}
	if err := o.Check(); err != nil {
		return Options{}, err
	}
	return o.WithDefaults(), nil
}

func knownOptions() string {
	names := make([]string, 0, len(optionKeys))
	for k := range optionKeys {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off", "":
		return false, nil
	}
	return false, fmt.Errorf("want true or false, got %q", v)
}

// parseChar accepts one byte or a backslash escape for it. With allowEmpty
// an empty value gives 0 (used to switch quoting or escaping off).
func parseChar(v string, allowEmpty bool) (byte, error) {
	switch v {
	case "":
		if allowEmpty {
			return 0, nil
		}
		return 0, fmt.Errorf("want a single character, got an empty string")
	case `\t`, "tab", "TAB":
		return '\t', nil
	case `\\`:
		return '\\', nil
	case `\0`:
		return 0, fmt.Errorf("NUL cannot be used")
	case `\n`:
		return '\n', nil
	case `\r`:
		return '\r', nil
	}
	if len(v) != 1 {
		return 0, fmt.Errorf("want a single character (or \\t), got %q", v)
	}
	if v[0] >= 0x80 {
		return 0, fmt.Errorf("want a single-byte (ASCII) character, got %q", v)
	}
	return v[0], nil
}

// Check rejects combinations the CSV reader cannot honour.
func (o Options) Check() error {
	d, q := o.DelimiterByte(), o.QuoteByte()
	if !o.NoQuote && d == q {
		return fmt.Errorf("field delimiter and quote are both %q", d)
	}
	if o.Escape != 0 && o.Escape == d {
		return fmt.Errorf("field delimiter and escape are both %q", d)
	}
	if o.Escape == '\n' || o.Escape == '\r' || (!o.NoQuote && (q == '\n' || q == '\r')) {
		return fmt.Errorf("quote and escape cannot be line breaks")
	}
	if o.SkipRows < 0 || o.BatchRows < 0 {
		return fmt.Errorf("skip_rows and batch_rows must not be negative")
	}
	return nil
}

func (o Options) WithDefaults() Options {
	if o.Delimiter == 0 {
		o.Delimiter = ','
	}
	if o.Quote == 0 {
		o.Quote = '"'
	}
	if o.Compression == "" {
		o.Compression = CompressionAuto
	}
	if o.BatchRows <= 0 {
		o.BatchRows = DefaultBatchRows
	}
	o.Limits = o.Limits.WithDefaults()
	return o
}

func (o Options) DelimiterByte() byte {
	if o.Delimiter == 0 {
		return ','
	}
	return o.Delimiter
}

func (o Options) QuoteByte() byte {
	if o.Quote == 0 {
		return '"'
	}
	return o.Quote
}
