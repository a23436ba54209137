package formats

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// result is everything a reader yielded for one file.
type result struct {
	cols  []rowio.Column
	rows  [][]*string // nil = NULL
	lines []int64
	errs  []rowio.RowError
}

func sp(s string) *string { return &s }

// collect reads a whole file and checks the batch invariants on the way.
func collect(t testing.TB, r rowio.Reader) result {
	t.Helper()
	res := result{cols: r.Columns()}
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if err := checkBatch(b, len(res.cols)); err != nil {
			t.Fatal(err)
		}
		if b.Rows == 0 && len(b.Errors) == 0 {
			t.Fatal("empty batch before EOF")
		}
		for i := range b.Rows {
			row := make([]*string, len(b.Cols))
			for c := range b.Cols {
				v := &b.Cols[c]
				switch {
				case v.Arrow != nil:
					if !v.Arrow.IsNull(i) {
						row[c] = sp(v.Arrow.ValueStr(i))
					}
				case !v.Null[i]:
					row[c] = sp(string(v.Text[i]))
				}
			}
			res.rows = append(res.rows, row)
		}
		res.lines = append(res.lines, b.Line...)
		res.errs = append(res.errs, b.Errors...)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return res
}

func checkBatch(b *rowio.Batch, ncols int) error {
	if len(b.Cols) != ncols {
		return fmt.Errorf("batch has %d columns, reader %d", len(b.Cols), ncols)
	}
	if len(b.Line) != b.Rows {
		return fmt.Errorf("batch has %d rows but %d line numbers", b.Rows, len(b.Line))
	}
	for c, v := range b.Cols {
		if v.Arrow != nil {
			if v.Arrow.Len() != b.Rows {
				return fmt.Errorf("column %d has %d values for %d rows", c, v.Arrow.Len(), b.Rows)
			}
			continue
		}
		if len(v.Text) != b.Rows || len(v.Null) != b.Rows {
			return fmt.Errorf("column %d has %d/%d values for %d rows", c, len(v.Text), len(v.Null), b.Rows)
		}
	}
	return nil
}

// choppyReader returns data in small pieces of random size, to exercise
// every buffer boundary.
type choppyReader struct {
	data []byte
	rng  *rand.Rand
	max  int
}

func (c *choppyReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1 + c.rng.IntN(c.max)
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func openBytes(t testing.TB, data []byte, name, format string, opts rowio.Options) rowio.Reader {
	t.Helper()
	r, err := Open(rowio.Source{R: bytes.NewReader(data), At: bytes.NewReader(data), Size: int64(len(data)), Name: name}, format, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

func readString(t testing.TB, data, format string, opts rowio.Options) result {
	t.Helper()
	return collect(t, openBytes(t, []byte(data), "test", format, opts))
}
