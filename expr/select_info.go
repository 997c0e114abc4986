package expr

// Source returns, for output column i of the projection, the path of the input column or
// struct field it passes through unchanged (field indexes from the top-level column down,
// as codec.Path.Indexes), or nil when the column is computed. The select tool follows the
// stream's declared key and event-time columns through it (renames included).
func (p *Projection) Source(i int) []int {
	return p.cols[i].in
}
