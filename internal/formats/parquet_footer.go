package formats

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// Before arrow-go decodes a Parquet footer it is checked here, because
// arrow-go trusts it: it reads as many footer bytes as the last eight
// bytes of the file say, decodes every thrift list at the length it
// declares, builds the schema tree recursively with the child counts it
// states, and decodes the embedded ARROW:schema, whose field counts size
// allocations of their own (a few changed bytes there asked for 189 GB, a
// fatal error no recover catches). Everything that is only inconsistent
// past these checks makes arrow-go return an error or panic, which the
// reader recovers.

var parquetMagic = []byte("PAR1")

// parquetMaxNesting bounds the depth of the Parquet schema tree, which
// arrow-go walks recursively; it is arrow-go's own limit on nested Arrow
// types.
const parquetMaxNesting = arrowMaxDepth

// thriftStructCost is what one decoded thrift struct is counted at when
// the footer's decoded size is estimated: generous for most parquet-format
// structs, so the estimate stays an upper bound.
const thriftStructCost = 128

// parquetFooter is what checkParquetFooter learns of a footer.
type parquetFooter struct {
	numRows     int64
	rowGroups   int
	leaves      int
	arrowSchema []byte // the ARROW:schema value as stored (base64), if any
}

// readParquetFooter reads and checks the footer of a Parquet file of size
// bytes: magic, length, and then its thrift structure (see scanFooter).
func readParquetFooter(at io.ReaderAt, size int64, lim rowio.Limits) (*parquetFooter, error) {
	if size < 12 {
		return nil, &rowio.CorruptError{Format: "Parquet", Err: fmt.Errorf("%d bytes is too small for a Parquet file", size)}
	}
	var tail [8]byte
	if _, err := at.ReadAt(tail[:], size-8); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading the Parquet footer: %w", err)
	}
	if !bytes.Equal(tail[4:], parquetMagic) {
		if bytes.Equal(tail[4:], []byte("PARE")) {
			return nil, fmt.Errorf("the Parquet file is encrypted, which is not supported")
		}
		return nil, &rowio.CorruptError{Format: "Parquet", Err: errors.New("the file does not end with the Parquet magic bytes")}
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > lim.MaxParquetFooterBytes {
		return nil, &rowio.LimitError{Limit: "MaxParquetFooterBytes", Value: lim.MaxParquetFooterBytes, What: fmt.Sprintf("the footer declares %s of metadata", rowio.ByteSize(n))}
	}
	if n == 0 || n > size-12 {
		return nil, &rowio.CorruptError{Format: "Parquet", Err: fmt.Errorf("the footer length %d does not fit the %d-byte file", n, size)}
	}
	buf := make([]byte, n)
	if _, err := at.ReadAt(buf, size-8-n); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading the Parquet footer: %w", err)
	}
	f, err := scanFooter(buf, size, lim)
	if err != nil {
		var le *rowio.LimitError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, &rowio.CorruptError{Format: "Parquet", Err: fmt.Errorf("invalid footer: %w", err)}
	}
	return f, nil
}

// scanFooter walks the FileMetaData struct in buf (thrift compact
// protocol) as arrow-go will decode it, checking that every list fits the
// bytes left, that the decoded size stays bounded, that the schema tree is
// well formed, and that row groups and column chunks lie inside the file.
func scanFooter(buf []byte, size int64, lim rowio.Limits) (*parquetFooter, error) {
	t := &thriftScan{b: buf}
	f := &parquetFooter{}
	var children []int32 // num_children of each schema element, -1 if unset
	var rowSum int64
	err := t.structure(0, func(id int16, typ byte, depth int) (bool, error) {
		switch {
		case id == 2 && typ == tList: // schema
			return true, t.list(depth, func() error {
				nc := int32(-1)
				err := t.structure(depth+1, func(id int16, typ byte, _ int) (bool, error) {
					if id == 5 && typ == tI32 {
						v, err := t.zigzag()
						nc = int32(v)
						return true, err
					}
					return false, nil
				})
				children = append(children, nc)
				return err
			})
		case id == 3 && typ == tI64:
			v, err := t.zigzag()
			f.numRows = v
			return true, err
		case id == 4 && typ == tList: // row_groups
			return true, t.list(depth, func() error {
				f.rowGroups++
				return t.structure(depth+1, func(id int16, typ byte, depth int) (bool, error) {
					switch {
					case id == 3 && typ == tI64:
						v, err := t.zigzag()
						if err == nil && v < 0 {
							err = fmt.Errorf("row group %d has %d rows", f.rowGroups, v)
						}
						rowSum += v
						if rowSum < 0 {
							err = errors.New("the row groups' row counts overflow")
						}
						return true, err
					case id == 1 && typ == tList:
						return true, t.list(depth, func() error {
							return t.structure(depth+1, func(id int16, typ byte, depth int) (bool, error) {
								if id == 3 && typ == tStruct {
									return true, t.columnMeta(depth, size)
								}
								return false, nil
							})
						})
					}
					return false, nil
				})
			})
		case id == 5 && typ == tList: // key_value_metadata
			return true, t.list(depth, func() error {
				var key, val []byte
				err := t.structure(depth+1, func(id int16, typ byte, _ int) (bool, error) {
					if typ != tBinary || id != 1 && id != 2 {
						return false, nil
					}
					v, err := t.binary()
					if id == 1 {
						key = v
					} else {
						val = v
					}
					return true, err
				})
				if string(key) == "ARROW:schema" {
					f.arrowSchema = val
				}
				return err
			})
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if limit := 16 * lim.MaxParquetFooterBytes; t.cost > limit {
		return nil, &rowio.LimitError{Limit: "MaxParquetFooterBytes", Value: lim.MaxParquetFooterBytes,
			What: fmt.Sprintf("the footer would take %s decoded (more than 16 times the limit)", rowio.ByteSize(t.cost))}
	}
	if f.numRows < 0 || f.rowGroups > 0 && rowSum != f.numRows {
		return nil, fmt.Errorf("the file declares %d rows, its row groups %d", f.numRows, rowSum)
	}
	if limit := parquetValueBudget(size, lim); f.numRows > limit {
		return nil, &rowio.LimitError{Limit: "MaxParquetRowsPerByte", Value: lim.WithDefaults().MaxParquetRowsPerByte,
			What: fmt.Sprintf("%d rows declared in a file of %s (more than %d rows plus the limit's rows a byte)", f.numRows, rowio.ByteSize(size), rowio.ParquetFreeRows)}
	}
	if f.leaves, err = checkSchemaTree(children, lim.MaxColumns); err != nil {
		return nil, err
	}
	return f, nil
}

// parquetValueBudget is how many rows, and how many values of nested
// columns loaded as text, a Parquet file of size bytes may hold (see
// Limits.MaxParquetRowsPerByte).
func parquetValueBudget(size int64, lim rowio.Limits) int64 {
	k := lim.WithDefaults().MaxParquetRowsPerByte
	if size > (math.MaxInt64-rowio.ParquetFreeRows)/k {
		return math.MaxInt64
	}
	return rowio.ParquetFreeRows + k*size
}

// columnMeta walks a ColumnMetaData struct, checking that the chunk it
// describes lies inside the file.
func (t *thriftScan) columnMeta(depth int, size int64) error {
	var vals [12]int64
	var set [12]bool
	err := t.structure(depth+1, func(id int16, typ byte, _ int) (bool, error) {
		if typ != tI64 || id < 5 || id > 11 || id == 8 {
			return false, nil
		}
		v, err := t.zigzag()
		vals[id], set[id] = v, true
		return true, err
	})
	if err != nil {
		return err
	}
	const numValues, uncompressed, compressed, dataPage, indexPage, dictPage = 5, 6, 7, 9, 10, 11
	for _, id := range []int{numValues, uncompressed, compressed} {
		if vals[id] < 0 {
			return fmt.Errorf("a column chunk declares a negative size or value count (%d)", vals[id])
		}
	}
	start := vals[dataPage]
	if set[dictPage] && vals[dictPage] > 0 && vals[dictPage] < start {
		start = vals[dictPage]
	}
	for _, id := range []int{dataPage, indexPage, dictPage} {
		if set[id] && (vals[id] < 0 || vals[id] >= size) {
			return fmt.Errorf("a column chunk starts at offset %d of a %d-byte file", vals[id], size)
		}
	}
	if start+vals[compressed] > size || start+vals[compressed] < 0 {
		return fmt.Errorf("a column chunk of %d bytes at offset %d overruns the %d-byte file", vals[compressed], start, size)
	}
	return nil
}

// checkSchemaTree checks the flattened schema tree (num_children of each
// element in depth-first order, -1 for a leaf) the way arrow-go will
// rebuild it: every group's children exist, the nesting is bounded, and
// the leaves (columns) number at most maxCols. It returns the leaf count.
func checkSchemaTree(children []int32, maxCols int) (int, error) {
	if len(children) == 0 {
		return 0, errors.New("the schema is empty")
	}
	if children[0] < 0 {
		return 0, errors.New("the schema root is not a group")
	}
	open := []int64{int64(children[0])} // children still expected per open group
	leaves, next := 0, 1
	for len(open) > 0 {
		top := len(open) - 1
		if open[top] == 0 {
			open = open[:top]
			continue
		}
		open[top]--
		if next >= len(children) {
			return 0, fmt.Errorf("the schema declares more children than its %d elements", len(children))
		}
		nc := children[next]
		next++
		if nc < 0 {
			if leaves++; leaves > maxCols {
				return 0, &rowio.LimitError{Limit: "MaxColumns", Value: int64(maxCols), What: "the schema has more columns"}
			}
			continue
		}
		if int(nc) > len(children)-next {
			return 0, fmt.Errorf("a schema group declares %d children, more than the elements left", nc)
		}
		if open = append(open, int64(nc)); len(open) > parquetMaxNesting {
			return 0, fmt.Errorf("the schema is nested more than %d deep", parquetMaxNesting)
		}
	}
	return leaves, nil
}

// checkArrowSchema checks the ARROW:schema a Parquet writer may store in
// the footer, base64-encoded as arrow-go decodes it, with the checks the
// ARROW reader applies to a schema message.
func checkArrowSchema(stored []byte, lim rowio.Limits) error {
	var decoded []byte
	var err error
	if len(stored)%4 == 0 {
		decoded, err = base64.StdEncoding.DecodeString(string(stored))
	}
	if len(decoded) == 0 || err != nil {
		decoded, err = base64.RawStdEncoding.DecodeString(string(stored))
	}
	if err != nil {
		return &rowio.CorruptError{Format: "Parquet", Err: fmt.Errorf("the ARROW:schema metadata is not base64: %w", err)}
	}
	m := newArrowMessages(bytes.NewReader(decoded), memory.NewGoAllocator(), newArrowLimits(lim))
	defer m.Release()
	if _, err := m.Message(); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("it is empty")
		}
		var le *rowio.LimitError
		if errors.As(err, &le) {
			return err
		}
		return &rowio.CorruptError{Format: "Parquet", Err: fmt.Errorf("the ARROW:schema metadata is invalid: %w", err)}
	}
	return nil
}

// Thrift compact protocol types.
const (
	tStop   = 0
	tTrue   = 1
	tFalse  = 2
	tByte   = 3
	tI16    = 4
	tI32    = 5
	tI64    = 6
	tDouble = 7
	tBinary = 8
	tList   = 9
	tSet    = 10
	tMap    = 11
	tStruct = 12
	tUUID   = 13
)

// thriftMaxDepth is the thrift library's own bound on nested structures.
const thriftMaxDepth = 64

// thriftScan walks thrift compact-protocol data without building it,
// adding up in cost what decoding it would allocate.
type thriftScan struct {
	b    []byte
	i    int
	cost int64
}

var errThriftShort = errors.New("truncated thrift data")

func (t *thriftScan) byte() (byte, error) {
	if t.i >= len(t.b) {
		return 0, errThriftShort
	}
	t.i++
	return t.b[t.i-1], nil
}

func (t *thriftScan) varint() (uint64, error) {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		c, err := t.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("thrift varint too long")
}

func (t *thriftScan) zigzag() (int64, error) {
	v, err := t.varint()
	return int64(v>>1) ^ -int64(v&1), err
}

func (t *thriftScan) skipBytes(n uint64) error {
	if n > uint64(len(t.b)-t.i) {
		return errThriftShort
	}
	t.i += int(n)
	return nil
}

func (t *thriftScan) binary() ([]byte, error) {
	n, err := t.varint()
	if err != nil {
		return nil, err
	}
	s := t.i
	if err := t.skipBytes(n); err != nil {
		return nil, err
	}
	t.cost += int64(n) + 16
	return t.b[s:t.i], nil
}

// structure walks a struct; f sees each field first and reports whether
// it consumed the value (it must only do so for the type it expects).
func (t *thriftScan) structure(depth int, f func(id int16, typ byte, depth int) (bool, error)) error {
	if depth > thriftMaxDepth {
		return errors.New("thrift structures nested too deep")
	}
	t.cost += thriftStructCost
	var last int16
	for {
		h, err := t.byte()
		if err != nil {
			return err
		}
		if h == tStop {
			return nil
		}
		typ := h & 0x0f
		id := last + int16(h>>4)
		if h>>4 == 0 {
			v, err := t.zigzag()
			if err != nil {
				return err
			}
			id = int16(v)
		}
		last = id
		done := false
		if f != nil {
			if done, err = f(id, typ, depth); err != nil {
				return err
			}
		}
		if !done {
			if err := t.skip(typ, depth); err != nil {
				return err
			}
		}
	}
}

// list walks a list or set header and calls elem once per element.
func (t *thriftScan) list(depth int, elem func() error) error {
	n, _, err := t.listHeader()
	if err != nil {
		return err
	}
	for range n {
		if err := elem(); err != nil {
			return err
		}
	}
	return nil
}

// listHeader reads a list or set header; every element takes at least a
// byte, so a count beyond the bytes left is an error before anything is
// sized by it.
func (t *thriftScan) listHeader() (int, byte, error) {
	h, err := t.byte()
	if err != nil {
		return 0, 0, err
	}
	n := uint64(h >> 4)
	if n == 15 {
		if n, err = t.varint(); err != nil {
			return 0, 0, err
		}
	}
	if n > uint64(len(t.b)-t.i) {
		return 0, 0, fmt.Errorf("a thrift list of %d elements in %d bytes", n, len(t.b)-t.i)
	}
	t.cost += 8 * int64(n)
	return int(n), h & 0x0f, nil
}

func (t *thriftScan) skip(typ byte, depth int) error {
	switch typ {
	case tTrue, tFalse:
		return nil
	case tByte:
		return t.skipBytes(1)
	case tI16, tI32, tI64:
		_, err := t.varint()
		return err
	case tDouble:
		return t.skipBytes(8)
	case tBinary:
		_, err := t.binary()
		return err
	case tUUID:
		return t.skipBytes(16)
	case tStruct:
		return t.structure(depth+1, nil)
	case tList, tSet:
		n, et, err := t.listHeader()
		if err != nil {
			return err
		}
		for range n {
			if et == tTrue || et == tFalse {
				err = t.skipBytes(1) // list elements carry bools as a byte
			} else {
				err = t.skip(et, depth+1)
			}
			if err != nil {
				return err
			}
		}
		return nil
	case tMap:
		n, err := t.varint()
		if err != nil || n == 0 {
			return err
		}
		if n > uint64(len(t.b)-t.i) {
			return fmt.Errorf("a thrift map of %d entries in %d bytes", n, len(t.b)-t.i)
		}
		kv, err := t.byte()
		if err != nil {
			return err
		}
		t.cost += 16 * int64(n)
		for range n {
			for _, et := range []byte{kv >> 4, kv & 0x0f} {
				if et == tTrue || et == tFalse {
					err = t.skipBytes(1)
				} else {
					err = t.skip(et, depth+1)
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	return fmt.Errorf("unknown thrift type %d", typ)
}
