package formats

import (
	"fmt"
	"io"
	"strings"

	"github.com/lakepipe/lakepipe/internal/formats/textfile"
	"github.com/lakepipe/lakepipe/internal/rowio"
)

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
func Open(src rowio.Source, format string, opts rowio.Options) (r rowio.Reader, err error) {
	if err := opts.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", src.Name, err)
	}
	opts = opts.WithDefaults()
	f := strings.ToUpper(strings.TrimSpace(format))
	kind := formatNames[f]
	if kind == "" {
		return nil, fmt.Errorf("%s: unknown format %q (supported: %s)", src.Name, format, strings.Join(Formats, ", "))
	}
	defer func() {
		if p := recover(); p != nil {
			// Whatever was opened is abandoned: the panic left it in no
			// known state, and the garbage collector reclaims Go memory.
			r, err = nil, rowio.Recovered(src.Name, kind, p)
		}
	}()
	switch f {
	case "CSV", "JSON":
		cnt, dec, err := openSequential(src, opts)
		if err != nil {
			return nil, err
		}
		var r rowio.Reader
		if f == "CSV" {
			r, err = textfile.NewCSVReader(src.Name, cnt, dec, opts)
		} else {
			r, err = textfile.NewJSONReader(src.Name, cnt, dec, opts)
		}
		if err != nil {
			dec.Close()
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
	rowio.Reader
	name, format string
	err          error
}

func (g *guardedReader) Next() (b *rowio.Batch, err error) {
	if g.err != nil {
		return nil, g.err
	}
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, rowio.Recovered(g.name, g.format, p)
			g.err = err
		}
	}()
	return g.Reader.Next()
}

func (g *guardedReader) Close() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = rowio.Recovered(g.name, g.format, p)
		}
	}()
	return g.Reader.Close()
}

// openSequential opens src for the formats read front to back: its bytes
// counted as stored, then decompressed.
func openSequential(src rowio.Source, opts rowio.Options) (*rowio.CountingReader, *rowio.Decompressor, error) {
	if src.R == nil {
		if src.At == nil {
			return nil, nil, fmt.Errorf("%s: no data to read", src.Name)
		}
		src.R = io.NewSectionReader(src.At, 0, src.Size)
	}
	cnt := &rowio.CountingReader{R: src.R, Size: src.Size}
	dec, err := rowio.OpenDecompressed(cnt, src.Name, opts.Compression, opts.Limits)
	if err != nil {
		return nil, nil, err
	}
	return cnt, dec, nil
}
