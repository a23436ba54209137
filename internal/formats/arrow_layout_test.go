package formats

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// readArrow reads every row of an ARROW stream (readFile).
func readArrow(data []byte) error {
	_, err := readFile(data, "s", "ARROW", rowio.Options{Compression: rowio.CompressionNone})
	return err
}

// Every type arrow-go writes passes the check of a batch against its
// schema's layout, compressed or not: the counts of nodes, buffers and
// variadic buffers are the writer's.
func TestArrowLayoutOfEveryType(t *testing.T) {
	dict := func(v arrow.DataType) arrow.DataType {
		return &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: v}
	}
	types := []arrow.DataType{
		arrow.Null, arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint64, arrow.FixedWidthTypes.Float16,
		arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Boolean, &arrow.Decimal128Type{Precision: 9, Scale: 2},
		&arrow.Decimal256Type{Precision: 40, Scale: 2}, arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64,
		arrow.FixedWidthTypes.Time32ms, arrow.FixedWidthTypes.Time64ns, arrow.FixedWidthTypes.Timestamp_us,
		arrow.FixedWidthTypes.MonthInterval, arrow.FixedWidthTypes.DayTimeInterval, arrow.FixedWidthTypes.MonthDayNanoInterval,
		arrow.FixedWidthTypes.Duration_s, &arrow.FixedSizeBinaryType{ByteWidth: 3}, arrow.BinaryTypes.Binary,
		arrow.BinaryTypes.String, arrow.BinaryTypes.LargeBinary, arrow.BinaryTypes.LargeString,
		arrow.BinaryTypes.BinaryView, arrow.BinaryTypes.StringView, arrow.ListOf(arrow.PrimitiveTypes.Int32),
		arrow.LargeListOf(arrow.BinaryTypes.String), arrow.ListViewOf(arrow.PrimitiveTypes.Int32),
		arrow.LargeListViewOf(arrow.BinaryTypes.StringView), arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int64),
		arrow.StructOf(field("a", arrow.BinaryTypes.String, true), field("b", dict(arrow.BinaryTypes.String), true)),
		arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64),
		arrow.SparseUnionOf([]arrow.Field{field("i", arrow.PrimitiveTypes.Int32, true), field("s", arrow.BinaryTypes.String, true)}, []arrow.UnionTypeCode{0, 1}),
		arrow.DenseUnionOf([]arrow.Field{field("i", arrow.PrimitiveTypes.Int32, true), field("s", arrow.BinaryTypes.String, true)}, []arrow.UnionTypeCode{0, 1}),
		arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String),
		dict(arrow.BinaryTypes.String), dict(arrow.ListOf(dict(arrow.PrimitiveTypes.Int64))),
	}
	fields := make([]arrow.Field, len(types))
	cols := make([]arrow.Array, len(types))
	for i, dt := range types {
		fields[i] = field(dt.String()[:min(len(dt.String()), 20)]+string(rune('a'+i%26)), dt, true)
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, dt, 3)
		defer cols[i].Release()
	}
	schema := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(schema, cols, 3)
	defer rec.Release()
	views := arrow.NewSchema([]arrow.Field{field("v", arrow.BinaryTypes.StringView, true), field("w", arrow.BinaryTypes.BinaryView, true)}, nil)
	viewRec, _, err := array.RecordFromJSON(memory.DefaultAllocator, views, strings.NewReader(
		`[{"v":"longer than twelve bytes, in a data buffer","w":"bG9uZ2VyIHRoYW4gdHdlbHZlIGJ5dGVz"},{"v":"short","w":null}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer viewRec.Release()
	// arrow-go reads a dictionary batch as version 1 metadata, in which a
	// union has a validity buffer that its (version 5) writer leaves out:
	// it would read one buffer past the batch's, so the batch is refused.
	unionType := dict(arrow.DenseUnionOf([]arrow.Field{field("i", arrow.PrimitiveTypes.Int32, true)}, []arrow.UnionTypeCode{0}))
	union := arrow.NewSchema([]arrow.Field{field("u", unionType, true)}, nil)
	unionCol := array.MakeArrayOfNull(memory.DefaultAllocator, unionType, 2)
	defer unionCol.Release()
	unionRec := array.NewRecordBatch(union, []arrow.Array{unionCol}, 2)
	defer unionRec.Release()
	if err := readArrow(ipcStream(t, union, nil, unionRec)); err == nil || !strings.Contains(err.Error(), "a batch of 4 buffers where its schema needs 5") {
		t.Errorf("a dictionary of unions: %v", err)
	}
	for _, opts := range [][]ipc.Option{nil, {ipc.WithZstd()}, {ipc.WithLZ4()}} {
		if err := readArrow(ipcStream(t, schema, opts, rec, rec)); err != nil {
			t.Errorf("every type, %d options: %v", len(opts), err)
		}
		if err := readArrow(ipcStream(t, views, opts, viewRec)); err != nil {
			t.Errorf("views, %d options: %v", len(opts), err)
		}
	}
}

// A batch that lists fewer nodes, buffers or variadic counts than its
// schema has fails as corrupt, before arrow-go reads past the vector (it
// took the bytes after the buffers for a buffer of 4 TB).
func TestArrowBatchShorterThanSchema(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		field("s", arrow.BinaryTypes.String, true), field("v", arrow.BinaryTypes.StringView, true),
		field("d", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, true),
	}, nil)
	rows := `[{"s":"a","v":"longer than twelve bytes, in a data buffer","d":"x"},{"s":null,"v":null,"d":"y"}]`
	for _, tc := range []struct {
		name string
		dict bool // cut the dictionary batch rather than the record batch
		slot uint16
		want string
	}{
		{"buffers", false, fbBatchBuffers, "buffers where its schema needs"},
		{"nodes", false, fbBatchNodes, "field nodes where its schema has"},
		{"variadic", false, fbBatchVariadic, "variadic buffer counts where its schema has"},
		{"dictionary buffers", true, fbBatchBuffers, "buffers where its schema needs"},
		{"dictionary nodes", true, fbBatchNodes, "field nodes where its schema has"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := arrowStreamWith(t, schema, []ipc.Option{ipc.WithZstd()}, rows)
			msgs := ipcMessages(t, data)
			m := msgs[2] // schema, dictionary, record batch
			if tc.dict {
				m = msgs[1]
			}
			b, h := m.header(t, data)
			if tc.dict {
				var ok bool
				var err error
				if h, ok, err = b.table(h, fbDictionaryData); !ok || err != nil {
					t.Fatal("no dictionary data", err)
				}
			}
			start, n, err := b.vector(h, tc.slot, 1)
			if err != nil || n == 0 {
				t.Fatalf("vector of %d: %v", n, err)
			}
			binary.LittleEndian.PutUint32(data[m.meta+int(start)-4:], uint32(n-1))
			err = readArrow(data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
