package formats

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

var benchCSV = sync.OnceValue(func() []byte {
	cats := []string{"Electronics", "Books", "Garden", "Toys", "Groceries"}
	var b bytes.Buffer
	for i := range 1_000_000 {
		b.WriteString(strconv.Itoa(i))
		b.WriteString(`,"product name `)
		b.WriteString(strconv.Itoa(i % 997))
		b.WriteString(`",`)
		b.WriteString(cats[i%len(cats)])
		fmt.Fprintf(&b, ",%d.%02d,2026-%02d-%02d\n", i%10000, i%100, 1+i%12, 1+i%28)
	}
	return b.Bytes()
})

// BenchmarkCSVReader measures parsing only: the input is in memory and
// uncompressed.
func BenchmarkCSVReader(b *testing.B) {
	data := benchCSV()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := Open(rowio.Source{R: bytes.NewReader(data), Name: "bench.csv"}, "CSV", rowio.Options{})
		if err != nil {
			b.Fatal(err)
		}
		rows := 0
		for {
			batch, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			rows += batch.Rows
		}
		r.Close()
		if rows != 1_000_000 {
			b.Fatalf("%d rows", rows)
		}
	}
}

var benchJSON = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	for i := range 200_000 {
		fmt.Fprintf(&b, `{"id":%d,"name":"product name %d","category":"Electronics","price":%d.%02d,"day":"2026-06-01","tags":["a", "b"]}`+"\n", i, i%997, i%10000, i%100)
	}
	return b.Bytes()
})

func BenchmarkJSONReader(b *testing.B) {
	data := benchJSON()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := Open(rowio.Source{R: bytes.NewReader(data), Name: "bench.json"}, "JSON", rowio.Options{})
		if err != nil {
			b.Fatal(err)
		}
		rows := 0
		for {
			batch, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			rows += batch.Rows
		}
		r.Close()
		if rows != 200_000 {
			b.Fatalf("%d rows", rows)
		}
	}
}
