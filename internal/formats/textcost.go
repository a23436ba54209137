package formats

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// What a column rendered as text (textArray) may visit. A nested value's
// text is not bounded by the bytes that carry it: the elements of a
// Null-typed list child cost a stream nothing, and a dictionary, a list
// view or a run-end encoding can name the same elements from many rows.
// (The fuzzer found a list of ~2^29 nulls in a 1.5 KB Arrow stream: its
// JSON asked for 14 GB.) So before rendering, textArray counts the values
// each cell visits, stopping at the bounds:
//
//   - a cell: MaxLineBytes/2 values, since each renders to at least two
//     bytes ("0,"): the bound a line of text already has;
//   - a batch of a column: textValuesPerByte values for each byte of the
//     column's buffers (at least MaxLineBytes/2): real values cost their
//     buffers at least a bit each, so only a corrupt or hostile file
//     comes near it.
const textValuesPerByte = 16

// checkText counts the values rendering every cell of a would visit and
// fails past the bounds above. It returns the count (0 for a column of
// flat values, which its rows bound).
func checkText(a arrow.Array, lim rowio.Limits) (int64, error) {
	if flat(a.DataType()) {
		return 0, nil
	}
	bytes := bufferBytes(a.Data())
	cellMax := max(lim.MaxLineBytes/2, 1)
	batchMax := max(cellMax, textValuesPerByte*bytes)
	left := batchMax
	for i := range a.Len() {
		n := valuesIn(a, i, min(cellMax, left))
		if n > cellMax {
			return 0, &rowio.LimitError{Limit: "MaxLineBytes", Value: lim.MaxLineBytes,
				What: fmt.Sprintf("a nested value of more than %d values (row %d of the batch), whose text would be longer", cellMax, i+1)}
		}
		if left -= n; left < 0 {
			return 0, fmt.Errorf("the nested values of a batch of %d rows (more than %d) are out of all proportion to the %d bytes that carry them: the file is corrupt", a.Len(), batchMax, bytes)
		}
	}
	return batchMax - left, nil
}

// valuesIn counts the values rendering cell i of a visits: 1, plus those
// of its elements for a nested value. It stops counting once the count
// passes limit, so its cost is bounded by limit too.
func valuesIn(a arrow.Array, i int, limit int64) int64 {
	if a.IsNull(i) {
		return 1
	}
	switch v := a.(type) {
	case array.ListLike: // lists, list views, fixed-size lists, maps
		start, end := v.ValueOffsets(i)
		return 1 + valuesInRange(v.ListValues(), start, end, limit-1)
	case *array.Struct:
		n := int64(1)
		for j := 0; j < v.NumField() && n <= limit; j++ {
			n += valuesIn(v.Field(j), i, limit-n)
		}
		return n
	case *array.SparseUnion:
		return 1 + valuesIn(v.Field(v.ChildID(i)), i, limit-1)
	case *array.DenseUnion:
		return 1 + valuesIn(v.Field(v.ChildID(i)), int(v.ValueOffset(i)), limit-1)
	case *array.Dictionary:
		return valuesIn(v.Dictionary(), v.GetValueIndex(i), limit)
	case *array.RunEndEncoded:
		return valuesIn(v.Values(), v.GetPhysicalIndex(i), limit)
	case array.ExtensionArray:
		return valuesIn(v.Storage(), i, limit)
	}
	return 1
}

// valuesInRange counts the values of elements start to end of a.
func valuesInRange(a arrow.Array, start, end, limit int64) int64 {
	if end <= start {
		return 0
	}
	if flat(a.DataType()) {
		return end - start
	}
	var n int64
	for j := start; j < end && n <= limit; j++ {
		n += valuesIn(a, int(j), limit-n)
	}
	return n
}

// flat reports whether a value of type t is one value, whose text its
// own buffers bound.
func flat(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST, arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW,
		arrow.MAP, arrow.STRUCT, arrow.SPARSE_UNION, arrow.DENSE_UNION, arrow.DICTIONARY,
		arrow.RUN_END_ENCODED, arrow.EXTENSION:
		return false
	}
	return true
}

// bufferBytes is the size of the buffers of d and of its children and
// dictionary.
func bufferBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, k := range d.Children() {
		n += bufferBytes(k)
	}
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		n += bufferBytes(dict)
	}
	return n
}
