package fileread

import (
	"context"
	"sync/atomic"

	"github.com/lakepipe/lakepipe/internal/objstore"
)

// Progress counts the bytes read from volume files under a context
// (WithProgress): an activity reports it in its heartbeats and notices an
// attempt that stopped making progress.
type Progress struct {
	Bytes atomic.Int64
}

type progressKey struct{}

// WithProgress returns ctx whose file reads add to p.
func WithProgress(ctx context.Context, p *Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

func progressOf(ctx context.Context) *Progress {
	p, _ := ctx.Value(progressKey{}).(*Progress)
	return p
}

// countedFile adds what is read of a file to a Progress.
type countedFile struct {
	objstore.File
	p *Progress
}

func (f countedFile) Read(b []byte) (int, error) {
	n, err := f.File.Read(b)
	f.p.Bytes.Add(int64(n))
	return n, err
}

func (f countedFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(b, off)
	f.p.Bytes.Add(int64(n))
	return n, err
}

// counted wraps f when ctx carries a Progress.
func counted(ctx context.Context, f objstore.File) objstore.File {
	if p := progressOf(ctx); p != nil {
		return countedFile{f, p}
	}
	return f
}
