package tunnel

import "unsafe"

// stringBytes returns the bytes of s without copying them; the caller
// must not change them. Arrow builders copy what they append.
func stringBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
