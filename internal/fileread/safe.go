package fileread

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// SafeLoadFile is loadFile with a panic (a reader, a conversion or the
// driver meeting input nobody foresaw) turned into that file's error: the
// file fails, the worker and every other load go on. The stack goes to
// the log for whoever fixes the bug, never into load_history.
func (e *Reader) SafeLoadFile(ctx context.Context, vol *objstore.Volume, obj objstore.Object, src *sqlast.VolumeSource, opts rowio.Options, target core.LoadTarget, onError string) (FileLoad, error) {
	return e.SafeStageFile(ctx, vol, obj, src, opts, target, onError, nil)
}

// SafeStageFile is safeLoadFile for a file whose rows are staged (see
// readFileInto) instead of written.
func (e *Reader) SafeStageFile(ctx context.Context, vol *objstore.Volume, obj objstore.Object, src *sqlast.VolumeSource, opts rowio.Options, target core.LoadTarget, onError string, staged *chstore.Staged) (res FileLoad, err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("panic while loading a file", "file", obj.Path, "table", target.Display, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res = FileLoad{Path: obj.Path, Size: obj.Size, ETag: obj.ETag}
			err = &FileError{err: fmt.Errorf("file %s: the file could not be read (%s); it is left unloaded", obj.Path, errtext.Cap(fmt.Sprint(p), errtext.MaxValue))}
		}
	}()
	return e.readFileInto(ctx, vol, obj, src, opts, target, onError, staged)
}
