package sqlparse

import (
	"strings"
	"testing"
)

func BenchmarkScratchLong(b *testing.B) {
	in := "SELECT " + strings.Repeat("1+", 20000) + "1"
	for i := 0; i < b.N; i++ {
		Parse(in)
	}
}
func BenchmarkScratchLex(b *testing.B) {
	in := "SELECT " + strings.Repeat("1+", 20000) + "1"
	for i := 0; i < b.N; i++ {
		lex(in, startPos)
	}
}
