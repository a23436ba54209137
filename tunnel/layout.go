package tunnel

import (
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// kind is the family of values a column takes.
type kind uint8

const (
	kindUnsupported kind = iota // no Arrow mapping: never sent
	kindInt                     // Int8…Int64
	kindUint                    // UInt8…UInt64
	kindFloat                   // Float32, Float64
	kindBool
	kindString // String, FixedString, UUID, Enum, IPv4/6
	kindDecimal
	kindDate
	kindTimestamp
)

// colSpec is what a record and a pack need to know about one column.
type colSpec struct {
	name     string
	chType   string
	kind     kind
	nullable bool
	dt       arrow.DataType
	bits     int   // integer and float width
	min, max int64 // range of signed integer columns
	umax     uint64
	prec     int32 // decimal precision and scale
	scale    int32
	unit     arrow.TimeUnit
	fixed    int64  // Arrow bytes per value, for size estimates
	why      string // why a kindUnsupported column cannot be written
}

// layout is the writable schema of a session, shared by its records and
// packs.
type layout struct {
	cols   []Column
	specs  []colSpec
	index  map[string]int
	fold   map[string]int // lower-case name → index, for names unique that way
	schema *arrow.Schema  // the sent columns
	sent   []int          // spec index of each Arrow field
	// rowBitmaps is what the validity bitmaps take per row, rounded up.
	rowBitmaps int64
}

func newLayout(info SessionInfo) (*layout, error) {
	l := &layout{index: make(map[string]int, len(info.Columns)), fold: map[string]int{}}
	var fields []arrow.Field
	for _, c := range info.Columns {
		if c.Partition && info.PartitionSpec != "" {
			continue // fixed by the session's partition spec
		}
		if _, dup := l.index[c.Name]; dup {
			return nil, fmt.Errorf("column %q appears twice in the session schema", c.Name)
		}
		chType := c.CHType
		if chType == "" {
			chType = c.Type
		}
		sp := newColSpec(c.Name, chType)
		l.index[c.Name] = len(l.specs)
		if _, dup := l.fold[strings.ToLower(c.Name)]; dup {
			l.fold[strings.ToLower(c.Name)] = -1
		} else {
			l.fold[strings.ToLower(c.Name)] = len(l.specs)
		}
		if sp.kind != kindUnsupported {
			l.sent = append(l.sent, len(l.specs))
			fields = append(fields, arrow.Field{Name: c.Name, Type: sp.dt, Nullable: sp.nullable})
		}
		l.cols = append(l.cols, c)
		l.specs = append(l.specs, sp)
	}
	if len(l.sent) == 0 {
		return nil, fmt.Errorf("no column of the session can be written (%d columns)", len(info.Columns))
	}
	l.schema = arrow.NewSchema(fields, nil)
	l.rowBitmaps = int64(len(fields)+7) / 8
	return l, nil
}

// lookup finds a column by name: exactly, or else ignoring case when that
// is unambiguous (the server matches names ignoring case too).
func (l *layout) lookup(name string) (int, bool) {
	if i, ok := l.index[name]; ok {
		return i, true
	}
	i, ok := l.fold[strings.ToLower(name)]
	return i, ok && i >= 0
}

func newColSpec(name, chType string) colSpec {
	sp := colSpec{name: name, chType: chType}
	dt, nullable, err := rowio.ArrowType(chType)
	if err != nil {
		sp.why = err.Error()
		return sp
	}
	sp.dt, sp.nullable = dt, nullable
	switch t := dt.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		sp.kind, sp.bits = kindInt, t.(arrow.FixedWidthDataType).BitWidth()
		sp.max = int64(uint64(1)<<(sp.bits-1) - 1)
		sp.min = -sp.max - 1
	case *arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type:
		sp.kind, sp.bits = kindUint, t.(arrow.FixedWidthDataType).BitWidth()
		sp.umax = math.MaxUint64 >> (64 - sp.bits)
	case *arrow.Float32Type, *arrow.Float64Type:
		sp.kind, sp.bits = kindFloat, t.(arrow.FixedWidthDataType).BitWidth()
	case *arrow.BooleanType:
		sp.kind = kindBool
	case *arrow.StringType:
		sp.kind, sp.fixed = kindString, 4
	case *arrow.Decimal128Type:
		sp.kind, sp.prec, sp.scale, sp.fixed = kindDecimal, t.Precision, t.Scale, 16
	case *arrow.Date32Type:
		sp.kind, sp.fixed = kindDate, 4
	case *arrow.TimestampType:
		sp.kind, sp.unit, sp.fixed = kindTimestamp, t.Unit, 8
	default:
		sp.why = fmt.Sprintf("Arrow type %s is not supported", dt)
		sp.dt = nil
		return sp
	}
	if sp.bits > 0 {
		sp.fixed = int64(sp.bits / 8)
	}
	if sp.kind == kindBool {
		sp.fixed = 1 // a bit, but count a byte: estimates may be high
	}
	return sp
}
