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
func Open(src Source, format string, opts Options) (Reader, error) {
	if err := opts.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", src.Name, err)
	}
	opts = opts.withDefaults()
	switch f := strings.ToUpper(strings.TrimSpace(format)); f {
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
		return r, nil
	case "PARQUET":
		return newParquetReader(src, opts)
	case "ARROW":
		return newArrowReader(src, opts)
	}
	return nil, fmt.Errorf("%s: unknown format %q (supported: %s)", src.Name, format, strings.Join(Formats, ", "))
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
	dec, err := openDecompressed(cnt, src.Name, opts.Compression)
	if err != nil {
		return nil, nil, err
	}
	return cnt, dec, nil
}
