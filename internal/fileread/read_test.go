package fileread

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/sqlast"
)

func props(kv ...string) []sqlast.Property {
	var out []sqlast.Property
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, sqlast.Property{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

func TestReadOptions(t *testing.T) {
	intNotNull := sqlast.ColumnDef{Name: "id", Type: sqlast.TypeName{Name: "INT"}, NotNull: true}
	str := sqlast.ColumnDef{Name: "name", Type: sqlast.TypeName{Name: "STRING"}}
	cases := []struct {
		name    string
		src     sqlast.VolumeSource
		check   func(t *testing.T, o rowio.Options)
		wantErr string
	}{
		{
			name: "no options: the reader defaults",
			src:  sqlast.VolumeSource{Format: "CSV"},
			check: func(t *testing.T, o rowio.Options) {
				if o.Header || o.Delimiter != ',' || o.Quote != '"' || o.NoQuote || o.Compression != rowio.CompressionAuto || o.Schema != nil {
					t.Errorf("defaults: %+v", o)
				}
			},
		},
		{
			name: "keys are case-insensitive and aliases map to one option",
			src:  sqlast.VolumeSource{Options: props("HEADER", "true", "field_delimiter", "|")},
			check: func(t *testing.T, o rowio.Options) {
				if !o.Header || o.Delimiter != '|' {
					t.Errorf("header %v delimiter %q", o.Header, o.Delimiter)
				}
			},
		},
		{
			name: "tab, no quoting, a NULL marker",
			src:  sqlast.VolumeSource{Options: props("sep", `\t`, "quote", "", "nullvalue", `\N`)},
			check: func(t *testing.T, o rowio.Options) {
				if o.Delimiter != '\t' || !o.NoQuote || !o.HasNullValue || o.NullValue != `\N` {
					t.Errorf("%+v", o)
				}
			},
		},
		{
			name: "compression spellings are canonical",
			src:  sqlast.VolumeSource{Options: props("compression", "GZ")},
			check: func(t *testing.T, o rowio.Options) {
				if o.Compression != rowio.CompressionGzip {
					t.Errorf("compression %q", o.Compression)
				}
			},
		},
		{
			name: "an inline schema names and types the columns; NOT NULL decides Nullable",
			src:  sqlast.VolumeSource{Schema: []sqlast.ColumnDef{intNotNull, str}},
			check: func(t *testing.T, o rowio.Options) {
				want := []rowio.Column{{Name: "id", Type: "Int32"}, {Name: "name", Type: "Nullable(String)"}}
				if !reflect.DeepEqual(o.Schema, want) {
					t.Errorf("schema %+v, want %+v", o.Schema, want)
				}
			},
		},
		{name: "unknown key", src: sqlast.VolumeSource{Options: props("colour", "red")}, wantErr: `OPTIONS: unknown option "colour"`},
		{name: "bad boolean", src: sqlast.VolumeSource{Options: props("header", "maybe")}, wantErr: `OPTIONS: option "header": want true or false, got "maybe"`},
		{name: "bad compression", src: sqlast.VolumeSource{Options: props("compression", "lz4")}, wantErr: `OPTIONS: option "compression": unknown compression "lz4"`},
		{name: "multi-byte delimiter", src: sqlast.VolumeSource{Options: props("sep", "||")}, wantErr: `OPTIONS: option "sep": want a single character`},
		{name: "delimiter equals quote", src: sqlast.VolumeSource{Options: props("sep", `"`)}, wantErr: "OPTIONS: field delimiter and quote are both"},
		{name: "two spellings of one option", src: sqlast.VolumeSource{Options: props("sep", ";", "delimiter", ";")}, wantErr: "both set sep"},
		{name: "negative skip_rows", src: sqlast.VolumeSource{Options: props("skip_rows", "-1")}, wantErr: `option "skip_rows": want a non-negative integer`},
		{
			name:    "a schema type lakepipe does not know names the column",
			src:     sqlast.VolumeSource{Schema: []sqlast.ColumnDef{intNotNull, {Name: "blob", Type: sqlast.TypeName{Name: "GEOGRAPHY"}}}},
			wantErr: "column blob: ",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := ReadOptions(&c.src)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, o)
		})
	}
}

// FileOptions puts the worker's configured limits in the options, so that
// every file read honours them, including when OPTIONS are refused.
func TestFileOptionsCarriesLimits(t *testing.T) {
	var e Reader
	e.Cfg.Limits = rowio.Limits{MaxLineBytes: 123, MaxColumns: 7}
	o, err := e.FileOptions(&sqlast.VolumeSource{Options: props("header", "true")})
	if err != nil {
		t.Fatal(err)
	}
	if o.Limits != e.Cfg.Limits || !o.Header {
		t.Errorf("limits %+v header %v, want %+v and true", o.Limits, o.Header, e.Cfg.Limits)
	}
	if _, err := e.FileOptions(&sqlast.VolumeSource{Options: props("nope", "1")}); err == nil {
		t.Error("FileOptions accepted an unknown option")
	}
}

func cols(names ...string) []rowio.Column {
	out := make([]rowio.Column, len(names))
	for i, n := range names {
		out[i] = rowio.Column{Name: n}
	}
	return out
}

func TestMapColumns(t *testing.T) {
	target := core.LoadTarget{Display: "public.t", Cols: cols("id", "name", "amount")}
	cases := []struct {
		name    string
		src     []rowio.Column
		named   bool
		want    []int
		wantErr string
	}{
		{name: "by name, reordered", src: cols("amount", "id", "name"), named: true, want: []int{1, 2, 0}},
		{name: "by name ignores case", src: cols("NAME", "Id", "AMOUNT"), named: true, want: []int{1, 0, 2}},
		{name: "by name, a target column the file lacks gets -1 (NULL)", src: cols("name", "id"), named: true, want: []int{1, 0, -1}},
		{name: "named but one name is no target column: by position", src: cols("id", "nom", "amount"), named: true, want: []int{0, 1, 2}},
		{name: "unnamed: by position even when names match reordered", src: cols("amount", "id", "name"), named: false, want: []int{0, 1, 2}},
		{
			name: "named with an extra column and a different count", src: cols("id", "name", "amount", "extra"), named: true,
			wantErr: "file f.csv has 4 columns and public.t has 3: name the columns",
		},
		{name: "unnamed with too few columns", src: cols("c1", "c2"), named: false, wantErr: "file f.csv has 2 columns and public.t has 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := MapColumns("f.csv", c.src, target, c.named)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("mapping %v, want %v", got, c.want)
			}
		})
	}
}

func TestCopyOnError(t *testing.T) {
	cases := []struct {
		opts    []sqlast.Property
		want    string
		wantErr string
	}{
		{opts: nil, want: OnErrorAbort},
		{opts: props("PURGE", "true"), want: OnErrorAbort},
		{opts: props("on_error", "abort"), want: OnErrorAbort},
		{opts: props("ON_ERROR", "ABORT_STATEMENT"), want: OnErrorAbort},
		{opts: props("On_Error", "Continue"), want: onErrorContinue},
		{opts: props("on_error", "skip_file"), want: OnErrorSkipFile},
		// The first ON_ERROR decides.
		{opts: props("on_error", "skip_file", "on_error", "continue"), want: OnErrorSkipFile},
		{opts: props("on_error", "skip_file_3"), wantErr: `ON_ERROR = "skip_file_3": expected 'abort', 'continue' or 'skip_file'`},
		{opts: props("on_error", ""), wantErr: `ON_ERROR = ""`},
	}
	for _, c := range cases {
		var name []string
		for _, p := range c.opts {
			name = append(name, p.Key+"="+p.Value)
		}
		if name == nil {
			name = []string{"no options"}
		}
		t.Run(strings.Join(name, ","), func(t *testing.T) {
			got, err := CopyOnError(c.opts)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("CopyOnError = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// timeoutErr is a net.Error that is not a *net.OpError.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestContentError(t *testing.T) {
	const path = "dir/a.csv"
	boom := errors.New("boom")
	cases := []struct {
		name     string
		err      error
		fileErr  bool // the file's fault: a *FileError, not retried
		wantText string
	}{
		{name: "a reader's error", err: boom, fileErr: true, wantText: "file dir/a.csv: boom"},
		{name: "a reader's error that names the file already", err: fmt.Errorf("%s: line 3: bad quote", path), fileErr: true, wantText: "file dir/a.csv: line 3: bad quote"},
		{name: "a limit", err: fmt.Errorf("%s: %w", path, &rowio.LimitError{Limit: "MaxLineBytes"}), fileErr: true},
		{name: "a refused key", err: fmt.Errorf("read x: %w", objstore.ErrRefused), fileErr: true, wantText: "file dir/a.csv: read x: "},
		{name: "network", err: &net.OpError{Op: "read", Net: "tcp", Err: boom}, fileErr: false, wantText: "file dir/a.csv: read tcp: boom"},
		{name: "a net.Error wrapped", err: fmt.Errorf("get: %w", timeoutErr{}), fileErr: false},
		{name: "cancelled", err: fmt.Errorf("%s: %w", path, context.Canceled), fileErr: false},
		{name: "deadline", err: context.DeadlineExceeded, fileErr: false},
		{name: "an S3 error answer", err: minio.ErrorResponse{Code: "SlowDown", Message: "reduce your request rate"}, fileErr: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := contentError(path, c.err)
			var fe *FileError
			if errors.As(got, &fe) != c.fileErr {
				t.Errorf("%v: FileError = %v, want %v", got, !c.fileErr, c.fileErr)
			}
			if !errors.Is(got, c.err) {
				t.Errorf("%v does not wrap %v: callers lose its kind", got, c.err)
			}
			if !strings.HasPrefix(got.Error(), "file "+path+": ") {
				t.Errorf("%q does not start by naming the file once", got)
			}
			if c.wantText != "" && !strings.HasPrefix(got.Error(), c.wantText) {
				t.Errorf("%q, want it to start with %q", got, c.wantText)
			}
		})
	}
}

func TestFileErrorUnwraps(t *testing.T) {
	err := fmt.Errorf("load: %w", &FileError{err: fmt.Errorf("file x: %w", objstore.ErrRefused)})
	var fe *FileError
	if !errors.As(err, &fe) || !errors.Is(err, objstore.ErrRefused) || fe.Error() != "file x: "+objstore.ErrRefused.Error() {
		t.Errorf("FileError %v: As %v, Is %v", err, errors.As(err, &fe), errors.Is(err, objstore.ErrRefused))
	}
}
