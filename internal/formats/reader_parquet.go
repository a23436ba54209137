package formats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// parquetStreamBuffer is how much of a column chunk is read at a time, so
// that memory stays bounded even for a file with one huge row group.
const parquetStreamBuffer = 1 << 20

type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

type parquetReader struct {
	name   string
	at     *countingReaderAt
	mem    *rowio.LimitedAllocator
	limits rowio.Limits // for textArray
	// pageLimit is Limits.MaxParquetPageBytes.
	pageLimit int64
	rr        pqarrow.RecordReader
	cols      []rowio.Column
	// order[i] is the record column holding output column i.
	order []int
	// text[i]: column i is rendered to *array.String (see ClickHouseType).
	text []bool
	// values is what is left of the file's budget of nested values
	// (parquetValueBudget): the bytes carrying a batch do not bound its
	// values in Parquet as they do in Arrow (checkText), the file's do.
	values int64
	size   int64
	rec    arrow.RecordBatch // the current batch's record, retained
	made   []arrow.Array     // arrays built for the current batch
	row    int64             // rows delivered before the current batch
	batch  rowio.Batch
}

func newParquetReader(src rowio.Source, opts rowio.Options) (*parquetReader, error) {
	if err := rowio.CheckParquetNotCompressed(src, opts.Compression); err != nil {
		return nil, err
	}
	at := src.At
	if at == nil {
		ra, ok := src.R.(io.ReaderAt)
		if !ok {
			return nil, fmt.Errorf("%s: Parquet needs random access (Source.At and Size)", src.Name)
		}
		at = ra
	}
	size := src.Size
	if size <= 0 {
		if st, ok := at.(interface{ Stat() (fs.FileInfo, error) }); ok {
			if fi, err := st.Stat(); err == nil {
				size = fi.Size()
			}
		}
	}
	if size <= 0 {
		return nil, fmt.Errorf("%s: Parquet needs the file size (Source.Size)", src.Name)
	}
	cat := &countingReaderAt{r: at}
	lim := opts.Limits
	footer, err := readParquetFooter(cat, size, lim)
	if err != nil {
		return nil, fileError(src.Name, err)
	}
	if footer.arrowSchema != nil {
		if err := checkArrowSchema(footer.arrowSchema, lim); err != nil {
			return nil, fileError(src.Name, err)
		}
	}
	// Everything arrow-go allocates for this file comes from mem, which
	// refuses more than MaxReaderMemory at once.
	mem := rowio.NewLimitedAllocator(lim.MaxReaderMemory)
	props := parquet.NewReaderProperties(mem)
	props.BufferedStreamEnabled = true
	props.BufferSize = parquetStreamBuffer
	props.MaxUncompressedPageSize = lim.MaxParquetPageBytes
	props.MaxCompressedPageSize = lim.MaxParquetPageBytes
	pf, err := file.NewParquetReader(io.NewSectionReader(cat, 0, size), file.WithReadProps(props))
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable Parquet file: %w", src.Name, err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(opts.BatchRows)}, mem)
	if err != nil {
		return nil, fmt.Errorf("%s: reading Parquet schema: %w", src.Name, err)
	}
	fields := fr.Manifest.Fields

	// picked[i] is the top-level field of output column i.
	var picked []int
	var names []string
	if len(opts.Schema) == 0 {
		for i := range fields {
			picked = append(picked, i)
			names = append(names, fields[i].Field.Name)
		}
	} else {
		for _, c := range opts.Schema {
			fi := findField(fields, c.Name)
			if fi < 0 {
				have := make([]string, len(fields))
				for i := range fields {
					have[i] = fields[i].Field.Name
				}
				return nil, fmt.Errorf("%s: no column %q in the Parquet file (it has: %s)", src.Name, c.Name, strings.Join(have, ", "))
			}
			picked = append(picked, fi)
			names = append(names, c.Name)
		}
	}

	// The record reader takes leaf indices and yields each top-level
	// field once, in order of first mention.
	var leaves []int
	slot := map[int]int{} // top-level field → record column
	for _, fi := range picked {
		if _, ok := slot[fi]; ok {
			continue
		}
		slot[fi] = len(slot)
		leaves = collectLeaves(&fields[fi], leaves)
	}
	r := &parquetReader{name: src.Name, at: cat, mem: mem, pageLimit: lim.MaxParquetPageBytes, limits: lim.WithDefaults(),
		values: parquetValueBudget(size, lim), size: size}
	for i, fi := range picked {
		f := fields[fi].Field
		text := !rowio.NativeArrow(f.Type)
		t, err := rowio.ClickHouseType(f.Type, f.Nullable)
		if err != nil {
			return nil, fmt.Errorf("%s: column %q: %w", src.Name, f.Name, err)
		}
		r.cols = append(r.cols, rowio.Column{Name: names[i], Type: t})
		r.order = append(r.order, slot[fi])
		r.text = append(r.text, text)
	}
	r.batch.Cols = make([]rowio.Vector, len(r.cols))
	if len(leaves) == 0 {
		return r, nil // no columns: nothing to read
	}
	rr, err := fr.GetRecordReader(context.Background(), leaves, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.Name, err)
	}
	r.rr = rr
	return r, nil
}

// fileError names the file in an error from the footer checks.
func fileError(name string, err error) error {
	var ce *rowio.CorruptError
	if errors.As(err, &ce) && ce.Name == "" {
		ce.Name = name
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// findField finds a top-level field by exact, then case-insensitive name.
func findField(fields []pqarrow.SchemaField, name string) int {
	for i := range fields {
		if fields[i].Field.Name == name {
			return i
		}
	}
	for i := range fields {
		if strings.EqualFold(fields[i].Field.Name, name) {
			return i
		}
	}
	return -1
}

func collectLeaves(f *pqarrow.SchemaField, out []int) []int {
	if f.IsLeaf() {
		return append(out, f.ColIndex)
	}
	for i := range f.Children {
		out = collectLeaves(&f.Children[i], out)
	}
	return out
}

func (r *parquetReader) Columns() []rowio.Column { return r.cols }

func (r *parquetReader) BytesRead() int64 { return r.at.n.Load() }

func (r *parquetReader) releaseBatch() {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	for _, a := range r.made {
		a.Release()
	}
	clear(r.made)
	r.made = r.made[:0]
	for i := range r.batch.Cols {
		r.batch.Cols[i].Arrow = nil
	}
}

func (r *parquetReader) Next() (*rowio.Batch, error) {
	r.releaseBatch()
	if r.rr == nil {
		return nil, io.EOF
	}
	for {
		if !r.rr.Next() {
			if err := r.rr.Err(); err != nil {
				if msg := err.Error(); strings.Contains(msg, "page size") && strings.Contains(msg, "exceeds configured limit") {
					// arrow-go's own check, configured from Limits.
					err = &rowio.LimitError{Limit: "MaxParquetPageBytes", Value: r.pageLimit, What: "a page header declares a larger page"}
				}
				return nil, fmt.Errorf("%s: row %d: %w", r.name, r.row+1, err)
			}
			return nil, io.EOF
		}
		rec := r.rr.RecordBatch()
		if rec.NumRows() > 0 {
			// The record reader releases its reference on its next Next;
			// ours keeps the arrays valid until ours.
			rec.Retain()
			r.rec = rec
			break
		}
	}
	b := &r.batch
	b.Rows = int(r.rec.NumRows())
	for i := range b.Cols {
		// A corrupt file can give a column chunk more or fewer values
		// than its row group has rows (the fuzzer found one): arrow-go
		// makes the record anyway, and its rows would not line up.
		if n := r.rec.Column(r.order[i]).Len(); n != b.Rows {
			return nil, fmt.Errorf("%s: row %d: column %q has %d values where its row group has %d rows: the file is corrupt", r.name, r.row+1, r.cols[i].Name, n, b.Rows)
		}
	}
	b.Errors = b.Errors[:0]
	b.Line = b.Line[:0]
	for i := range b.Rows {
		b.Line = append(b.Line, r.row+int64(i)+1)
	}
	r.row += int64(b.Rows)
	for i := range b.Cols {
		a := r.rec.Column(r.order[i])
		if r.text[i] {
			t, n, err := textArray(a, r.limits)
			if err == nil {
				if r.values -= n; r.values < 0 {
					t.Release()
					err = &rowio.LimitError{Limit: "MaxParquetRowsPerByte", Value: r.limits.MaxParquetRowsPerByte,
						What: fmt.Sprintf("more than %d nested values in a file of %s (more than %d values plus the limit's values a byte)", parquetValueBudget(r.size, r.limits), rowio.ByteSize(r.size), rowio.ParquetFreeRows)}
				}
			}
			if err != nil {
				return nil, fmt.Errorf("%s: rows %d to %d, column %q: %w", r.name, r.row-int64(b.Rows)+1, r.row, r.cols[i].Name, err)
			}
			a = t
			r.made = append(r.made, a)
		}
		b.Cols[i].Arrow = a
	}
	return b, nil
}

func (r *parquetReader) Close() error {
	r.releaseBatch()
	if r.rr != nil {
		r.rr.Release()
		r.rr = nil
	}
	return nil
}

// textArray renders a column ClickHouse gets as String: nested values as
// JSON, everything else as Arrow's text for the value. A Null-typed column
// is all NULL: arrow-go's Null array answers IsNull false for every row,
// and its text is "(null)".
// Nested values are counted first, against lim (checkText); their count
// is returned.
func textArray(a arrow.Array, lim rowio.Limits) (arrow.Array, int64, error) {
	if a.DataType().ID() == arrow.NULL {
		return array.MakeArrayOfNull(memory.DefaultAllocator, arrow.BinaryTypes.String, a.Len()), 0, nil
	}
	values, err := checkText(a, lim)
	if err != nil {
		return nil, 0, err
	}
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(a.Len())
	nested := false
	switch a.DataType().ID() {
	case arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST, arrow.STRUCT, arrow.MAP,
		arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW, arrow.DENSE_UNION, arrow.SPARSE_UNION:
		nested = true
	}
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		if nested {
			if js, err := json.Marshal(a.GetOneForMarshal(i)); err == nil {
				b.BinaryBuilder.Append(js)
				continue
			}
		}
		b.Append(a.ValueStr(i))
	}
	return b.NewArray(), values, nil
}
