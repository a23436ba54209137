package formats

import (
	"fmt"
	"io"
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

// Formats lists the format names Open accepts.
var Formats = []string{"CSV", "JSON", "PARQUET", "ARROW"}

// Open returns a reader of src in format ("CSV", "JSON", "PARQUET" or
// "ARROW", any case; ARROW is an Arrow IPC stream, see arrowReader). Open
// reads ahead as far as it needs to know the columns, so Columns is valid
// as soon as it returns. Closing the reader does not close src.
//
// No input makes Open or the reader panic or allocate beyond
// opts.Limits: a file that breaks a limit fails with a *LimitError, and a
// panic inside a decoding library is recovered into a *CorruptError (see
// errors.As); both name the file. After Next fails that way, it keeps
// failing.
func Open(src Source, format string, opts Options) (r Reader, err error) {
	if err := opts.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", src.Name, err)
	}
	opts = opts.withDefaults()
	f := strings.ToUpper(strings.TrimSpace(format))
	kind := formatNames[f]
	if kind == "" {
		return nil, fmt.Errorf("%s: unknown format %q (supported: %s)", src.Name, format, strings.Join(Formats, ", "))
	}
	defer func() {
		if p := recover(); p != nil {
			// Whatever was opened is abandoned: the panic left it in no
			// known state, and the garbage collector reclaims Go memory.
			r, err = nil, recovered(src.Name, kind, p)
		}
	}()
	switch f {
	case "CSV", "JSON":
		cnt, dec, err := openSequential(src, opts)
		if err != nil {
			return nil, err
		}
		var r Reader
		if f == "CSV" {
			r, err = newCSVReader(src.Name, cnt, dec, opts)
		} else {
			r, err = newJSONReader(src.Name, cnt, dec, opts)
		}
		if err != nil {
			dec.close()
			return nil, err
		}
		return &guardedReader{Reader: r, name: src.Name, format: kind}, nil
	case "PARQUET":
		pr, err := newParquetReader(src, opts)
		if err != nil {
			return nil, err
		}
		return &guardedReader{Reader: pr, name: src.Name, format: kind}, nil
	default: // ARROW
		ar, err := newArrowReader(src, opts)
		if err != nil {
			return nil, err
		}
		return &guardedReader{Reader: ar, name: src.Name, format: kind}, nil
	}
}

// formatNames maps the accepted format names to how errors spell them.
var formatNames = map[string]string{"CSV": "CSV", "JSON": "JSON", "PARQUET": "Parquet", "ARROW": "Arrow IPC"}

// guardedReader is the first line of defence of Open's callers: a panic in
// Next or Close becomes the file's error, and Next keeps returning it.
type guardedReader struct {
	Reader
	name, format string
	err          error
}

func (g *guardedReader) Next() (b *Batch, err error) {
	if g.err != nil {
		return nil, g.err
	}
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, recovered(g.name, g.format, p)
			g.err = err
		}
	}()
	return g.Reader.Next()
}

func (g *guardedReader) Close() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = recovered(g.name, g.format, p)
		}
	}()
	return g.Reader.Close()
}

// openSequential opens src for the formats read front to back: its bytes
// counted as stored, then decompressed.
func openSequential(src Source, opts Options) (*CountingReader, *decompressor, error) {
	if src.R == nil {
		if src.At == nil {
			return nil, nil, fmt.Errorf("%s: no data to read", src.Name)
		}
		src.R = io.NewSectionReader(src.At, 0, src.Size)
	}
	cnt := &CountingReader{R: src.R}
	dec, err := openDecompressed(cnt, src.Name, opts.Compression, opts.Limits)
	if err != nil {
		return nil, nil, err
	}
	return cnt, dec, nil
}
