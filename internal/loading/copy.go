package loading

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/fileread"
	"github.com/lakepipe/lakepipe/internal/formats"
	"github.com/lakepipe/lakepipe/internal/formats/textfile"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/internal/staging"
)

func (e *Loader) CopyIntoTable(ctx context.Context, s *sqlast.CopyIntoTable) (*core.Result, error) {
	if s.Volume == nil {
		return nil, fmt.Errorf("COPY INTO … FROM (SELECT …): %w outside a pipe (use INSERT INTO … SELECT)", core.ErrNotSupportedYet)
	}
	schema, name, spec, err := e.Table(ctx, s.Table)
	if err != nil {
		return nil, err
	}
	cols, err := e.LoadColumns(core.Display(schema, name), spec, s.Columns)
	if err != nil {
		return nil, err
	}
	onError, err := fileread.CopyOnError(s.Options)
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
	files, err := e.SelectFiles(ctx, vol, s.Volume)
	if err != nil {
		return nil, err
	}
	opts, err := e.FileOptions(s.Volume)
	if err != nil {
		return nil, err
	}
	if s.Overwrite && changes.Tracked(spec) {
		if err := e.EmptyTracked(ctx, schema, name, spec); err != nil {
			return nil, fmt.Errorf("COPY OVERWRITE %s: %w", core.Display(schema, name), err)
		}
	} else if s.Overwrite {
		if err := e.TruncateStoredTable(ctx, schema, name); err != nil {
			return nil, err
		}
	}
	target := core.TableTarget(schema, name, spec, cols)
	res := &core.Result{Columns: []string{"file", "status", "rows_loaded", "rows_rejected", "first_error"}}
	loadID := core.NewLoadID()
	// The statement's rows are one load, registered when it ends. With
	// PURGE into a change-tracked table each file is a load of its own,
	// registered before the file is removed: a COPY whose process dies
	// part way leaves the rows of the files it removed committed, and only
	// the file under way open, which maintenance removes with the dead
	// process's lease while the file stays for the COPY run again. As one
	// load, the removed files' rows went with it. (Other tables' loads are
	// never removed.)
	perFile := s.Purge && target.Tracked
	var loaded int64
	opened := false
	open := func() error {
		target.Commit, loaded, opened = core.RandomCommit(), 0, true
		return e.OpenLoads(ctx, target, []uint64{target.Commit})
	}
	register := func() error {
		opened = false
		// Not cancelled with ctx, but still fenced by its lease.
		return e.TrackLoad(context.WithoutCancel(ctx), schema, name, target.Commit, loaded)
	}
	defer func() {
		// Registered even when a later file fails: the rows of the files
		// before it stay in the table.
		if opened {
			_ = register()
		}
	}()
	// A file that a COPY … PURGE loaded and recorded but did not remove
	// (its process stopped in between, or the DELETE failed) has its rows
	// committed: it is removed, not loaded again. Unless the COPY
	// overwrites: those rows are gone with the table's.
	var left map[string]fileread.LeftLoaded
	if s.Purge && !s.Overwrite {
		if left, err = e.PurgeLeft(ctx, core.Display(schema, name), spec.CreatedAt, files); err != nil {
			return nil, fmt.Errorf("COPY INTO %s: %w", core.Display(schema, name), err)
		}
	}
	if !perFile {
		if err := open(); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if l, ok := left[f.Path]; ok {
			if err := vol.RemoveListed(ctx, f.Path); err != nil {
				return nil, fmt.Errorf("COPY INTO %s: %s was loaded before and could not be purged: %w", core.Display(schema, name), f.Path, err)
			}
			res.Rows = append(res.Rows, []any{f.Path, string(jobs.FileSkipped), int64(0), int64(0),
				fmt.Sprintf("loaded at %s (%d rows) by a COPY … PURGE that stopped before removing it: removed now, not loaded again", l.At.Format(time.DateTime), l.Rows)})
			continue
		}
		if perFile {
			if err := open(); err != nil {
				return nil, err
			}
		}
		// A COPY loads each file as it is when read, not as listed: the
		// version read is the one recorded.
		f.ETag = ""
		fl, err := e.copyFile(ctx, vol, f, s.Volume, opts, target, onError, changes.StageKey(spec))
		// Each file's record of a per-file load names its commit: once
		// written, the load is committed (maintenance registers, by that
		// name, a recorded load whose process died before registering it).
		// The record also says the COPY purges, which a COPY run again
		// looks for (PurgeLeft).
		fl.Purge = s.Purge
		if perFile {
			fl.LoadID = core.LoadID(target.Commit)
		}
		if err != nil {
			fl.Status = jobs.FileFailed
			if fl.FirstError == "" {
				fl.FirstError = err.Error()
			}
			_ = e.RecordLoads(ctx, core.Display(schema, name), "", loadID, []fileread.FileLoad{fl})
			return nil, fmt.Errorf("COPY INTO %s: %w", core.Display(schema, name), err)
		}
		if err := e.RecordLoads(ctx, core.Display(schema, name), "", loadID, []fileread.FileLoad{fl}); err != nil {
			if perFile {
				// Not committed: the file stays, and its rows are left
				// open, for maintenance to remove with the process's lease,
				// rather than registered beside a file a COPY loads again.
				opened = false
			}
			return nil, err
		}
		if fl.Status != jobs.FileFailed {
			loaded += fl.Rows
		}
		if perFile {
			if err := register(); err != nil {
				return nil, fmt.Errorf("COPY INTO %s: loaded %s but could not register it, so it stays in the volume: %w", core.Display(schema, name), f.Path, err)
			}
		}
		if s.Purge && fl.Status == jobs.FileLoaded {
			if err := vol.RemoveListed(ctx, f.Path); err != nil {
				return nil, fmt.Errorf("COPY INTO %s: loaded %s but could not purge it: %w", core.Display(schema, name), f.Path, err)
			}
		}
		res.Rows = append(res.Rows, []any{f.Path, string(fl.Status), fl.Rows, fl.Rejected, fl.FirstError})
	}
	if len(files) == 0 {
		res.Message = "no files to load"
	}
	return res, nil
}

// copyFile loads one file of a COPY. Into a keyed table (key: its key
// columns, staging.New) the file is staged, so that a failing file never
// replaces a row, and published with the rows it replaces kept when the
// table tracks changes.
func (e *Loader) copyFile(ctx context.Context, vol *objstore.Volume, f objstore.Object, src *sqlast.VolumeSource, opts rowio.Options, target core.LoadTarget, onError string, key string) (fileread.FileLoad, error) {
	if key == "" {
		return e.SafeLoadFile(ctx, vol, f, src, opts, target, onError)
	}
	stg, err := staging.New(ctx, e.St, target, key)
	if err != nil {
		return fileread.FileLoad{Path: f.Path}, err
	}
	defer stg.Drop(ctx)
	fl, err := e.SafeLoadFile(ctx, vol, f, src, opts, stg.Into(target), onError)
	if err != nil || fl.Status == jobs.FileFailed {
		return fl, err
	}
	return fl, e.PublishStaged(ctx, stg, target)
}

// export formats.
var exportExt = map[string]string{"CSV": "csv", "PARQUET": "parquet", "JSON": "json"}

// exportFileBytes is where an export starts its next file.
const exportFileBytes = 256 << 20

func (e *Loader) CopyIntoVolume(ctx context.Context, s *sqlast.CopyIntoVolume) (*core.Result, error) {
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
	sess := e.Session(ctx)
	defer sess.Close()
	var query string
	if s.FromTable != nil {
		q := &sqlast.Query{Body: &sqlast.Select{
			Items: []sqlast.SelectItem{{Star: true}},
			From:  []sqlast.TableRef{&sqlast.TableName{Name: *s.FromTable}},
		}}
		if query, err = sess.Translate(q); err != nil {
			return nil, err
		}
	} else if query, err = sess.Translate(s.FromQuery); err != nil {
		return nil, err
	}
	kv := map[string]string{}
	for _, p := range s.FormatOptions {
		kv[p.Key] = p.Value
	}
	wopts, err := rowio.ParseOptions(kv)
	if err != nil {
		return nil, fmt.Errorf("FILE_FORMAT: %w", err)
	}
	ex := &exporter{ctx: ctx, vol: vol, dir: relDir, ext: ext, format: format, opts: wopts}
	res := &core.Result{Columns: []string{"file", "rows", "bytes"}}
	err = e.St.Each(ctx, query, func(names, types []string) error {
		for i := range names {
			ex.cols = append(ex.cols, rowio.Column{Name: names[i], Type: types[i]})
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
	opts   rowio.Options
	cols   []rowio.Column
	files  []exportedFile

	w     rowio.Writer
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
		x.w = textfile.NewCSVWriter(x.count, x.cols, x.opts)
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
