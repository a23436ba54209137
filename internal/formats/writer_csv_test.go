package formats

import (
	"bytes"
	"testing"

	"github.com/lakepipe/lakepipe/internal/formats/textfile"
	"github.com/lakepipe/lakepipe/internal/rowio"
)

func TestCSVWriterReadBack(t *testing.T) {
	cols := []rowio.Column{{Name: "s", Type: "Nullable(String)"}, {Name: "n", Type: "Int32"}}
	vals := []string{"", "plain", "with,comma", "with \"quote\"", "multi\r\nline\n", "NULL", " spaced "}
	var buf bytes.Buffer
	opts := rowio.Options{Header: true, HasNullValue: true, NullValue: "NULL"}
	w := textfile.NewCSVWriter(&buf, cols, opts)
	for i, v := range vals {
		w.Write([]any{v, int32(i)})
	}
	w.Write([]any{nil, int32(-1)})
	w.Close()
	got := readString(t, buf.String(), "CSV", opts)
	if len(got.rows) != len(vals)+1 || len(got.errs) > 0 {
		t.Fatalf("%d rows, errors %v", len(got.rows), got.errs)
	}
	for i, v := range vals {
		if got.rows[i][0] == nil || *got.rows[i][0] != v {
			t.Errorf("row %d: %s, want %q", i, show(got.rows[i:i+1]), v)
		}
	}
	if got.rows[len(vals)][0] != nil {
		t.Errorf("NULL read back as %q", *got.rows[len(vals)][0])
	}
}
