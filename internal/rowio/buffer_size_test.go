package rowio

import (
	"bytes"
	"strings"
	"testing"
	"testing/iotest"
)

// A buffer sized for its input reads it whole without growing; an input
// longer than it said (a wrong size, or one read in small pieces) still
// reads whole, growing as usual.
func TestChunkBufForSize(t *testing.T) {
	line := "1,small file 1\n"
	long := strings.Repeat("x", 300_000) + "\n"
	for _, tc := range []struct {
		name string
		data string
		size int64
		grow bool
	}{
		{"exact", line, int64(len(line)), false},
		{"said shorter", line + line + line, int64(len(line)), true},
		{"long record", long, 10, true},
		{"unknown", line, 0, false},
	} {
		for _, pieces := range []bool{false, true} {
			r := bytes.NewReader([]byte(tc.data))
			var in = NewChunkBufFor(r, tc.size)
			if pieces {
				in = NewChunkBufFor(iotest.OneByteReader(r), tc.size)
			}
			first := len(in.Buf)
			var got []byte
			for in.Fill() || in.Pos < in.End {
				got = append(got, in.Buf[in.Pos:in.End]...)
				in.Pos = in.End
				if in.AtEOF {
					break
				}
			}
			if in.Err != nil || string(got) != tc.data {
				t.Fatalf("%s (pieces %v): read %d bytes of %d, err %v", tc.name, pieces, len(got), len(tc.data), in.Err)
			}
			if grew := len(in.Buf) != first; grew != tc.grow && tc.size > 0 {
				t.Errorf("%s (pieces %v): buffer grew %v (from %d to %d), want %v", tc.name, pieces, grew, first, len(in.Buf), tc.grow)
			}
			if tc.size > 0 && !tc.grow && first != int(tc.size)+1 {
				t.Errorf("%s: first buffer %d bytes, want %d", tc.name, first, tc.size+1)
			}
		}
	}
}
