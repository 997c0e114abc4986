package codec

// FloorDiv is a / b rounded toward negative infinity (Go's / truncates toward zero), as
// Python's // and Java's Math.floorDiv: FloorDiv(-1, 1000) = -1. It converts an instant in a
// finer unit to a coarser one (µs → ms, s → day) so that times before 1970 land in the unit
// that contains them. b must not be 0.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// FloorMod is a - b*FloorDiv(a, b): the remainder with the sign of b (Java's Math.floorMod),
// e.g. the offset of an instant within its day. b must not be 0.
func FloorMod(a, b int64) int64 {
	m := a % b
	if m != 0 && (m < 0) != (b < 0) {
		m += b
	}
	return m
}
