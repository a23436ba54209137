package engine

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/core"

	"github.com/lakepipe/lakepipe/internal/jobs"

	"github.com/minio/minio-go/v7"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/formats"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
	"github.com/lakepipe/lakepipe/schemas"
)

// selectFiles lists the files a volume source names: FILES(…), else the
// SUBDIRECTORY's files, else the whole volume; REGEXP filters. FILES and
// SUBDIRECTORY are typed paths: one that could leave the volume ('..', a
// backslash) is the user's error, refused (permanent: a pipe with one
// pauses rather than retries) before anything is read. The Objects' paths
// are as the store lists them, for the *Listed methods.
func (e *Engine) selectFiles(ctx context.Context, vol *objstore.Volume, src *sqlparse.VolumeSource) ([]objstore.Object, error) {
	var out []objstore.Object
	if len(src.Files) > 0 {
		for _, f := range src.Files {
			if err := objstore.CheckPath(f); err != nil {
				return nil, core.Permanent(fmt.Errorf("FILES(%s): %w", chsql.QuoteString(f), err))
			}
		}
		for _, f := range src.Files {
			o, err := vol.Stat(ctx, f)
			if errors.Is(err, objstore.ErrNotFound) {
				return nil, fmt.Errorf("file %q is not in volume %s (SELECT relative_path FROM DIRECTORY(VOLUME %s) lists its files)", f, src.Volume, src.Volume)
			}
			if err != nil {
				return nil, err
			}
			out = append(out, o)
		}
	} else {
		sub := ""
		if src.Subdirectory != nil {
			sub = *src.Subdirectory
			if err := objstore.CheckPath(sub); err != nil {
				return nil, core.Permanent(fmt.Errorf("SUBDIRECTORY %s: %w", chsql.QuoteString(sub), err))
			}
		}
		objs, err := vol.List(ctx, sub)
		if err != nil {
			return nil, err
		}
		out = objs
	}
	if src.Regexp != nil {
		re, err := regexp.Compile(*src.Regexp)
		if err != nil {
			return nil, fmt.Errorf("REGEXP %q: %v", *src.Regexp, err)
		}
		kept := out[:0]
		for _, o := range out {
			if re.MatchString(o.Path) {
				kept = append(kept, o)
			}
		}
		out = kept
	}
	return out, nil
}

// fileOptions is readOptions with the engine's reader limits.
func (e *Engine) fileOptions(src *sqlparse.VolumeSource) (formats.Options, error) {
	opts, err := readOptions(src)
	opts.Limits = e.Cfg.Limits
	return opts, err
}

// readOptions turns OPTIONS(…) and an inline schema into reader options.
func readOptions(src *sqlparse.VolumeSource) (formats.Options, error) {
	kv := make(map[string]string, len(src.Options))
	for _, p := range src.Options {
		kv[p.Key] = p.Value
	}
	opts, err := formats.ParseOptions(kv)
	if err != nil {
		return opts, fmt.Errorf("OPTIONS: %w", err)
	}
	for _, c := range src.Schema {
		ch, err := schemas.ClickHouseType(c.Type, c.NotNull)
		if err != nil {
			return opts, fmt.Errorf("column %s: %w", c.Name, err)
		}
		opts.Schema = append(opts.Schema, formats.Column{Name: c.Name, Type: ch})
	}
	return opts, nil
}

// fileColumns opens a file only to learn the columns it provides.
func (e *Engine) fileColumns(ctx context.Context, vol *objstore.Volume, obj objstore.Object, format string, opts formats.Options) ([]formats.Column, error) {
	f, _, err := vol.OpenListed(ctx, obj.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := formats.Open(formats.Source{R: f, At: f, Size: obj.Size, Name: obj.Path}, format, opts)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", obj.Path, err)
	}
	defer r.Close()
	if _, err := r.Next(); err != nil && err != io.EOF {
		return nil, fmt.Errorf("file %s: %w", obj.Path, err)
	}
	return append([]formats.Column(nil), r.Columns()...), nil
}

// ON_ERROR policies.
const (
	onErrorAbort    = "abort"     // the statement fails at the first bad row
	onErrorContinue = "continue"  // bad rows are skipped and counted
	onErrorSkipFile = "skip_file" // a file with a bad row is not loaded
)

// FileLoad is the outcome of loading one file.
type FileLoad struct {
	Path         string
	Size         int64
	ETag         string
	Rows         int64
	Rejected     int64
	FirstError   string
	FirstErrLine int64
	Status       jobs.FileStatus
	Duration     time.Duration
	// LoadID, when set, is this load's load_id in load_history instead
	// of the one RecordLoads is given (the loads of a pipe's batch each
	// keep their own).
	LoadID string
}

// mapColumns says, for each target column, which source column feeds it.
// Sources with names (header, schema, Parquet, JSON) match by name when
// every name is a target column; otherwise columns match by position.
func mapColumns(file string, src []formats.Column, target core.LoadTarget, named bool) ([]int, error) {
	idx := make([]int, len(target.Cols))
	for i := range idx {
		idx[i] = -1
	}
	if named {
		all := true
		for j, s := range src {
			found := false
			for i, t := range target.Cols {
				if strings.EqualFold(s.Name, t.Name) {
					idx[i] = j
					found = true
					break
				}
			}
			all = all && found
		}
		if all {
			return idx, nil
		}
		for i := range idx {
			idx[i] = -1
		}
	}
	if len(src) != len(target.Cols) {
		return nil, fmt.Errorf("file %s has %d columns and %s has %d: name the columns (a header with OPTIONS('header'='true'), or a schema after the volume name) or COPY INTO %s (col, …)", file, len(src), target.Display, len(target.Cols), target.Display)
	}
	for i := range idx {
		idx[i] = i
	}
	return idx, nil
}

// loadFile streams one file into the target. With onErrorAbort a bad row
// fails the call; otherwise bad rows are counted in the result.
func (e *Engine) loadFile(ctx context.Context, vol *objstore.Volume, obj objstore.Object, src *sqlparse.VolumeSource, opts formats.Options, target core.LoadTarget, onError string) (FileLoad, error) {
	return e.readFileInto(ctx, vol, obj, src, opts, target, onError, nil)
}

// readFileInto is loadFile; with staged set, the file's rows are not
// written but kept in *staged (for chstore.InsertStaged with those of
// other small files), and only when the file loads whole or in part.
func (e *Engine) readFileInto(ctx context.Context, vol *objstore.Volume, obj objstore.Object, src *sqlparse.VolumeSource, opts formats.Options, target core.LoadTarget, onError string, staged *chstore.Staged) (FileLoad, error) {
	start := time.Now()
	res := FileLoad{Path: obj.Path, Size: obj.Size, ETag: obj.ETag}
	var f objstore.File
	var err error
	if staged != nil {
		// A staged file is small: one GET reads it whole.
		var data []byte
		data, err = vol.ReadListed(ctx, obj.Path, obj.ETag, StageFileBytes)
		if err == nil {
			f = memFile{bytes.NewReader(data)}
			obj.Size = int64(len(data))
		}
	} else {
		f, _, err = vol.OpenListed(ctx, obj.Path)
	}
	if errors.Is(err, objstore.ErrRefused) {
		return res, &fileError{err: err} // the store will not serve this key: no retry helps
	}
	if err != nil {
		return res, err
	}
	defer f.Close()
	r, err := formats.Open(formats.Source{R: f, At: f, Size: obj.Size, Name: obj.Path}, src.Format, opts)
	if err != nil {
		return res, contentError(obj.Path, err)
	}
	defer r.Close()
	in, err := e.St.NewInserter(ctx, target.DB, target.Table, target.Cols, core.CommitColumn, target.Commit)
	if err != nil {
		return res, err
	}
	defer in.Abort()
	if staged != nil {
		in.Stage(StageFileMemory)
	}
	var mapping []int
	named := len(opts.Schema) > 0 || opts.Header || !strings.EqualFold(src.Format, "CSV")
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, contentError(obj.Path, err)
		}
		if mapping == nil {
			if mapping, err = mapColumns(obj.Path, r.Columns(), target, named); err != nil {
				if len(b.Errors) > 0 && b.Errors[0].Line <= 1 {
					// The columns were guessed from a first record the reader
					// could not read (over a limit, say): that is the cause.
					err = fmt.Errorf("file %s line %d: %s", obj.Path, b.Errors[0].Line, b.Errors[0].Msg)
				}
				return res, &fileError{err: err}
			}
		}
		errs, err := in.Add(b, mapping)
		if err != nil {
			return res, err
		}
		if len(errs) > 0 {
			if res.FirstError == "" {
				// load_history shows the message only: it says where the row is.
				res.FirstError, res.FirstErrLine = fmt.Sprintf("line %d: %s", errs[0].Line, errs[0].Msg), errs[0].Line
			}
			res.Rejected += int64(len(errs))
			switch onError {
			case onErrorAbort:
				kept := "nothing of this file was loaded"
				if in.Sent() > 0 {
					kept = fmt.Sprintf("%d earlier rows of this file were loaded", in.Sent())
				}
				return res, &fileError{err: fmt.Errorf("file %s line %d: %s (%s; ON_ERROR = 'continue' skips bad rows)", obj.Path, errs[0].Line, errs[0].Msg, kept)}
			case onErrorSkipFile:
				res.Status = jobs.FileFailed
				res.Duration = time.Since(start)
				return res, nil
			}
		}
	}
	var n int64
	if staged != nil {
		if *staged, err = in.Take(); err != nil {
			return res, err
		}
		n = staged.Rows()
	} else if n, err = in.Close(); err != nil {
		return res, err
	}
	res.Rows = n
	res.Status = jobs.FileLoaded
	if res.Rejected > 0 {
		res.Status = jobs.FilePartiallyLoaded
	}
	res.Duration = time.Since(start)
	return res, nil
}

// memFile is a file read whole into memory.
type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }

// fileError is a problem with a file's content: loading it again cannot
// help until the file changes.
type fileError struct{ err error }

func (e *fileError) Error() string { return e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// contentError classifies a reader's error: network and cancellation are
// transient, anything else is the file's fault.
func contentError(path string, err error) error {
	if errors.Is(err, objstore.ErrRefused) {
		return &fileError{err: fmt.Errorf("file %s: %w", path, err)}
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || minio.ToErrorResponse(err).Code != "" {
		return fmt.Errorf("file %s: %w", path, err)
	}
	if strings.HasPrefix(err.Error(), path+": ") {
		// The readers name the file already.
		return &fileError{err: fmt.Errorf("file %w", err)}
	}
	return &fileError{err: fmt.Errorf("file %s: %w", path, err)}
}

func copyOnError(opts []sqlparse.Property) (string, error) {
	for _, p := range opts {
		if strings.EqualFold(p.Key, "on_error") {
			switch v := strings.ToLower(p.Value); v {
			case "abort", "abort_statement":
				return onErrorAbort, nil
			case "continue":
				return onErrorContinue, nil
			case "skip_file":
				return onErrorSkipFile, nil
			default:
				return "", fmt.Errorf("ON_ERROR = %q: expected 'abort', 'continue' or 'skip_file'", p.Value)
			}
		}
	}
	return onErrorAbort, nil
}

func (e *Engine) copyIntoTable(ctx context.Context, s *sqlparse.CopyIntoTable) (*core.Result, error) {
	if s.Volume == nil {
		return nil, fmt.Errorf("COPY INTO … FROM (SELECT …): %w outside a pipe (use INSERT INTO … SELECT)", core.ErrNotSupportedYet)
	}
	schema, name, spec, err := e.Table(ctx, s.Table)
	if err != nil {
		return nil, err
	}
	cols, err := core.TargetColumns(core.Display(schema, name), spec, s.Columns)
	if err != nil {
		return nil, err
	}
	onError, err := copyOnError(s.Options)
	if err != nil {
		return nil, err
	}
	for _, p := range s.Options {
		if !strings.EqualFold(p.Key, "on_error") && !strings.EqualFold(p.Key, "force") {
			return nil, fmt.Errorf("COPY INTO %s: unknown option %s (known: PURGE, ON_ERROR)", core.Display(schema, name), strings.ToUpper(p.Key))
		}
	}
	vol, _, err := e.Volume(ctx, s.Volume.Volume)
	if err != nil {
		return nil, err
	}
	files, err := e.selectFiles(ctx, vol, s.Volume)
	if err != nil {
		return nil, err
	}
	opts, err := e.fileOptions(s.Volume)
	if err != nil {
		return nil, err
	}
	if s.Overwrite {
		if err := e.TruncateStoredTable(ctx, schema, name); err != nil {
			return nil, err
		}
	}
	target := core.TableTarget(schema, name, cols)
	target.Commit = core.RandomCommit()
	res := &core.Result{Columns: []string{"file", "status", "rows_loaded", "rows_rejected", "first_error"}}
	loadID := core.NewLoadID()
	var loaded int64
	defer func() {
		// Registered even when a later file fails: the rows of the files
		// before it stay in the table.
		_ = e.TrackLoad(context.Background(), schema, name, target.Commit, loaded)
	}()
	for _, f := range files {
		fl, err := e.safeLoadFile(ctx, vol, f, s.Volume, opts, target, onError)
		if err != nil {
			fl.Status = jobs.FileFailed
			if fl.FirstError == "" {
				fl.FirstError = err.Error()
			}
			_ = e.RecordLoads(ctx, core.Display(schema, name), "", loadID, []FileLoad{fl})
			return nil, fmt.Errorf("COPY INTO %s: %w", core.Display(schema, name), err)
		}
		if err := e.RecordLoads(ctx, core.Display(schema, name), "", loadID, []FileLoad{fl}); err != nil {
			return nil, err
		}
		if s.Purge && fl.Status == jobs.FileLoaded {
			if err := vol.RemoveListed(ctx, f.Path); err != nil {
				return nil, fmt.Errorf("COPY INTO %s: loaded %s but could not purge it: %w", core.Display(schema, name), f.Path, err)
			}
		}
		if fl.Status != jobs.FileFailed {
			loaded += fl.Rows
		}
		res.Rows = append(res.Rows, []any{f.Path, string(fl.Status), fl.Rows, fl.Rejected, fl.FirstError})
	}
	if len(files) == 0 {
		res.Message = "no files to load"
	}
	return res, nil
}

// RecordLoads writes load history rows for a table (pipe "" for one-shot
// COPY). A later record of the same file replaces the earlier one.
func (e *Engine) RecordLoads(ctx context.Context, table, pipe, loadID string, loads []FileLoad) error {
	rows := make([][]any, len(loads))
	now := time.Now().UTC()
	for i, l := range loads {
		rows[i] = []any{table, pipe, l.Path, l.ETag, uint64(l.Size), now, string(l.Status), l.FirstError, l.FirstErrLine,
			uint64(l.Rows), uint64(l.Rejected), cmp.Or(l.LoadID, loadID), uint64(now.UnixNano()) + uint64(i)}
	}
	err := e.St.InsertRows(ctx, schemas.SystemDB, "load_history", []string{"table_name", "pipe_name", "file_path", "etag", "file_size",
		"last_copy_time", "status", "first_error_message", "first_error_line", "rows_loaded", "rows_rejected", "load_id", "version"}, rows)
	if err != nil {
		return fmt.Errorf("record load history of %s: %w", table, err)
	}
	return nil
}

// loadHistorySource renders load_history('t') as a subquery.
func (e *Engine) loadHistorySource(ctx context.Context, f *sqlparse.FuncCall) (string, error) {
	if len(f.Args) != 1 {
		return "", fmt.Errorf("load_history takes the table name, as in load_history('sales_ods')")
	}
	lit, ok := f.Args[0].(*sqlparse.Literal)
	if !ok || lit.Kind != sqlparse.LitString {
		return "", fmt.Errorf("load_history takes the table name as a string, as in load_history('sales_ods')")
	}
	schema, name, spec, err := e.Table(ctx, core.NameFromString(lit.Value))
	if err != nil {
		return "", err
	}
	// Aggregates get h_ aliases: ClickHouse lets an alias shadow the column
	// of the same name in WHERE.
	return "(SELECT file_path, h_time AS last_copy_time, h_size AS file_size, h_status AS status, h_error AS first_error_message, " +
		"h_rows AS rows_loaded, h_rejected AS rows_rejected, pipe_name FROM (" +
		"SELECT file_path, pipe_name, argMax(last_copy_time, version) AS h_time, argMax(file_size, version) AS h_size, " +
		"argMax(status, version) AS h_status, argMax(first_error_message, version) AS h_error, " +
		"argMax(rows_loaded, version) AS h_rows, argMax(rows_rejected, version) AS h_rejected " +
		"FROM lakepipe.load_history WHERE table_name = " + chsql.QuoteString(core.Display(schema, name)) +
		// Records of an earlier table of the same name are not this table's.
		fmt.Sprintf(" AND last_copy_time >= toDateTime(%d)", spec.CreatedAt.Unix()) +
		" GROUP BY file_path, pipe_name) WHERE h_time > now() - " + strconv.Itoa(e.Cfg.LoadHistoryDays*86400) +
		" ORDER BY h_time, file_path)", nil
}

// export formats.
var exportExt = map[string]string{"CSV": "csv", "PARQUET": "parquet", "JSON": "json"}

// exportFileBytes is where an export starts its next file.
const exportFileBytes = 256 << 20

func (e *Engine) copyIntoVolume(ctx context.Context, s *sqlparse.CopyIntoVolume) (*core.Result, error) {
	format := strings.ToUpper(s.FileFormat)
	ext, ok := exportExt[format]
	if !ok || format == "JSON" {
		return nil, fmt.Errorf("COPY INTO VOLUME: FILE_FORMAT = (TYPE = %s) is not supported (CSV or PARQUET)", s.FileFormat)
	}
	vol, _, err := e.Volume(ctx, s.Volume)
	if err != nil {
		return nil, err
	}
	dir, err := vol.Dir(s.Subdirectory)
	if err != nil {
		return nil, fmt.Errorf("SUBDIRECTORY %q: %w", s.Subdirectory, err)
	}
	relDir := strings.TrimPrefix(dir, vol.Location().Prefix)
	sess := e.session(ctx)
	defer sess.close()
	var query string
	if s.FromTable != nil {
		q := &sqlparse.Query{Body: &sqlparse.Select{
			Items: []sqlparse.SelectItem{{Star: true}},
			From:  []sqlparse.TableRef{&sqlparse.TableName{Name: *s.FromTable}},
		}}
		if query, err = sess.translate(q); err != nil {
			return nil, err
		}
	} else if query, err = sess.translate(s.FromQuery); err != nil {
		return nil, err
	}
	kv := map[string]string{}
	for _, p := range s.FormatOptions {
		kv[p.Key] = p.Value
	}
	wopts, err := formats.ParseOptions(kv)
	if err != nil {
		return nil, fmt.Errorf("FILE_FORMAT: %w", err)
	}
	ex := &exporter{ctx: ctx, vol: vol, dir: relDir, ext: ext, format: format, opts: wopts}
	res := &core.Result{Columns: []string{"file", "rows", "bytes"}}
	err = e.St.Each(ctx, query, func(names, types []string) error {
		for i := range names {
			ex.cols = append(ex.cols, formats.Column{Name: names[i], Type: types[i]})
		}
		return nil
	}, ex.write)
	if cerr := ex.finish(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("COPY INTO VOLUME %s: %w", s.Volume, err)
	}
	for _, f := range ex.files {
		res.Rows = append(res.Rows, []any{f.path, f.rows, f.bytes})
	}
	if len(ex.files) == 0 {
		res.Message = "no rows to export"
	}
	return res, nil
}

type exportedFile struct {
	path  string
	rows  int64
	bytes int64
}

// exporter writes query rows into part00001.csv, part00002.csv, … each
// streamed to the store as it is written.
type exporter struct {
	ctx    context.Context
	vol    *objstore.Volume
	dir    string
	ext    string
	format string
	opts   formats.Options
	cols   []formats.Column
	files  []exportedFile

	w     formats.Writer
	pw    *io.PipeWriter
	count *countingWriter
	done  chan error
	rows  int64
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (x *exporter) open() error {
	name := fmt.Sprintf("%spart%05d.%s", x.dir, len(x.files)+1, x.ext)
	pr, pw := io.Pipe()
	x.pw, x.done = pw, make(chan error, 1)
	x.count = &countingWriter{w: pw}
	go func() {
		_, err := x.vol.Put(x.ctx, name, pr, map[string]string{"csv": "text/csv"}[x.ext])
		pr.CloseWithError(err)
		x.done <- err
	}()
	var err error
	if x.format == "PARQUET" {
		x.w, err = formats.NewParquetWriter(x.count, x.cols)
	} else {
		x.w = formats.NewCSVWriter(x.count, x.cols, x.opts)
	}
	if err != nil {
		pw.CloseWithError(err)
		<-x.done
		return err
	}
	x.files = append(x.files, exportedFile{path: name})
	x.rows = 0
	return nil
}

func (x *exporter) write(row []any) error {
	if x.w == nil {
		if err := x.open(); err != nil {
			return err
		}
	}
	if err := x.w.Write(row); err != nil {
		return err
	}
	x.rows++
	if x.count.n >= exportFileBytes {
		return x.closeFile()
	}
	return nil
}

func (x *exporter) closeFile() error {
	if x.w == nil {
		return nil
	}
	err := x.w.Close()
	if err != nil {
		x.pw.CloseWithError(err)
	} else {
		x.pw.Close()
	}
	if perr := <-x.done; err == nil {
		err = perr
	}
	f := &x.files[len(x.files)-1]
	f.rows, f.bytes = x.rows, x.count.n
	x.w = nil
	return err
}

func (x *exporter) finish() error { return x.closeFile() }
