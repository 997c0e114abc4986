package window

import "unsafe"

// unsafeBytes returns the bytes of s without copying; the result must not be modified.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// unsafeString returns b as a string without copying; b must not be modified afterwards.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
