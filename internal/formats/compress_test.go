package formats

import (
	"bytes"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstdBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCompression(t *testing.T) {
	var plain strings.Builder
	for i := range 20000 {
		plain.WriteString("1,\"two\",3\n")
		_ = i
	}
	csvData := []byte(plain.String())
	jsonData := []byte(strings.Repeat(`{"a":1,"b":"x"}`+"\n", 20000))
	tests := []struct {
		name, file, format, compression string
		data                            []byte
	}{
		{"gzip by extension", "f.csv.gz", "CSV", "", gzipBytes(t, csvData)},
		{"gzip by .gzip", "f.csv.GZIP", "CSV", "", gzipBytes(t, csvData)},
		{"gzip by magic", "f.csv", "CSV", "", gzipBytes(t, csvData)},
		{"zstd by extension", "f.csv.zst", "CSV", "", zstdBytes(t, csvData)},
		{"zstd by .zstd", "f.json.zstd", "JSON", "", zstdBytes(t, jsonData)},
		{"zstd by magic", "f", "JSON", "auto", zstdBytes(t, jsonData)},
		{"gzip json by magic", "f.ndjson", "JSON", "", gzipBytes(t, jsonData)},
		{"forced gzip", "f.bin", "CSV", "gzip", gzipBytes(t, csvData)},
		{"forced none", "f.csv.gz", "CSV", "none", csvData},
		{"plain", "f.csv", "CSV", "", csvData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := rowio.ParseOptions(map[string]string{"compression": tt.compression})
			if err != nil {
				t.Fatal(err)
			}
			r := openBytes(t, tt.data, tt.file, tt.format, opts)
			got := collect(t, r)
			if len(got.rows) != 20000 || len(got.errs) != 0 {
				t.Fatalf("%d rows, %d errors", len(got.rows), len(got.errs))
			}
			if tt.format == "CSV" && *got.rows[19999][1] != "two" || tt.format == "JSON" && *got.rows[19999][1] != "x" {
				t.Fatalf("last row %s", show(got.rows[19999:]))
			}
			if r.BytesRead() != int64(len(tt.data)) {
				t.Errorf("BytesRead %d, want %d", r.BytesRead(), len(tt.data))
			}
		})
	}

	// A corrupt stream is an error, not a silent short read.
	gz := gzipBytes(t, csvData)
	gz[len(gz)/2] ^= 0xff
	r, err := Open(rowio.Source{R: bytes.NewReader(gz), Name: "bad.csv.gz"}, "CSV", rowio.Options{})
	if err == nil {
		for {
			if _, err = r.Next(); err != nil {
				break
			}
		}
	}
	if err == nil || strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "unexpected") {
		t.Fatalf("corrupt gzip: %v", err)
	}
}
