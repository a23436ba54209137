package codec

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

func compress(t *testing.T, enc string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(enc, &buf)
	if err != nil {
		t.Fatalf("NewWriter(%q): %v", enc, err)
	}
	// Write in uneven pieces, as an Arrow IPC writer does.
	for len(data) > 0 {
		n := min(len(data), 1+len(data)%7919)
		if _, err := w.Write(data[:n]); err != nil {
			t.Fatalf("write: %v", err)
		}
		data = data[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return buf.Bytes()
}

func decompress(enc string, data []byte) ([]byte, error) {
	r, err := NewReader(enc, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func testInputs() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 1<<20)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	var text strings.Builder
	for i := 0; text.Len() < 3<<20; i++ {
		text.WriteString("user_")
		text.WriteString(strings.Repeat("x", i%13))
		text.WriteByte('\n')
	}
	return map[string][]byte{
		"empty":  {},
		"byte":   {42},
		"random": random,
		"text":   []byte(text.String()),
	}
}

func TestRoundTrip(t *testing.T) {
	inputs := testInputs()
	for _, enc := range append(Names(), "", "none", "zlib", "LZ4", " Deflate ") {
		for name, in := range inputs {
			t.Run(enc+"/"+name, func(t *testing.T) {
				c := compress(t, enc, in)
				out, err := decompress(enc, c)
				if err != nil {
					t.Fatalf("decompress: %v", err)
				}
				if !bytes.Equal(in, out) {
					t.Fatalf("round trip changed %d bytes into %d", len(in), len(out))
				}
				if name == "text" && enc != "" && enc != "none" && enc != Identity && len(c) >= len(in)/2 {
					t.Errorf("%s compressed text only to %d of %d bytes", enc, len(c), len(in))
				}
			})
		}
	}
}

func TestAliases(t *testing.T) {
	for in, want := range map[string]string{
		"": Identity, "none": Identity, "identity": Identity, "IDENTITY": Identity,
		"zlib": Deflate, "deflate": Deflate, "snappy": Snappy, "lz4": LZ4,
	} {
		got, err := Canonical(in)
		if err != nil || got != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, n := range Names() {
		if c, err := Canonical(n); err != nil || c != n {
			t.Errorf("Names() holds %q, which is not canonical (%q, %v)", n, c, err)
		}
	}
}

func TestUnknown(t *testing.T) {
	_, err := NewWriter("gzip", io.Discard)
	if err == nil {
		t.Fatal("NewWriter(gzip) succeeded")
	}
	for _, n := range Names() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not list %q", err, n)
		}
	}
	if _, err := NewReader("br", strings.NewReader("")); err == nil {
		t.Fatal("NewReader(br) succeeded")
	}
}

// TestCorrupt flips bytes in the middle of a compressed stream and cuts it
// short: every codec that checks its input must report an error rather
// than return wrong bytes silently.
func TestCorrupt(t *testing.T) {
	in := testInputs()["text"]
	for _, enc := range []string{Deflate, Snappy, LZ4} {
		t.Run(enc, func(t *testing.T) {
			c := compress(t, enc, in)

			bad := bytes.Clone(c)
			for i := len(bad) / 2; i < len(bad)/2+16; i++ {
				bad[i] ^= 0x5a
			}
			if out, err := decompress(enc, bad); err == nil {
				t.Errorf("corrupt stream decoded without error (%d bytes, equal=%v)", len(out), bytes.Equal(out, in))
			}

			if out, err := decompress(enc, c[:len(c)/2]); err == nil {
				t.Errorf("truncated stream decoded without error (%d bytes)", len(out))
			}

			if _, err := decompress(enc, []byte("this is not compressed at all, not even a little")); err == nil {
				t.Errorf("garbage decoded without error")
			}
		})
	}
}

func BenchmarkWriter(b *testing.B) {
	in := testInputs()["text"]
	for _, enc := range Names() {
		b.Run(enc, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				w, _ := NewWriter(enc, io.Discard)
				w.Write(in)
				w.Close()
			}
		})
	}
}
