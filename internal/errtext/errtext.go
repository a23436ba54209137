// Package errtext keeps error texts short enough to store and to send:
// values quoted into an error are cut to about 200 bytes, and whole
// messages to a size that load_history, heartbeat details and activity
// results carry comfortably (Temporal refuses payloads over 2 MB, and a
// cell of a hostile file can be 64 MiB).
package errtext

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxValue is how many bytes of a value Quote keeps.
const MaxValue = 200

// MaxMessage is how many bytes of a whole message Cap keeps by default.
const MaxMessage = 2000

// Quote is %q of s, cut to about MaxValue bytes of s; a cut value says
// how long it was, so that the reader knows it was cut.
func Quote(s string) string {
	if len(s) <= MaxValue {
		return strconv.Quote(s)
	}
	return strconv.Quote(cut(s, MaxValue)) + fmt.Sprintf("… (%d bytes)", len(s))
}

// Cap cuts msg to at most n bytes (MaxMessage when n <= 0) on a rune
// boundary, marking the cut.
func Cap(msg string, n int) string {
	if n <= 0 {
		n = MaxMessage
	}
	if len(msg) <= n {
		return msg
	}
	return cut(msg, n) + fmt.Sprintf("… (%d bytes in all)", len(msg))
}

// cut returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
