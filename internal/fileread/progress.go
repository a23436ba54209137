package fileread

import (
	"context"

	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/progress"
)

// countedFile adds the bytes read of a file to a progress.Counter.
type countedFile struct {
	objstore.File
	c *progress.Counter
}

func (f countedFile) Read(b []byte) (int, error) {
	n, err := f.File.Read(b)
	f.c.Add(int64(n))
	return n, err
}

func (f countedFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(b, off)
	f.c.Add(int64(n))
	return n, err
}

// counted wraps f when ctx carries a progress.Counter (progress.With): a
// copy's heartbeats show the bytes read and its stall check watches them.
func counted(ctx context.Context, f objstore.File) objstore.File {
	if c := progress.Of(ctx); c != nil {
		return countedFile{f, c}
	}
	return f
}
