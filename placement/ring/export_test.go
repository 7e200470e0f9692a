package ring

// Reference returns a lookup by linear scan over r's points, the definition
// the bucket index must agree with.
func Reference(r *Ring) func(h uint64) int {
	return func(h uint64) int {
		for i, p := range r.points {
			if p >= h {
				return int(r.owners[i])
			}
		}
		return int(r.owners[0])
	}
}
