package fileread

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/formats"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/schemas"
)

// SelectFiles lists the files a volume source names: FILES(…), else the
// SUBDIRECTORY's files, else the whole volume; REGEXP filters. FILES and
// SUBDIRECTORY are typed paths: one that could leave the volume ('..', a
// backslash) is the user's error, refused (permanent: a pipe with one
// pauses rather than retries) before anything is read. The Objects' paths
// are as the store lists them, for the *Listed methods. A listing is
// filtered page by page, and more than Limits.MaxStatementFiles selected
// files fail the statement: it keeps them all in memory.
func (e *Reader) SelectFiles(ctx context.Context, vol *objstore.Volume, src *sqlast.VolumeSource) ([]objstore.Object, error) {
	var re *regexp.Regexp
	if src.Regexp != nil {
		var err error
		if re, err = regexp.Compile(*src.Regexp); err != nil {
			return nil, core.Permanent(fmt.Errorf("REGEXP %q: %v", *src.Regexp, err))
		}
	}
	keep := func(o objstore.Object) bool { return re == nil || re.MatchString(o.Path) }
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
			if keep(o) {
				out = append(out, o)
			}
		}
		return out, nil
	}
	sub := ""
	if src.Subdirectory != nil {
		sub = *src.Subdirectory
		if err := objstore.CheckPath(sub); err != nil {
			return nil, core.Permanent(fmt.Errorf("SUBDIRECTORY %s: %w", chsql.QuoteString(sub), err))
		}
	}
	limit := e.Cfg.Limits.WithDefaults().MaxStatementFiles
	err := vol.ListPages(ctx, sub, "", func(page []objstore.Object) error {
		for _, o := range page {
			if !keep(o) {
				continue
			}
			if int64(len(out)) >= limit {
				return core.Permanent(fmt.Errorf("%w: narrow the statement with SUBDIRECTORY, FILES or REGEXP, or load the volume with a pipe",
					&rowio.LimitError{Limit: "MaxStatementFiles", Value: limit, What: fmt.Sprintf("volume %s holds more files than one statement may read", src.Volume)}))
			}
			out = append(out, o)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// FileOptions is readOptions with the engine's reader limits.
func (e *Reader) FileOptions(src *sqlast.VolumeSource) (rowio.Options, error) {
	opts, err := ReadOptions(src)
	opts.Limits = e.Cfg.Limits
	return opts, err
}

// ReadOptions turns OPTIONS(…) and an inline schema into reader options.
func ReadOptions(src *sqlast.VolumeSource) (rowio.Options, error) {
	kv := make(map[string]string, len(src.Options))
	for _, p := range src.Options {
		kv[p.Key] = p.Value
	}
	opts, err := rowio.ParseOptions(kv)
	if err != nil {
		return opts, fmt.Errorf("OPTIONS: %w", err)
	}
	for _, c := range src.Schema {
		ch, err := schemas.ClickHouseType(c.Type, c.NotNull)
		if err != nil {
			return opts, fmt.Errorf("column %s: %w", c.Name, err)
		}
		opts.Schema = append(opts.Schema, rowio.Column{Name: c.Name, Type: ch})
	}
	return opts, nil
}

// FileColumns opens a file only to learn the columns it provides.
func (e *Reader) FileColumns(ctx context.Context, vol *objstore.Volume, obj objstore.Object, format string, opts rowio.Options) ([]rowio.Column, error) {
	f, _, err := vol.OpenListed(ctx, obj.Path, obj.ETag)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := formats.Open(rowio.Source{R: f, At: f, Size: obj.Size, Name: obj.Path}, format, opts)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", obj.Path, err)
	}
	defer r.Close()
	if _, err := r.Next(); err != nil && err != io.EOF {
		return nil, fmt.Errorf("file %s: %w", obj.Path, err)
	}
	return append([]rowio.Column(nil), r.Columns()...), nil
}

// ON_ERROR policies.
const (
	OnErrorAbort    = "abort"     // the statement fails at the first bad row
	onErrorContinue = "continue"  // bad rows are skipped and counted
	OnErrorSkipFile = "skip_file" // a file with a bad row is not loaded
)

// FileLoad is the outcome of loading one file.
type FileLoad struct {
	Path         string
	Size         int64
	ETag         string
	Modified     time.Time // the version's last-modified time, with ETag
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
	// Purge: the COPY that loaded the file removes it once recorded
	// (PURGE = TRUE); see Reader.PurgeLeft.
	Purge bool
}

// MapColumns says, for each target column, which source column feeds it.
// Sources with names (header, schema, Parquet, JSON) match by name when
// every name is a target column; otherwise columns match by position.
func MapColumns(file string, src []rowio.Column, target core.LoadTarget, named bool) ([]int, error) {
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

// readFileInto is loadFile; with staged set, the file's rows are not
// written but kept in *staged (for chstore.InsertStaged with those of
// other small files), and only when the file loads whole or in part.
func (e *Reader) readFileInto(ctx context.Context, vol *objstore.Volume, obj objstore.Object, src *sqlast.VolumeSource, opts rowio.Options, target core.LoadTarget, onError string, staged *chstore.Staged) (FileLoad, error) {
	start := time.Now()
	res := FileLoad{Path: obj.Path, Size: obj.Size, ETag: obj.ETag, Modified: obj.Modified}
	var f objstore.File
	var err error
	if staged != nil {
		// A staged file is small: one GET reads it whole.
		var data []byte
		data, err = readListed(vol, ctx, obj.Path, obj.ETag, StageFileBytes)
		if err == nil {
			f = memFile{bytes.NewReader(data)}
			obj.Size = int64(len(data))
		}
	} else {
		var opened objstore.Object
		f, opened, err = openListed(vol, ctx, obj.Path, obj.ETag)
		if err == nil && obj.ETag == "" {
			// Any version was asked for (a COPY): the one opened.
			obj.Size, res.Size, res.ETag, res.Modified = opened.Size, opened.Size, opened.ETag, opened.Modified
		}
	}
	if errors.Is(err, objstore.ErrRefused) {
		return res, &FileError{err: err} // the store will not serve this key: no retry helps
	}
	if err != nil {
		return res, err
	}
	defer f.Close()
	f = counted(ctx, f)
	r, err := formats.Open(rowio.Source{R: f, At: f, Size: obj.Size, Name: obj.Path}, src.Format, opts)
	if err != nil {
		return res, contentError(obj.Path, err)
	}
	defer r.Close()
	in, err := newInserter(ctx, e.St, target)
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
			if mapping, err = MapColumns(obj.Path, r.Columns(), target, named); err != nil {
				if len(b.Errors) > 0 && b.Errors[0].Line <= 1 {
					// The columns were guessed from a first record the reader
					// could not read (over a limit, say): that is the cause.
					err = fmt.Errorf("file %s line %d: %s", obj.Path, b.Errors[0].Line, b.Errors[0].Msg)
				}
				return res, &FileError{err: err}
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
			case OnErrorAbort:
				kept := "nothing of this file was loaded"
				if in.Sent() > 0 {
					kept = fmt.Sprintf("%d earlier rows of this file were loaded", in.Sent())
				}
				return res, &FileError{err: fmt.Errorf("file %s line %d: %s (%s; ON_ERROR = 'continue' skips bad rows)", obj.Path, errs[0].Line, errs[0].Msg, kept)}
			case OnErrorSkipFile:
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

// How readFileInto reads its file and writes its rows: the volume's and
// the store's own methods. They are variables so that tests can drive the
// row handling (ON_ERROR, counts, first error) without S3 or ClickHouse.
var (
	readListed  = (*objstore.Volume).ReadListed
	openListed  = (*objstore.Volume).OpenListed
	newInserter = func(ctx context.Context, st *chstore.Store, t core.LoadTarget) (rowInserter, error) {
		in, err := st.NewInserter(ctx, t.DB, t.Table, t.Cols, core.CommitColumn, t.Commit)
		if err != nil {
			return nil, err // not a nil *Inserter in a non-nil interface
		}
		return in, nil
	}
)

// rowInserter is what readFileInto uses of a *chstore.Inserter.
type rowInserter interface {
	Add(b *rowio.Batch, source []int) ([]chstore.RowError, error)
	Sent() int64
	Stage(limit int)
	Take() (chstore.Staged, error)
	Close() (int64, error)
	Abort()
}

// memFile is a file read whole into memory.
type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }

// FileError is a problem with a file's content: loading it again cannot
// help until the file changes.
type FileError struct{ err error }

func (e *FileError) Error() string { return e.err.Error() }

func (e *FileError) Unwrap() error { return e.err }

// contentError classifies a reader's error: network and cancellation are
// transient, anything else is the file's fault.
func contentError(path string, err error) error {
	if errors.Is(err, objstore.ErrRefused) {
		return &FileError{err: fmt.Errorf("file %s: %w", path, err)}
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || minio.ToErrorResponse(err).Code != "" {
		return fmt.Errorf("file %s: %w", path, err)
	}
	if strings.HasPrefix(err.Error(), path+": ") {
		// The readers name the file already.
		return &FileError{err: fmt.Errorf("file %w", err)}
	}
	return &FileError{err: fmt.Errorf("file %s: %w", path, err)}
}

func CopyOnError(opts []sqlast.Property) (string, error) {
	for _, p := range opts {
		if strings.EqualFold(p.Key, "on_error") {
			switch v := strings.ToLower(p.Value); v {
			case "abort", "abort_statement":
				return OnErrorAbort, nil
			case "continue":
				return onErrorContinue, nil
			case "skip_file":
				return OnErrorSkipFile, nil
			default:
				return "", fmt.Errorf("ON_ERROR = %q: expected 'abort', 'continue' or 'skip_file'", p.Value)
			}
		}
	}
	return OnErrorAbort, nil
}

// Reader reads the files of volumes into ClickHouse tables.
type Reader struct {
	changes.Log
}

// Batching small files: a file of at most StageFileBytes is read whole
// into memory and written with the other small files of its batch in one
// INSERT; a batch holds at most StageBatchFiles files and StageBatchBytes
// bytes of files. What they hold once read is bounded too, since a small
// compressed file may hold much more: a file whose rows pass
// StageFileMemory, or that would take its batch past StageBatchMemory, is
// loaded alone afterwards, streamed as a large file is. At most
// StageBatchMemory plus par × StageFileMemory is held at once.
const (
	StageFileBytes   = 4 << 20
	StageBatchBytes  = 32 << 20
	StageBatchFiles  = 1000
	StageFileMemory  = 8 << 20
	StageBatchMemory = 48 << 20
)
