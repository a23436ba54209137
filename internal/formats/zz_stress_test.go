package formats

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

func TestZZStress(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	alphabet := []byte("ab,;\"\r\n\t\\ ")
	for iter := 0; iter < 5000; iter++ {
		n := rng.IntN(40)
		data := make([]byte, n)
		for i := range data {
			data[i] = alphabet[rng.IntN(len(alphabet))]
		}
		mode := uint8(rng.IntN(12))
		done := make(chan bool)
		go func() {
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				fmt.Printf("HANG mode=%d data=%q\n", mode, data)
				os.Exit(3)
			}
		}()
		opts := Options{BatchRows: 1 + int(mode%3)}
		switch mode / 3 % 4 {
		case 1:
			opts.Delimiter = ';'
		case 2:
			opts.Header = true
		case 3:
			opts.HasNullValue, opts.NullValue = true, ""
		}
		fuzzRead(t, data, "CSV", opts, uint64(mode))
		close(done)
	}
}
