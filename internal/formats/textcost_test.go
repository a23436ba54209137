package formats

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// listStream is an Arrow IPC stream of one list column: a row per entry of
// lens, each a list of that many values that build appends.
func listStream(t *testing.T, elem arrow.DataType, lens []int, build func(b array.Builder, n int)) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{field("l", arrow.ListOf(elem), true)}, nil)
	lb := array.NewListBuilder(memory.DefaultAllocator, elem)
	defer lb.Release()
	for _, n := range lens {
		lb.Append(true)
		build(lb.ValueBuilder(), n)
	}
	col := lb.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(lens)))
	defer rec.Release()
	return ipcStream(t, schema, nil, rec)
}

func nulls(b array.Builder, n int) { b.(*array.NullBuilder).AppendNulls(n) }

func ints(b array.Builder, n int) {
	for i := range n {
		b.(*array.Int64Builder).Append(int64(i))
	}
}

// TestNestedTextBounded: a nested value rendered as text (its JSON, for a
// String column) is counted before it is rendered. A list of nulls costs
// an Arrow stream nothing per element (the fuzzer found ~2^29 of them in
// 1.5 KB, whose JSON asked for 14 GB): one longer than MaxLineBytes/2
// values fails the file naming the limit; a batch whose values are out of
// proportion to its buffers fails it too; real lists of the same sizes
// load.
func TestNestedTextBounded(t *testing.T) {
	small := rowio.Options{Limits: rowio.Limits{MaxLineBytes: 2000}} // 1,000 values a cell
	many := func(rows, n int) []int {
		out := make([]int, rows)
		for i := range out {
			out[i] = n
		}
		return out
	}
	tests := []struct {
		name string
		data []byte
		opts rowio.Options
		want string // the error, or "" to read every row
	}{
		{"a list of 10 M nulls", listStream(t, arrow.Null, []int{1, 10_000_000}, nulls), rowio.Options{},
			"a nested value of more than 8388608 values (row 2 of the batch), whose text would be longer, over the limit of 16 MiB (LAKEPIPE_MAX_LINE_BYTES)"},
		{"a list of nulls past a small limit", listStream(t, arrow.Null, []int{1000}, nulls), small, "a nested value of more than 1000 values"},
		{"lists of nulls out of proportion", listStream(t, arrow.Null, many(100, 900), nulls), small, "are out of all proportion to the"},
		{"lists of ints within the limit", listStream(t, arrow.PrimitiveTypes.Int64, many(100, 900), ints), small, ""},
		{"short lists of nulls", listStream(t, arrow.Null, many(100, 3), nulls), small, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Open(rowio.Source{R: bytes.NewReader(tt.data), Name: "t.arrow"}, "ARROW", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			rows := 0
			for {
				b, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					if tt.want == "" || !strings.Contains(err.Error(), tt.want) {
						t.Fatalf("Next after %d rows: %v, want %q", rows, err, tt.want)
					}
					if _, again := r.Next(); again == nil || again.Error() != err.Error() {
						t.Fatalf("Next after the error: %v, want the error again", again)
					}
					return
				}
				for i := range b.Rows {
					if js := b.Cols[0].Arrow.ValueStr(i); !strings.HasPrefix(js, "[") {
						t.Fatalf("row %d: %.40q is not a JSON array", rows+i+1, js)
					}
				}
				rows += b.Rows
			}
			if tt.want != "" {
				t.Fatalf("read %d rows, want %q", rows, tt.want)
			}
		})
	}
	if _, _, err := textArray(array.NewNull(1), rowio.Limits{}.WithDefaults()); err != nil {
		t.Fatalf("a Null column: %v", err)
	}
}
