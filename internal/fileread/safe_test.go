package fileread

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// captureLog sends slog's default logger to a buffer for the rest of the
// test (the panic's stack would otherwise fill the test output).
func captureLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	old := slog.Default()
	t.Cleanup(func() { slog.SetDefault(old) })
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	return &buf
}

func TestSafeStageFileTurnsAPanicIntoTheFilesError(t *testing.T) {
	long := strings.Repeat("v", 3*errtext.MaxValue)
	obj := objstore.Object{Path: "dir/f.csv", Size: 42, ETag: "etag-1"}
	cases := []struct {
		name    string
		fake    bool // the panic comes from the (fake) inserter, else from a nil volume
		stage   bool
		wantMsg string
	}{
		{name: "a conversion panics (streamed)", fake: true, wantMsg: "file dir/f.csv: the file could not be read (" + errtext.Cap(long, errtext.MaxValue) + "); it is left unloaded"},
		{name: "a conversion panics (staged)", fake: true, stage: true, wantMsg: "file dir/f.csv: the file could not be read (" + errtext.Cap(long, errtext.MaxValue) + "); it is left unloaded"},
		// No seam replaced: the panic is the runtime's own, in the volume.
		{name: "a nil dereference while opening", wantMsg: "file dir/f.csv: the file could not be read (runtime error: invalid memory address or nil pointer dereference); it is left unloaded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logged := captureLog(t)
			if c.fake {
				serveFiles(t, map[string]string{obj.Path: "a,b\n1,x\n"}, nil)
				useInserter(t, &fakeInserter{panicWith: long}, nil)
			}
			var staged *chstore.Staged
			if c.stage {
				staged = new(chstore.Staged)
			}
			var e Reader
			res, err := e.SafeStageFile(context.Background(), nil, obj, &sqlast.VolumeSource{Format: "CSV"}, rowio.Options{Header: true}, twoCols, onErrorContinue, staged)
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v (%T), want a *FileError", err, err)
			}
			if err.Error() != c.wantMsg {
				t.Errorf("err = %q\nwant  %q", err, c.wantMsg)
			}
			if res != (FileLoad{Path: obj.Path, Size: obj.Size, ETag: obj.ETag}) {
				t.Errorf("result %+v: want only the file's identity", res)
			}
			if !strings.Contains(logged.String(), "panic while loading a file") || !strings.Contains(logged.String(), "goroutine") {
				t.Errorf("the log has no panic with its stack: %q", logged)
			}
			if strings.Contains(err.Error(), "goroutine") {
				t.Error("the stack leaked into the file's error (and so into load_history)")
			}
		})
	}
}

// Without a panic SafeLoadFile is loadFile: result and error pass through.
func TestSafeLoadFilePassesThrough(t *testing.T) {
	logged := captureLog(t)
	serveFiles(t, map[string]string{"f.csv": "a,b\n1,x\n2,y\n"}, nil)
	useInserter(t, &fakeInserter{bad: map[int64]string{3: "column a: bad"}}, nil)
	var e Reader
	res, err := e.SafeLoadFile(context.Background(), nil, objstore.Object{Path: "f.csv"}, &sqlast.VolumeSource{Format: "CSV"}, rowio.Options{Header: true}, twoCols, onErrorContinue)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 1 || res.Rejected != 1 || res.Status != jobs.FilePartiallyLoaded {
		t.Errorf("%+v", res)
	}
	if logged.Len() != 0 {
		t.Errorf("logged %q without a panic", logged)
	}
}
