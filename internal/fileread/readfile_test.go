package fileread

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// serveFiles makes readFileInto read files from memory instead of a
// volume, for the rest of the test. A path missing from files fails as
// failErr does (objstore.ErrNotFound when nil).
func serveFiles(t *testing.T, files map[string]string, failErr error) {
	t.Helper()
	if failErr == nil {
		failErr = objstore.ErrNotFound
	}
	oldRead, oldOpen := readListed, openListed
	t.Cleanup(func() { readListed, openListed = oldRead, oldOpen })
	readListed = func(_ *objstore.Volume, _ context.Context, rel, _ string, _ int64) ([]byte, error) {
		data, ok := files[rel]
		if !ok {
			return nil, failErr
		}
		return []byte(data), nil
	}
	openListed = func(_ *objstore.Volume, _ context.Context, rel, _ string) (objstore.File, objstore.Object, error) {
		data, ok := files[rel]
		if !ok {
			return nil, objstore.Object{}, failErr
		}
		return memFile{bytes.NewReader([]byte(data))}, objstore.Object{Path: rel, Size: int64(len(data))}, nil
	}
}

// useInserter makes readFileInto write into in (or fail with err).
func useInserter(t *testing.T, in *fakeInserter, err error) {
	t.Helper()
	old := newInserter
	t.Cleanup(func() { newInserter = old })
	newInserter = func(context.Context, *chstore.Store, core.LoadTarget) (rowInserter, error) {
		if err != nil {
			return nil, err
		}
		return in, nil
	}
}

// fakeInserter stands for a *chstore.Inserter: it "converts" every row but
// those on the lines in bad, and reports the reader's row errors before
// its own, as the real one does.
type fakeInserter struct {
	bad       map[int64]string // file line → conversion error
	sendEach  bool             // every Add sends its rows (a block filled)
	addErr    error
	closeErr  error
	panicWith string

	stageLimit              int
	pending, sent           int64
	mappings                [][]int
	closed, taken, aborted  bool
	addsAfterEnd, stageLate bool
}

func (f *fakeInserter) Add(b *rowio.Batch, source []int) ([]chstore.RowError, error) {
	if f.panicWith != "" {
		panic(f.panicWith)
	}
	if f.closed {
		f.addsAfterEnd = true
	}
	f.mappings = append(f.mappings, append([]int(nil), source...))
	var errs []chstore.RowError
	for _, e := range b.Errors {
		errs = append(errs, chstore.RowError{Line: e.Line, Msg: e.Msg})
	}
	if f.addErr != nil {
		return errs, f.addErr
	}
	for r := 0; r < b.Rows; r++ {
		if msg, ok := f.bad[b.Line[r]]; ok {
			errs = append(errs, chstore.RowError{Line: b.Line[r], Msg: msg})
			continue
		}
		f.pending++
	}
	if f.sendEach {
		f.sent, f.pending = f.sent+f.pending, 0
	}
	return errs, nil
}

func (f *fakeInserter) Sent() int64 { return f.sent }

func (f *fakeInserter) Stage(limit int) {
	if len(f.mappings) > 0 {
		f.stageLate = true
	}
	f.stageLimit = limit
}

func (f *fakeInserter) Take() (chstore.Staged, error) {
	f.closed, f.taken = true, true
	return chstore.Staged{}, nil
}

func (f *fakeInserter) Close() (int64, error) {
	f.closed = true
	if f.closeErr != nil {
		return 0, f.closeErr
	}
	f.sent, f.pending = f.sent+f.pending, 0
	return f.sent, nil
}

// Abort after Close or Take is a no-op, as the real one's is: aborted
// says the load ended without either.
func (f *fakeInserter) Abort() {
	if !f.closed {
		f.aborted = true
		f.closed = true
	}
}

var twoCols = core.LoadTarget{DB: "public", Table: "t", Display: "public.t", Cols: []rowio.Column{{Name: "a", Type: "Int64"}, {Name: "b", Type: "String"}}}

// sixRows is a CSV file of six rows after its header (lines 2-7).
const sixRows = "a,b\n1,x\n2,y\n3,z\n4,w\n5,v\n6,u\n"

func TestReadFileInto(t *testing.T) {
	// Batches of two rows put lines 2-3, 4-5 and 6-7 in separate Adds,
	// so the counts are summed over batches.
	opts := rowio.Options{Header: true, BatchRows: 2}
	cases := []struct {
		name    string
		onError string
		in      fakeInserter
		stage   bool
		want    FileLoad // Path, Size and ETag are filled in
		wantErr string   // a *FileError's text, when not ""
		// what became of the insert: closed by Close, taken (staged), or aborted
		closed, taken, aborted bool
	}{
		{
			name: "all rows good", onError: OnErrorAbort,
			want:   FileLoad{Rows: 6, Status: jobs.FileLoaded},
			closed: true,
		},
		{
			name: "continue counts bad rows over batches and keeps the first", onError: onErrorContinue,
			in:     fakeInserter{bad: map[int64]string{5: "column a: not a number", 7: "column a: too big"}},
			want:   FileLoad{Rows: 4, Rejected: 2, FirstError: "line 5: column a: not a number", FirstErrLine: 5, Status: jobs.FilePartiallyLoaded},
			closed: true,
		},
		{
			name: "skip_file stops at the first bad batch and loads nothing", onError: OnErrorSkipFile,
			in:      fakeInserter{bad: map[int64]string{4: "column a: bad", 5: "column a: bad too", 7: "never read"}},
			want:    FileLoad{Rejected: 2, FirstError: "line 4: column a: bad", FirstErrLine: 4, Status: jobs.FileFailed},
			aborted: true,
		},
		{
			name: "abort before anything was sent", onError: OnErrorAbort,
			in:      fakeInserter{bad: map[int64]string{3: "column a: bad"}},
			want:    FileLoad{Rejected: 1, FirstError: "line 3: column a: bad", FirstErrLine: 3},
			wantErr: "file f.csv line 3: column a: bad (nothing of this file was loaded; ON_ERROR = 'continue' skips bad rows)",
			aborted: true,
		},
		{
			name: "abort says how many earlier rows were loaded", onError: OnErrorAbort,
			in:      fakeInserter{sendEach: true, bad: map[int64]string{6: "column b: too long", 7: "column b: too long"}},
			want:    FileLoad{Rejected: 2, FirstError: "line 6: column b: too long", FirstErrLine: 6},
			wantErr: "file f.csv line 6: column b: too long (4 earlier rows of this file were loaded; ON_ERROR = 'continue' skips bad rows)",
			aborted: true,
		},
		{
			name: "staged: rows are taken, not written", onError: OnErrorAbort, stage: true,
			want:  FileLoad{Rows: 0 /* a fake Staged holds none */, Status: jobs.FileLoaded},
			taken: true,
		},
		{
			name: "staged skip_file leaves nothing staged", onError: OnErrorSkipFile, stage: true,
			in:      fakeInserter{bad: map[int64]string{2: "column a: bad"}},
			want:    FileLoad{Rejected: 1, FirstError: "line 2: column a: bad", FirstErrLine: 2, Status: jobs.FileFailed},
			aborted: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			serveFiles(t, map[string]string{"f.csv": sixRows}, nil)
			in := c.in
			useInserter(t, &in, nil)
			var staged *chstore.Staged
			if c.stage {
				// Set to something Take would not give, to see whether it is replaced.
				staged = new(chstore.Staged)
			}
			var e Reader
			obj := objstore.Object{Path: "f.csv", Size: int64(len(sixRows)), ETag: "e1"}
			got, err := e.readFileInto(context.Background(), nil, obj, &sqlast.VolumeSource{Format: "CSV"}, opts, twoCols, c.onError, staged)
			if c.wantErr != "" {
				var fe *FileError
				if !errors.As(err, &fe) || err.Error() != c.wantErr {
					t.Fatalf("err = %v (%T), want the FileError %q", err, err, c.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			got.Duration = 0
			want := c.want
			want.Path, want.Size, want.ETag = obj.Path, obj.Size, obj.ETag
			if !reflect.DeepEqual(got, want) {
				t.Errorf("load\n got %+v\nwant %+v", got, want)
			}
			if in.taken != c.taken || in.aborted != c.aborted || (in.closed && !in.taken && !in.aborted) != c.closed {
				t.Errorf("insert taken %v aborted %v closed %v, want %v %v %v", in.taken, in.aborted, in.closed, c.taken, c.aborted, c.closed)
			}
			if c.stage && (in.stageLimit != StageFileMemory || in.stageLate) {
				t.Errorf("staged insert: Stage(%d) (late %v), want Stage(%d) before any Add", in.stageLimit, in.stageLate, StageFileMemory)
			}
			if !c.stage && in.stageLimit != 0 {
				t.Errorf("streamed insert was staged")
			}
			if in.addsAfterEnd {
				t.Error("Add after the insert ended")
			}
		})
	}
}

// The mapping follows the source's names when it has them: a CSV header,
// an inline schema or a named format; a bare CSV maps by position.
func TestReadFileIntoMapsByNameWhenNamed(t *testing.T) {
	cases := []struct {
		name   string
		format string
		file   string
		opts   rowio.Options
		want   []int
	}{
		{name: "CSV with a header", format: "CSV", file: "b,a\nx,1\n", opts: rowio.Options{Header: true}, want: []int{1, 0}},
		{name: "CSV without a header: by position", format: "csv", file: "x,1\n", want: []int{0, 1}},
		{name: "CSV with a schema", format: "CSV", file: "x,1\n", opts: rowio.Options{Schema: cols("b", "a")}, want: []int{1, 0}},
		{name: "JSON", format: "JSON", file: `{"b":"x","a":1}` + "\n", want: []int{1, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			serveFiles(t, map[string]string{"f": c.file}, nil)
			in := &fakeInserter{}
			useInserter(t, in, nil)
			var e Reader
			got, err := e.readFileInto(context.Background(), nil, objstore.Object{Path: "f"}, &sqlast.VolumeSource{Format: c.format}, c.opts, twoCols, OnErrorAbort, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Rows != 1 || len(in.mappings) != 1 || !reflect.DeepEqual(in.mappings[0], c.want) {
				t.Errorf("rows %d, mappings %v, want one Add with %v", got.Rows, in.mappings, c.want)
			}
		})
	}
}

// Failures: which are the file's (a *FileError, never retried) and which
// are passed on as they are (the store's or the network's, retried).
func TestReadFileIntoFailures(t *testing.T) {
	storeDown := errors.New("clickhouse: connection refused")
	cases := []struct {
		name     string
		file     string // "" serves no file
		openErr  error
		format   string
		in       fakeInserter
		newErr   error
		stage    bool
		lines    int64 // Limits.MaxLineBytes
		fileErr  bool
		wantIs   error
		wantText string
		notText  string
	}{
		{name: "a key the store refuses", openErr: objstore.ErrRefused, fileErr: true, wantIs: objstore.ErrRefused},
		{name: "a key the store refuses, staged", openErr: objstore.ErrRefused, stage: true, fileErr: true, wantIs: objstore.ErrRefused},
		{name: "a file gone since the listing", openErr: objstore.ErrNotFound, fileErr: false, wantIs: objstore.ErrNotFound},
		{name: "a staged file over the limit", openErr: objstore.ErrTooLarge, stage: true, fileErr: false, wantIs: objstore.ErrTooLarge},
		{name: "an unknown format", file: "1,x\n", format: "XML", fileErr: true, wantText: `file f.csv: unknown format "XML"`},
		{name: "a column count the target lacks", file: "1,x,extra\n", fileErr: true, wantText: "file f.csv has 3 columns and public.t has 2"},
		// The reader guessed the columns from a first record it could not
		// read: the error names that record, not a column count.
		{name: "an unreadable first record", file: "1,2," + strings.Repeat("x", 64) + "\n3,y\n", lines: 16, fileErr: true, wantText: "file f.csv line 1: record longer than 16 bytes (LAKEPIPE_MAX_LINE_BYTES; an unterminated quoted field?)", notText: "ON_ERROR"},
		{name: "no insert", file: "1,x\n", newErr: storeDown, fileErr: false, wantIs: storeDown},
		{name: "Add fails", file: "1,x\n", in: fakeInserter{addErr: chstore.ErrStageFull}, stage: true, fileErr: false, wantIs: chstore.ErrStageFull},
		{name: "Close fails", file: "1,x\n", in: fakeInserter{closeErr: storeDown}, fileErr: false, wantIs: storeDown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{}
			if c.file != "" {
				files["f.csv"] = c.file
			}
			serveFiles(t, files, c.openErr)
			in := c.in
			useInserter(t, &in, c.newErr)
			format := c.format
			if format == "" {
				format = "CSV"
			}
			var staged *chstore.Staged
			if c.stage {
				staged = new(chstore.Staged)
			}
			var e Reader
			_, err := e.readFileInto(context.Background(), nil, objstore.Object{Path: "f.csv"}, &sqlast.VolumeSource{Format: format}, rowio.Options{Limits: rowio.Limits{MaxLineBytes: c.lines}}, twoCols, OnErrorAbort, staged)
			if err == nil {
				t.Fatal("no error")
			}
			var fe *FileError
			if errors.As(err, &fe) != c.fileErr {
				t.Errorf("%v: FileError %v, want %v", err, !c.fileErr, c.fileErr)
			}
			if c.wantIs != nil && !errors.Is(err, c.wantIs) {
				t.Errorf("%v does not wrap %v", err, c.wantIs)
			}
			if c.wantText != "" && !strings.Contains(err.Error(), c.wantText) {
				t.Errorf("%v, want it to contain %q", err, c.wantText)
			}
			if c.notText != "" && strings.Contains(err.Error(), c.notText) {
				t.Errorf("%v, want it not to contain %q", err, c.notText)
			}
		})
	}
}

// The reader's own row errors (here a record with a field too many) count
// as rejected rows like conversion errors do.
func TestReadFileIntoCountsReaderRowErrors(t *testing.T) {
	serveFiles(t, map[string]string{"f.csv": "a,b\n1,x\n2,y,extra\n3,z\n"}, nil)
	in := &fakeInserter{}
	useInserter(t, in, nil)
	var e Reader
	got, err := e.readFileInto(context.Background(), nil, objstore.Object{Path: "f.csv"}, &sqlast.VolumeSource{Format: "CSV"}, rowio.Options{Header: true}, twoCols, onErrorContinue, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rows != 2 || got.Rejected != 1 || got.FirstErrLine != 3 || !strings.HasPrefix(got.FirstError, "line 3: ") || got.Status != jobs.FilePartiallyLoaded {
		t.Errorf("%+v", got)
	}
}

// A staged load through the real chstore.Inserter: staging never
// contacts the server (rows wait for InsertStaged), so a Store with no
// connection does. Conversion errors come from the real conversions.
func TestReadFileIntoStagedWithRealInserter(t *testing.T) {
	serveFiles(t, map[string]string{"f.csv": "a,b\n1,x\nnot-a-number,y\n3,z\n"}, nil)
	var e Reader
	e.St = &chstore.Store{}
	cases := []struct {
		onError  string
		rows     int64
		rejected int64
		status   jobs.FileStatus
		fileErr  bool
	}{
		{onError: onErrorContinue, rows: 2, rejected: 1, status: jobs.FilePartiallyLoaded},
		{onError: OnErrorSkipFile, rows: 0, rejected: 1, status: jobs.FileFailed},
		{onError: OnErrorAbort, rows: 0, rejected: 1, fileErr: true},
	}
	for _, c := range cases {
		t.Run(c.onError, func(t *testing.T) {
			var staged chstore.Staged
			got, err := e.readFileInto(context.Background(), nil, objstore.Object{Path: "f.csv"}, &sqlast.VolumeSource{Format: "CSV"}, rowio.Options{Header: true}, twoCols, c.onError, &staged)
			var fe *FileError
			if errors.As(err, &fe) != c.fileErr || (err != nil && !c.fileErr) {
				t.Fatalf("err = %v, want a FileError: %v", err, c.fileErr)
			}
			if got.Rows != c.rows || got.Rejected != c.rejected || got.Status != c.status || got.FirstErrLine != 3 || !strings.Contains(got.FirstError, "column a") {
				t.Errorf("%+v", got)
			}
			if staged.Rows() != c.rows {
				t.Errorf("staged %d rows, want %d", staged.Rows(), c.rows)
			}
		})
	}
}
