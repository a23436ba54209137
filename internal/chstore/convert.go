package chstore

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/schemas"
)

// column collects the values of one target column for one block, as the
// typed slice clickhouse-go appends without reflection.
type column interface {
	// add converts rows of src into the column; a row it cannot convert is
	// reported through bad(row, message) and gets a zero placeholder.
	add(src *rowio.Vector, rows int, bad func(row int, msg string))
	// addNull appends n NULLs (or zero values for a NOT NULL column).
	addNull(n int)
	// keep drops the rows whose keep flag is false.
	keep(keep []bool)
	// values returns what Batch.Column(i).Append takes and resets.
	values() any
	len() int
	// reserve makes room for n more rows without growing on the way.
	reserve(n int)
}

// grown is s with room for n more elements.
func grown[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	return slices.Grow(s, n)
}

func newColumn(chType string) (column, error) {
	base, nullable := schemas.BaseOf(chType)
	switch base {
	case "Int8":
		return &intCol[int8]{nullable: nullable, min: math.MinInt8, max: math.MaxInt8}, nil
	case "Int16":
		return &intCol[int16]{nullable: nullable, min: math.MinInt16, max: math.MaxInt16}, nil
	case "Int32":
		return &intCol[int32]{nullable: nullable, min: math.MinInt32, max: math.MaxInt32}, nil
	case "Int64":
		return &intCol[int64]{nullable: nullable, min: math.MinInt64, max: math.MaxInt64}, nil
	case "UInt8":
		return &intCol[uint8]{nullable: nullable, min: 0, max: math.MaxUint8, boolText: true}, nil
	case "UInt16":
		return &intCol[uint16]{nullable: nullable, min: 0, max: math.MaxUint16}, nil
	case "UInt32":
		return &intCol[uint32]{nullable: nullable, min: 0, max: math.MaxUint32}, nil
	case "UInt64":
		return &intCol[uint64]{nullable: nullable, min: 0, max: math.MaxInt64}, nil
	case "Float32":
		return &floatCol[float32]{nullable: nullable, bits: 32}, nil
	case "Float64":
		return &floatCol[float64]{nullable: nullable, bits: 64}, nil
	case "String":
		return &stringCol{nullable: nullable}, nil
	case "Date":
		return &timeCol{nullable: nullable, date: true}, nil
	}
	switch {
	case strings.HasPrefix(base, "DateTime"):
		return &timeCol{nullable: nullable}, nil
	case strings.HasPrefix(base, "Decimal("):
		var p, s int
		if _, err := fmt.Sscanf(strings.ReplaceAll(base, " ", ""), "Decimal(%d,%d)", &p, &s); err != nil {
			return nil, fmt.Errorf("column type %s: %w", chType, err)
		}
		return &decimalCol{nullable: nullable, prec: p, scale: int32(s)}, nil
	case strings.HasPrefix(base, "FixedString("), strings.HasPrefix(base, "Enum"):
		return &stringCol{nullable: nullable}, nil
	}
	return nil, fmt.Errorf("loading into a column of type %s is not supported yet", chType)
}

// text returns the bytes of a text cell without copying; callers must not
// keep it past the batch.
func text(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// cell yields row r of src as text, or null. Arrow cells are rendered with
// ValueStr unless the column has a typed fast path; every array type the
// format readers yield has one for the targets it maps to (see
// formats.ClickHouseType), so ValueStr is left for mismatches such as a
// Float64 array loaded into an Int32 column.
func cell(src *rowio.Vector, r int) (string, bool) {
	if src.Null != nil && src.Null[r] && src.Text == nil {
		return "", true
	}
	switch {
	case src.Int != nil:
		return strconv.FormatInt(src.Int[r], 10), false
	case src.Float != nil:
		return strconv.FormatFloat(src.Float[r], 'g', -1, 64), false
	case src.Time != nil:
		return src.Time[r].UTC().Format("2006-01-02 15:04:05.999999999"), false
	}
	if src.Arrow != nil {
		if src.Arrow.IsNull(r) {
			return "", true
		}
		return src.Arrow.ValueStr(r), false
	}
	if src.Null != nil && src.Null[r] {
		return "", true
	}
	return text(src.Text[r]), false
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type intCol[T integer] struct {
	nullable bool
	min, max int64
	boolText bool // UInt8 also stores BOOLEAN: accept true/false
	vals     []T
	nulls    []bool
}

func (c *intCol[T]) reserve(n int) {
	c.vals = grown(c.vals, n)
	if c.nullable {
		c.nulls = grown(c.nulls, n)
	}
}

func (c *intCol[T]) len() int { return len(c.vals) }

func (c *intCol[T]) put(v T, null bool) {
	c.vals = append(c.vals, v)
	if c.nullable {
		c.nulls = append(c.nulls, null)
	}
}

func (c *intCol[T]) addNull(n int) {
	for i := 0; i < n; i++ {
		c.put(0, true)
	}
}

func (c *intCol[T]) add(src *rowio.Vector, rows int, bad func(int, string)) {
	if c.addArrow(src.Arrow, rows, bad) {
		return
	}
	if src.Int != nil {
		for r, v := range src.Int[:rows] {
			if src.Null[r] {
				c.put(0, true)
				continue
			}
			if v < c.min || v > c.max {
				bad(r, fmt.Sprintf("%d is out of range", v))
			}
			c.put(T(v), false)
		}
		return
	}
	for r := 0; r < rows; r++ {
		s, null := cell(src, r)
		if null || s == "" {
			c.put(0, true)
			continue
		}
		v, err := parseInt(s)
		if err != nil && c.boolText {
			switch strings.ToLower(s) {
			case "true":
				v, err = 1, nil
			case "false":
				v, err = 0, nil
			}
		}
		if err == nil && (v < c.min || v > c.max) {
			err = errors.New("out of range")
		}
		if err != nil {
			bad(r, fmt.Sprintf("%s is not a valid integer (%s)", errtext.Quote(s), errtext.Cap(err.Error(), errtext.MaxValue)))
		}
		c.put(T(v), false)
	}
}

// addArrow converts the Arrow arrays that hold integers (and Boolean, as
// 1 and 0) without going through text; it reports false for any other
// array, or none.
func (c *intCol[T]) addArrow(a arrow.Array, rows int, bad func(int, string)) bool {
	switch a := a.(type) {
	case *array.Int8:
		addSigned(c, a, a.Int8Values(), rows, bad)
	case *array.Int16:
		addSigned(c, a, a.Int16Values(), rows, bad)
	case *array.Int32:
		addSigned(c, a, a.Int32Values(), rows, bad)
	case *array.Int64:
		addSigned(c, a, a.Int64Values(), rows, bad)
	case *array.Uint8:
		addUnsigned(c, a, a.Uint8Values(), rows, bad)
	case *array.Uint16:
		addUnsigned(c, a, a.Uint16Values(), rows, bad)
	case *array.Uint32:
		addUnsigned(c, a, a.Uint32Values(), rows, bad)
	case *array.Uint64:
		addUnsigned(c, a, a.Uint64Values(), rows, bad)
	case *array.Boolean:
		for r := 0; r < rows; r++ {
			switch {
			case a.IsNull(r):
				c.put(0, true)
			case a.Value(r):
				c.put(1, false)
			default:
				c.put(0, false)
			}
		}
	default:
		return false
	}
	return true
}

func addSigned[T integer, V int8 | int16 | int32 | int64](c *intCol[T], a arrow.Array, vals []V, rows int, bad func(int, string)) {
	// IsNull only where there are NULLs: the common all-valid array
	// converts in a tight loop.
	hasNull := a.NullN() > 0
	for r, x := range vals[:rows] {
		if hasNull && a.IsNull(r) {
			c.put(0, true)
			continue
		}
		v := int64(x)
		if v < c.min || v > c.max {
			bad(r, fmt.Sprintf("%d is out of range", v))
		}
		c.put(T(v), false)
	}
}

func addUnsigned[T integer, V uint8 | uint16 | uint32 | uint64](c *intCol[T], a arrow.Array, vals []V, rows int, bad func(int, string)) {
	limit := c.unsignedMax()
	hasNull := a.NullN() > 0
	for r, x := range vals[:rows] {
		if hasNull && a.IsNull(r) {
			c.put(0, true)
			continue
		}
		v := uint64(x)
		if v > limit {
			bad(r, fmt.Sprintf("%d is out of range", v))
		}
		c.put(T(v), false)
	}
}

// unsignedMax is the largest unsigned value the column takes. For UInt64
// that is the type's whole range, which max (an int64, as text is parsed
// into int64) cannot state.
func (c *intCol[T]) unsignedMax() uint64 {
	var zero T
	if all := ^zero; all > 0 { // an unsigned T
		return uint64(all)
	}
	return uint64(c.max)
}

// parseInt parses a decimal integer, allowing surrounding spaces and a
// ".0…" fraction that some exporters add.
func parseInt(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '.'); i >= 0 && strings.Trim(s[i+1:], "0") == "" {
		s = s[:i]
	}
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, errors.New("no digits")
	}
	// Leading zeros count for nothing ("000…042" is 42): only the
	// significant digits can overflow.
	if t := strings.TrimLeft(s, "0"); len(t) < len(s) {
		if s = t; s == "" {
			return 0, nil
		}
	}
	if len(s) > 19 {
		return 0, errors.New("out of range")
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, errors.New("not a number")
		}
		v = v*10 + uint64(d)
	}
	if v > math.MaxInt64 && !(neg && v == math.MaxInt64+1) {
		return 0, errors.New("out of range")
	}
	if neg {
		return -int64(v), nil
	}
	return int64(v), nil
}

func (c *intCol[T]) keep(keep []bool) {
	c.vals = filter(c.vals, keep)
	if c.nullable {
		c.nulls = filter(c.nulls, keep)
	}
}

func (c *intCol[T]) values() any {
	vals, nulls := c.vals, c.nulls
	// The next block is likely as long as this one: growing it from
	// nothing copied every value several times.
	c.vals, c.nulls = make([]T, 0, len(vals)), make([]bool, 0, len(nulls))
	if !c.nullable {
		return vals
	}
	return nullableValues(vals, nulls)
}

// nullableValues is what a Nullable column takes: the plain []T when the
// block holds no NULL (clickhouse-go's Nullable columns take it and mark
// every row present), which spares building a slice of pointers and
// clickhouse-go following one per value; []*T otherwise.
func nullableValues[T any](vals []T, nulls []bool) any {
	if !slices.Contains(nulls, true) {
		return vals
	}
	return pointers(vals, nulls)
}

// pointers gives clickhouse-go its Nullable form ([]*T) without allocating
// per value: each pointer points into vals.
func pointers[T any](vals []T, nulls []bool) []*T {
	out := make([]*T, len(vals))
	for i := range vals {
		if !nulls[i] {
			out[i] = &vals[i]
		}
	}
	return out
}

func filter[T any](s []T, keep []bool) []T {
	base := len(s) - len(keep)
	out := s[:base]
	for i, k := range keep {
		if k {
			out = append(out, s[base+i])
		}
	}
	return out
}

type float interface{ ~float32 | ~float64 }

type floatCol[T float] struct {
	nullable bool
	bits     int
	vals     []T
	nulls    []bool
}

func (c *floatCol[T]) reserve(n int) {
	c.vals = grown(c.vals, n)
	if c.nullable {
		c.nulls = grown(c.nulls, n)
	}
}

func (c *floatCol[T]) len() int { return len(c.vals) }
func (c *floatCol[T]) put(v T, null bool) {
	c.vals = append(c.vals, v)
	if c.nullable {
		c.nulls = append(c.nulls, null)
	}
}
func (c *floatCol[T]) addNull(n int) {
	for i := 0; i < n; i++ {
		c.put(0, true)
	}
}
func (c *floatCol[T]) add(src *rowio.Vector, rows int, bad func(int, string)) {
	switch a := src.Arrow.(type) {
	case *array.Float64:
		addFloats(c, a, a.Float64Values(), rows, bad)
		return
	case *array.Float32:
		addFloats(c, a, a.Float32Values(), rows, bad)
		return
	case *array.Int8:
		addFloats(c, a, a.Int8Values(), rows, bad)
		return
	case *array.Int16:
		addFloats(c, a, a.Int16Values(), rows, bad)
		return
	case *array.Int32:
		addFloats(c, a, a.Int32Values(), rows, bad)
		return
	case *array.Int64:
		addFloats(c, a, a.Int64Values(), rows, bad)
		return
	case *array.Uint8:
		addFloats(c, a, a.Uint8Values(), rows, bad)
		return
	case *array.Uint16:
		addFloats(c, a, a.Uint16Values(), rows, bad)
		return
	case *array.Uint32:
		addFloats(c, a, a.Uint32Values(), rows, bad)
		return
	case *array.Uint64:
		addFloats(c, a, a.Uint64Values(), rows, bad)
		return
	}
	if src.Float != nil || src.Int != nil {
		for r := 0; r < rows; r++ {
			if src.Null[r] {
				c.put(0, true)
				continue
			}
			var v float64
			if src.Float != nil {
				v = src.Float[r]
			} else {
				v = float64(src.Int[r])
			}
			if c.bits == 32 && math.Abs(v) > math.MaxFloat32 && !math.IsInf(v, 0) {
				bad(r, fmt.Sprintf("%g is out of range", v))
			}
			c.put(T(v), false)
		}
		return
	}
	for r := 0; r < rows; r++ {
		s, null := cell(src, r)
		if null || s == "" {
			c.put(0, true)
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(s), c.bits)
		if err != nil {
			bad(r, fmt.Sprintf("%s is not a valid number", errtext.Quote(s)))
		}
		c.put(T(v), false)
	}
}

// addFloats converts numbers of any Arrow width. A finite value beyond
// Float32's range is out of range for a Float32 column, as it is for the
// text path (strconv reports it); infinities and NaN pass.
func addFloats[T float, V integer | float](c *floatCol[T], a arrow.Array, vals []V, rows int, bad func(int, string)) {
	hasNull := a.NullN() > 0
	for r, x := range vals[:rows] {
		if hasNull && a.IsNull(r) {
			c.put(0, true)
			continue
		}
		v := float64(x)
		if c.bits == 32 && math.Abs(v) > math.MaxFloat32 && !math.IsInf(v, 0) {
			bad(r, fmt.Sprintf("%g is out of range", v))
		}
		c.put(T(v), false)
	}
}

func (c *floatCol[T]) keep(keep []bool) {
	c.vals = filter(c.vals, keep)
	if c.nullable {
		c.nulls = filter(c.nulls, keep)
	}
}
func (c *floatCol[T]) values() any {
	vals, nulls := c.vals, c.nulls
	// The next block is likely as long as this one: growing it from
	// nothing copied every value several times.
	c.vals, c.nulls = make([]T, 0, len(vals)), make([]bool, 0, len(nulls))
	if !c.nullable {
		return vals
	}
	return nullableValues(vals, nulls)
}

type stringCol struct {
	nullable bool
	vals     []string
	nulls    []bool
	arena    []byte
}

func (c *stringCol) reserve(n int) {
	c.vals = grown(c.vals, n)
	if c.nullable {
		c.nulls = grown(c.nulls, n)
	}
}

func (c *stringCol) len() int { return len(c.vals) }
func (c *stringCol) put(v string, null bool) {
	c.vals = append(c.vals, v)
	if c.nullable {
		c.nulls = append(c.nulls, null)
	}
}
func (c *stringCol) addNull(n int) {
	for i := 0; i < n; i++ {
		c.put("", true)
	}
}
func (c *stringCol) add(src *rowio.Vector, rows int, bad func(int, string)) {
	// Arrow strings are kept without copying: Value points into the
	// array's buffers, which the reader releases at its next batch while
	// these strings wait for the block to be sent. That is safe because
	// the readers allocate those buffers with memory.GoAllocator (the IPC
	// reader explicitly, Parquet and the text renderings through
	// memory.DefaultAllocator, which is one unless built with the
	// mallocator tag): its memory is Go heap that a live string keeps
	// alive, and its Free is a no-op, so nothing is ever reused under
	// them. TestArrowStringsOutliveRelease checks both. An allocator that
	// recycles memory would need a copy here, as the Text path makes.
	//
	// One loop per type: through a func value or a generic method call
	// the accessor is not inlined, which costs a third of the time.
	switch a := src.Arrow.(type) {
	case nil: // text cells, below
		if src.Text == nil && (src.Int != nil || src.Float != nil || src.Time != nil) {
			for r := 0; r < rows; r++ {
				s, null := cell(src, r)
				c.put(s, null)
			}
			return
		}
	case *array.String:
		hasNull := a.NullN() > 0
		for r := range rows {
			if hasNull && a.IsNull(r) {
				c.put("", true)
			} else {
				c.put(a.Value(r), false)
			}
		}
		return
	case *array.LargeString:
		hasNull := a.NullN() > 0
		for r := range rows {
			if hasNull && a.IsNull(r) {
				c.put("", true)
			} else {
				c.put(a.Value(r), false)
			}
		}
		return
	case *array.Binary:
		hasNull := a.NullN() > 0
		for r := range rows {
			if hasNull && a.IsNull(r) {
				c.put("", true)
			} else {
				c.put(a.ValueString(r), false)
			}
		}
		return
	case *array.LargeBinary:
		hasNull := a.NullN() > 0
		for r := range rows {
			if hasNull && a.IsNull(r) {
				c.put("", true)
			} else {
				c.put(a.ValueString(r), false)
			}
		}
		return
	default:
		for r := 0; r < rows; r++ {
			s, null := cell(src, r)
			c.put(s, null)
		}
		return
	}
	if src.Kept {
		// Cells that are never written again are kept as they are.
		for r := 0; r < rows; r++ {
			if src.Null != nil && src.Null[r] {
				c.put("", true)
				continue
			}
			c.put(text(src.Text[r]), false)
		}
		return
	}
	// Text cells are only valid until the reader's next batch: copy them
	// into one arena per batch instead of one allocation per value.
	n := 0
	for r := 0; r < rows; r++ {
		n += len(src.Text[r])
	}
	arena := make([]byte, 0, n)
	for r := 0; r < rows; r++ {
		if src.Null != nil && src.Null[r] {
			c.put("", true)
			continue
		}
		start := len(arena)
		arena = append(arena, src.Text[r]...)
		c.put(unsafe.String(unsafe.SliceData(arena[start:]), len(arena)-start), false)
	}
}
func (c *stringCol) keep(keep []bool) {
	c.vals = filter(c.vals, keep)
	if c.nullable {
		c.nulls = filter(c.nulls, keep)
	}
}
func (c *stringCol) values() any {
	vals, nulls := c.vals, c.nulls
	// The next block is likely as long as this one: growing it from
	// nothing copied every value several times.
	c.vals, c.nulls = make([]string, 0, len(vals)), make([]bool, 0, len(nulls))
	if !c.nullable {
		return vals
	}
	return nullableValues(vals, nulls)
}

type decimalCol struct {
	nullable bool
	prec     int
	scale    int32
	vals     []decimal.Decimal
	nulls    []bool
}

func (c *decimalCol) reserve(n int) {
	c.vals = grown(c.vals, n)
	if c.nullable {
		c.nulls = grown(c.nulls, n)
	}
}

func (c *decimalCol) len() int { return len(c.vals) }
func (c *decimalCol) put(v decimal.Decimal, null bool) {
	c.vals = append(c.vals, v)
	if c.nullable {
		c.nulls = append(c.nulls, null)
	}
}
func (c *decimalCol) addNull(n int) {
	for i := 0; i < n; i++ {
		c.put(decimal.Decimal{}, true)
	}
}
func (c *decimalCol) add(src *rowio.Vector, rows int, bad func(int, string)) {
	switch a := src.Arrow.(type) {
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		for r := 0; r < rows; r++ {
			if a.IsNull(r) {
				c.put(decimal.Decimal{}, true)
				continue
			}
			d := decimal.NewFromBigInt(a.Value(r).BigInt(), -scale)
			if !c.fits(d) {
				bad(r, fmt.Sprintf("%s does not fit DECIMAL(%d,%d)", d, c.prec, c.scale))
			}
			c.put(d, false)
		}
		return
	case *array.Int8:
		addDecimalInts(c, a, a.Int8Values(), rows, bad)
		return
	case *array.Int16:
		addDecimalInts(c, a, a.Int16Values(), rows, bad)
		return
	case *array.Int32:
		addDecimalInts(c, a, a.Int32Values(), rows, bad)
		return
	case *array.Int64:
		addDecimalInts(c, a, a.Int64Values(), rows, bad)
		return
	case *array.Uint8:
		addDecimalInts(c, a, a.Uint8Values(), rows, bad)
		return
	case *array.Uint16:
		addDecimalInts(c, a, a.Uint16Values(), rows, bad)
		return
	case *array.Uint32:
		addDecimalInts(c, a, a.Uint32Values(), rows, bad)
		return
	case *array.Uint64:
		addDecimalInts(c, a, a.Uint64Values(), rows, bad)
		return
	}
	for r := 0; r < rows; r++ {
		s, null := cell(src, r)
		if null || s == "" {
			c.put(decimal.Decimal{}, true)
			continue
		}
		d, err := parseDecimal(strings.TrimSpace(s), c.scale)
		if err == nil && !c.fits(d) {
			err = fmt.Errorf("does not fit DECIMAL(%d,%d)", c.prec, c.scale)
		}
		if err != nil {
			bad(r, fmt.Sprintf("%s is not a valid DECIMAL(%d,%d): %s", errtext.Quote(s), c.prec, c.scale, errtext.Cap(err.Error(), errtext.MaxValue)))
		}
		c.put(d, false)
	}
}

// fits reports whether d, rounded to the column's scale, has no more
// digits before its point than the column has room for (precision less
// scale): ClickHouse does not check what the native protocol sends.
func (c *decimalCol) fits(d decimal.Decimal) bool {
	if d.Exponent() < -c.scale { // more fraction digits than the scale: rare
		d = d.Round(c.scale)
	}
	// d is coefficient × 10^exponent: the coefficient's digits shifted by
	// the exponent are those before the point.
	return d.IsZero() || d.NumDigits()+int(d.Exponent()) <= c.prec-int(c.scale)
}

// addDecimalInts converts integers; one with more digits than the column
// has before its point does not fit.
func addDecimalInts[V integer](c *decimalCol, a arrow.Array, vals []V, rows int, bad func(int, string)) {
	hasNull := a.NullN() > 0
	room := c.prec - int(c.scale) // digits before the point
	for r, x := range vals[:rows] {
		if hasNull && a.IsNull(r) {
			c.put(decimal.Decimal{}, true)
			continue
		}
		var d decimal.Decimal
		mag := uint64(x)
		if x < 0 {
			d = decimal.New(int64(x), 0)
			mag = -uint64(int64(x)) // also right for math.MinInt64
		} else {
			d = decimal.NewFromUint64(mag)
		}
		if digits(mag) > room {
			bad(r, fmt.Sprintf("%d does not fit DECIMAL(%d,%d)", x, c.prec, c.scale))
		}
		c.put(d, false)
	}
}

// digits counts the decimal digits of v; 0 has none before the point.
func digits(v uint64) int {
	n := 0
	for ; v > 0; v /= 10 {
		n++
	}
	return n
}

// parseDecimal reads plain decimal text quickly (the common case of CSV
// exports) and falls back to shopspring's parser for exponents.
func parseDecimal(s string, scale int32) (decimal.Decimal, error) {
	neg := false
	t := s
	if t != "" && (t[0] == '-' || t[0] == '+') {
		neg = t[0] == '-'
		t = t[1:]
	}
	var v int64
	frac := int32(-1)
	digits := 0
	for i := 0; i < len(t); i++ {
		ch := t[i]
		switch {
		case ch >= '0' && ch <= '9':
			if digits >= 18 {
				return slowDecimal(s, scale)
			}
			v = v*10 + int64(ch-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case ch == '.' && frac < 0:
			frac = 0
		default:
			return slowDecimal(s, scale)
		}
	}
	if digits == 0 {
		return decimal.Decimal{}, errors.New("no digits")
	}
	if frac < 0 {
		frac = 0
	}
	if neg {
		v = -v
	}
	return decimal.New(v, -frac), nil
}

func slowDecimal(s string, scale int32) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return d, errors.New("not a number")
	}
	return d.Round(scale), nil
}

func (c *decimalCol) keep(keep []bool) {
	c.vals = filter(c.vals, keep)
	if c.nullable {
		c.nulls = filter(c.nulls, keep)
	}
}
func (c *decimalCol) values() any {
	vals, nulls := c.vals, c.nulls
	// The next block is likely as long as this one: growing it from
	// nothing copied every value several times.
	c.vals, c.nulls = make([]decimal.Decimal, 0, len(vals)), make([]bool, 0, len(nulls))
	if !c.nullable {
		return vals
	}
	return nullableValues(vals, nulls)
}

type timeCol struct {
	nullable bool
	date     bool
	vals     []time.Time
	nulls    []bool
}

func (c *timeCol) reserve(n int) {
	c.vals = grown(c.vals, n)
	if c.nullable {
		c.nulls = grown(c.nulls, n)
	}
}

func (c *timeCol) len() int { return len(c.vals) }
func (c *timeCol) put(v time.Time, null bool) {
	c.vals = append(c.vals, v)
	if c.nullable {
		c.nulls = append(c.nulls, null)
	}
}
func (c *timeCol) addNull(n int) {
	for i := 0; i < n; i++ {
		c.put(time.Unix(0, 0).UTC(), true)
	}
}
func (c *timeCol) add(src *rowio.Vector, rows int, bad func(int, string)) {
	switch a := src.Arrow.(type) {
	case *array.Timestamp:
		// Arrow timestamps count from the Unix epoch in UTC whatever the
		// zone they name; the zone only says how to show them.
		unit := a.DataType().(*arrow.TimestampType).Unit
		addTimes(c, a, a.TimestampValues(), rows, func(v arrow.Timestamp) time.Time { return v.ToTime(unit) })
		return
	case *array.Date32:
		addTimes(c, a, a.Date32Values(), rows, arrow.Date32.ToTime)
		return
	case *array.Date64:
		addTimes(c, a, a.Date64Values(), rows, arrow.Date64.ToTime)
		return
	}
	if src.Time != nil {
		for r, t := range src.Time[:rows] {
			if src.Null[r] {
				c.put(time.Unix(0, 0).UTC(), true)
				continue
			}
			c.put(t.UTC(), false)
		}
		return
	}
	for r := 0; r < rows; r++ {
		s, null := cell(src, r)
		if null || s == "" {
			c.put(time.Unix(0, 0).UTC(), true)
			continue
		}
		t, err := ParseTime(strings.TrimSpace(s))
		if err != nil {
			bad(r, fmt.Sprintf("%s is not a valid %s", errtext.Quote(s), map[bool]string{true: "DATE", false: "TIMESTAMP"}[c.date]))
		}
		c.put(t, false)
	}
}

// addTimes converts Arrow times; toTime reads one value.
func addTimes[V any](c *timeCol, a arrow.Array, vals []V, rows int, toTime func(V) time.Time) {
	hasNull := a.NullN() > 0
	for r, x := range vals[:rows] {
		if hasNull && a.IsNull(r) {
			c.put(time.Unix(0, 0).UTC(), true)
			continue
		}
		c.put(toTime(x).UTC(), false)
	}
}

func (c *timeCol) keep(keep []bool) {
	c.vals = filter(c.vals, keep)
	if c.nullable {
		c.nulls = filter(c.nulls, keep)
	}
}
func (c *timeCol) values() any {
	vals, nulls := c.vals, c.nulls
	// The next block is likely as long as this one: growing it from
	// nothing copied every value several times.
	c.vals, c.nulls = make([]time.Time, 0, len(vals)), make([]bool, 0, len(nulls))
	if !c.nullable {
		return vals
	}
	if c.date {
		// clickhouse-go's Date takes a []time.Time without reporting a
		// null flag per row, so a Nullable(Date) column would get its
		// values and no flags: only []*time.Time works there.
		return pointers(vals, nulls)
	}
	return nullableValues(vals, nulls)
}

var timeLayouts = []string{
	"2006-01-02 15:04:05",
	"2006-01-02",
	time.RFC3339Nano,
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05 -0700 MST",
	"2006/01/02 15:04:05",
	"2006/01/02",
}

// ParseTime reads the timestamp and date spellings files commonly carry;
// times without a zone are UTC. A bare number is Unix seconds.
func ParseTime(s string) (time.Time, error) {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	return time.Time{}, errors.New("not a time")
}

// constCol repeats one value: the commit id of a load.
type constCol struct {
	v uint64
	n int
}

func (c *constCol) len() int                                           { return c.n }
func (c *constCol) reserve(int)                                        {}
func (c *constCol) addNull(n int)                                      { c.n += n }
func (c *constCol) add(_ *rowio.Vector, rows int, _ func(int, string)) { c.n += rows }
func (c *constCol) keep(keep []bool) {
	for _, k := range keep {
		if !k {
			c.n--
		}
	}
}
func (c *constCol) values() any {
	out := make([]uint64, c.n)
	for i := range out {
		out[i] = c.v
	}
	c.n = 0
	return out
}
